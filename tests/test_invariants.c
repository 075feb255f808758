// test_invariants: Tucker/CP invariants of one layer and the reward, on one rank
// (a 1×1 BLACS grid; test_invariants_mpi covers 2, 3 and 4 ranks).
//
//  * known structure: a tensor core ×₀ U₀ ×₁ U₁ ×₂ U₂ ×₃ U₃ with random orthonormal U_n
//    has its multilinear ranks recovered and a Tucker fit ≥ 1 − 1e-6; a sum of R rank-one
//    terms has CP rank R chosen with fit ≥ 1 − 1e-6;
//  * invariance: every metric unchanged (1e-9) under orthogonal changes of basis of
//    the d_k and d_model modes and a permutation of the heads, and RankDeviation and
//    Correlation under scaling. The changes of basis are random signed permutations
//    around a normalised Hadamard matrix (entries ±1/4, ±1/8) applied to a tensor of
//    small integers, so the rotated float tensor is exact and differences are the
//    algorithms' own;
//  * against numpy (/usr/bin/python3): singular values of all four unfoldings,
//    effective and numerical ranks, head correlation, to 1e-8;
//  * defined results for a zero tensor and a single head; the reward functions;
//  * the time to score one small layer (4 heads, d_k 16, d_model 64, 3 roles), printed;
//  * the HOSVD keeps as many vectors as σ's numerical rank asks, orthonormal, also where
//    the threshold falls on a rounding-level tie, and its values-only run gives the
//    same σ.
// modules: invariants trial
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mpi_leaks.h"
#include "python_ref.h"
#include "same_scores.h"
#include "common/util.h"
#include "invariants/score.h"
#include "invariants/tucker.h"
#include "trial/reward.h"

static size_t dims_size(const int d[4]) { return (size_t)d[0] * d[1] * d[2] * d[3]; }

// Q (n × r, column-major) with orthonormal columns: the Q of a Gaussian matrix.
static void random_orthonormal(double *Q, int n, int r, gsl_rng *rng) {
    for (int i = 0; i < n * r; i++) Q[i] = gsl_ran_gaussian(rng, 1.0);
    double *tau = xmalloc((size_t)r * sizeof(double));
    LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, r, Q, n, tau);
    LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, r, r, Q, n, tau);
    free(tau);
}

// out[a, i, b] = Σ_j U[i, j] in[a, j, b]: mode n of in (size r there) expanded to d by U (d × r).
static void expand_mode(double *out, const double *in, const int in_dims[4], int n, const double *U, int d) {
    size_t outer = 1, inner = 1;
    for (int k = 0; k < n; k++) outer *= (size_t)in_dims[k];
    for (int k = n + 1; k < 4; k++) inner *= (size_t)in_dims[k];
    const int r = in_dims[n];
    for (size_t a = 0; a < outer; a++)
        for (int i = 0; i < d; i++)
            for (size_t b = 0; b < inner; b++) {
                double s = 0.0;
                for (int j = 0; j < r; j++) s += U[i + (size_t)j * d] * in[(a * r + j) * inner + b];
                out[(a * d + i) * inner + b] = s;
            }
}

// X = core ×₀ U₀ ×₁ U₁ ×₂ U₂ ×₃ U₃ with a Gaussian core of the given ranks and random
// orthonormal U_n, plus Gaussian noise of standard deviation `noise`.
static double *tucker_tensor(const int dims[4], const int ranks[4], double noise, gsl_rng *rng) {
    int cur[4] = {ranks[0], ranks[1], ranks[2], ranks[3]};
    double *T = xmalloc(dims_size(cur) * sizeof(double));
    for (size_t i = 0; i < dims_size(cur); i++) T[i] = gsl_ran_gaussian(rng, 1.0);
    for (int n = 0; n < 4; n++) {
        double *U = xmalloc((size_t)dims[n] * ranks[n] * sizeof(double));
        random_orthonormal(U, dims[n], ranks[n], rng);
        int next[4] = {cur[0], cur[1], cur[2], cur[3]};
        next[n] = dims[n];
        double *E = xmalloc(dims_size(next) * sizeof(double));
        expand_mode(E, T, cur, n, U, dims[n]);
        free(U);
        free(T);
        T = E;
        cur[n] = dims[n];
    }
    for (size_t i = 0; i < dims_size(dims); i++) T[i] += noise * gsl_ran_gaussian(rng, 1.0);
    return T;
}

