// test_regularisers: the four penalties on W [G, Dg, Dm, R] and the head singular values.
//
//  * every gradient against central finite differences (double penalties evaluated on
//    float W perturbed by h = 1e-3·rms(W), the actual float step in the denominator),
//    on several shapes including non-square role matrices and G > Dg·Dm·R;
//  * every function adds into dW;
//  * head singular values and the nuclear norm against numpy (/usr/bin/python3);
//  * invariance under an orthogonal change of basis of the d_model mode and under
//    head permutation; known values (orthogonal and identical heads, exact L2);
//  * zero heads and NaN weights give defined results;
//  * the stability history returns s(W_{t−window});
//  * timing of head_singular_values (it runs every step) against a direct SVD.
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "python_ref.h"
#include "common/util.h"
#include "model/regularisers.h"

typedef struct {
    int G, Dg, Dm, R;
} Shape;

enum { REG_ORTH, REG_NUCLEAR, REG_L2, REG_STABILITY, NREG };
static const char *reg_names[NREG] = {"orth", "nuclear", "l2", "stability"};

static size_t shape_size(Shape sh) { return (size_t)sh.G * sh.Dg * sh.Dm * sh.R; }

// One regulariser by index; s_ref is used by stability only.
static double reg_eval(int which, float *dW, const float *W, Shape sh, const double *s_ref,
                       double lambda) {
    switch (which) {
    case REG_ORTH: return reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, lambda);
    case REG_NUCLEAR: return reg_nuclear(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, lambda);
    case REG_L2: return reg_l2(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, lambda);
    default: return reg_stability(dW, W, s_ref, sh.G, sh.Dg, sh.Dm, sh.R, lambda);
    }
}

// W with N(0, 1) entries; head g scaled by 1 + g/2 so the head singular values are
// well separated (the stability gradient needs them distinct).
static float *random_weights(gsl_rng *rng, Shape sh) {
    size_t L = (size_t)sh.Dg * sh.Dm * sh.R;
    float *W = xmalloc(shape_size(sh) * sizeof(float));
    for (int g = 0; g < sh.G; g++)
        for (size_t l = 0; l < L; l++)
            W[g * L + l] = (float)((1.0 + 0.5 * g) * gsl_ran_gaussian(rng, 1.0));
    return W;
}

// A random s_ref: positive, summing to 1, zeros past the rank like a real s.
static void random_sref(double *s_ref, gsl_rng *rng, Shape sh) {
    int rank = sh.G < sh.Dg * sh.Dm * sh.R ? sh.G : sh.Dg * sh.Dm * sh.R;
    double sum = 0.0;
    for (int j = 0; j < sh.G; j++) sum += s_ref[j] = j < rank ? 0.1 + gsl_rng_uniform(rng) : 0.0;
    for (int j = 0; j < sh.G; j++) s_ref[j] /= sum;
}

