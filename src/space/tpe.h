// tpe.h: the Tree-structured Parzen Estimator (Bergstra et al. 2011; the details as
// Watanabe 2023's tutorial and Optuna's TPESampler give them), for one objective and,
// as MOTPE (Ozaki et al. 2020), for several, over a search space's genes
// (space_impl.h). Private to the space module: sampler.c drives it.
//
// The observations are the configurations reported so far, each with its genes, which
// parameters applied to it (conditions), its objective values (larger is better, the goal
// applied) and whether it completed or was pruned; configurations handed out and not yet
// reported are pending. A proposal ranks the observations (one objective: the completed
// ones by value, then the pruned ones by value; several: by non-domination rank among the
// completed ones, the last front split by hypervolume contribution), takes the best
// n_below = min(⌈γ·n⌉, 25) as "good" (chosen among every observation) and the rest, with
// every pending configuration as the worst when constant_liar is set, as "bad" (its
// finished ones bounded to the most recent `history`, default 500: the older ones carry
// the least weight, and without them a proposal's kernels stop growing with the sweep;
// history 0 keeps all, the proposals before the bound bit for bit), and then, parameter
// by parameter in file order (a parameter whose conditions fail for what was chosen so
// far is skipped),
// builds a Parzen estimator l from the good observations that have the parameter and g
// from the bad ones, draws `candidates` values from l and keeps the one of largest
// log l − log g. Estimators: a mixture of one kernel per observation plus a prior kernel
// of weight prior_weight; observation weights 1, ramped down linearly for all but the 25
// most recent when there are more than 25 (the ramp over the whole history, so a kept
// observation weighs what it would without the bound; MOTPE: the good ones weighted by their
// hypervolume contributions); numerical parameters a truncated normal per observation on
// [low, high] (log scale for log_uniform_values; a support index ±0.5 for integers and
// q-grids, whose probability is the kernel's mass over the index's unit interval), its
// σ the larger gap to its sorted neighbours (the outermost ones the inner gap only), kept
// within [(high − low)/min(100, 1 + kernels), high − low], the prior kernel centred with
// σ = high − low; categorical parameters a distribution per observation with
// prior_weight/(n + 1) on every choice and 1 more on its own. With multivariate (the default), the
// parameters without conditions are drawn jointly from product kernels (σ by Scott's
// rule, 0.2·n^(−1/(d+4)) of the range) and scored by the joint l/g; conditional ones as
// above.
#ifndef ATTN_TPE_H
#define ATTN_TPE_H

#include <gsl/gsl_rng.h>

#include "space/space.h"

typedef struct Tpe Tpe;

// n_configs: configurations the sweep can have (trials / repeats).
Tpe *tpe_create(const SweepSpec *s, int n_objectives, long n_configs);
void tpe_free(Tpe *t);

// Reported configurations (completed or pruned) so far.
long tpe_observed(const Tpe *t);
// gene (s->n_params) = a proposal from the observations so far, drawn with rng; the
// parameters it does not draw (fixed, or whose conditions fail) keep base_gene's values.
void tpe_propose(Tpe *t, const double *base_gene, gsl_rng *rng, double *gene);
// Configuration i was handed out with these genes (pending until observed).
void tpe_pending(Tpe *t, long i, const double *gene);
// Configuration i's result: values[n_objectives] (larger is better; NaN: failed, not
// used), complete = 0 for a trial the scheduler pruned.
void tpe_observe(Tpe *t, long i, const double *gene, const double *values, int complete);


#endif
