// stats.c: sample statistics and Welch's t-test; the t distribution is GSL's.
#include "report/stats.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>

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
