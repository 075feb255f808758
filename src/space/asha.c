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
}

void asha_free(Asha *a) {
    for (int i = 0; i < MAX_RUNGS; i++) free(a->at[i].v);
    memset(a, 0, sizeof *a);
}

int asha_continue(Asha *a, int rung, double metric) {
    if (rung < 0 || rung >= a->n_rungs) return 0;
    RungValues *x = &a->at[rung];
    if (x->n == x->cap) x->v = xrealloc(x->v, (size_t)(x->cap = x->cap ? 2 * x->cap : 16) * sizeof(double));
    x->v[x->n++] = metric;
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
    return metric >= cutoff;
}
