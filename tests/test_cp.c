// test_cp: CP-ALS of a dense four-mode tensor (src/invariants/cp.c).
//
//  * cp_mttkrp for every mode against a direct quadruple loop, on several shapes
//    (including modes of size 1);
//  * tensors of exact CP rank R are recovered from a random start: fit ≥ 1 − 1e-6 and the
//    reconstruction X̂ matches X entry by entry (λ and factors are determined only up to
//    permutation and sign, X̂ is not);
//  * the fit computed from Gram matrices and the last MTTKRP equals 1 − ‖X − X̂‖/‖X‖ with
//    X̂ formed explicitly, after 1, 3 and 10 sweeps on a noisy tensor;
//  * an independent CP-ALS in numpy (/usr/bin/python3: einsum MTTKRP, np.linalg.solve,
//    same start, order and normalisation) gives the same λ, factors and fit;
//  * rank above some dimensions, duplicate initial columns (the pseudo-inverse path),
//    zero initial columns, a zero tensor and NaN/Inf input all give defined results;
//  * same input, same output bits; the verbose line has the SPLATT format;
//  * matrix_condition of known matrices;
//  * timing of one ALS sweep at BERT size [12, 64, 768, 3], R = 8, against one GEMM pass
//    over X in the same run.
// modules: invariants
#define _POSIX_C_SOURCE 200809L
// gsl_randist.h declares the CBLAS interface itself (gsl_cblas.h, same names and enum
// values) and cannot sit beside OpenBLAS's <cblas.h>; OpenBLAS still provides the symbols.
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/util.h"
#include "invariants/cp.h"

// A dense tensor X of dims d as the decompositions take it.
#define DENSE(X, d) (&(const Tensor4){.dims = {(d)[0], (d)[1], (d)[2], (d)[3]}, .X = (X)})

typedef struct {
    int d[4];
} Dims;

static size_t numel(Dims s) { return (size_t)s.d[0] * s.d[1] * s.d[2] * s.d[3]; }

static double *gaussian(gsl_rng *rng, size_t n) {
    double *x = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) x[i] = gsl_ran_gaussian(rng, 1.0);
    return x;
}

// Four random factors d_n × R (column-major, N(0, 1) entries).
static void random_factors(double *F[4], gsl_rng *rng, Dims s, int R) {
    for (int n = 0; n < 4; n++) F[n] = gaussian(rng, (size_t)s.d[n] * R);
}

static void free_factors(double *F[4]) {
    for (int n = 0; n < 4; n++) free(F[n]);
}

// X[i0, i1, i2, i3] = Σ_r λ_r F0[i0, r] F1[i1, r] F2[i2, r] F3[i3, r] (λ = 1 if NULL), row-major.
static void cp_tensor(double *X, const double *const F[4], const double *lambda, Dims s, int R) {
    const int *d = s.d;
    memset(X, 0, numel(s) * sizeof(double));
    for (int r = 0; r < R; r++) {
        const double l = lambda ? lambda[r] : 1.0;
        size_t k = 0;
        for (int i0 = 0; i0 < d[0]; i0++)
            for (int i1 = 0; i1 < d[1]; i1++)
                for (int i2 = 0; i2 < d[2]; i2++) {
                    const double a = l * F[0][(size_t)r * d[0] + i0] * F[1][(size_t)r * d[1] + i1] *
                                     F[2][(size_t)r * d[2] + i2];
                    for (int i3 = 0; i3 < d[3]; i3++) X[k++] += a * F[3][(size_t)r * d[3] + i3];
                }
    }
}

// X̂ of a model, formed explicitly.
static double *reconstruct(const CpModel *m, Dims s) {
    double *Xh = xmalloc(numel(s) * sizeof(double));
    cp_tensor(Xh, (const double *const *)m->factor, m->lambda, s, m->rank);
    return Xh;
}

