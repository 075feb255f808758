// CP-ALS for a four-mode tensor, dense or from its factors (see cp.h).
//
// Notation: X ∈ R^{d0×d1×d2×d3} row-major (i3 fastest), N = d0·d1·d2·d3 entries, rank R,
// factors A_n (d_n × R, column-major), Gram matrices G_n = A_nᵀA_n (R × R), ⊛ the
// Hadamard product, and for two factors (A ⊙ B)[ia·db + ib, r] = A[ia, r]·B[ib, r].
//
// One ALS sweep updates A_0, A_1, A_2, A_3 in turn (Kolda & Bader 2009, fig. 3.3):
//     M   = X_(n) (⊙_{m≠n} A_m)               MTTKRP, d_n × R
//     V   = ⊛_{m≠n} G_m                        R × R, symmetric positive semi-definite
//     A_n = M V⁻¹,   λ_r = ‖A_n(:, r)‖₂,   A_n(:, r) /= λ_r
// Columns are normalised by their 2-norm in every sweep, not only the first (Kolda &
// Bader switch to the max-norm afterwards). The choice changes only how the scale is
// split between λ and the columns, never the model X̂ (each update is equivariant under
// column scaling of the other factors); the 2-norm leaves the unit-norm columns cp.h
// promises without a final pass. A column whose least-squares solution is exactly zero
// stays zero with λ_r = 0.
//
// V is solved by Cholesky (dpotrf, then two triangular solves from the right: A V = M
// with V = UᵀU). When V is not numerically positive definite (dpotrf fails, or its
// reciprocal condition estimate is below ε), A = M V⁺ with the pseudo-inverse from the
// eigendecomposition of V, eigenvalues at or below R·ε·w_max dropped (the cut-off of
// MATLAB's pinv). This happens with duplicate or collinear initial columns.
//
// MTTKRP by a dimension tree (Phan, Tichavský & Cichocki 2013, "Fast alternating LS
// algorithms for high order CANDECOMP/PARAFAC tensor factorizations"). Read as the
// row-major (d0·d1) × (d2·d3) matrix X_(01|23), X needs no copy or permutation, and a
// sweep passes over it twice, one GEMM each:
//     T = X_(01|23) (A_2 ⊙ A_3)      (d0·d1) × R, with A_2, A_3 from the previous sweep:
//         M_0[i0, r] = Σ_i1 T[i0·d1 + i1, r] A_1[i1, r]
//         M_1[i1, r] = Σ_i0 T[i0·d1 + i1, r] A_0[i0, r]    (A_0 already updated)
//     U = X_(01|23)ᵀ (A_0 ⊙ A_1)     (d2·d3) × R, with the updated A_0, A_1:
//         M_2[i2, r] = Σ_i3 U[i2·d3 + i3, r] A_3[i3, r]
//         M_3[i3, r] = Σ_i2 U[i2·d3 + i3, r] A_2[i2, r]    (A_2 already updated)
// so a sweep costs 4·N·R flops in GEMM (four independent MTTKRPs: 8·N·R) plus
// O((d0·d1 + d2·d3)·R) for the contractions.
//
// Fit without forming X̂ (as SPLATT), after the sweep's last update:
//     ‖X̂‖²   = λᵀ (⊛_n G_n) λ
//     ⟨X, X̂⟩ = Σ_r λ_r Σ_i3 M_3[i3, r] A_3[i3, r]
//     fit    = 1 − √max(0, ‖X‖² + ‖X̂‖² − 2⟨X, X̂⟩) / ‖X‖
// The subtraction of nearly equal terms limits the fit's resolution near 1 to about
// √ε ≈ 1e-8 (relative residual), so a tolerance much below 1e-8 on an exactly
// representable tensor runs to max_iter.
//
// Deterministic: fixed operation order, no threading of our own; with a given OpenBLAS
// build and thread count the same input gives the same bits.
#include "invariants/cp.h"

#include <cblas.h>
#include <float.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "invariants/tensor4.h"

#define FILL_SEED 20240611UL  // the generator for zero initial columns (see copy_init)

