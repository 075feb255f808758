// space_impl.h: what space.c (the loader) shares with sampler.c; not for other modules.
//
// A configuration is described by one "gene" per swept parameter (SweepSpec.params[j]):
// for a parameter with a finite support (values, categorical, value, int_uniform,
// q_uniform) the gene is an index into that support; for uniform and
// log_uniform_values it is the value itself. space_render turns genes into a
// TrialConfig, applying the `when` conditions in file order (a condition only refers
// to parameters defined before it, or to fixed ones), so conditions act after sampling.
#ifndef ATTN_SPACE_IMPL_H
#define ATTN_SPACE_IMPL_H

#include "space/space.h"

// Size of the parameter's support, or -1 for uniform and log_uniform_values.
long space_param_count(const SpaceParam *p);
// base + genes, conditions applied; out->seed is left at the base value.
void space_render(const SweepSpec *s, const double *gene, TrialConfig *out);
// The gene that gives p the value it has in c (the inverse of space_render for one
// parameter; 0 for an index when c's value is outside the support).
double space_gene_of(const SpaceParam *p, const TrialConfig *c);
// Marks the parameters that some condition refers to (the "sources": they vary
// slowest in a grid, and fix which other parameters apply).
void space_sources(const SweepSpec *s, unsigned char *is_source);

// Calls visit for every combination of the parameters j with use[j] set, each running
// over its support when its conditions hold and left at the base value otherwise; the
// others stay at base. use must be closed under conditions (a used parameter's
// conditions refer only to used or fixed parameters). gene[j] is the support index
// (-1 when not used or not applicable). With checks set, continuous parameters run over
// their integer range (integers) or their two ends (reals), so the cross-parameter
// checks see every value or every extreme. Returns 0 when all were visited, 1 when visit
// returned non-zero, 2 when there were more than limit combinations.
typedef int (*SpaceVisit)(void *ctx, const TrialConfig *c, const double *gene);
int space_enumerate(const SweepSpec *s, const unsigned char *use, int checks, long limit, SpaceVisit visit,
                    void *ctx);

#endif