static float *to_float(const double *X, size_t n) {
    float *W = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) W[i] = (float)X[i];
    return W;
}

static void check_tucker_ranks_recovered(const BlacsGrid *g, gsl_rng *rng) {
    const int dims[4] = {8, 16, 48, 3}, ranks[4] = {3, 5, 7, 2};
    double *X = tucker_tensor(dims, ranks, 0.0, rng);
    float *W = to_float(X, dims_size(dims));
    ScoreOptions o;
    score_options_default(&o);
    o.energy = 1.0 - 1e-10;  // everything but rounding: the exact multilinear rank
    o.cp = 0;
    LayerScore s;
    score_weights(&s, W, dims, &o, g);
    for (int n = 0; n < 4; n++) {
        CHECK(s.num_rank[n] == ranks[n], "mode %d numerical rank %d, want %d", n, s.num_rank[n], ranks[n]);
        CHECK(s.tucker_ranks[n] == ranks[n], "mode %d Tucker rank %d, want %d", n, s.tucker_ranks[n], ranks[n]);
        double tail = 0.0;
        for (int i = ranks[n]; i < s.n_sv[n]; i++) tail = worst_diff(tail, s.sv[n][i], 0.0);
        CHECK(tail <= 1e-6 * s.sv[n][0], "mode %d: σ past the rank %.3g (σ_1 %.3g)", n, tail, s.sv[n][0]);
    }
    CHECK(s.tucker_fit >= 1.0 - 1e-6, "Tucker fit %.12f on an exact rank-(3,5,7,2) tensor", s.tucker_fit);
    printf("  Tucker [8,16,48,3] ranks (3,5,7,2): numerical ranks (%d,%d,%d,%d), fit 1 - %.1e in %d sweeps\n",
           s.num_rank[0], s.num_rank[1], s.num_rank[2], s.num_rank[3], 1.0 - s.tucker_fit, s.tucker_iters);

    // HOOI from a perturbed start recovers the same subspaces
    UnfoldingSvd u[4];
    const Tensor4 t4 = tensor4_dense(X, dims);
    unfolding_svds(u, &t4, ranks, 0.99, g);
    const double *U0[4] = {u[0].U, u[1].U, u[2].U, u[3].U};
    TuckerModel t;
    tucker_hooi(&t, X, dims, ranks, U0, 1e-10, 50, 0, g);
    CHECK(t.fit >= 1.0 - 1e-6, "HOOI on the double tensor: fit %.12f", t.fit);
    tucker_model_free(&t);
    for (int n = 0; n < 4; n++) unfolding_svd_free(&u[n]);
    layer_score_free(&s);
    free(W);
    free(X);
}

// X = Σ_c a_c ∘ b_c ∘ c_c ∘ d_c, Gaussian (not orthogonal) factors, C terms.
static void check_cp_rank_recovered(const BlacsGrid *g, gsl_rng *rng) {
    const int dims[4] = {6, 8, 20, 3}, C = 3;
    double *A[4];
    for (int n = 0; n < 4; n++) {
        A[n] = xmalloc((size_t)dims[n] * C * sizeof(double));
        for (int i = 0; i < dims[n] * C; i++) A[n][i] = gsl_ran_gaussian(rng, 1.0);
    }
    float *W = xmalloc(dims_size(dims) * sizeof(float));
    size_t idx = 0;
    for (int i0 = 0; i0 < dims[0]; i0++)
        for (int i1 = 0; i1 < dims[1]; i1++)
            for (int i2 = 0; i2 < dims[2]; i2++)
                for (int i3 = 0; i3 < dims[3]; i3++) {
                    double v = 0.0;
                    for (int c = 0; c < C; c++)
                        v += A[0][i0 + c * dims[0]] * A[1][i1 + c * dims[1]] * A[2][i2 + c * dims[2]] *
                             A[3][i3 + c * dims[3]];
                    W[idx++] = (float)v;
                }
    ScoreOptions o;
    score_options_default(&o);
    o.cp_fit_threshold = 1.0 - 1e-6;
    o.cp_max_iter = 1000;
    o.cp_tol = 1e-12;
    LayerScore s;
    score_weights(&s, W, dims, &o, g);
    CHECK(s.cp_rank == C, "CP rank %d chosen, want %d", s.cp_rank, C);
    CHECK(s.cp_fit >= 1.0 - 1e-6, "CP fit %.12f at the chosen rank", s.cp_fit);
    for (int r = 1; r < C; r++)
        CHECK(s.cp_fits[r - 1] < 0.999, "rank %d < %d fits too well (%.9f)", r, C, s.cp_fits[r - 1]);
    printf("  CP [6,8,20,3] of rank 3: chosen rank %d, fit 1 - %.1e; fits by rank:", s.cp_rank, 1.0 - s.cp_fit);
    for (int r = 0; r < s.cp_rank_max; r++) printf(" %.6f", s.cp_fits[r]);
    printf("\n");
    CHECK(s.tucker_fit >= 1.0 - 1e-6, "Tucker fit %.12f on a rank-3 CP tensor", s.tucker_fit);
    layer_score_free(&s);
    free(W);
    for (int n = 0; n < 4; n++) free(A[n]);
}