typedef struct {
    int d[4], R;
    int P, Q;           // d0·d1 and d2·d3: X_(01|23) is P × Q
    double *kr;         // max(P, Q) × R   Khatri-Rao product of two factors
    double *T;          // P × R           X_(01|23) (A_2 ⊙ A_3)
    double *U;          // Q × R           X_(01|23)ᵀ (A_0 ⊙ A_1)
    double *M;          // max d_n × R     MTTKRP of the mode being updated
    double *gram[4];    // R × R           G_n = A_nᵀA_n, both triangles
    double *V;          // R × R           ⊛_{m≠n} G_m
    double *chol;       // R × R           Cholesky factor of V, or its eigenvectors
    double *w;          // R               eigenvalues of V
    double *tmp;        // max d_n × R     M Q in the pseudo-inverse solve
} Work;

static int max_int(int a, int b) { return a > b ? a : b; }

static void work_init(Work *w, const int d[4], int R) {
    memcpy(w->d, d, sizeof w->d);
    w->R = R;
    w->P = d[0] * d[1];
    w->Q = d[2] * d[3];
    const size_t dmax = (size_t)max_int(max_int(d[0], d[1]), max_int(d[2], d[3]));
    const size_t RR = (size_t)R * R;
    w->kr = xmalloc((size_t)max_int(w->P, w->Q) * R * sizeof(double));
    w->T = xmalloc((size_t)w->P * R * sizeof(double));
    w->U = xmalloc((size_t)w->Q * R * sizeof(double));
    w->M = xmalloc(dmax * R * sizeof(double));
    w->tmp = xmalloc(dmax * R * sizeof(double));
    for (int n = 0; n < 4; n++) w->gram[n] = xmalloc(RR * sizeof(double));
    w->V = xmalloc(RR * sizeof(double));
    w->chol = xmalloc(RR * sizeof(double));
    w->w = xmalloc((size_t)R * sizeof(double));
}

static void work_free(Work *w) {
    free(w->kr);
    free(w->T);
    free(w->U);
    free(w->M);
    free(w->tmp);
    for (int n = 0; n < 4; n++) free(w->gram[n]);
    free(w->V);
    free(w->chol);
    free(w->w);
}

// K ((da·db) × R) = A ⊙ B:  K[ia·db + ib, r] = A[ia, r]·B[ib, r].
static void khatri_rao(double *K, const double *A, const double *B, int da, int db, int R) {
    for (int r = 0; r < R; r++) {
        double *k = K + (size_t)r * da * db;
        const double *a = A + (size_t)r * da, *b = B + (size_t)r * db;
        for (int ia = 0; ia < da; ia++)
            for (int ib = 0; ib < db; ib++) k[(size_t)ia * db + ib] = a[ia] * b[ib];
    }
}

// T (P × R) = X_(01|23) (A_2 ⊙ A_3). X_(01|23) row-major P × Q is column-major Q × P,
// so it enters transposed. A circuits tensor computes it from its factors (tensor4.h).
static void partial_right(Work *w, const Tensor4 *t, const double *A2, const double *A3) {
    if (t->c) {
        circuits_partial_right(w->T, t->c, A2, A3, w->R);
        return;
    }
    khatri_rao(w->kr, A2, A3, w->d[2], w->d[3], w->R);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, w->P, w->R, w->Q, 1.0, t->X, w->Q, w->kr, w->Q, 0.0,
                w->T, w->P);
}

// U (Q × R) = X_(01|23)ᵀ (A_0 ⊙ A_1).
static void partial_left(Work *w, const Tensor4 *t, const double *A0, const double *A1) {
    if (t->c) {
        circuits_partial_left(w->U, t->c, A0, A1, w->R);
        return;
    }
    khatri_rao(w->kr, A0, A1, w->d[0], w->d[1], w->R);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, w->Q, w->R, w->P, 1.0, t->X, w->Q, w->kr, w->P, 0.0,
                w->U, w->Q);
}

// out (da × R)[ia, r] = Σ_ib Pt[ia·db + ib, r] B[ib, r]   (Pt: (da·db) × R, B: db × R)
static void contract_second(double *out, const double *Pt, const double *B, int da, int db, int R) {
    for (int r = 0; r < R; r++) {
        const double *p = Pt + (size_t)r * da * db, *b = B + (size_t)r * db;
        for (int ia = 0; ia < da; ia++) {
            double s = 0.0;
            for (int ib = 0; ib < db; ib++) s += p[(size_t)ia * db + ib] * b[ib];
            out[(size_t)r * da + ia] = s;
        }
    }
}

