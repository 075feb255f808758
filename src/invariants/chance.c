// chance.c: the head correlation a layer would have by chance, so that a measured
// Correlation can be read against it (see chance.h).
//
// parameters  the rows of the head unfolding rotated at random (or independent Gaussian
//             vectors) of length n: |cos| of two such rows has the exact mean
//             Γ(n/2) / (√π Γ((n+1)/2))    (≈ √(2/(πn)) for large n) and E cos² = 1/n;
//  function, softmax heads: the rotation null (correlation_rotation_null, chance.h);
//  function, Grassmann: W_red (r × d_model) and W_plu N(0, 1): M = W_red W_redᵀ is
//             Wishart(d_model) of size r, the A_o of two output features independent
//             antisymmetric Gaussian matrices, and cos = ⟨A_o, M A_p M⟩ / √(⟨A_o, M A_o M⟩
//             ⟨A_p, M A_p M⟩); a fresh M per pair.
// The Grassmann Monte Carlo mean is over a fixed number of independent pairs from a fixed
// seed (so a shape always gets the same number): 2000 pairs, fewer (down to 200) where a
// pair costs more than 5·10⁵ flops, with a standard error of 0.76/√pairs of the mean (1.7 %
// at 2000, 5.3 % at 200). Each shape is computed once per process.
#define _DEFAULT_SOURCE  // M_PI
#include "invariants/chance.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

#include "common/util.h"
#include "invariants/tucker.h"

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
double mixing_kernel_chance(int r, int d_model) {
    typedef struct {
        int r, d_model;
        double value;
    } Entry;
    static Entry cache[16];
    static int n_cache = 0;
    for (int i = 0; i < n_cache; i++)
        if (cache[i].r == r && cache[i].d_model == d_model) return cache[i].value;
    const double v = kernel_chance_mc(r, d_model);
    if (n_cache < 16) cache[n_cache++] = (Entry){r, d_model, v};
    return v;
}

// σ²_gh of the rotation null (chance.h) of heads g and h, and their rows' squared norms;
// 0 when either row is zero.
static double pair_variance(const double *part2, int g, int h, int parts, double n1n2, double *ng, double *nh) {
    double cross = 0.0;
    *ng = *nh = 0.0;
    for (int p = 0; p < parts; p++) {
        const double a = part2[g * parts + p], b = part2[h * parts + p];
        cross += a * b, *ng += a, *nh += b;
    }
    if (!(*ng > 0.0 && *nh > 0.0)) return 0.0;
    return parts == 1 ? 1.0 / n1n2 : cross / (n1n2 * *ng * *nh);
}

ChanceNull correlation_rotation_null(const double *part2, int heads, int parts, double n1n2) {
    double mean = 0.0, var = 0.0, ng, nh;
    long pairs = 0;
    const double exact = parts == 1 ? correlation_chance_of_rows(n1n2) : 0.0;
    for (int g = 0; g < heads; g++)
        for (int h = g + 1; h < heads; h++) {
            const double s2 = pair_variance(part2, g, h, parts, n1n2, &ng, &nh);
            if (!(ng > 0.0 && nh > 0.0)) continue;  // a zero row is in no pair
            pairs++;
            if (parts == 1) {
                mean += exact, var += s2 - exact * exact;
            } else {
                mean += sqrt(2.0 * s2 / M_PI), var += s2 * (1.0 - 2.0 / M_PI);
            }
        }
    return pairs ? (ChanceNull){mean / (double)pairs, sqrt(var) / (double)pairs} : (ChanceNull){0.0, 0.0};
}

#define RANK_NULL_DRAWS 256

// A head and its parts' squared norms, ordered by them.
typedef struct {
    int head, parts;
    const double *norm2;
} HeadNorms;

static int by_norms(const void *a, const void *b) {
    const HeadNorms *x = a, *y = b;
    for (int p = 0; p < x->parts; p++)
        if (x->norm2[p] != y->norm2[p]) return x->norm2[p] < y->norm2[p] ? -1 : 1;
    return 0;
}

ChanceNull eff_rank_rotation_null(const double *part2, int heads, int parts, double n1n2) {
    // The draws go to the heads in the order of their norms, so that a permutation of the
    // heads draws the same matrices (heads of equal norms have equal variances).
    HeadNorms *order = xmalloc((size_t)heads * sizeof *order);
    for (int h = 0; h < heads; h++) order[h] = (HeadNorms){h, parts, part2 + (size_t)h * parts};
    qsort(order, (size_t)heads, sizeof *order, by_norms);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, CHANCE_SEED);
    gsl_matrix *G = gsl_matrix_alloc((size_t)heads, (size_t)heads);
    gsl_vector *lam = gsl_vector_alloc((size_t)heads);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc((size_t)heads);
    double *sv = xmalloc((size_t)heads * sizeof(double)), sum = 0.0, sum2 = 0.0, ng, nh;
    for (int k = 0; k < RANK_NULL_DRAWS; k++) {
        for (int i = 0; i < heads; i++) {
            const int g = order[i].head;
            double diag = 0.0;
            for (int p = 0; p < parts; p++) diag += part2[g * parts + p];
            gsl_matrix_set(G, i, i, diag);
            for (int j = i + 1; j < heads; j++) {
                const int h = order[j].head;
                const double s2 = pair_variance(part2, g, h, parts, n1n2, &ng, &nh);
                const double x = s2 > 0.0 ? sqrt(ng * nh * s2) * gsl_ran_gaussian_ziggurat(rng, 1.0) : 0.0;
                gsl_matrix_set(G, i, j, x);
                gsl_matrix_set(G, j, i, x);
            }
        }
        gsl_eigen_symm(G, lam, ws);  // destroys G, which the next draw rebuilds
        for (int i = 0; i < heads; i++) sv[i] = sqrt(fmax(0.0, gsl_vector_get(lam, i)));
        const double e = effective_rank(sv, heads);
        sum += e, sum2 += e * e;
    }
    const double mean = sum / RANK_NULL_DRAWS;
    free(order);
    free(sv);
    gsl_eigen_symm_free(ws);
    gsl_vector_free(lam);
    gsl_matrix_free(G);
    gsl_rng_free(rng);
    return (ChanceNull){mean, sqrt(fmax(0.0, sum2 / RANK_NULL_DRAWS - mean * mean))};
}