// 1 − ‖X − X̂‖/‖X‖ with X̂ formed explicitly.
static double explicit_fit(const double *X, const CpModel *m, Dims s) {
    double *Xh = reconstruct(m, s);
    double r2 = 0.0, x2 = 0.0;
    for (size_t i = 0; i < numel(s); i++) {
        r2 += (X[i] - Xh[i]) * (X[i] - Xh[i]);
        x2 += X[i] * X[i];
    }
    free(Xh);
    return 1.0 - sqrt(r2 / x2);
}

// max |x|, the scale of a tolerance: fmax skips a NaN, which the CHECK_ALL_CLOSE given
// that tolerance then fails (at its own index).
static double max_abs(const double *x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

static int all_finite(const double *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

// Every column of every factor has unit 2-norm, λ ≥ 0 and in decreasing order.
static void check_canonical(const CpModel *m, Dims s, const char *what) {
    double worst = 0.0;
    for (int n = 0; n < 4; n++)
        for (int r = 0; r < m->rank; r++)
            worst = worst_diff(worst, cblas_dnrm2(s.d[n], m->factor[n] + (size_t)r * s.d[n], 1), 1.0);
    CHECK(worst < 1e-12, "%s: column norms differ from 1 by %.3g", what, worst);
    for (int r = 0; r < m->rank; r++)
        CHECK(m->lambda[r] >= 0.0 && (r == 0 || m->lambda[r] <= m->lambda[r - 1]),
              "%s: λ[%d] = %g not in decreasing non-negative order", what, r, m->lambda[r]);
}

// M (d_n × R) = X_(n) (⊙_{m≠n} A_m), by a direct quadruple loop.
static void direct_mttkrp(double *M, const double *X, Dims s, int R, const double *const A[4], int n) {
    const int *d = s.d;
    memset(M, 0, (size_t)d[n] * R * sizeof(double));
    int i[4];
    size_t k = 0;
    for (i[0] = 0; i[0] < d[0]; i[0]++)
        for (i[1] = 0; i[1] < d[1]; i[1]++)
            for (i[2] = 0; i[2] < d[2]; i[2]++)
                for (i[3] = 0; i[3] < d[3]; i[3]++, k++)
                    for (int r = 0; r < R; r++) {
                        double p = X[k];
                        for (int m = 0; m < 4; m++)
                            if (m != n) p *= A[m][(size_t)r * d[m] + i[m]];
                        M[(size_t)r * d[n] + i[n]] += p;
                    }
}

static void test_mttkrp_matches_direct_loop(gsl_rng *rng) {
    const struct {
        Dims s;
        int R;
    } cases[] = {{{{4, 16, 64, 3}}, 8}, {{{6, 7, 8, 3}}, 3}, {{{5, 1, 7, 2}}, 4}, {{{1, 3, 1, 5}}, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Dims s = cases[c].s;
        int R = cases[c].R;
        double *X = gaussian(rng, numel(s)), *A[4];
        random_factors(A, rng, s, R);
        double worst = 0.0;
        for (int n = 0; n < 4; n++) {
            size_t len = (size_t)s.d[n] * R;
            double *M = xmalloc(len * sizeof(double)), *Mref = xmalloc(len * sizeof(double));
            cp_mttkrp(M, DENSE(X, s.d), R, (const double *const *)A, n);
            direct_mttkrp(Mref, X, s, R, (const double *const *)A, n);
            const double scale = max_abs(Mref, len);
            const double diff = CHECK_ALL_CLOSE(M, Mref, len, 1e-13 * scale, 0.0,
                                                "MTTKRP mode %d of [%d,%d,%d,%d] R=%d", n, s.d[0], s.d[1], s.d[2],
                                                s.d[3], R);
            worst = worst_diff(worst, diff / scale, 0.0);
            free(M);
            free(Mref);
        }
        printf("  MTTKRP [%d,%d,%d,%d] R=%d, all modes vs direct loop: max rel diff %.1e\n", s.d[0], s.d[1],
               s.d[2], s.d[3], R, worst);
        free_factors(A);
        free(X);
    }
}

// X = Σ_r a∘b∘c∘d from random factors; ALS from another random start recovers it.
static void test_exact_rank_recovered(gsl_rng *rng, Dims s, int R) {
    double *F[4], *init[4];
    random_factors(F, rng, s, R);
    random_factors(init, rng, s, R);
    double *X = xmalloc(numel(s) * sizeof(double));
    cp_tensor(X, (const double *const *)F, NULL, s, R);
    CpModel m;
    int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 1e-10, 3000, 0);
    CHECK(rc == 0, "cp_als returned %d", rc);
    double *Xh = reconstruct(&m, s);
    const double scale = max_abs(X, numel(s));
    const double err = CHECK_ALL_CLOSE(Xh, X, numel(s), 1e-6 * scale, 0.0, "exact rank %d [%d,%d,%d,%d]: X̂", R,
                                       s.d[0], s.d[1], s.d[2], s.d[3]) / scale;
    CHECK(m.fit >= 1.0 - 1e-6, "exact rank %d [%d,%d,%d,%d]: fit %.12f below 1 − 1e-6", R, s.d[0], s.d[1],
          s.d[2], s.d[3], m.fit);
    check_canonical(&m, s, "exact rank");
    printf("  exact rank %d [%d,%d,%d,%d] from a random start: %d sweeps, fit = 1 − %.1e, explicit fit = 1 − "
           "%.1e, max|X − X̂|/max|X| = %.1e\n",
           R, s.d[0], s.d[1], s.d[2], s.d[3], m.iters, 1.0 - m.fit, 1.0 - explicit_fit(X, &m, s), err);
    free(Xh);
    cp_model_free(&m);
    free(X);
    free_factors(init);
    free_factors(F);
}

// A rank-Rt tensor plus noise (relative size `noise` per entry): fits well below 1.
static double *noisy_tensor(gsl_rng *rng, Dims s, int Rt, double noise) {
    double *F[4];
    random_factors(F, rng, s, Rt);
    double *X = xmalloc(numel(s) * sizeof(double));
    cp_tensor(X, (const double *const *)F, NULL, s, Rt);
    double rms = sqrt(cblas_ddot((int)numel(s), X, 1, X, 1) / (double)numel(s));
    for (size_t i = 0; i < numel(s); i++) X[i] += noise * rms * gsl_ran_gaussian(rng, 1.0);
    free_factors(F);
    return X;
}

static void test_fit_matches_formed_xhat(gsl_rng *rng) {
    Dims s = {{8, 9, 10, 3}};
    const int R = 4;
    double *X = noisy_tensor(rng, s, R, 0.3), *init[4];
    random_factors(init, rng, s, R);
    const int sweeps[] = {1, 3, 10};
    for (int k = 0; k < 3; k++) {
        CpModel m;
        int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 0.0, sweeps[k], 0);
        double ef = explicit_fit(X, &m, s);
        CHECK(rc == 0 && m.iters == sweeps[k], "cp_als returned %d after %d sweeps", rc, m.iters);
        CHECK_CLOSE(m.fit, ef, 1e-10, 0.0, "fit from Gram matrices vs formed X̂");
        printf("  after %2d sweeps on [8,9,10,3] R=4 + noise: fit %.12f, with X̂ formed %.12f (diff %.1e)\n",
               sweeps[k], m.fit, ef, fabs(m.fit - ef));
        cp_model_free(&m);
    }
    free_factors(init);
    free(X);
}

// numpy's CP-ALS from the same start: fit, λ (R), then the four factors column-major,
// after `sweeps` sweeps. Returns 0 if all numbers were read.
static int numpy_cp_als(double *fit, double *lambda, double *F[4], const double *X, const double *const init[4],
                        Dims s, int R, int sweeps) {
    char path[] = "/tmp/test_cp_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "wb");
    fwrite(X, sizeof(double), numel(s), f);
    for (int n = 0; n < 4; n++) fwrite(init[n], sizeof(double), (size_t)s.d[n] * R, f);
    fclose(f);
    static const char *script =
        "import sys, numpy as np\n"
        "d = [int(v) for v in sys.argv[2:6]]; R = int(sys.argv[6]); its = int(sys.argv[7])\n"
        "a = np.fromfile(sys.argv[1]); N = d[0] * d[1] * d[2] * d[3]\n"
        "X = a[:N].reshape(d); off = N; A = []\n"
        "for n in range(4):\n"
        "    F = a[off:off + d[n] * R].reshape(R, d[n]).T; off += d[n] * R\n"
        "    A.append(F / np.linalg.norm(F, axis=0))\n"
        "s = 'abcd'; nx2 = np.sum(X * X)\n"
        "for it in range(its):\n"
        "    for n in range(4):\n"
        "        o = [m for m in range(4) if m != n]\n"
        "        M = np.einsum(s + ',' + ','.join(s[m] + 'r' for m in o) + '->' + s[n] + 'r', X,\n"
        "                      *[A[m] for m in o])\n"
        "        V = np.ones((R, R))\n"
        "        for m in o: V = V * (A[m].T @ A[m])\n"
        "        F = np.linalg.solve(V, M.T).T\n"
        "        lam = np.linalg.norm(F, axis=0); A[n] = F / lam\n"
        "inner = np.sum(lam * np.sum(M * A[3], axis=0))\n"
        "V = np.ones((R, R))\n"
        "for m in range(4): V = V * (A[m].T @ A[m])\n"
        "fit = 1 - np.sqrt(max(nx2 + lam @ V @ lam - 2 * inner, 0)) / np.sqrt(nx2)\n"
        "p = np.argsort(-lam, kind='stable')\n"
        "print('%.17g' % fit)\n"
        "print(' '.join('%.17g' % v for v in lam[p]))\n"
        "for n in range(4): print(' '.join('%.17g' % v for v in A[n][:, p].flatten(order='F')))\n";
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c \"%s\" %s %d %d %d %d %d %d", script, path, s.d[0], s.d[1],
             s.d[2], s.d[3], R, sweeps);
    FILE *p = popen(cmd, "r");
    size_t got = 0, want = 1 + (size_t)R;
    if (p) {
        got += fscanf(p, "%lf", fit) == 1;
        for (int r = 0; r < R; r++) got += fscanf(p, "%lf", &lambda[r]) == 1;
        for (int n = 0; n < 4; n++) {
            want += (size_t)s.d[n] * R;
            for (size_t i = 0; i < (size_t)s.d[n] * R; i++) got += fscanf(p, "%lf", &F[n][i]) == 1;
        }
        pclose(p);
    }
    unlink(path);
    return got == want ? 0 : -1;
}

