// space_impl.h: what the loader (space.c and the files of space_read.h) shares with the
// samplers (sampler.c, tpe.c) and the distributions (distribution.c); not for other modules.
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

enum {
    TEXT_MAX = 512,          // longest value text (config_set rejects longer ones anyway)
    SOURCE_LIMIT = 100000,   // combinations of the parameters that conditions refer to
};

// ---- supports and genes (space_genes.c)
// The YAML spellings, by SweepMethod and by Distribution (NULL-terminated; a YAML file
// names the distributions from DIST_UNIFORM on).
extern const char *const space_method_names[];
extern const char *const space_dist_names[];
// Size of the parameter's support, or -1 for a continuous distribution.
long space_param_count(const SpaceParam *p);
// Whether p's support is the values it lists (value, values, categorical).
int space_is_listed(const SpaceParam *p);
// q_uniform's support: the multiples of q from q_first·q to q_last·q.
double space_q_first(const SpaceParam *p);
double space_q_last(const SpaceParam *p);
// The index of p among the swept parameters, or -1.
int space_swept_index(const SweepSpec *s, const ParamSpec *p);
// config_set of a text known to be valid (one the file's reading accepted, or one of a
// support); anything else is an internal error (abort).
void space_set_text(TrialConfig *c, const ParamSpec *p, const char *text);
// The canonical text of a value of p (as config_format writes it): equal texts, equal values.
void space_canonical(const ParamSpec *p, const char *text, char *out, size_t len);
// Counts the grid (LONG_MAX if it overflows) and marks the parameters that apply somewhere;
// returns space_enumerate's code.
int space_count(const SweepSpec *s, long *total, unsigned char *active);

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

// ---- continuous distributions (distribution.c)
// Whether d is read from mu, sigma, a, b (normal, log_normal, beta and their q_), not min and max.
int space_dist_has_law(Distribution d);
// Whether d is one of the q_ kinds drawn continuously (all but q_uniform, a finite support).
int space_dist_quantised(Distribution d);
// Sets p's u_lo, u_hi, lo, hi from its law and the parameter's range [pmin, pmax]; returns
// the law's mass in that range before the central truncation (the caller refuses a tiny one).
double space_truncate(SpaceParam *p, double pmin, double pmax);
// The value of u ∈ [0, 1]: the law's quantile at u_lo + u·(u_hi − u_lo), for the q_ kinds
// rounded to a multiple of q (moved one q inwards when that leaves [lo, hi]).
double space_draw(const SpaceParam *p, double u);
// The value in TPE's space, its distribution function u = F(value) (within [u_lo, u_hi]),
// and back (the quantile, rounded to q for the q_ kinds).
double space_to_model(const SpaceParam *p, double value);
double space_from_model(const SpaceParam *p, double u);

#endif
