// asha_old_rule.h: ASHA's decision rule as src/space/asha.c had it before its rungs became
// order-statistics trees: every decision copies and insertion-sorts the rung's values,
// O(n²) in the units at the rung. Kept, verbatim but for names, as the oracle of
// tests/test_asha.c and the reference of scripts/bench/asha_bench.c.
#ifndef ATTN_ASHA_OLD_RULE_H
#define ATTN_ASHA_OLD_RULE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "space/asha.h"

typedef struct {
    double *v;  // the values at the rung, one per unit that reached it
    int n, cap;
    int *slot;  // [units]: the unit's index in v, or -1
    double *sum;
    int *count;
    signed char *decision;
} OldRung;
typedef struct {
    int eta, n_rungs, per, n_units;
    OldRung at[MAX_RUNGS];
} OldAsha;

static inline void old_init(OldAsha *a, const Asha *like) {
    memset(a, 0, sizeof *a);
    a->eta = like->eta, a->n_rungs = like->n_rungs, a->per = like->per, a->n_units = like->n_units;
}

static inline void old_free(OldAsha *a) {
    for (int i = 0; i < MAX_RUNGS; i++) {
        OldRung *x = &a->at[i];
        free(x->v), free(x->slot), free(x->sum), free(x->count), free(x->decision);
    }
}

static inline int old_add_metric(OldAsha *a, int id, int rung, double metric) {
    OldRung *x = &a->at[rung];
    if (!x->slot) {
        x->slot = xmalloc((size_t)a->n_units * sizeof(int));
        x->sum = xcalloc((size_t)a->n_units, sizeof(double));
        x->count = xcalloc((size_t)a->n_units, sizeof(int));
        x->decision = xmalloc((size_t)a->n_units);
        for (int u = 0; u < a->n_units; u++) x->slot[u] = -1, x->decision[u] = -1;
    }
    const int u = id / a->per;
    if (x->slot[u] < 0) {
        if (x->n == x->cap) x->v = xrealloc(x->v, (size_t)(x->cap = x->cap ? 2 * x->cap : 16) * sizeof(double));
        x->slot[u] = x->n++;
    }
    x->sum[u] += metric;
    x->count[u]++;
    x->v[x->slot[u]] = x->sum[u] / x->count[u];
    return u;
}

static inline int old_in_top(const OldAsha *a, const OldRung *x, double value) {
    double *s = xmalloc((size_t)x->n * sizeof(double));
    memcpy(s, x->v, (size_t)x->n * sizeof(double));
    for (int i = 1; i < x->n; i++)
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double t = s[j];
            s[j] = s[j - 1], s[j - 1] = t;
        }
    double pos = (1.0 - 1.0 / a->eta) * (x->n - 1);
    int lo = (int)floor(pos);
    double cutoff = lo + 1 < x->n ? s[lo] + (pos - lo) * (s[lo + 1] - s[lo]) : s[lo];
    free(s);
    return value >= cutoff;
}

static inline int old_continue(OldAsha *a, int id, int rung, double metric) {
    if (rung < 0 || rung >= a->n_rungs) return 0;
    const int u = old_add_metric(a, id, rung, metric);
    OldRung *x = &a->at[rung];
    if (x->decision[u] < 0) x->decision[u] = (signed char)old_in_top(a, x, x->v[x->slot[u]]);
    return x->decision[u];
}

static inline void old_replay(OldAsha *a, int id, int rung, double metric, int go_on) {
    if (rung < 0 || rung >= a->n_rungs) return;
    const int u = old_add_metric(a, id, rung, metric);
    if (a->at[rung].decision[u] < 0) a->at[rung].decision[u] = (signed char)(go_on != 0);
}

#endif