// The vectors kept follow σ's numerical rank, n_vec = min(d_n, max(n_vec_min,
// numerical_rank(σ))), and are orthonormal; without n_vec_min, σ alone, the same bits.
// The tensor's mode-2 unfolding has orthonormal rows (all σ equal), and the energies
// r/64 (1 + kε) put the threshold on a rounding-level tie, where the Gram matrix's
// eigenvalues (which the vectors task counts before σ is known) may give a smaller rank
// than σ: then the missing vectors are computed afterwards.
static void check_vectors_follow_sigma_rank(const BlacsGrid *g, gsl_rng *rng) {
    const int dims[4] = {4, 16, 64, 3}, m = 64, N = 192;
    double *Q = xmalloc((size_t)N * m * sizeof(double)), *X = xmalloc(dims_size(dims) * sizeof(double));
    random_orthonormal(Q, N, m, rng);
    for (int a = 0; a < 64; a++)  // fibre j = a·3 + b of X_(2) is row j of Q
        for (int b = 0; b < 3; b++)
            for (int i = 0; i < m; i++) X[(a * m + i) * 3 + b] = Q[(a * 3 + b) + (size_t)i * N];
    const int n_vec_min[4] = {0, 2, 0, 0};
    int bad = 0, calls = 0;
    double worst = 0.0;
    for (int r = 8; r <= 24; r += 4)
        for (int k = -4; k <= 4; k++) {
            const double energy = r / 64.0 * (1.0 + k * 1.1e-16);
            UnfoldingSvd u[4], v[4];
            const Tensor4 t = tensor4_dense(X, dims);
            unfolding_svds(u, &t, n_vec_min, energy, g);
            unfolding_svds(v, &t, NULL, energy, g);
            for (int n = 0; n < 4; n++) {
                const int want = u[n].m < n_vec_min[n] ? u[n].m : n_vec_min[n];
                const int rank = numerical_rank(u[n].sv, u[n].n_sv, energy);
                bad += u[n].n_vec != (rank > want ? rank : want);
                bad += v[n].n_vec != 0 || v[n].U != NULL || memcmp(v[n].sv, u[n].sv, (size_t)u[n].n_sv * sizeof(double));
                for (int c = 0; c < u[n].n_vec; c++)  // UᵀU = I
                    for (int e = 0; e <= c; e++) {
                        double dot = 0.0;
                        for (int i = 0; i < u[n].m; i++) dot += u[n].U[i + (size_t)c * u[n].m] * u[n].U[i + (size_t)e * u[n].m];
                        worst = worst_diff(worst, dot, c == e);
                    }
                unfolding_svd_free(&u[n]);
                unfolding_svd_free(&v[n]);
            }
            calls++;
        }
    CHECK(bad == 0, "%d mode(s) with n_vec off σ's numerical rank or a values-only run that differs", bad);
    CHECK(worst < 1e-13, "vectors not orthonormal: |UᵀU − I| up to %.1e", worst);
    printf("  vectors follow σ's numerical rank at %d energies on ties (flat spectrum); |UᵀU − I| %.1e\n", calls,
           worst);
    free(X);
    free(Q);
}

// ---- invariance