// Central differences for every element of W against the analytic gradient.
// Pass: |fd − an| ≤ 1e-3·max|an| + 1e-2·|an| for every element.
static void check_gradient(int which, Shape sh, gsl_rng *rng) {
    const double lambda = 0.7;
    size_t n = shape_size(sh);
    float *W = random_weights(rng, sh);
    float *an = xcalloc(n, sizeof(float));
    float *scratch = xmalloc(n * sizeof(float));
    double *s_ref = xmalloc((size_t)sh.G * sizeof(double));
    random_sref(s_ref, rng, sh);

    if (which == REG_STABILITY) {  // the gradient exists where the σ are distinct
        double *s = xmalloc((size_t)sh.G * sizeof(double));
        head_singular_values(s, W, sh.G, sh.Dg, sh.Dm, sh.R);
        int rank = sh.G < sh.Dg * sh.Dm * sh.R ? sh.G : sh.Dg * sh.Dm * sh.R;
        for (int j = 0; j + 1 < rank; j++)
            CHECK(s[j] - s[j + 1] > 1e-3, "stability test needs distinct singular values (s[%d] - s[%d] = %.3g)", j,
                  j + 1, s[j] - s[j + 1]);
        free(s);
    }

    double rms = 0.0;
    for (size_t i = 0; i < n; i++) rms += (double)W[i] * W[i];
    rms = sqrt(rms / n);
    const double h = 1e-3 * rms;

    reg_eval(which, an, W, sh, s_ref, lambda);
    double an_max = 0.0;  // the tolerance's scale: fmax skips a NaN, which the check below fails
    for (size_t i = 0; i < n; i++) an_max = fmax(an_max, fabs(an[i]));

    double *fd = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        float w = W[i];
        float wp = (float)(w + h), wm = (float)(w - h);
        W[i] = wp;
        double fp = reg_eval(which, scratch, W, sh, s_ref, lambda);
        W[i] = wm;
        double fm = reg_eval(which, scratch, W, sh, s_ref, lambda);
        W[i] = w;
        fd[i] = (fp - fm) / ((double)wp - (double)wm);
    }
    const double worst = CHECK_ALL_CLOSE(fd, an, n, 1e-3 * an_max, 1e-2, "%s [%d,%d,%d,%d]: dW", reg_names[which],
                                         sh.G, sh.Dg, sh.Dm, sh.R);
    CHECK(an_max > 0.0, "%s: gradient is identically zero", reg_names[which]);
    printf("  grad %-9s G=%d Dg=%-2d Dm=%-2d R=%d: max|fd-an|/max|an| = %.2e\n", reg_names[which], sh.G, sh.Dg,
           sh.Dm, sh.R, worst / an_max);

    // adds into dW: a second call onto the first result doubles it (exactly, in float)
    memcpy(scratch, an, n * sizeof(float));
    reg_eval(which, scratch, W, sh, s_ref, lambda);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += scratch[i] != 2.0f * an[i];
    CHECK(bad == 0, "%s adds into dW: %zu of %zu elements differ from twice one call",
          reg_names[which], bad, n);

    free(fd);
    free(s_ref);
    free(scratch);
    free(an);
    free(W);
}

// numpy's head singular values (normalised, G entries) and nuclear norm Σ_ρ ‖W_ρ‖_*
// for each of n tensors: s[k] (shapes[k].G), nuclear[k]. One python process for all,
// reading the tensors back to back from one file.
static int numpy_reference(double **s, double *nuclear, float *const *W, const Shape *shapes,
                           int n) {
    static const char *script =
        "import sys, numpy as np\n"
        "a = np.fromfile(sys.argv[1], dtype=np.float32).astype(np.float64)\n"
        "d = [int(x) for x in sys.argv[2:]]; off = 0\n"
        "for k in range(0, len(d), 4):\n"
        "    G, Dg, Dm, R = d[k:k + 4]\n"
        "    W = a[off:off + G * Dg * Dm * R].reshape(G, Dg, Dm, R); off += W.size\n"
        "    v = np.linalg.svd(W.reshape(G, -1), compute_uv=False)\n"
        "    s = np.zeros(G); s[:len(v)] = v / v.sum()\n"
        "    nuc = sum(np.linalg.svd(W[..., r].reshape(G * Dg, Dm), compute_uv=False).sum()\n"
        "              for r in range(R))\n"
        "    print(' '.join('%.17g' % x for x in list(s) + [nuc]))\n";
    int (*dims)[4] = xmalloc((size_t)n * sizeof *dims);
    for (int k = 0; k < n; k++) {
        dims[k][0] = shapes[k].G, dims[k][1] = shapes[k].Dg, dims[k][2] = shapes[k].Dm, dims[k][3] = shapes[k].R;
    }
    NumpyRun run;
    numpy_start(&run, script, W, (const int(*)[4])dims, n);
    free(dims);
    FILE *p = run.out;
    int got = 0, want = 0;
    for (int k = 0; k < n; k++) {
        want += shapes[k].G + 1;
        for (int j = 0; p && j < shapes[k].G; j++) got += fscanf(p, "%lf", &s[k][j]) == 1;
        got += p && fscanf(p, "%lf", &nuclear[k]) == 1;
    }
    numpy_finish(&run);
    return got == want ? 0 : -1;
}