static void test_matches_numpy(gsl_rng *rng, Dims s, int R, int sweeps) {
    double *X = noisy_tensor(rng, s, R, 0.2), *init[4], *F[4];
    random_factors(init, rng, s, R);
    double *lam = xmalloc((size_t)R * sizeof(double)), fit_np = NAN;
    for (int n = 0; n < 4; n++) F[n] = xmalloc((size_t)s.d[n] * R * sizeof(double));
    int ok = numpy_cp_als(&fit_np, lam, F, X, (const double *const *)init, s, R, sweeps) == 0;
    CHECK(ok, "could not run numpy (/usr/bin/python3) for the reference CP-ALS");
    CpModel m;
    int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 0.0, sweeps, 0);
    CHECK(rc == 0, "cp_als returned %d", rc);
    if (ok && rc == 0) {
        const double dl = CHECK_ALL_CLOSE(m.lambda, lam, R, 0.0, 1e-8, "λ vs numpy");
        double df = 0.0;  // factor columns have unit norm: absolute differences
        for (int n = 0; n < 4; n++)
            df = worst_diff(df, CHECK_ALL_CLOSE(m.factor[n], F[n], (size_t)s.d[n] * R, 1e-8, 0.0, "factor %d", n), 0.0);
        CHECK_CLOSE(m.fit, fit_np, 1e-8, 0.0, "fit vs numpy");
        printf("  numpy [%d,%d,%d,%d] R=%d, %d sweeps: fit %.10f (numpy %.10f), λ max diff %.1e, factors "
               "max diff %.1e\n",
               s.d[0], s.d[1], s.d[2], s.d[3], R, sweeps, m.fit, fit_np, dl, df);
    }
    cp_model_free(&m);
    free_factors(F);
    free(lam);
    free_factors(init);
    free(X);
}