// Q = P₁ D₁ H D₂ P₂ / √n (n = 4^k): random signed permutations around the Sylvester
// Hadamard matrix; an orthogonal matrix with entries ±2^-k, so products are exact.
static void hadamard_rotation(double *Q, int n, gsl_rng *rng) {
    int *p1 = xmalloc((size_t)n * sizeof(int)), *p2 = xmalloc((size_t)n * sizeof(int));
    double *s1 = xmalloc((size_t)n * sizeof(double)), *s2 = xmalloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        p1[i] = p2[i] = i;
        s1[i] = gsl_rng_uniform(rng) < 0.5 ? -1.0 : 1.0;
        s2[i] = gsl_rng_uniform(rng) < 0.5 ? -1.0 : 1.0;
    }
    gsl_ran_shuffle(rng, p1, n, sizeof(int));
    gsl_ran_shuffle(rng, p2, n, sizeof(int));
    const double scale = 1.0 / sqrt((double)n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const int a = p1[i], b = p2[j];
            const double h = __builtin_parity((unsigned)(a & b)) ? -1.0 : 1.0;  // Sylvester: (−1)^popcount(a&b)
            Q[i + (size_t)j * n] = s1[i] * h * s2[j] * scale;
        }
    free(p1);
    free(p2);
    free(s1);
    free(s2);
}

static void check_invariance(const BlacsGrid *g, gsl_rng *rng) {
    const int dims[4] = {4, 16, 64, 3}, G = 4, Dg = 16, Dm = 64, R = 3;
    const size_t size = dims_size(dims);
    // small integers with a low-rank part: rounding 6·(rank-(3,6,10,3) tensor) + noise
    const int ranks[4] = {3, 6, 10, 3};
    double *X = tucker_tensor(dims, ranks, 0.05, rng);
    double xmax = 0.0;
    for (size_t i = 0; i < size; i++) xmax = fmax(xmax, fabs(X[i]));
    for (size_t i = 0; i < size; i++) X[i] = round(15.0 * X[i] / xmax);
    float *W = to_float(X, size);

    ScoreOptions o;
    score_options_default(&o);
    LayerScore ref;
    score_weights(&ref, W, dims, &o, g);

    // rotate modes 1 and 2, permute heads: Y[π(g), k', m', ρ] = Σ Q1[k', k] Q2[m', m] X[g, k, m, ρ]
    double *Q1 = xmalloc((size_t)Dg * Dg * sizeof(double)), *Q2 = xmalloc((size_t)Dm * Dm * sizeof(double));
    hadamard_rotation(Q1, Dg, rng);
    hadamard_rotation(Q2, Dm, rng);
    int perm[4] = {2, 0, 3, 1};
    const int x_dims[4] = {G, Dg, Dm, R};
    double *T1 = xmalloc(size * sizeof(double)), *T2 = xmalloc(size * sizeof(double));
    expand_mode(T1, X, x_dims, 1, Q1, Dg);
    expand_mode(T2, T1, x_dims, 2, Q2, Dm);
    const size_t L = size / G;
    float *Wt = xmalloc(size * sizeof(float));
    size_t inexact = 0;
    for (int h = 0; h < G; h++)
        for (size_t l = 0; l < L; l++) {
            const double v = T2[h * L + l];
            Wt[perm[h] * L + l] = (float)v;
            inexact += (double)(float)v != v;
        }
    CHECK(inexact == 0, "rotated tensor not exact in float (%zu entries)", inexact);

    LayerScore rot;
    score_weights(&rot, Wt, dims, &o, g);
    // no rank reaches the 0.9 threshold here: the rank of the best fit is chosen
    CHECK(ref.cp_fits[ref.cp_rank_max - 1] < o.cp_fit_threshold && ref.cp_rank >= 1 &&
              ref.cp_fit == ref.cp_fits[ref.cp_rank - 1],
          "CP rank %d chosen with fit %.6f", ref.cp_rank, ref.cp_fit);
    for (int r = 0; r < ref.cp_rank_max; r++)
        CHECK(ref.cp_fits[r] <= ref.cp_fit, "CP rank %d (fit %.6f) chosen; rank %d fits %.6f", ref.cp_rank,
              ref.cp_fit, r + 1, ref.cp_fits[r]);
    check_same_scores(&ref, &rot, 1e-9, "invariance under rotations of d_k and d_model and a head permutation");
    printf("  invariance (rotate d_k, d_model, permute heads) [4,16,64,3]: max rel diff %.1e; CP rank %d fit %.6f\n",
           max_score_diff(&ref, &rot), ref.cp_rank, ref.cp_fit);

    // each change alone, on a Haar-random rotation of d_model (inexact in float: the
    // σ move by float rounding, 1e-7 relative, and nothing more)
    double *Q3 = xmalloc((size_t)Dm * Dm * sizeof(double));
    random_orthonormal(Q3, Dm, Dm, rng);
    expand_mode(T1, X, x_dims, 2, Q3, Dm);
    float *Wh = to_float(T1, size);
    LayerScore haar;
    o.cp = 0;
    score_weights(&haar, Wh, dims, &o, g);
    double worst = 0.0;  // relative to σ_1 (float rounding is ~1e-7)
    for (int n = 0; n < 4; n++)
        worst = worst_diff(worst, CHECK_ALL_CLOSE(haar.sv[n], ref.sv[n], ref.n_sv[n], 1e-6 * ref.sv[n][0], 0.0,
                                                  "Haar rotation of d_model: σ of mode %d", n) / ref.sv[n][0], 0.0);
    printf("  Haar-random rotation of d_model (float input): max σ change %.1e of σ_1\n", worst);
    o.cp = 1;

    // scaling: RankDeviation and Correlation unchanged (3·W and W/8 are exact)
    RewardSpec spec;
    reward_spec_default(&spec);
    spec.use_mode[1] = spec.use_mode[2] = 1;
    spec.ideal_rank[2] = 5.0;
    const double scales[2] = {3.0, 0.125};
    for (int k = 0; k < 2; k++) {
        float *Ws = xmalloc(size * sizeof(float));
        for (size_t i = 0; i < size; i++) Ws[i] = (float)(scales[k] * W[i]);
        LayerScore sc;
        score_weights(&sc, Ws, dims, &o, g);
        RewardTerms a, b;
        reward_terms_of_scores(&a, &sc, 1, &spec);
        reward_terms_of_scores(&b, &ref, 1, &spec);
        CHECK_CLOSE(a.rank_deviation, b.rank_deviation, 1e-12, 0.0, "RankDeviation under scaling");
        CHECK_CLOSE(a.correlation, b.correlation, 1e-12, 0.0, "Correlation under scaling");
        CHECK_CLOSE(a.rank_deviation_excess, b.rank_deviation_excess, 1e-12, 0.0, "RankDeviation beyond chance under scaling");
        CHECK_CLOSE(a.correlation_excess, b.correlation_excess, 1e-12, 0.0, "Correlation beyond chance under scaling");
        CHECK_CLOSE(sc.norm, scales[k] * ref.norm, 0.0, 1e-12, "‖W‖ scales");
        layer_score_free(&sc);
        free(Ws);
    }
    layer_score_free(&ref);
    layer_score_free(&rot);
    layer_score_free(&haar);
    free(Wh);
    free(Q3);
    free(Wt);
    free(T1);
    free(T2);
    free(Q1);
    free(Q2);
    free(W);
    free(X);
}

