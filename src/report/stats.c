// stats.c: sample statistics, Welch's and the paired t-test (the t distribution is GSL's),
// Holm's adjustment and Kendall's τ-b.
#include "report/stats.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

SampleStats sample_stats(const double *x, int n) {
    SampleStats s = {.n = n, .mean = NAN, .sd = NAN};
    if (n < 1) return s;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += x[i];
    s.mean = sum / n;
    if (n < 2) return s;
    double ss = 0;  // two passes: no cancellation when the spread is small against the mean
    for (int i = 0; i < n; i++) ss += (x[i] - s.mean) * (x[i] - s.mean);
    s.sd = sqrt(ss / (n - 1));
    return s;
}

int welch_test(SampleStats a, SampleStats b, WelchTest *out) {
    if (a.n < 2 || b.n < 2) return -1;
    const double va = a.sd * a.sd / a.n, vb = b.sd * b.sd / b.n;
    if (va + vb == 0) {
        *out = (WelchTest){NAN, NAN, NAN};
        return 0;
    }
    out->t = (a.mean - b.mean) / sqrt(va + vb);
    out->df = (va + vb) * (va + vb) / (va * va / (a.n - 1) + vb * vb / (b.n - 1));
    out->p = 2 * gsl_cdf_tdist_Q(fabs(out->t), out->df);
    return 0;
}

int paired_t_test(const double *d, int n, PairedTest *out) {
    if (n < 2) return -1;
    const SampleStats s = sample_stats(d, n);
    int varies = 0;  // not s.sd > 0: the mean of equal values may round off them, and sd with it
    for (int i = 1; i < n; i++) varies |= d[i] != d[0];
    if (!varies) {
        *out = (PairedTest){NAN, NAN, NAN};
        return 0;
    }
    out->t = s.mean / (s.sd / sqrt(n));
    out->df = n - 1;
    out->p = 2 * gsl_cdf_tdist_Q(fabs(out->t), out->df);
    return 0;
}

// ---------------------------------------------------------------- Kendall's τ-b

typedef struct {
    double x, y;
    int i;
} XYI;

static int by_x_then_y(const void *p, const void *q) {
    const XYI *a = p, *b = q;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->y > b->y) - (a->y < b->y);
}

static int by_value(const void *p, const void *q) {
    const double a = *(const double *)p, b = *(const double *)q;
    return (a > b) - (a < b);
}

void kendall_prepare(KendallSample *k, const double *x, const double *y, int n) {
    XYI *p = xmalloc((size_t)(n ? n : 1) * sizeof *p);
    k->n = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) p[k->n++] = (XYI){x[i], y[i], i};
    qsort(p, (size_t)k->n, sizeof *p, by_x_then_y);
    const size_t room = (size_t)(k->n ? k->n : 1);
    double *ys = xmalloc(room * sizeof *ys);  // the distinct values of y, ascending
    for (int j = 0; j < k->n; j++) ys[j] = p[j].y;
    qsort(ys, (size_t)k->n, sizeof *ys, by_value);
    k->n_y = 0;
    for (int j = 0; j < k->n; j++)
        if (!k->n_y || ys[j] != ys[k->n_y - 1]) ys[k->n_y++] = ys[j];
    k->index = xmalloc(room * sizeof *k->index);
    k->y_rank = xmalloc(room * sizeof *k->y_rank);
    k->run = xmalloc(room * sizeof *k->run);
    for (int j = 0; j < k->n; j++) {
        k->index[j] = p[j].i;
        const double *at = bsearch(&p[j].y, ys, (size_t)k->n_y, sizeof *ys, by_value);
        k->y_rank[j] = (int)(at - ys) + 1;
        k->run[j] = !j ? KENDALL_NEW_X : p[j].x != p[j - 1].x ? KENDALL_NEW_X : p[j].y != p[j - 1].y ? KENDALL_NEW_XY : 0;
    }
    k->tree = xmalloc(((size_t)k->n_y + 1) * sizeof *k->tree);
    k->y_weight = xmalloc(((size_t)k->n_y + 1) * sizeof *k->y_weight);
    free(ys);
    free(p);
}

void kendall_free(KendallSample *k) {
    free(k->index), free(k->y_rank), free(k->run), free(k->tree), free(k->y_weight);
    memset(k, 0, sizeof *k);
}

static long pairs_of(long w) { return w * (w - 1) / 2; }

double kendall_tau_b_weighted(KendallSample *k, const int *w) {
    memset(k->tree, 0, ((size_t)k->n_y + 1) * sizeof *k->tree);
    memset(k->y_weight, 0, ((size_t)k->n_y + 1) * sizeof *k->y_weight);
    long total = 0, n1 = 0, n3 = 0, run_x = 0, run_xy = 0, discordant = 0;
    for (int j = 0; j < k->n; j++) {
        if (k->run[j]) n3 += pairs_of(run_xy), run_xy = 0;  // a new x is a new (x, y) too
        if (k->run[j] == KENDALL_NEW_X) n1 += pairs_of(run_x), run_x = 0;
        const long wj = w ? w[k->index[j]] : 1;
        if (!wj) continue;
        run_x += wj, run_xy += wj;
        // the weight before j in (x, y) order with a greater y: Fenwick prefix sums over y's ranks
        long below = 0;
        for (int r = k->y_rank[j]; r > 0; r -= r & -r) below += k->tree[r];
        discordant += wj * (total - below);
        for (int r = k->y_rank[j]; r <= k->n_y; r += r & -r) k->tree[r] += wj;
        k->y_weight[k->y_rank[j]] += wj;
        total += wj;
    }
    n1 += pairs_of(run_x), n3 += pairs_of(run_xy);
    long n2 = 0;
    for (int r = 1; r <= k->n_y; r++) n2 += pairs_of(k->y_weight[r]);
    if (total < 2) return NAN;
    const long n0 = pairs_of(total);
    if (n1 == n0 || n2 == n0) return NAN;
    // concordant − discordant = n0 − (n1 + n2 − n3) − 2·discordant
    return (double)(n0 - n1 - n2 + n3 - 2 * discordant) / sqrt((double)(n0 - n1) * (double)(n0 - n2));
}

double kendall_tau_b(const double *x, const double *y, int n) {
    KendallSample k;
    kendall_prepare(&k, x, y, n);
    const double tau = kendall_tau_b_weighted(&k, NULL);
    kendall_free(&k);
    return tau;
}

// ---------------------------------------------------------------- Holm–Bonferroni

typedef struct {
    double p;
    int i;
} IndexedP;

static int by_p(const void *x, const void *y) {
    const IndexedP *a = x, *b = y;
    return a->p < b->p ? -1 : a->p > b->p ? 1 : a->i - b->i;
}

void holm_adjust(const double *p, int n, double *adjusted) {
    IndexedP *s = xmalloc((size_t)(n ? n : 1) * sizeof *s);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(p[i])) s[m++] = (IndexedP){p[i], i};
    qsort(s, (size_t)m, sizeof *s, by_p);
    for (int i = 0; i < n; i++)
        if (isnan(p[i])) adjusted[i] = NAN;
    double running = 0.0;
    for (int j = 0; j < m; j++) {
        running = fmax(running, fmin(1.0, (m - j) * s[j].p));
        adjusted[s[j].i] = running;
    }
    free(s);
}