// Rank above some (or all) dimensions: V is still positive definite (Schur product
// theorem), the run converges to a finite model.
static void test_rank_above_dims(gsl_rng *rng, Dims s, int R) {
    double *X = gaussian(rng, numel(s)), *init[4];
    random_factors(init, rng, s, R);
    CpModel m;
    int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 1e-8, 200, 0);
    int finite = all_finite(m.lambda, (size_t)R);
    for (int n = 0; n < 4; n++) finite &= all_finite(m.factor[n], (size_t)s.d[n] * R);
    CHECK(rc == 0 && finite && isfinite(m.fit) && m.fit <= 1.0,
          "rank %d on [%d,%d,%d,%d]: rc %d, finite %d, fit %g", R, s.d[0], s.d[1], s.d[2], s.d[3], rc, finite,
          m.fit);
    CHECK_CLOSE(m.fit, explicit_fit(X, &m, s), 1e-9, 0.0, "fit with rank above dims vs formed X̂");
    printf("  rank %d on random [%d,%d,%d,%d]: fit %.6f after %d sweeps\n", R, s.d[0], s.d[1], s.d[2], s.d[3],
           m.fit, m.iters);
    cp_model_free(&m);
    free_factors(init);
    free(X);
}

// Two equal initial columns make V singular. The pseudo-inverse gives the minimum-norm
// solution, which splits the duplicated component evenly: after one sweep the model is
// the rank R − 1 model of the same start. (Later sweeps may break the tie through
// rounding, thread-count dependent, and then improve on rank R − 1; only finiteness and
// the fit are checked there.)
static void test_duplicate_columns_take_pinv(gsl_rng *rng) {
    Dims s = {{5, 6, 7, 3}};
    const int R = 4;
    double *X = noisy_tensor(rng, s, 3, 0.3), *init[4];
    random_factors(init, rng, s, R);
    for (int n = 0; n < 4; n++)
        memcpy(init[n] + (size_t)(R - 1) * s.d[n], init[n] + (size_t)(R - 2) * s.d[n], s.d[n] * sizeof(double));
    CpModel m, m3;
    int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 0.0, 1, 0);
    int rc3 = cp_als(&m3, DENSE(X, s.d), R - 1, (const double *const *)init, 0.0, 1, 0);
    CHECK(rc == 0 && rc3 == 0, "duplicate columns, one sweep: rc %d / %d", rc, rc3);
    CHECK_CLOSE(m.fit, m3.fit, 1e-12, 0.0, "one sweep: fit with a duplicated column vs rank R − 1");
    int halves = 0;  // λ sorted: the two halves are neighbours
    for (int r = 1; r < R; r++) halves |= fabs(m.lambda[r - 1] - m.lambda[r]) <= 1e-10 * m.lambda[r - 1];
    CHECK(halves, "one sweep: no two equal λ in %g %g %g %g", m.lambda[0], m.lambda[1], m.lambda[2], m.lambda[3]);
    double *Xh = reconstruct(&m, s), *Xh3 = reconstruct(&m3, s);
    const double scale = max_abs(Xh3, numel(s));
    const double dx = CHECK_ALL_CLOSE(Xh, Xh3, numel(s), 1e-12 * scale, 0.0,
                                      "one sweep: X̂ with a duplicated column vs the rank R − 1 X̂") / scale;
    printf("  duplicate initial column (pseudo-inverse), one sweep: fit %.12f, rank %d %.12f, X̂ rel diff %.1e\n",
           m.fit, R - 1, m3.fit, dx);
    free(Xh);
    free(Xh3);
    cp_model_free(&m);
    rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 0.0, 20, 0);
    int finite = all_finite(m.lambda, (size_t)R);
    for (int n = 0; n < 4; n++) finite &= all_finite(m.factor[n], (size_t)s.d[n] * R);
    CHECK(rc == 0 && finite, "duplicate columns, 20 sweeps: rc %d, finite %d", rc, finite);
    CHECK_CLOSE(m.fit, explicit_fit(X, &m, s), 1e-10, 0.0, "20 sweeps: fit with a duplicated column vs formed X̂");
    printf("  duplicate initial column, 20 sweeps: fit %.12f\n", m.fit);
    cp_model_free(&m);
    cp_model_free(&m3);
    free_factors(init);
    free(X);
}