// ---- numpy

enum { NP_TENSORS = 4 };

// numpy's σ of the four unfoldings, effective rank and numerical rank (0.99) of each,
// and the head correlation, for tensors written back to back as float32.
static int numpy_reference(double **out, float *const *W, const int (*dims)[4], int n) {
    static const char *script =
        "import sys, numpy as np\n"
        "a = np.fromfile(sys.argv[1], dtype=np.float32).astype(np.float64)\n"
        "d = [int(x) for x in sys.argv[2:]]; off = 0\n"
        "for k in range(0, len(d), 4):\n"
        "    dims = d[k:k + 4]; X = a[off:off + int(np.prod(dims))].reshape(dims); off += X.size\n"
        "    out = []\n"
        "    for m in range(4):\n"
        "        s = np.linalg.svd(np.moveaxis(X, m, 0).reshape(dims[m], -1), compute_uv=False)\n"
        "        p = s / s.sum(); p = p[p > 0]\n"
        "        e = np.cumsum(s ** 2)\n"
        "        out += list(s) + [np.exp(-(p * np.log(p)).sum()), np.searchsorted(e, 0.99 * e[-1]) + 1]\n"
        "    H = X.reshape(dims[0], -1); nrm = np.linalg.norm(H, axis=1); G = dims[0]\n"
        "    den = np.outer(nrm, nrm); C = np.divide(np.abs(H @ H.T), den, out=np.zeros((G, G)), where=den > 0)\n"
        "    out.append(0.0 if G < 2 else (np.minimum(C, 1).sum() - np.minimum(np.diag(C), 1).sum()) / (G * (G - 1)))\n"
        "    print(' '.join('%.17g' % x for x in out))\n";
    NumpyRun run;
    numpy_start(&run, script, W, dims, n);
    FILE *p = run.out;
    int got = 0, want = 0;
    for (int k = 0; k < n; k++) {
        int count = 1;
        for (int m = 0; m < 4; m++) {
            const size_t nsv = dims_size(dims[k]) / dims[k][m];
            count += (dims[k][m] < (int)nsv ? dims[k][m] : (int)nsv) + 2;
        }
        out[k] = xmalloc((size_t)count * sizeof(double));
        want += count;
        for (int j = 0; p && j < count; j++) got += fscanf(p, "%lf", &out[k][j]) == 1;
    }
    numpy_finish(&run);
    return got == want ? 0 : -1;
}

