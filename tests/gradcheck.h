// gradcheck.h: finite-difference gradient checks shared by the tests.
//
// Two checks, both with central differences of a scalar objective computed in double:
//   elementwise: for each (or a sample of) entries x_i, (f(x+h e_i) − f(x−h e_i)) / 2h
//                against the analytic gradient g_i;
//   directional: for a random direction v over the whole tensor, (f(x+hv) − f(x−hv)) / 2h
//                against g·v — every entry contributes, so a wrong one shows up.
#ifndef ATTN_GRADCHECK_H
#define ATTN_GRADCHECK_H

#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef double (*Objective)(void *ctx);

static inline double gc_uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (double)(*state >> 8) / (double)(1u << 24);
}

static inline void gc_fill(float *x, long n, double scale, unsigned *state) {
    for (long i = 0; i < n; i++) x[i] = (float)((2.0 * gc_uniform(state) - 1.0) * scale);
}

// Checks up to max_checks entries spread over x (all if n <= max_checks), and that every
// entry of g is finite. Pass: |fd − g| <= atol + rtol·max(|fd|, |g|) with atol = rtol_abs · max|g|.
static inline void gradcheck_elementwise(const char *what, float *x, const float *g, long n, Objective f,
                                         void *ctx, float h, double rtol, double rtol_abs, int max_checks) {
    double gmax = 0.0;
    for (long i = 0; i < n; i++) gmax = worst_diff(gmax, g[i], 0.0);
    CHECK(isfinite(gmax), "%s: the analytic gradient is not finite (max|g| %g)", what, gmax);
    if (!isfinite(gmax)) return;
    long stride = n <= max_checks ? 1 : n / max_checks;
    double worst = 0.0;
    for (long i = 0; i < n; i += stride) {
        float keep = x[i];
        x[i] = keep + h;
        double fp = f(ctx);
        x[i] = keep - h;
        double fm = f(ctx);
        x[i] = keep;
        double fd = (fp - fm) / (2.0 * (double)h);
        // fmax only sizes the tolerance: CHECK_CLOSE fails a NaN or Inf fd or g itself
        CHECK_CLOSE(g[i], fd, rtol_abs * gmax + rtol * fmax(fabs(fd), fabs(g[i])), 0.0,
                    "%s[%ld]: analytic vs finite difference (max|g| %.3g)", what, i, gmax);
        worst = worst_diff(worst, g[i], fd);
    }
    printf("  %-28s n=%-7ld max|g|=%.3g max abs err=%.3g (%.2g of max|g|)\n", what, n, gmax, worst,
           gmax > 0 ? worst / gmax : 0.0);
}

static inline void gradcheck_directional(const char *what, float *x, const float *g, long n, Objective f,
                                         void *ctx, float h, double rtol, unsigned seed) {
    float *x0 = malloc((size_t)n * sizeof(float)), *v = malloc((size_t)n * sizeof(float));
    memcpy(x0, x, (size_t)n * sizeof(float));
    gc_fill(v, n, 1.0, &seed);
    double gv = 0.0, gnorm = 0.0;
    for (long i = 0; i < n; i++) gv += (double)g[i] * v[i], gnorm += (double)g[i] * g[i];
    for (long i = 0; i < n; i++) x[i] = x0[i] + h * v[i];
    double fp = f(ctx);
    for (long i = 0; i < n; i++) x[i] = x0[i] - h * v[i];
    double fm = f(ctx);
    memcpy(x, x0, (size_t)n * sizeof(float));
    double fd = (fp - fm) / (2.0 * (double)h);
    // Scale of g·v for a random v is ‖g‖; judge the error against that. (fmax only sizes
    // the tolerance: a NaN or Inf in g makes g·v non-finite, which CHECK_CLOSE fails.)
    double scale = fmax(fabs(gv), sqrt(gnorm));
    CHECK_CLOSE(fd, gv, rtol * scale + 1e-9, 0.0, "%s: directional finite difference vs analytic g·v", what);
    printf("  %-28s n=%-7ld directional fd=%.6g analytic=%.6g rel err=%.2g\n", what, n, fd, gv,
           scale > 0 ? fabs(fd - gv) / scale : 0.0);
    free(x0);
    free(v);
}

#endif