// HOSVD padding: a zero initial column (rank 4 > d3 = 3) is replaced by a usable one.
static void test_zero_init_column_filled(gsl_rng *rng) {
    Dims s = {{5, 6, 7, 3}};
    const int R = 4;
    double *X = noisy_tensor(rng, s, R, 0.1), *init[4];
    random_factors(init, rng, s, R);
    memset(init[3] + (size_t)(R - 1) * s.d[3], 0, s.d[3] * sizeof(double));
    CpModel m;
    int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 1e-10, 500, 0);
    CHECK(rc == 0 && isfinite(m.fit), "zero init column: rc %d, fit %g", rc, m.fit);
    CHECK(m.lambda[R - 1] > 0.0, "zero init column: component %d unused (λ = %g)", R - 1, m.lambda[R - 1]);
    check_canonical(&m, s, "zero init column");
    printf("  zero initial column in mode 3: fit %.6f after %d sweeps, smallest λ %.3g\n", m.fit, m.iters,
           m.lambda[R - 1]);
    cp_model_free(&m);
    free_factors(init);
    free(X);
}

// Zero tensor (fit 0/0), NaN and Inf entries, NaN in the start: -1, fit NaN, out usable.
static void test_bad_input(gsl_rng *rng) {
    Dims s = {{3, 4, 5, 3}};
    const int R = 2;
    double *X = xcalloc(numel(s), sizeof(double)), *init[4];
    random_factors(init, rng, s, R);
    const char *what[] = {"zero tensor", "NaN entry", "Inf entry", "NaN in init"};
    for (int k = 0; k < 4; k++) {
        if (k == 1) {
            for (size_t i = 0; i < numel(s); i++) X[i] = 1.0;
            X[7] = NAN;
        }
        if (k == 2) X[7] = INFINITY;
        if (k == 3) {
            X[7] = 1.0;
            init[2][3] = NAN;
        }
        CpModel m;
        int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 1e-8, 50, 0);
        CHECK(rc == -1 && isnan(m.fit) && m.iters == 0, "%s: rc %d, fit %g (want -1 and NaN)", what[k], rc, m.fit);
        CHECK(m.lambda[0] == 0.0 && m.lambda[1] == 0.0, "%s: λ not zeroed", what[k]);
        cp_model_free(&m);
    }
    free_factors(init);
    free(X);
}

