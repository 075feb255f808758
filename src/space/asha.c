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
        free(x->sum), free(x->count), free(x->value), free(x->left), free(x->right), free(x->size), free(x->decision);
    }
    memset(a, 0, sizeof *a);
}

// ---------------------------------------------------------------- the rung's treap
// Nodes are units; a unit's heap priority is a hash of its index (deterministic, and
// independent of the values, so the tree's depth is O(log n) expected whatever they are).

static unsigned priority(int u) {  // a 32-bit integer hash (Wellons' lowbias32)
    unsigned h = (unsigned)u;
    h ^= h >> 16, h *= 0x7feb352du;
    h ^= h >> 15, h *= 0x846ca68bu;
    return h ^ (h >> 16);
}

static int size_of(const RungValues *x, int t) { return t < 0 ? 0 : x->size[t]; }
static void resize(RungValues *x, int t) { x->size[t] = 1 + size_of(x, x->left[t]) + size_of(x, x->right[t]); }

// Unit a orders before unit b: by value, NaN lowest; equal values by unit.
static int before(const RungValues *x, int a, int b) {
    const double va = x->value[a], vb = x->value[b];
    if (isnan(va) != isnan(vb)) return isnan(va);
    if (va < vb || va > vb) return va < vb;
    return a < b;
}

// Tree t's units before unit u into *l, the others into *r.
static void split(RungValues *x, int t, int u, int *l, int *r) {
    if (t < 0) {
        *l = *r = -1;
        return;
    }
    if (before(x, t, u)) {
        split(x, x->right[t], u, &x->right[t], r);
        *l = t;
    } else {
        split(x, x->left[t], u, l, &x->left[t]);
        *r = t;
    }
    resize(x, t);
}

// Trees l and r, every unit of l before every unit of r, as one.
static int merge(RungValues *x, int l, int r) {
    if (l < 0 || r < 0) return l < 0 ? r : l;
    if (priority(l) > priority(r)) {
        x->right[l] = merge(x, x->right[l], r);
        resize(x, l);
        return l;
    }
    x->left[r] = merge(x, l, x->left[r]);
    resize(x, r);
    return r;
}

static int insert(RungValues *x, int t, int u) {
    if (t < 0 || priority(u) > priority(t)) {
        split(x, t, u, &x->left[u], &x->right[u]);
        resize(x, u);
        return u;
    }
    if (before(x, u, t))
        x->left[t] = insert(x, x->left[t], u);
    else
        x->right[t] = insert(x, x->right[t], u);
    x->size[t]++;
    return t;
}

// Tree t without unit u (which is in it, under its current value).
static int erase(RungValues *x, int t, int u) {
    if (t == u) return merge(x, x->left[u], x->right[u]);
    if (before(x, u, t))
        x->left[t] = erase(x, x->left[t], u);
    else
        x->right[t] = erase(x, x->right[t], u);
    x->size[t]--;
    return t;
}

// The k-th smallest value at the rung (0-based, k < n).
static double kth(const RungValues *x, int k) {
    int t = x->root;
    for (int below = size_of(x, x->left[t]); k != below; below = size_of(x, x->left[t])) {
        if (k < below) {
            t = x->left[t];
        } else {
            k -= below + 1;
            t = x->right[t];
        }
    }
    return x->value[t];
}

// The rung's record of the unit of trial id, with the trial's metric added.
static int add_metric(Asha *a, int id, int rung, double metric) {
    RungValues *x = &a->at[rung];
    const size_t n = (size_t)a->n_units;
    if (!x->sum) {
        x->sum = xcalloc(n, sizeof(double)), x->count = xcalloc(n, sizeof(int));
        x->value = xmalloc(n * sizeof(double));
        x->left = xmalloc(n * sizeof(int)), x->right = xmalloc(n * sizeof(int)), x->size = xmalloc(n * sizeof(int));
        x->decision = xmalloc(n);
        memset(x->decision, -1, n);
        x->root = -1;
    }
    const int u = id / a->per;
    if (u < 0 || u >= a->n_units) die(EXIT_RUNTIME, "internal error: ASHA told of trial %d outside the sweep", id);
    if (x->count[u] > 0)  // its mean moves: out of the tree under the old value, back under the new
        x->root = erase(x, x->root, u);
    else
        x->n++;
    x->sum[u] += metric;
    x->count[u]++;
    x->value[u] = x->sum[u] / x->count[u];
    x->root = insert(x, x->root, u);
    return u;
}

// Whether value is at least the (1 − 1/η) quantile of the rung's values.
static int in_top(const Asha *a, const RungValues *x, double value) {
    double pos = (1.0 - 1.0 / a->eta) * (x->n - 1);  // linear interpolation, as numpy
    int lo = (int)floor(pos);
    const double s_lo = kth(x, lo);
    double cutoff = lo + 1 < x->n ? s_lo + (pos - lo) * (kth(x, lo + 1) - s_lo) : s_lo;
    return value >= cutoff;
}

int asha_continue(Asha *a, int id, int rung, double metric) {
    if (rung < 0 || rung >= a->n_rungs) return 0;
    const int u = add_metric(a, id, rung, metric);
    RungValues *x = &a->at[rung];
    if (x->decision[u] < 0) x->decision[u] = (signed char)in_top(a, x, x->value[u]);
    return x->decision[u];
}

void asha_replay(Asha *a, int id, int rung, double metric, int go_on) {
    if (rung < 0 || rung >= a->n_rungs) return;
    const int u = add_metric(a, id, rung, metric);
    if (a->at[rung].decision[u] < 0) a->at[rung].decision[u] = (signed char)(go_on != 0);
}