// out (db × R)[ib, r] = Σ_ia Pt[ia·db + ib, r] A[ia, r]   (Pt: (da·db) × R, A: da × R)
static void contract_first(double *out, const double *Pt, const double *A, int da, int db, int R) {
    for (int r = 0; r < R; r++) {
        const double *p = Pt + (size_t)r * da * db, *a = A + (size_t)r * da;
        double *o = out + (size_t)r * db;
        for (int ib = 0; ib < db; ib++) o[ib] = 0.0;
        for (int ia = 0; ia < da; ia++)
            for (int ib = 0; ib < db; ib++) o[ib] += p[(size_t)ia * db + ib] * a[ia];
    }
}

// w->M (d_n × R) = MTTKRP of mode n from the partial that covers it: T for modes 0, 1
// (partial_right done), U for modes 2, 3 (partial_left done).
static void mttkrp_from_partial(Work *w, const double *const A[4], int n) {
    const int *d = w->d;
    switch (n) {
    case 0: contract_second(w->M, w->T, A[1], d[0], d[1], w->R); break;
    case 1: contract_first(w->M, w->T, A[0], d[0], d[1], w->R); break;
    case 2: contract_second(w->M, w->U, A[3], d[2], d[3], w->R); break;
    default: contract_first(w->M, w->U, A[2], d[2], d[3], w->R); break;
    }
}

void cp_mttkrp(double *M, const Tensor4 *t, int rank, const double *const factor[4], int n) {
    const int *dims = t->dims;
    Work w;
    work_init(&w, dims, rank);
    if (n < 2)
        partial_right(&w, t, factor[2], factor[3]);
    else
        partial_left(&w, t, factor[0], factor[1]);
    mttkrp_from_partial(&w, factor, n);
    memcpy(M, w.M, (size_t)dims[n] * rank * sizeof(double));
    work_free(&w);
}

// G (R × R) = AᵀA for A (d × R), both triangles.
static void gram(double *G, const double *A, int d, int R) {
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, R, d, 1.0, A, d, 0.0, G, R);
    for (int j = 0; j < R; j++)
        for (int i = j + 1; i < R; i++) G[(size_t)j * R + i] = G[(size_t)i * R + j];
}

// A (d × R) ← A V⁺ for symmetric PSD V (R × R), V = Q diag(w) Qᵀ (Q in w->chol):
// V⁺ = Q diag(1/w) Qᵀ over the eigenvalues w > R·ε·w_max. Returns -1 if dsyevd fails.
static int solve_pinv(double *A, Work *w, int d) {
    const int R = w->R;
    memcpy(w->chol, w->V, (size_t)R * R * sizeof(double));
    if (LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', R, w->chol, R, w->w) != 0) return -1;
    const double cut = R * DBL_EPSILON * w->w[R - 1];  // eigenvalues ascending
    // tmp = A Q diag(1/w), A = tmp Qᵀ
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d, R, R, 1.0, A, d, w->chol, R, 0.0, w->tmp, d);
    for (int r = 0; r < R; r++) {
        const double s = w->w[r] > cut ? 1.0 / w->w[r] : 0.0;
        for (int i = 0; i < d; i++) w->tmp[(size_t)r * d + i] *= s;
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, d, R, R, 1.0, w->tmp, d, w->chol, R, 0.0, A, d);
    return 0;
}

// A (d × R) ← A V⁻¹ for symmetric PSD V (R × R): Cholesky V = UᵀU and A ← A U⁻¹ U⁻ᵀ,
// or the pseudo-inverse when V is not numerically positive definite.
static int solve_normals(double *A, Work *w, int d) {
    const int R = w->R;
    double anorm = 0.0;  // ‖V‖₁ for the condition estimate
    for (int j = 0; j < R; j++) {
        double s = 0.0;
        for (int i = 0; i < R; i++) s += fabs(w->V[(size_t)j * R + i]);
        anorm = fmax(anorm, s);
    }
    memcpy(w->chol, w->V, (size_t)R * R * sizeof(double));
    double rcond = 0.0;
    if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', R, w->chol, R) != 0 ||
        LAPACKE_dpocon(LAPACK_COL_MAJOR, 'U', R, w->chol, R, anorm, &rcond) != 0 || !(rcond >= DBL_EPSILON))
        return solve_pinv(A, w, d);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, d, R, 1.0, w->chol, R, A, d);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasTrans, CblasNonUnit, d, R, 1.0, w->chol, R, A, d);
    return 0;
}

