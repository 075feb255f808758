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
} XY;

static int by_x_then_y(const void *p, const void *q) {
    const XY *a = p, *b = q;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->y > b->y) - (a->y < b->y);
}

// Sorts y[0..n) (tmp: n scratch values) and returns the pairs i < j with y[i] > y[j]
// strictly: the discordant pairs when y is in the order of x.
static long inversions(double *y, double *tmp, int n) {
    if (n < 2) return 0;
    const int h = n / 2;
    long count = inversions(y, tmp, h) + inversions(y + h, tmp, n - h);
    int i = 0, j = h, k = 0;
    while (i < h && j < n) {
        if (y[j] < y[i])
            count += h - i, tmp[k++] = y[j++];
        else
            tmp[k++] = y[i++];
    }
    while (i < h) tmp[k++] = y[i++];
    while (j < n) tmp[k++] = y[j++];
    memcpy(y, tmp, (size_t)n * sizeof *y);
    return count;
}

// Σ over the runs of equal values of v[0..n) (sorted) of run·(run − 1)/2: the pairs tied.
static long tied_pairs(const double *v, int n) {
    long pairs = 0;
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && v[j] == v[i]) j++;
        pairs += (long)(j - i) * (j - i - 1) / 2;
        i = j;
    }
    return pairs;
}

double kendall_tau_b(const double *x, const double *y, int n) {
    if (n < 2) return NAN;
    XY *p = xmalloc((size_t)n * sizeof *p);
    double *ys = xmalloc(2 * (size_t)n * sizeof *ys);
    for (int i = 0; i < n; i++) p[i] = (XY){x[i], y[i]};
    qsort(p, (size_t)n, sizeof *p, by_x_then_y);
    for (int i = 0; i < n; i++) ys[i] = p[i].y;
    long n1 = 0, n3 = 0;  // tied in x; tied in both (runs of equal y within a run of equal x)
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && p[j].x == p[i].x) j++;
        n1 += (long)(j - i) * (j - i - 1) / 2;
        n3 += tied_pairs(ys + i, j - i);
        i = j;
    }
    const long discordant = inversions(ys, ys + n, n);
    const long n2 = tied_pairs(ys, n), n0 = (long)n * (n - 1) / 2;
    free(p);
    free(ys);
    if (n1 == n0 || n2 == n0) return NAN;
    // concordant − discordant = n0 − (n1 + n2 − n3) − 2·discordant
    return (double)(n0 - n1 - n2 + n3 - 2 * discordant) / sqrt((double)(n0 - n1) * (double)(n0 - n2));
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