// Identical runs give identical bits.
static void test_deterministic(gsl_rng *rng) {
    Dims s = {{12, 16, 40, 3}};
    const int R = 5;
    double *X = noisy_tensor(rng, s, R, 0.2), *init[4];
    random_factors(init, rng, s, R);
    CpModel a, b;
    cp_als(&a, DENSE(X, s.d), R, (const double *const *)init, 1e-8, 50, 0);
    cp_als(&b, DENSE(X, s.d), R, (const double *const *)init, 1e-8, 50, 0);
    int same = a.iters == b.iters && memcmp(&a.fit, &b.fit, sizeof a.fit) == 0 &&
               memcmp(a.lambda, b.lambda, (size_t)R * sizeof(double)) == 0;
    for (int n = 0; n < 4; n++) same &= memcmp(a.factor[n], b.factor[n], (size_t)s.d[n] * R * sizeof(double)) == 0;
    CHECK(same, "two identical cp_als runs differ");
    cp_model_free(&a);
    cp_model_free(&b);
    free_factors(init);
    free(X);
}

// verbose = 1 prints one line per sweep, "its = N (T s)  fit = F  delta = D", to stderr.
static void test_verbose_lines(gsl_rng *rng) {
    Dims s = {{4, 5, 6, 3}};
    const int R = 2, sweeps = 4;
    double *X = noisy_tensor(rng, s, R, 0.3), *init[4];
    random_factors(init, rng, s, R);
    FILE *log = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    dup2(fileno(log), 2);
    CpModel m;
    cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 0.0, sweeps, 1);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(log);
    char line[256];
    int lines = 0;
    double last_fit = NAN, prev_fit = 0.0;
    while (fgets(line, sizeof line, log)) {
        int its;
        double t, fit, delta;
        if (sscanf(line, "its = %d (%lfs)  fit = %lf  delta = %lf", &its, &t, &fit, &delta) != 4) continue;
        lines++;
        CHECK(its == lines && t >= 0.0, "verbose line %d: %s", lines, line);
        // delta is printed to 2 digits
        CHECK_CLOSE(fit - prev_fit, delta, 2e-5, 0.05, "verbose: the printed fits' change vs the printed delta");
        prev_fit = last_fit = fit;
    }
    fclose(log);
    CHECK(lines == sweeps, "verbose printed %d iteration lines, want %d", lines, sweeps);
    CHECK_CLOSE(last_fit, m.fit, 1e-5, 0.0, "last verbose fit vs model fit");
    cp_model_free(&m);
    free_factors(init);
    free(X);
}