// Agreement to 1e-6 relative with numpy's SVDs of the same float tensors.
static void test_matches_numpy(const Shape *shapes, int n, gsl_rng *rng) {
    float **W = xmalloc((size_t)n * sizeof(float *));
    double **s_np = xmalloc((size_t)n * sizeof(double *));
    double *nuc_np = xmalloc((size_t)n * sizeof(double));
    for (int k = 0; k < n; k++) {
        W[k] = random_weights(rng, shapes[k]);
        s_np[k] = xmalloc((size_t)shapes[k].G * sizeof(double));
    }
    int ok = numpy_reference(s_np, nuc_np, W, shapes, n) == 0;
    CHECK(ok, "could not run numpy (/usr/bin/python3) for the reference values");
    for (int k = 0; ok && k < n; k++) {
        Shape sh = shapes[k];
        double *s = xmalloc((size_t)sh.G * sizeof(double));
        float *dW = xcalloc(shape_size(sh), sizeof(float));
        head_singular_values(s, W[k], sh.G, sh.Dg, sh.Dm, sh.R);
        const double ds = CHECK_ALL_CLOSE(s, s_np[k], sh.G, 1e-12, 1e-6, "head singular values");
        double nuc = reg_nuclear(dW, W[k], sh.G, sh.Dg, sh.Dm, sh.R, 1.0);
        const double dn = CHECK_CLOSE(nuc, nuc_np[k], 0.0, 1e-6, "nuclear norm vs numpy");
        printf("  numpy G=%d Dg=%-2d Dm=%-2d R=%d: s (sums to 1) max diff %.1e, nuclear rel diff %.1e\n", sh.G,
               sh.Dg, sh.Dm, sh.R, ds, dn / nuc_np[k]);
        free(dW);
        free(s);
    }
    for (int k = 0; k < n; k++) {
        free(s_np[k]);
        free(W[k]);
    }
    free(nuc_np);
    free(s_np);
    free(W);
}

// Q (n, n): a random orthogonal matrix, the Q factor of a Gaussian matrix.
static void random_orthogonal(double *Q, int n, gsl_rng *rng) {
    double *tau = xmalloc((size_t)n * sizeof(double));
    for (int i = 0; i < n * n; i++) Q[i] = gsl_ran_gaussian(rng, 1.0);
    LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, n, n, Q, n, tau);
    LAPACKE_dorgqr(LAPACK_ROW_MAJOR, n, n, n, Q, n, tau);
    free(tau);
}

// s, orth and nuclear are unchanged by W'[g,c,:,ρ] = Q W[g,c,:,ρ], Q random orthogonal (Dm, Dm).
static void test_invariant_under_dmodel_rotation(Shape sh, gsl_rng *rng) {
    size_t n = shape_size(sh);
    float *W = random_weights(rng, sh), *Wr = xmalloc(n * sizeof(float));
    float *dW = xcalloc(n, sizeof(float));
    double *Q = xmalloc((size_t)sh.Dm * sh.Dm * sizeof(double));
    random_orthogonal(Q, sh.Dm, rng);
    for (int gc = 0; gc < sh.G * sh.Dg; gc++)
        for (int d = 0; d < sh.Dm; d++)
            for (int r = 0; r < sh.R; r++) {
                double acc = 0.0;
                for (int e = 0; e < sh.Dm; e++)
                    acc += Q[d * sh.Dm + e] * W[((size_t)gc * sh.Dm + e) * sh.R + r];
                Wr[((size_t)gc * sh.Dm + d) * sh.R + r] = (float)acc;
            }
    double *s = xmalloc((size_t)sh.G * sizeof(double));
    double *sr = xmalloc((size_t)sh.G * sizeof(double));
    head_singular_values(s, W, sh.G, sh.Dg, sh.Dm, sh.R);
    head_singular_values(sr, Wr, sh.G, sh.Dg, sh.Dm, sh.R);
    for (int j = 0; j < sh.G; j++) CHECK_CLOSE(sr[j], s[j], 1e-7, 1e-5, "s under d_model rotation");
    CHECK_CLOSE(reg_orth(dW, Wr, sh.G, sh.Dg, sh.Dm, sh.R, 1.0),
                reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0), 1e-9, 1e-5,
                "orth penalty under d_model rotation");
    CHECK_CLOSE(reg_nuclear(dW, Wr, sh.G, sh.Dg, sh.Dm, sh.R, 1.0),
                reg_nuclear(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0), 1e-9, 1e-5,
                "nuclear penalty under d_model rotation");
    free(sr);
    free(s);
    free(Q);
    free(dW);
    free(Wr);
    free(W);
}