// λ_r = ‖A(:, r)‖₂ and A(:, r) /= λ_r (a zero column stays zero, λ_r = 0).
static void normalise_columns(double *lambda, double *A, int d, int R) {
    for (int r = 0; r < R; r++) {
        double *a = A + (size_t)r * d;
        const double nrm = cblas_dnrm2(d, a, 1);
        lambda[r] = nrm;
        if (nrm > 0.0)
            for (int i = 0; i < d; i++) a[i] /= nrm;
    }
}

// One ALS update of mode n, its MTTKRP already in w->M: A_n = M V⁻¹, unit columns,
// λ the norms, G_n refreshed.
static int update_factor(CpModel *m, Work *w, int n) {
    const int R = w->R, d = w->d[n];
    const size_t RR = (size_t)R * R;
    for (size_t k = 0; k < RR; k++) w->V[k] = 1.0;
    for (int o = 0; o < 4; o++)
        if (o != n)
            for (size_t k = 0; k < RR; k++) w->V[k] *= w->gram[o][k];
    memcpy(m->factor[n], w->M, (size_t)d * R * sizeof(double));
    if (solve_normals(m->factor[n], w, d) != 0) return -1;
    normalise_columns(m->lambda, m->factor[n], d, R);
    gram(w->gram[n], m->factor[n], d, R);
    return 0;
}

// 1 − ‖X − X̂‖/‖X‖ from the Gram matrices, λ and the last MTTKRP (mode 3, in w->M).
static double fit_from_grams(const CpModel *m, const Work *w, double normX2) {
    const int R = w->R, d3 = w->d[3];
    double xhat2 = 0.0, inner = 0.0;
    for (int s = 0; s < R; s++)
        for (int r = 0; r < R; r++) {
            const size_t k = (size_t)s * R + r;
            xhat2 += m->lambda[r] * m->lambda[s] * w->gram[0][k] * w->gram[1][k] * w->gram[2][k] * w->gram[3][k];
        }
    for (int r = 0; r < R; r++) {
        double s = 0.0;
        for (int i = 0; i < d3; i++) s += w->M[(size_t)r * d3 + i] * m->factor[3][(size_t)r * d3 + i];
        inner += m->lambda[r] * s;
    }
    const double resid2 = fmax(0.0, normX2 + xhat2 - 2.0 * inner);
    return 1.0 - sqrt(resid2) / sqrt(normX2);
}

// Copies init into m->factor with unit columns. A zero column (HOSVD padding when
// rank > dims[n]) has no direction to normalise: it gets uniform entries in [−1, 1) from
// a fixed generator instead, so every component takes part. Returns -1 on non-finite init.
static int copy_init(CpModel *m, const double *const init[4], const int d[4], int R) {
    gsl_rng *rng = NULL;
    int status = 0;
    for (int n = 0; n < 4; n++) {
        double *A = m->factor[n];
        memcpy(A, init[n], (size_t)d[n] * R * sizeof(double));
        for (int r = 0; r < R; r++) {
            double *a = A + (size_t)r * d[n], ss = 0.0;
            for (int i = 0; i < d[n]; i++) ss += a[i] * a[i];
            if (!isfinite(ss)) {
                status = -1;
            } else if (ss == 0.0) {
                if (!rng) {
                    rng = gsl_rng_alloc(gsl_rng_mt19937);
                    gsl_rng_set(rng, FILL_SEED);
                }
                for (int i = 0; i < d[n]; i++) a[i] = 2.0 * gsl_rng_uniform(rng) - 1.0;
            }
        }
        normalise_columns(m->lambda, A, d[n], R);
    }
    if (rng) gsl_rng_free(rng);
    return status;
}

// Components in order of decreasing λ (ties keep their order): a canonical output.
static void sort_components(CpModel *m, const int d[4]) {
    const int R = m->rank;
    int *perm = xmalloc((size_t)R * sizeof(int));
    for (int r = 0; r < R; r++) {
        int j = r;
        for (; j > 0 && m->lambda[perm[j - 1]] < m->lambda[r]; j--) perm[j] = perm[j - 1];
        perm[j] = r;
    }
    double *lam = xmalloc((size_t)R * sizeof(double));
    for (int r = 0; r < R; r++) lam[r] = m->lambda[perm[r]];
    memcpy(m->lambda, lam, (size_t)R * sizeof(double));
    free(lam);
    for (int n = 0; n < 4; n++) {
        double *A = xmalloc((size_t)d[n] * R * sizeof(double));
        for (int r = 0; r < R; r++)
            memcpy(A + (size_t)r * d[n], m->factor[n] + (size_t)perm[r] * d[n], (size_t)d[n] * sizeof(double));
        free(m->factor[n]);
        m->factor[n] = A;
    }
    free(perm);
}