static void check_against_numpy(const BlacsGrid *g, gsl_rng *rng) {
    const int dims[NP_TENSORS][4] = {{4, 16, 64, 3}, {8, 16, 48, 3}, {5, 7, 11, 3}, {12, 2, 2, 2}};
    const int ranks[NP_TENSORS][4] = {{4, 16, 64, 3}, {3, 5, 7, 2}, {5, 7, 11, 3}, {3, 2, 2, 2}};
    const double noise[NP_TENSORS] = {0.1, 0.0, 0.0, 0.0};
    float *W[NP_TENSORS];
    double *ref[NP_TENSORS];
    for (int k = 0; k < NP_TENSORS; k++) {
        double *X = tucker_tensor(dims[k], ranks[k], noise[k], rng);
        W[k] = to_float(X, dims_size(dims[k]));
        free(X);
    }
    int ok = numpy_reference(ref, W, dims, NP_TENSORS) == 0;
    CHECK(ok, "could not run numpy (/usr/bin/python3) for the reference values");
    ScoreOptions o;
    score_options_default(&o);
    o.cp = 0;
    for (int k = 0; ok && k < NP_TENSORS; k++) {
        LayerScore s;
        score_weights(&s, W[k], dims[k], &o, g);
        const double *r = ref[k];
        double sv_diff = 0.0, eff_diff = 0.0;  // relative to σ_1, relative
        for (int n = 0; n < 4; n++) {
            sv_diff = worst_diff(sv_diff, CHECK_ALL_CLOSE(s.sv[n], r, s.n_sv[n], 1e-8 * r[0], 1e-8,
                                                          "σ of mode %d vs numpy", n) / r[0], 0.0);
            r += s.n_sv[n];
            eff_diff = worst_diff(eff_diff, CHECK_CLOSE(s.eff_rank[n], r[0], 0.0, 1e-8,
                                                        "mode %d effective rank vs numpy", n) / r[0], 0.0);
            CHECK(s.num_rank[n] == (int)r[1], "mode %d numerical rank %d, numpy %d", n, s.num_rank[n], (int)r[1]);
            r += 2;
        }
        CHECK_CLOSE(s.correlation, r[0], 1e-8, 0.0, "head correlation vs numpy");
        printf("  numpy [%d,%d,%d,%d]: σ max diff %.1e of σ_1, eff. rank max rel diff %.1e, correlation diff %.1e\n",
               dims[k][0], dims[k][1], dims[k][2], dims[k][3], sv_diff, eff_diff, fabs(s.correlation - r[0]));
        layer_score_free(&s);
    }
    for (int k = 0; k < NP_TENSORS; k++) {
        if (ok) free(ref[k]);
        free(W[k]);
    }
}

// ---- edge cases and the reward