// Q (n × n, column-major) orthogonal, from the QR of a Gaussian matrix.
static double *random_orthogonal(gsl_rng *rng, int n) {
    double *Q = gaussian(rng, (size_t)n * n), *tau = xmalloc((size_t)n * sizeof(double));
    LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, Q, n, tau);
    LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, n, n, Q, n, tau);
    free(tau);
    return Q;
}

static void test_matrix_condition(gsl_rng *rng) {
    // diag(3, 0.5) with a zero row below (3 × 2) or a zero column beside (2 × 3): σ = 3, 0.5
    const double A[6] = {3, 0, 0, 0, 0.5, 0}, Aw[6] = {3, 0, 0, 0.5, 0, 0};
    CHECK_CLOSE(matrix_condition(A, 3, 2), 6.0, 0.0, 1e-14, "cond of diag(3, 0.5) padded to 3 × 2");
    CHECK_CLOSE(matrix_condition(Aw, 2, 3), 6.0, 0.0, 1e-14, "cond of diag(3, 0.5) padded to 2 × 3");
    // U diag(10, 2, 0.1) Vᵀ, U (5 × 5) and V (3 × 3) random orthogonal: cond 100
    const int m = 5, n = 3;
    const double sv[3] = {10, 2, 0.1};
    double *U = random_orthogonal(rng, m), *V = random_orthogonal(rng, n);
    double *B = xcalloc((size_t)m * n, sizeof(double)), *US = xmalloc((size_t)m * n * sizeof(double));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) US[(size_t)j * m + i] = U[(size_t)j * m + i] * sv[j];
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, n, n, 1.0, US, m, V, n, 0.0, B, m);
    double c = matrix_condition(B, m, n);
    CHECK_CLOSE(c, 100.0, 0.0, 1e-10, "cond of U diag(10, 2, 0.1) Vᵀ");
    // rank deficient: third column = first + second (exact in binary), σ_min = 0 or rounding
    for (int i = 0; i < m; i++) B[2 * m + i] = B[i] + B[m + i];
    double cd = matrix_condition(B, m, n);
    CHECK(cd > 1e14, "cond of a rank-2 5 × 3 matrix: %g (want inf or > 1e14)", cd);
    const double Z[4] = {0, 0, 0, 0};
    CHECK(isinf(matrix_condition(Z, 2, 2)), "cond of the zero matrix: %g (want inf)", matrix_condition(Z, 2, 2));
    const double N2[4] = {1, NAN, 0, 1};
    CHECK(isnan(matrix_condition(N2, 2, 2)), "cond with a NaN entry is not NaN");
    printf("  matrix_condition: diag 6 -> %.15g, U diag(10,2,0.1) Vᵀ -> %.12g, rank-deficient -> %.3g\n",
           matrix_condition(A, 3, 2), c, cd);
    free(U);
    free(V);
    free(B);
    free(US);
}

