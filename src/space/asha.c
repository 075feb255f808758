// asha.c: ASHA's rungs and decisions (asha.h).
#include "space/asha.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int asha_rungs(const SweepSpec *s, int *rungs, int cap) {
    int n = 0;
    for (long long r = s->min_steps; s->asha && r < s->max_steps; r *= s->eta, n++)
        if (n < cap) rungs[n] = (int)r;
    return n;
}

int asha_at_rung(const int *rungs, int n_rungs, int next, int step, long total_steps) {
    return next < n_rungs && step >= rungs[next] && step < total_steps;
}

void asha_init(Asha *a, const SweepSpec *s) {
    memset(a, 0, sizeof *a);
    a->eta = s->eta;
    a->n_rungs = asha_rungs(s, a->steps, MAX_RUNGS);
    a->per = s->asha_per_trial ? 1 : s->repeats;
    a->n_units = s->trials / a->per;
}

void asha_free(Asha *a) {
    for (int i = 0; i < MAX_RUNGS; i++) {
        RungValues *x = &a->at[i];
        free(x->v), free(x->slot), free(x->sum), free(x->count), free(x->decision);
    }
    memset(a, 0, sizeof *a);
}

// The rung's record of the unit of trial id, with the trial's metric added.
static int add_metric(Asha *a, int id, int rung, double metric) {
    RungValues *x = &a->at[rung];
    if (!x->slot) {
        x->slot = xmalloc((size_t)a->n_units * sizeof(int));
        x->sum = xcalloc((size_t)a->n_units, sizeof(double));
        x->count = xcalloc((size_t)a->n_units, sizeof(int));
        x->decision = xmalloc((size_t)a->n_units);
        for (int u = 0; u < a->n_units; u++) x->slot[u] = -1, x->decision[u] = -1;
    }
    const int u = id / a->per;
    if (u < 0 || u >= a->n_units) die(EXIT_RUNTIME, "internal error: ASHA told of trial %d outside the sweep", id);
    if (x->slot[u] < 0) {
        if (x->n == x->cap) x->v = xrealloc(x->v, (size_t)(x->cap = x->cap ? 2 * x->cap : 16) * sizeof(double));
        x->slot[u] = x->n++;
    }
    x->sum[u] += metric;
    x->count[u]++;
    x->v[x->slot[u]] = x->sum[u] / x->count[u];
    return u;
}

// Whether value is at least the (1 − 1/η) quantile of the rung's values.
static int in_top(const Asha *a, const RungValues *x, double value) {
    double *s = xmalloc((size_t)x->n * sizeof(double));
    memcpy(s, x->v, (size_t)x->n * sizeof(double));
    for (int i = 1; i < x->n; i++)  // insertion sort: rungs hold few values
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1], s[j - 1] = t;
        }
    double pos = (1.0 - 1.0 / a->eta) * (x->n - 1);  // linear interpolation, as numpy
    int lo = (int)floor(pos);
    double cutoff = lo + 1 < x->n ? s[lo] + (pos - lo) * (s[lo + 1] - s[lo]) : s[lo];
    free(s);
    return value >= cutoff;
}

int asha_continue(Asha *a, int id, int rung, double metric) {
    if (rung < 0 || rung >= a->n_rungs) return 0;
    const int u = add_metric(a, id, rung, metric);
    RungValues *x = &a->at[rung];
    if (x->decision[u] < 0) x->decision[u] = (signed char)in_top(a, x, x->v[x->slot[u]]);
    return x->decision[u];
}

void asha_replay(Asha *a, int id, int rung, double metric, int go_on) {
    if (rung < 0 || rung >= a->n_rungs) return;
    const int u = add_metric(a, id, rung, metric);
    if (a->at[rung].decision[u] < 0) a->at[rung].decision[u] = (signed char)(go_on != 0);
}