static void check_edge_cases(const BlacsGrid *g, gsl_rng *rng) {
    ScoreOptions o;
    score_options_default(&o);
    const int dims[4] = {3, 4, 5, 3};
    float *W = xcalloc(dims_size(dims), sizeof(float));
    LayerScore s;
    score_weights(&s, W, dims, &o, g);
    for (int n = 0; n < 4; n++) {
        CHECK(s.num_rank[n] == 0 && s.eff_rank[n] == 0.0 && s.sv[n][0] == 0.0, "zero tensor: mode %d", n);
        CHECK(s.core_energy[n] == 0.0, "zero tensor: core energy %g", s.core_energy[n]);
    }
    CHECK(s.correlation == 0.0 && s.norm == 0.0, "zero tensor: correlation %g", s.correlation);
    CHECK(isnan(s.tucker_fit) && s.cp_rank == 0, "zero tensor: no fit (got %g, CP rank %d)", s.tucker_fit,
          s.cp_rank);
    layer_score_free(&s);

    // one head: no pairs, correlation 0; two identical heads and one zero head: 1 (a zero
    // row, a head that writes nothing, is in no pair)
    const int one[4] = {1, 4, 6, 3};
    const int three[4] = {3, 4, 6, 3};
    float *V = xmalloc(dims_size(three) * sizeof(float));
    for (size_t i = 0; i < dims_size(one); i++) V[i] = V[i + dims_size(one)] = (float)gsl_ran_gaussian(rng, 1.0);
    memset(V + 2 * dims_size(one), 0, dims_size(one) * sizeof(float));
    score_weights(&s, V, one, &o, g);
    CHECK(s.correlation == 0.0, "one head: correlation %g", s.correlation);
    CHECK(s.n_sv[0] == 1 && s.eff_rank[0] == 1.0, "one head: %d σ, effective rank %g", s.n_sv[0], s.eff_rank[0]);
    layer_score_free(&s);
    score_weights(&s, V, three, &o, g);
    CHECK_CLOSE(s.correlation, 1.0, 1e-12, 0.0, "two equal heads and a zero head");
    layer_score_free(&s);
    free(V);
    free(W);
}

static void check_reward(void) {
    RewardSpec r;
    reward_spec_default(&r);
    CHECK(r.beta == 0.1 && r.gamma == 0.1 && r.use_mode[0] && !r.use_mode[1] && !r.use_mode[2] && !r.use_mode[3],
          "reward defaults");
    LayerScore L[2];
    memset(L, 0, sizeof L);
    L[0].n_sv[0] = 8, L[0].eff_rank[0] = 6.0, L[0].correlation = 0.2;  // |6 − 8| / 8 = 0.25
    L[1].n_sv[0] = 4, L[1].eff_rank[0] = 4.0, L[1].correlation = 0.4;  // 0
    L[0].n_sv[2] = 10, L[0].eff_rank[2] = 3.0;
    L[1].n_sv[2] = 10, L[1].eff_rank[2] = 9.0;
    // the nulls: chance RankDeviation |7 − 8| / 8 = 0.125 and |3.5 − 4| / 4 = 0.125
    L[0].correlation_chance = 0.1, L[0].correlation_chance_sd = 0.02, L[0].eff_rank_chance = 7.0, L[0].eff_rank_chance_sd = 0.5;
    L[1].correlation_chance = 0.3, L[1].correlation_chance_sd = 0.05, L[1].eff_rank_chance = 3.5, L[1].eff_rank_chance_sd = 0.25;
    RewardTerms t;
    reward_terms_of_scores(&t, L, 2, &r);
    CHECK_CLOSE(t.rank_deviation, 0.125, 1e-15, 0.0, "RankDeviation, mode 0, ideal r_max");
    CHECK_CLOSE(t.rank_deviation_excess, ((0.25 - 0.125) + (0.0 - 0.125)) / 2, 1e-15, 1e-15, "RankDeviation beyond chance");
    CHECK_CLOSE(t.correlation, 0.3, 1e-15, 0.0, "Correlation");
    CHECK_CLOSE(t.correlation_chance, 0.2, 1e-15, 0.0, "Correlation's chance");
    CHECK_CLOSE(t.correlation_excess, 0.1, 1e-15, 0.0, "Correlation beyond chance");
    CHECK_CLOSE(t.correlation_z, 0.2 / sqrt(0.02 * 0.02 + 0.05 * 0.05), 1e-14, 0.0, "the layers' Correlation z");
    CHECK_CLOSE(t.eff_rank_z, -0.5 / sqrt(0.25 + 0.0625), 1e-14, 0.0, "the layers' heads z");
    CHECK_CLOSE(reward_value(0.9, &t, &r), 0.9 - 0.1 * t.rank_deviation_excess - 0.01, 1e-15, 0.0, "reward");
    r.use_mode[2] = 1;
    r.ideal_rank[0] = 2.0;
    r.ideal_rank[2] = 5.0;  // (4/8 + 2/4 + 2/10 + 4/10) / 4; chance (5/8 + 1.5/4) for mode 0, none for mode 2
    reward_terms_of_scores(&t, L, 2, &r);
    CHECK_CLOSE(t.rank_deviation, (0.5 + 0.5 + 0.2 + 0.4) / 4, 1e-15, 0.0, "RankDeviation, modes 0 and 2");
    CHECK_CLOSE(t.rank_deviation_excess, (0.5 - 0.625 + 0.5 - 0.375 + 0.2 + 0.4) / 4, 1e-15, 1e-15,
                "RankDeviation beyond chance, modes 0 and 2 (mode 2 as measured)");
    r.ideal_rank[0] = 100.0;  // above r_max: clamped, stays in [0, 1]
    r.use_mode[2] = 0;
    reward_terms_of_scores(&t, L, 2, &r);
    CHECK_CLOSE(t.rank_deviation, 0.125, 1e-15, 0.0, "RankDeviation, ideal above r_max");
    // a Grassmann layer pays no head terms: its excesses are 0 and it is in no z
    L[1].mixing = 1;
    reward_terms_of_scores(&t, L, 2, &r);
    CHECK_CLOSE(t.rank_deviation_excess, (0.25 - 0.125) / 2, 1e-15, 0.0, "RankDeviation beyond chance, a mixing layer");
    CHECK_CLOSE(t.correlation_excess, 0.1 / 2, 1e-15, 0.0, "Correlation beyond chance, a mixing layer");
    CHECK_CLOSE(t.correlation_z, 0.1 / 0.02, 1e-14, 0.0, "Correlation z without the mixing layer");
    L[0].mixing = 1;
    reward_terms_of_scores(&t, L, 2, &r);
    CHECK(t.rank_deviation_excess == 0.0 && t.correlation_excess == 0.0 && isnan(t.correlation_z) && isnan(t.eff_rank_z),
          "Grassmann alone: no head terms (%g %g), no z (%g %g)", t.rank_deviation_excess, t.correlation_excess,
          t.correlation_z, t.eff_rank_z);
    reward_terms_of_scores(&t, L, 0, &r);
    CHECK(t.rank_deviation == 0.0 && t.correlation == 0.0 && t.rank_deviation_excess == 0.0, "no layers");
}