// One ALS sweep at BERT size against one GEMM pass over X (X_(01|23) times a
// (d2·d3) × R matrix), the memory-bound floor of any MTTKRP, and a direct-loop MTTKRP.
static void bench_sweep(gsl_rng *rng) {
    Dims s = {{12, 64, 768, 3}};
    const int R = 8, sweeps = 10;
    const int P = s.d[0] * s.d[1], Q = s.d[2] * s.d[3];
    double *X = noisy_tensor(rng, s, R, 0.5), *init[4];
    random_factors(init, rng, s, R);
    CpModel m;
    cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 0.0, 1, 0);  // warm-up
    cp_model_free(&m);
    double t0 = now_seconds();
    int rc = cp_als(&m, DENSE(X, s.d), R, (const double *const *)init, 0.0, sweeps, 0);
    double t_sweep = (now_seconds() - t0) / sweeps;
    CHECK(rc == 0 && m.iters == sweeps, "bench cp_als: rc %d, %d sweeps", rc, m.iters);

    double *K = gaussian(rng, (size_t)Q * R), *T = xmalloc((size_t)P * R * sizeof(double));
    t0 = now_seconds();
    for (int k = 0; k < sweeps; k++)
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, P, R, Q, 1.0, X, Q, K, Q, 0.0, T, P);
    double t_gemm = (now_seconds() - t0) / sweeps;
    double *M = xmalloc((size_t)s.d[2] * R * sizeof(double));
    t0 = now_seconds();
    direct_mttkrp(M, X, s, R, (const double *const *)m.factor, 2);
    double t_direct = now_seconds() - t0;

    const char *threads = getenv("OPENBLAS_NUM_THREADS"), *core = getenv("OPENBLAS_CORETYPE");
    printf("  timing (OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s):\n", threads ? threads : "unset",
           core ? core : "unset");
    printf("  [12,64,768,3] R=8 (%zu entries): one ALS sweep %.2f ms = %.2f x one GEMM pass over X (%.2f ms, "
           "%.1f GFLOP/s); direct-loop MTTKRP of one mode %.1f ms; fit %.4f\n",
           numel(s), 1e3 * t_sweep, t_sweep / t_gemm, 1e3 * t_gemm, 2e-9 * numel(s) * R / t_gemm,
           1e3 * t_direct, m.fit);
    // the budget is for optimised builds; sanitizer timings are printed only
    if (!getenv("ATTNSWEEP_SANITIZED"))
        CHECK(t_sweep < 0.1, "one ALS sweep at [12,64,768,3] R=8 takes %.3g ms (budget 100 ms)", 1e3 * t_sweep);
    free(M);
    free(T);
    free(K);
    cp_model_free(&m);
    free_factors(init);
    free(X);
}

int main(void) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20240611);

    printf("MTTKRP:\n");
    test_mttkrp_matches_direct_loop(rng);
    printf("recovery and fit:\n");
    test_exact_rank_recovered(rng, (Dims){{6, 7, 8, 3}}, 3);
    test_exact_rank_recovered(rng, (Dims){{12, 16, 40, 3}}, 5);
    test_fit_matches_formed_xhat(rng);
    printf("independent computation:\n");
    test_matches_numpy(rng, (Dims){{6, 7, 8, 3}}, 3, 5);
    test_matches_numpy(rng, (Dims){{4, 16, 64, 3}}, 6, 8);
    printf("degenerate cases:\n");
    test_rank_above_dims(rng, (Dims){{4, 5, 6, 3}}, 5);
    test_rank_above_dims(rng, (Dims){{2, 3, 4, 3}}, 6);
    test_duplicate_columns_take_pinv(rng);
    test_zero_init_column_filled(rng);
    test_bad_input(rng);
    test_deterministic(rng);
    test_verbose_lines(rng);
    test_matrix_condition(rng);
    printf("speed:\n");
    bench_sweep(rng);

    gsl_rng_free(rng);
    return check_report("test_cp");
}