// Reversing the heads permutes the rows of the head unfolding.
static void test_invariant_under_head_permutation(Shape sh, gsl_rng *rng) {
    size_t n = shape_size(sh), L = n / sh.G;
    float *W = random_weights(rng, sh), *Wp = xmalloc(n * sizeof(float));
    float *dW = xcalloc(n, sizeof(float));
    for (int g = 0; g < sh.G; g++) memcpy(Wp + (sh.G - 1 - g) * L, W + g * L, L * sizeof(float));
    double *s = xmalloc((size_t)sh.G * sizeof(double));
    double *sp = xmalloc((size_t)sh.G * sizeof(double));
    head_singular_values(s, W, sh.G, sh.Dg, sh.Dm, sh.R);
    head_singular_values(sp, Wp, sh.G, sh.Dg, sh.Dm, sh.R);
    for (int j = 0; j < sh.G; j++)
        CHECK_CLOSE(sp[j], s[j], 1e-12, 1e-9, "s under head permutation");
    CHECK_CLOSE(reg_orth(dW, Wp, sh.G, sh.Dg, sh.Dm, sh.R, 1.0),
                reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0), 1e-12, 1e-9,
                "orth penalty under head permutation");
    free(sp);
    free(s);
    free(dW);
    free(Wp);
    free(W);
}

static void test_orth_known_values(gsl_rng *rng) {
    const Shape sh = {5, 4, 6, 3};
    const double lambda = 0.3;
    size_t n = shape_size(sh), L = n / sh.G;
    float *W = xcalloc(n, sizeof(float)), *dW = xcalloc(n, sizeof(float));

    // orthogonal heads (disjoint supports, different scales): penalty 0, gradient 0
    for (size_t l = 0; l < L; l++) {
        int g = (int)(l % sh.G);
        W[g * L + l] = (float)((g + 1) * gsl_ran_gaussian(rng, 1.0));
    }
    CHECK_CLOSE(reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, lambda), 0.0, 1e-12, 0.0,
                "orth penalty of orthogonal heads");
    double gmax = 0.0;
    for (size_t i = 0; i < n; i++) gmax = worst_diff(gmax, dW[i], 0.0);
    CHECK_CLOSE(gmax, 0.0, 1e-9, 0.0, "orth gradient at orthogonal heads");

    // identical heads up to sign and power-of-two scale: C_ij = ±1, ‖C − I‖² = G(G−1)
    for (size_t l = 0; l < L; l++) {
        float v = (float)gsl_ran_gaussian(rng, 1.0);
        for (int g = 0; g < sh.G; g++) W[g * L + l] = (g % 2 ? -1.0f : 1.0f) * (float)(1 << g) * v;
    }
    CHECK_CLOSE(reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, lambda), lambda * sh.G * (sh.G - 1), 0.0,
                1e-12, "orth penalty of identical heads = λ·G(G−1)");

    // a zero head adds nothing and gets no gradient: same as the other G−1 heads alone
    float *Wfew = random_weights(rng, (Shape){sh.G - 1, sh.Dg, sh.Dm, sh.R});
    memcpy(W, Wfew, (size_t)(sh.G - 1) * L * sizeof(float));
    memset(W + (sh.G - 1) * L, 0, L * sizeof(float));
    memset(dW, 0, n * sizeof(float));
    float *dWfew = xcalloc(n, sizeof(float));
    double with_zero = reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, lambda);
    double without = reg_orth(dWfew, Wfew, sh.G - 1, sh.Dg, sh.Dm, sh.R, lambda);
    CHECK_CLOSE(with_zero, without, 0.0, 1e-12, "orth penalty with a zero head");
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !(dW[i] == (i < (sh.G - 1) * L ? dWfew[i] : 0.0f));
    CHECK(bad == 0, "orth gradient with a zero head: %zu elements differ", bad);
    free(dWfew);
    free(Wfew);
    free(dW);
    free(W);
}