// Median time to score the small layer of the training monitor.
static void time_small_layer(const BlacsGrid *g, gsl_rng *rng) {
    const int dims[4] = {4, 16, 64, 3}, ranks[4] = {4, 12, 24, 3};
    double *X = tucker_tensor(dims, ranks, 0.05, rng);
    float *W = to_float(X, dims_size(dims));
    ScoreOptions o;
    score_options_default(&o);
    enum { REPS = 21 };
    for (int cp = 0; cp < 2; cp++) {
        o.cp = cp;
        double t[REPS];
        LayerScore s;
        for (int k = 0; k < REPS; k++) {
            const double t0 = now_seconds();
            score_weights(&s, W, dims, &o, g);
            t[k] = now_seconds() - t0;
            if (k + 1 < REPS) layer_score_free(&s);
        }
        for (int i = 1; i < REPS; i++)  // insertion sort for the median
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
                const double tmp = t[j];
                t[j] = t[j - 1];
                t[j - 1] = tmp;
            }
        printf("  time to score [4,16,64,3] %s: median %.2f ms (min %.2f) over %d runs; HOOI %d sweeps%s\n",
               cp ? "with the CP sweep 1..8" : "(Tucker, no CP)", 1e3 * t[REPS / 2], 1e3 * t[0], REPS,
               s.tucker_iters, cp ? "" : "  [target < 5 ms]");
        layer_score_free(&s);
    }
    free(W);
    free(X);
}


int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    BlacsGrid g;
    grid_init(&g, MPI_COMM_SELF);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);

    check_tucker_ranks_recovered(&g, rng);
    check_cp_rank_recovered(&g, rng);
    check_invariance(&g, rng);
    check_against_numpy(&g, rng);
    check_edge_cases(&g, rng);
    check_reward();
    time_small_layer(&g, rng);
    check_vectors_follow_sigma_rank(&g, rng);

    gsl_rng_free(rng);
    grid_free(&g);
    MPI_Finalize();
    return check_report("test_invariants");
}
