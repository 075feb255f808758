// chance.c: the head correlation that independent Gaussian weights of a layer's shape
// give, so that a measured Correlation can be read against chance (see chance.h).
//
// parameters  the rows of the head unfolding are independent Gaussian vectors of length
//             n = Dg·Dm·R, and |cos| of two such vectors has the exact mean
//             Γ(n/2) / (√π Γ((n+1)/2))    (≈ √(2/(πn)) for large n);
//  function, softmax heads: rows (B_g, C_g) with every factor entry N(0, 1). A pair's
//             inner products need only the d_k × d_k blocks of the factors' Gram
//             matrices (circuits.h): for each role the Gram of the stacked factor rows
//             [L_g; L_h] (2d_k × d_model, independent N(0, 1) rows) is Wishart with
//             d_model degrees of freedom, and so is that of [R_g; R_h]; ⟨X_g, X_h⟩ =
//             Σ_{a,b} WL[a, d_k + b]·WR[a, d_k + b] and ‖X_g‖² likewise from the diagonal
//             blocks, QK scaled by 1/d_k as B is. Sampled by Bartlett's decomposition,
//             or as Gaussian rows when d_model < 2d_k (no Wishart then).
//  function, Grassmann: W_red (r × d_model) and W_plu N(0, 1): M = W_red W_redᵀ is
//             Wishart(d_model) of size r, the A_o of two output features independent
//             antisymmetric Gaussian matrices, and cos = ⟨A_o, M A_p M⟩ / √(⟨A_o, M A_o M⟩
//             ⟨A_p, M A_p M⟩); a fresh M per pair.
// The Monte Carlo means are over a fixed number of independent pairs from a fixed seed
// (so a shape always gets the same number): 2000 pairs, fewer (down to 200) where a pair
// costs more than 5·10⁵ flops, with a standard error of 0.76/√pairs of the mean (1.7 %
// at 2000, 5.3 % at 200). Each shape is computed once per process.
#define _DEFAULT_SOURCE  // M_PI
#include "invariants/chance.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

#include "common/util.h"

#define CHANCE_SEED 20261201UL
#define PAIRS_MAX 2000
#define PAIRS_MIN 200
#define PAIR_BUDGET 1e9  // flops all pairs of one shape may cost

static int pairs_for(double flops_per_pair) {
    double p = PAIR_BUDGET / flops_per_pair;
    return p > PAIRS_MAX ? PAIRS_MAX : p < PAIRS_MIN ? PAIRS_MIN : (int)p;
}

// W (p × p) = the Gram of p independent N(0, 1) rows of length df: for df ≥ p by
// Bartlett's decomposition, W = A Aᵀ with A lower triangular, A_ii = √χ²(df − i) and
// A_ij ~ N(0, 1) below the diagonal (p(p+1)/2 draws, not p·df; GSL's gsl_ran_wishart does
// the same with slower normals and a general scale matrix), else from the rows
// themselves (`rows`, p × df). A is p × p scratch.
static void wishart(gsl_matrix *W, gsl_rng *rng, int df, gsl_matrix *A, gsl_matrix *rows) {
    gsl_matrix *F = A;
    if (rows) {
        F = rows;
        for (size_t i = 0; i < rows->size1; i++)
            for (size_t j = 0; j < rows->size2; j++) gsl_matrix_set(rows, i, j, gsl_ran_gaussian_ziggurat(rng, 1.0));
    } else {
        gsl_matrix_set_zero(A);
        for (size_t i = 0; i < A->size1; i++) {
            gsl_matrix_set(A, i, i, sqrt(gsl_ran_chisq(rng, (double)df - (double)i)));
            for (size_t j = 0; j < i; j++) gsl_matrix_set(A, i, j, gsl_ran_gaussian_ziggurat(rng, 1.0));
        }
    }
    gsl_blas_dsyrk(CblasLower, CblasNoTrans, 1.0, F, 0.0, W);
    for (size_t i = 0; i < W->size1; i++)
        for (size_t j = 0; j < i; j++) gsl_matrix_set(W, j, i, gsl_matrix_get(W, i, j));
}

// Σ_{a,b < d_k} WL[a0 + a, b0 + b]·WR[a0 + a, b0 + b]
static double block_dot(const gsl_matrix *WL, const gsl_matrix *WR, int a0, int b0, int dk) {
    double s = 0.0;
    for (int a = 0; a < dk; a++)
        for (int b = 0; b < dk; b++) s += gsl_matrix_get(WL, a0 + a, b0 + b) * gsl_matrix_get(WR, a0 + a, b0 + b);
    return s;
}