static void test_l2_exact(gsl_rng *rng) {
    const Shape sh = {3, 4, 5, 3};
    const double lambda = 0.37;
    size_t n = shape_size(sh);
    float *W = random_weights(rng, sh), *dW = xcalloc(n, sizeof(float));
    double want = 0.0;
    for (size_t i = 0; i < n; i++) want += (double)W[i] * W[i];
    CHECK_CLOSE(reg_l2(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, lambda), lambda * want, 0.0, 1e-14,
                "l2 penalty = λ‖W‖²");
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += dW[i] != (float)(2.0 * lambda * W[i]);
    CHECK(bad == 0, "l2 gradient = 2λW: %zu elements differ", bad);
    free(dW);
    free(W);
}

// All-zero W has no directions: s = 0, penalties finite, no gradient. NaN W gives NaN
// penalties (the trainer's failure signal), not a crash.
static void test_degenerate_weights(void) {
    const Shape sh = {4, 2, 3, 3};
    size_t n = shape_size(sh);
    float *W = xcalloc(n, sizeof(float)), *dW = xcalloc(n, sizeof(float));
    double s[4], s_ref[4] = {0.4, 0.3, 0.2, 0.1};
    head_singular_values(s, W, sh.G, sh.Dg, sh.Dm, sh.R);
    for (int j = 0; j < sh.G; j++) CHECK(s[j] == 0.0, "s of zero W: s[%d] = %g", j, s[j]);
    CHECK_CLOSE(reg_stability(dW, W, s_ref, sh.G, sh.Dg, sh.Dm, sh.R, 2.0), 2.0 * 0.3, 0.0, 1e-15,
                "stability of zero W = λ‖s_ref‖²");
    CHECK(reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 2.0) == 0.0, "orth of zero W is 0");
    CHECK(reg_nuclear(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 2.0) == 0.0, "nuclear of zero W is 0");
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !isfinite(dW[i]);
    CHECK(bad == 0, "gradients at zero W: %zu non-finite elements", bad);

    W[5] = NAN;
    head_singular_values(s, W, sh.G, sh.Dg, sh.Dm, sh.R);
    CHECK(isnan(s[0]), "s of NaN W is NaN (got %g)", s[0]);
    CHECK(isnan(reg_stability(dW, W, s_ref, sh.G, sh.Dg, sh.Dm, sh.R, 1.0)), "stability of NaN W");
    CHECK(isnan(reg_nuclear(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0)), "nuclear of NaN W");
    CHECK(isnan(reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0)), "orth of NaN W");
    free(dW);
    free(W);
}

// s_ref at step t is exactly the vector pushed at step t − window.
static void test_stability_history(void) {
    for (int window = 1; window <= 3; window++) {
        StabilityHistory h;
        stability_init(&h, 2, window);
        for (int t = 0; t < 10; t++) {
            const double *ref = stability_reference(&h);
            if (t < window)
                CHECK(ref == NULL, "window %d step %d: reference before %d pushes", window, t,
                      window);
            else
                CHECK(ref && ref[0] == t - window && ref[1] == -(t - window),
                      "window %d step %d: reference %g, want %d", window, t, ref ? ref[0] : NAN,
                      t - window);
            double s[2] = {t, -t};
            stability_push(&h, s);
        }
        stability_free(&h);
    }
}

// secs = seconds per `call`, repeated for at least `budget` seconds.
#define TIME_CALLS(secs, budget, call)                                    \
    do {                                                                  \
        int reps_ = 0;                                                    \
        double t0_ = now_seconds(), t_;                                   \
        do {                                                              \
            call;                                                         \
            reps_++;                                                      \
        } while ((t_ = now_seconds() - t0_) < (budget));                  \
        (secs) = t_ / reps_;                                              \
    } while (0)