int cp_als(CpModel *out, const Tensor4 *t, int rank, const double *const init[4], double tol, int max_iter,
           int verbose) {
    const int *dims = t->dims;
    if (rank < 1) die(EXIT_RUNTIME, "cp_als: rank %d (must be at least 1)", rank);
    for (int n = 0; n < 4; n++)
        if (dims[n] < 1) die(EXIT_RUNTIME, "cp_als: dims[%d] = %d (must be at least 1)", n, dims[n]);
    if ((size_t)dims[0] * dims[1] > INT_MAX || (size_t)dims[2] * dims[3] > INT_MAX)
        die(EXIT_RUNTIME, "cp_als: %d×%d×%d×%d tensor too large for int BLAS indices", dims[0], dims[1], dims[2],
            dims[3]);

    out->rank = rank;
    out->lambda = xcalloc((size_t)rank, sizeof(double));
    for (int n = 0; n < 4; n++) out->factor[n] = xmalloc((size_t)dims[n] * rank * sizeof(double));
    out->fit = NAN;
    out->iters = 0;
    const int init_status = copy_init(out, init, dims, rank);
    memset(out->lambda, 0, (size_t)rank * sizeof(double));

    const double normX2 = tensor4_norm2(t);
    // No fit for a zero, non-finite or overflowing tensor, or a non-finite start.
    if (init_status != 0 || !isfinite(normX2) || normX2 == 0.0) return -1;

    const int sweeps = max_iter > 1 ? max_iter : 1;  // at least one
    Work w;
    work_init(&w, dims, rank);
    for (int n = 0; n < 4; n++) gram(w.gram[n], out->factor[n], dims[n], rank);
    if (verbose)
        fprintf(stderr, "cp_als: rank %d, %d×%d×%d×%d, tol %.1e, max %d sweeps\n", rank, dims[0], dims[1],
                dims[2], dims[3], tol, sweeps);

    int status = 0;
    double fit_prev = 0.0;
    double *const *A = out->factor;
    const double *const *Ac = (const double *const *)out->factor;
    for (int it = 1; it <= sweeps; it++) {
        const double t0 = now_seconds();
        partial_right(&w, t, A[2], A[3]);
        for (int n = 0; n < 4 && status == 0; n++) {
            if (n == 2) partial_left(&w, t, A[0], A[1]);
            mttkrp_from_partial(&w, Ac, n);
            status = update_factor(out, &w, n);
        }
        const double fit = status == 0 ? fit_from_grams(out, &w, normX2) : NAN;
        if (!isfinite(fit)) {
            status = -1;
            break;
        }
        out->fit = fit;
        out->iters = it;
        const double delta = fit - fit_prev;
        if (verbose)
            fprintf(stderr, "its = %d (%.3fs)  fit = %.5f  delta = %+.1e\n", it, now_seconds() - t0, fit, delta);
        if (fabs(delta) < tol) break;
        fit_prev = fit;
    }
    work_free(&w);
    if (status != 0) {
        out->fit = NAN;
        return -1;
    }
    sort_components(out, dims);
    return 0;
}

void cp_model_free(CpModel *m) {
    free(m->lambda);
    for (int n = 0; n < 4; n++) free(m->factor[n]);
    memset(m, 0, sizeof *m);
}

double matrix_condition(const double *A, int rows, int cols) {
    if (rows < 1 || cols < 1) return NAN;
    const size_t n = (size_t)rows * cols;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(A[i])) return NAN;
    const int k = rows < cols ? rows : cols;
    double *a = xmalloc(n * sizeof(double));
    double *s = xmalloc((size_t)k * sizeof(double));
    double *superb = xmalloc((size_t)k * sizeof(double));
    memcpy(a, A, n * sizeof(double));
    const int info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', rows, cols, a, rows, s, NULL, 1, NULL, 1, superb);
    const double cond = info != 0 ? NAN : s[k - 1] > 0.0 ? s[0] / s[k - 1] : INFINITY;
    free(a);
    free(s);
    free(superb);
    return cond;
}