static double circuits_chance_mc(int dk, int D) {
    const int p = 2 * dk, direct = D < p;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, CHANCE_SEED);
    gsl_matrix *WL = gsl_matrix_alloc(p, p), *WR = gsl_matrix_alloc(p, p), *A = gsl_matrix_alloc(p, p);
    gsl_matrix *rows = direct ? gsl_matrix_alloc(p, D) : NULL;
    const int pairs = pairs_for(4.0 * (direct ? (double)p * p * D : (double)p * p * p));
    double sum = 0.0;
    for (int k = 0; k < pairs; k++) {
        double gh = 0.0, gg = 0.0, hh = 0.0;
        for (int rho = 0; rho < 2; rho++) {
            const double scale = rho == 0 ? 1.0 / dk : 1.0;  // B = W_Qᵀ W_K / √d_k
            wishart(WL, rng, D, A, rows);
            wishart(WR, rng, D, A, rows);
            gh += scale * block_dot(WL, WR, 0, dk, dk);
            gg += scale * block_dot(WL, WR, 0, 0, dk);
            hh += scale * block_dot(WL, WR, dk, dk, dk);
        }
        sum += fabs(gh) / sqrt(gg * hh);
    }
    gsl_matrix_free(rows);
    gsl_matrix_free(A);
    gsl_matrix_free(WR);
    gsl_matrix_free(WL);
    gsl_rng_free(rng);
    return sum / pairs;
}

// A (r × r) antisymmetric, entries above the diagonal N(0, 1).
static void antisymmetric(gsl_matrix *A, gsl_rng *rng) {
    gsl_matrix_set_zero(A);
    for (size_t i = 0; i < A->size1; i++)
        for (size_t j = i + 1; j < A->size2; j++) {
            const double x = gsl_ran_gaussian_ziggurat(rng, 1.0);
            gsl_matrix_set(A, i, j, x);
            gsl_matrix_set(A, j, i, -x);
        }
}

// ⟨A, M B M⟩ (T scratch r × r, Q scratch r × r).
static double form_inner(const gsl_matrix *A, const gsl_matrix *M, const gsl_matrix *B, gsl_matrix *T, gsl_matrix *Q) {
    gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, M, B, 0.0, T);
    gsl_blas_dgemm(CblasNoTrans, CblasNoTrans, 1.0, T, M, 0.0, Q);
    double s = 0.0;
    for (size_t i = 0; i < A->size1; i++)
        for (size_t j = 0; j < A->size2; j++) s += gsl_matrix_get(A, i, j) * gsl_matrix_get(Q, i, j);
    return s;
}

static double kernel_chance_mc(int r, int D) {
    const int direct = D < r;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, CHANCE_SEED);
    gsl_matrix *M = gsl_matrix_alloc(r, r), *work = gsl_matrix_alloc(r, r);
    gsl_matrix *A = gsl_matrix_alloc(r, r), *B = gsl_matrix_alloc(r, r), *T = gsl_matrix_alloc(r, r);
    gsl_matrix *Q = gsl_matrix_alloc(r, r), *rows = direct ? gsl_matrix_alloc(r, D) : NULL;
    const int pairs = pairs_for(12.0 * r * r * r);
    double sum = 0.0;
    for (int k = 0; k < pairs; k++) {
        wishart(M, rng, D, work, rows);
        antisymmetric(A, rng);
        antisymmetric(B, rng);
        const double ab = form_inner(A, M, B, T, Q), aa = form_inner(A, M, A, T, Q), bb = form_inner(B, M, B, T, Q);
        sum += fabs(ab) / sqrt(aa * bb);
    }
    gsl_matrix_free(rows);
    gsl_matrix_free(Q);
    gsl_matrix_free(T);
    gsl_matrix_free(B);
    gsl_matrix_free(A);
    gsl_matrix_free(work);
    gsl_matrix_free(M);
    gsl_rng_free(rng);
    return sum / pairs;
}

double correlation_chance_of_rows(double n) {
    return n < 2 ? 1.0 : exp(lgamma(n / 2) - lgamma((n + 1) / 2)) / sqrt(M_PI);
}

// The Monte Carlo means, each shape computed once.
static double cached(int kind, int a, int b) {
    typedef struct {
        int kind, a, b;
        double value;
    } Entry;
    static Entry cache[16];
    static int n_cache = 0;
    for (int i = 0; i < n_cache; i++)
        if (cache[i].kind == kind && cache[i].a == a && cache[i].b == b) return cache[i].value;
    const double v = kind ? kernel_chance_mc(a, b) : circuits_chance_mc(a, b);
    if (n_cache < 16) cache[n_cache++] = (Entry){kind, a, b, v};
    return v;
}

double circuits_chance(int d_k, int d_model) { return cached(0, d_k, d_model); }
double mixing_kernel_chance(int r, int d_model) { return cached(1, r, d_model); }