// The per-step cost at the demo size (4 heads, d_k 16, d_model 64, 3 roles: L = 3072)
// and at L = 12288 (d_k 64), with a direct SVD of the head unfolding (LAPACKE_dgesvd,
// values only) as the reference for head_singular_values.
static void bench_regularisers(gsl_rng *rng, Shape sh) {
    size_t n = shape_size(sh), L = n / sh.G;
    float *W = random_weights(rng, sh), *dW = xcalloc(n, sizeof(float));
    double *s = xmalloc((size_t)sh.G * sizeof(double));
    double *s_ref = xmalloc((size_t)sh.G * sizeof(double));
    double *sv = xmalloc((size_t)sh.G * sizeof(double));       // dgesvd's σ
    double *superb = xmalloc((size_t)sh.G * sizeof(double));   // and its workspace
    double *H = xmalloc(n * sizeof(double)), *A = xmalloc(n * sizeof(double));
    random_sref(s_ref, rng, sh);
    for (size_t i = 0; i < n; i++) H[i] = W[i];

    double t_hsv, t_svd, t_orth, t_nuc, t_stab, t_l2;
    TIME_CALLS(t_hsv, 0.1, head_singular_values(s, W, sh.G, sh.Dg, sh.Dm, sh.R));
    TIME_CALLS(t_svd, 0.05, (memcpy(A, H, n * sizeof(double)),
                            LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'N', sh.G, (int)L, A, (int)L, sv,
                                           NULL, 1, NULL, 1, superb)));
    TIME_CALLS(t_orth, 0.05, reg_orth(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0));
    TIME_CALLS(t_nuc, 0.05, reg_nuclear(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0));
    TIME_CALLS(t_stab, 0.05, reg_stability(dW, W, s_ref, sh.G, sh.Dg, sh.Dm, sh.R, 1.0));
    TIME_CALLS(t_l2, 0.05, reg_l2(dW, W, sh.G, sh.Dg, sh.Dm, sh.R, 1.0));
    printf("  G=%d Dg=%d Dm=%d R=%d (L=%zu): head_singular_values %.1f us (direct dgesvd %.1f us, "
           "%.1fx), orth %.1f us, stability %.1f us, l2 %.1f us, nuclear %.1f us\n",
           sh.G, sh.Dg, sh.Dm, sh.R, L, 1e6 * t_hsv, 1e6 * t_svd, t_svd / t_hsv, 1e6 * t_orth,
           1e6 * t_stab, 1e6 * t_l2, 1e6 * t_nuc);
    // the budget is for optimised builds; sanitizer timings (scripts/test.sh sets
    // ATTNSWEEP_SANITIZED) are printed only
    if (!getenv("ATTNSWEEP_SANITIZED"))
        CHECK(t_hsv < 1e-3, "head_singular_values takes %.3g ms per call (budget 1 ms)",
              1e3 * t_hsv);
    free(A);
    free(H);
    free(superb);
    free(sv);
    free(s_ref);
    free(s);
    free(dW);
    free(W);
}

int main(void) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20240611);
    const Shape shapes[] = {
        {4, 8, 16, 3},  // the common case: 32 × 16 role matrices
        {6, 2, 5, 1},   // one role, 12 × 5
        {3, 5, 7, 2},   // odd sizes, 15 × 7
        {2, 3, 11, 2},  // wide role matrices, 6 × 11
        {5, 1, 2, 2},   // more heads than head parameters: G = 5 > L = 4
    };
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);

    printf("gradient checks (central differences, h = 1e-3·rms(W), λ = 0.7):\n");
    for (int k = 0; k < nshapes; k++)
        for (int which = 0; which < NREG; which++) check_gradient(which, shapes[k], rng);

    printf("reference values:\n");
    test_matches_numpy(shapes, nshapes, rng);
    for (int k = 0; k < nshapes; k++) {
        test_invariant_under_dmodel_rotation(shapes[k], rng);
        test_invariant_under_head_permutation(shapes[k], rng);
    }
    test_orth_known_values(rng);
    test_l2_exact(rng);
    test_degenerate_weights();
    test_stability_history();
    const char *threads = getenv("OPENBLAS_NUM_THREADS"), *core = getenv("OPENBLAS_CORETYPE");
    printf("timing (OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s):\n", threads ? threads : "unset",
           core ? core : "unset");
    bench_regularisers(rng, (Shape){4, 16, 64, 3});
    bench_regularisers(rng, (Shape){4, 64, 64, 3});

    gsl_rng_free(rng);
    return check_report("test_regularisers");
}
