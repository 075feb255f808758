// asha.h: ASHA, asynchronous successive halving (Li et al. 2020, as Ray Tune's
// AsyncHyperBand): the rungs a sweep's `scheduler: {name: asha, min_steps, eta}` puts on
// every trial's budget, where a trial is, and whether it goes on. The worker asks
// asha_at_rung at each evaluation and reports there; the coordinator decides with
// asha_continue. No worker waits for another.
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

// The coordinator's record: every metric reported at each rung so far.
typedef struct {
    double *v;
    int n, cap;
} RungValues;
typedef struct {
    int eta;
    int n_rungs;
    int steps[MAX_RUNGS];      // the rungs (asha_rungs)
    RungValues at[MAX_RUNGS];  // the metrics reported at each
} Asha;

void asha_init(Asha *a, const SweepSpec *s);
void asha_free(Asha *a);
// A trial reaching rung `rung` with metric (larger is better) goes on when the metric is
// at least the (1 − 1/η) quantile of every metric recorded at that rung so far, itself
// included: the first trials at a rung always go on, later ones must be in the top 1/η.
// Records the metric; 0 (stop) for a rung that does not exist.
int asha_continue(Asha *a, int rung, double metric);

#endif
