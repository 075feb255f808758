// asha.h: ASHA, asynchronous successive halving (Li et al. 2020, as Ray Tune's
// AsyncHyperBand): the rungs a sweep's `scheduler: {name: asha, min_steps, eta}` puts on
// every trial's budget, where a trial is, and whether it goes on. The worker asks
// asha_at_rung at each evaluation and reports there; the coordinator decides with
// asha_continue, for each configuration (its repeats together) or each trial. No worker
// waits for another.
#ifndef ATTN_ASHA_H
#define ATTN_ASHA_H

#include "space/space.h"

enum { MAX_RUNGS = 32 };

// ASHA rungs: min_steps·eta^k for k = 0.. below max_steps. Writes at most cap rungs and
// returns how many there are (0 without a scheduler).
int asha_rungs(const SweepSpec *s, int *rungs, int cap);

// A trial's evaluation at `step` of total_steps, with rungs[0..next) reported already,
// stands for rung `next`: the first evaluation at or past it, short of the budget's end.
int asha_at_rung(const int *rungs, int n_rungs, int next, int step, long total_steps);

// The coordinator's record. Per configuration (the default, when `repeats` > 1 the unit
// that is decided: per: configuration): at each rung, each configuration's value is the
// mean over its repeats that have reached the rung, the first of them to arrive decides
// for all (its decision is kept: a configuration's repeats continue or stop together,
// and a later repeat only moves the mean). Per trial (per: trial, or repeats 1): each
// trial is its own configuration, as in Li et al.
// The units at a rung are kept in an order-statistics tree (a treap keyed by value, then
// unit, with subtree sizes), so that a decision, the quantile of n values, costs O(log n).
typedef struct {
    int n;                     // units that reached the rung
    int root;                  // the tree's root unit, -1 while empty
    double *sum;               // [units] (allocated at the rung's first report): sum of the unit's metrics there
    int *count;                // [units]: how many were reported (0: not at the rung)
    double *value;             // [units]: sum / count, the unit's key in the tree
    int *left, *right, *size;  // [units]: the tree's children (-1: none) and subtree sizes
    signed char *decision;     // [units]: -1 undecided, 0 stop, 1 go on
} RungValues;
typedef struct {
    int eta;
    int n_rungs;
    int steps[MAX_RUNGS];      // the rungs (asha_rungs)
    int per;                   // trials per unit: repeats, or 1 per trial
    int n_units;               // trials / per
    RungValues at[MAX_RUNGS];  // the values reported at each
} Asha;

void asha_init(Asha *a, const SweepSpec *s);
void asha_free(Asha *a);
// Trial `id` reaching rung `rung` with metric (larger is better): whether it goes on. A
// unit's first report decides: the unit goes on when its value is at least the
// (1 − 1/η) quantile of every unit's value at that rung, itself included (the first units
// at a rung always go on, later ones must be in the top 1/η). The quantile interpolates
// linearly between order statistics (as numpy's); a NaN value (only the mean of a +inf and
// a −inf repeat: sweep_eval_metric makes an unknown metric −inf) orders below every other
// and stops. 0 (stop) for a rung that does not exist. O(log n) in the values at the rung.
int asha_continue(Asha *a, int id, int rung, double metric);
// A recorded trial's report at a rung and how it was decided (a resume replays the
// trials in the journal, so a configuration's remaining repeats follow its decision).
void asha_replay(Asha *a, int id, int rung, double metric, int go_on);

#endif
