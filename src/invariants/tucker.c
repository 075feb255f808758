// tucker.c: unfoldings, their SVDs on the BLACS grid, and HOOI (see tucker.h).
//
// Shapes: X ∈ R^{d0×d1×d2×d3} row-major; for mode n, outer = Π_{k<n} d_k, inner =
// Π_{k>n} d_k, N = outer·inner, and X[a, i, b] (a < outer, i < d_n, b < inner) sits at
// (a·d_n + i)·inner + b. Column j = a·inner + b of X_(n) is the fibre X[a, :, b].
//
// Unfolding SVD on the grid (the dense work of scoring; every other step is small).
// The unfoldings of an attention tensor are short and wide (d_n ≪ N), so the grid holds
// the tall transpose T = X_(n)ᵀ (N × d_n, NB × NB blocks), filled by each rank from its
// own copy of X, and:
//     T = QR                      pdgeqrf       2·N·d_n² flops, the bulk; R is k × d_n, k = min(N, d_n)
//     σ(R) = σ(X_(n))             pdgesvd 'N'   bidiagonalisation of R, values only
//     RᵀR = X_(n)X_(n)ᵀ = VΛVᵀ    pdsyrk, pdsyevd  left singular vectors of X_(n)
// The singular values come from an SVD, never from the Gram matrix: √λ of X_(n)X_(n)ᵀ
// has absolute error ε‖X‖²/σ, which puts every zero singular value of a low-rank
// unfolding near √ε‖X‖ ≈ 1e-8‖X‖ and moves the effective rank in the 5th digit.
// The vectors may come from the Gram matrix: they only start HOOI and CP-ALS, and their
// error, ε‖X‖²/gap, matters only where the subspace is ill-defined anyway. pdgesvd with
// vectors would give both at once, but its bidiagonal QR (dbdsqr) applies the rotations
// to U one at a time and took 0.4 s on d_n = 768 against 0.1 s for pdsyevd.
//
// HOOI runs on every rank on its copy of X (replicated): its products X ×_k U_kᵀ cost
// 2·|X|·r_k flops, a few GEMMs per sweep, and its SVDs are of the small projected
// unfoldings; splitting them over the grid would add exchanges of the projected tensors
// for little gain at the sizes scored during a sweep.
#include "invariants/tucker.h"

#include <cblas.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

// ScaLAPACK routines grid.h does not declare (same conventions).
void pdgeqrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca, double *tau,
              double *work, const int *lwork, int *info);
void pdlacpy_(const char *uplo, const int *m, const int *n, const double *a, const int *ia, const int *ja,
              const int *desca, double *b, const int *ib, const int *jb, const int *descb);

enum { NB = 64 };  // ScaLAPACK block size (rows and columns)

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

void tensor_unfold(double *Xn, const double *X, const int dims[4], int n) {
    size_t outer = 1, inner = 1;
    for (int k = 0; k < n; k++) outer *= (size_t)dims[k];
    for (int k = n + 1; k < 4; k++) inner *= (size_t)dims[k];
    const size_t m = (size_t)dims[n];
    for (size_t a = 0; a < outer; a++)
        for (size_t i = 0; i < m; i++)
            for (size_t b = 0; b < inner; b++) Xn[i + (a * inner + b) * m] = X[(a * m + i) * inner + b];
}

int numerical_rank(const double *sv, int n_sv, double energy) {
    double total = 0.0;
    for (int i = 0; i < n_sv; i++) total += sv[i] * sv[i];
    if (total == 0.0) return 0;
    double kept = 0.0;
    for (int r = 0; r < n_sv; r++) {
        kept += sv[r] * sv[r];
        if (kept >= energy * total) return r + 1;
    }
    return n_sv;
}

// ---- block-cyclic matrices on the grid

typedef struct {
    int rows, cols, mloc, nloc, lld;
    int desc[9];
    double *a;  // lld × nloc local blocks, column-major (not initialised)
} DistMatrix;

static void dist_init(DistMatrix *A, int rows, int cols, const BlacsGrid *g) {
    const int zero = 0, nb = NB;
    int info;
    A->rows = rows;
    A->cols = cols;
    A->mloc = numroc_(&rows, &nb, &g->myrow, &zero, &g->nprow);
    A->nloc = numroc_(&cols, &nb, &g->mycol, &zero, &g->npcol);
    A->lld = imax(1, A->mloc);
    descinit_(A->desc, &rows, &cols, &nb, &nb, &zero, &zero, &g->ctxt, &A->lld, &info);
    if (info != 0) die(EXIT_RUNTIME, "descinit: %d × %d matrix on the grid: info %d", rows, cols, info);
    A->a = xmalloc((size_t)A->lld * imax(1, A->nloc) * sizeof(double));
}

// Global index of local index l, blocks of NB dealt cyclically over np processes from 0.
static int global_index(int l, int p, int np) { return (l / NB * np + p) * NB + l % NB; }

static double *workspace(double query, int *lwork) {
    *lwork = (int)query + 1;
    return xmalloc((size_t)*lwork * sizeof(double));
}

// Flip U's columns so each one's largest-|·| entry (the first of equals) is positive:
// the eigensolver's sign is arbitrary and may differ between grids.
static void fix_signs(double *U, int m, int ncol) {
    for (int c = 0; c < ncol; c++) {
        double *u = U + (size_t)c * m;
        int imx = 0;
        for (int i = 1; i < m; i++)
            if (fabs(u[i]) > fabs(u[imx])) imx = i;
        if (u[imx] < 0)
            for (int i = 0; i < m; i++) u[i] = -u[i];
    }
}

void unfolding_svd(UnfoldingSvd *out, const double *X, const int dims[4], int n, int n_vec_min, double energy,
                   const BlacsGrid *g) {
    size_t outer = 1, inner = 1;
    for (int k = 0; k < n; k++) outer *= (size_t)dims[k];
    for (int k = n + 1; k < 4; k++) inner *= (size_t)dims[k];
    if (outer * inner > INT_MAX) die(EXIT_RUNTIME, "unfolding_svd: mode-%d unfolding has too many columns", n);
    const int m = dims[n], N = (int)(outer * inner), k = imin(m, N);
    const int one = 1;
    const double d_one = 1.0, d_zero = 0.0;
    int info, lwork;
    double query;

    // T = X_(n)ᵀ (N × m): local row il is column j of X_(n), read at off[il] + i·inner.
    DistMatrix T;
    dist_init(&T, N, m, g);
    size_t *off = xmalloc((size_t)imax(1, T.mloc) * sizeof(size_t));
    for (int il = 0; il < T.mloc; il++) {
        const size_t j = (size_t)global_index(il, g->myrow, g->nprow);
        off[il] = j / inner * m * inner + j % inner;
    }
    for (int jl = 0; jl < T.nloc; jl++) {
        const size_t i = (size_t)global_index(jl, g->mycol, g->npcol);
        double *col = T.a + (size_t)jl * T.lld;
        for (int il = 0; il < T.mloc; il++) col[il] = X[off[il] + i * inner];
    }
    free(off);

    // T = QR; R (k × m) is T's upper trapezoid, zeros below.
    double *tau = xmalloc((size_t)(T.nloc + NB) * sizeof(double));
    lwork = -1;
    pdgeqrf_(&N, &m, T.a, &one, &one, T.desc, tau, &query, &lwork, &info);
    double *work = workspace(query, &lwork);
    pdgeqrf_(&N, &m, T.a, &one, &one, T.desc, tau, work, &lwork, &info);
    if (info != 0) die(EXIT_RUNTIME, "pdgeqrf on the mode-%d unfolding: info %d", n, info);
    free(work);
    free(tau);
    DistMatrix R;
    dist_init(&R, k, m, g);
    memset(R.a, 0, (size_t)R.lld * imax(1, R.nloc) * sizeof(double));
    pdlacpy_("U", &k, &m, T.a, &one, &one, T.desc, R.a, &one, &one, R.desc);
    free(T.a);

    // G = RᵀR (m × m, lower triangle), before pdgesvd overwrites R.
    DistMatrix G, Z;
    dist_init(&G, m, m, g);
    pdsyrk_("L", "T", &m, &k, &d_one, R.a, &one, &one, R.desc, &d_zero, G.a, &one, &one, G.desc);

    out->m = m;
    out->n_sv = k;
    out->sv = xmalloc((size_t)k * sizeof(double));
    lwork = -1;
    pdgesvd_("N", "N", &k, &m, R.a, &one, &one, R.desc, out->sv, NULL, &one, &one, R.desc, NULL, &one, &one,
             R.desc, &query, &lwork, &info);
    work = workspace(query, &lwork);
    pdgesvd_("N", "N", &k, &m, R.a, &one, &one, R.desc, out->sv, NULL, &one, &one, R.desc, NULL, &one, &one,
             R.desc, work, &lwork, &info);
    if (info != 0) die(EXIT_RUNTIME, "pdgesvd on the mode-%d unfolding: info %d", n, info);
    free(work);
    free(R.a);

    // G = Z diag(w) Zᵀ, w ascending.
    dist_init(&Z, m, m, g);
    double *w = xmalloc((size_t)m * sizeof(double));
    int liwork = -1, iquery;
    lwork = -1;
    pdsyevd_("V", "L", &m, G.a, &one, &one, G.desc, w, Z.a, &one, &one, Z.desc, &query, &lwork, &iquery, &liwork,
             &info);
    // The query leaves out the back-transformation's own workspace (pdormtr: about
    // (mloc + nloc + NB)·NB + NB²/2), which exceeds the rest when d_n < NB.
    work = workspace(query + (double)(Z.mloc + Z.nloc + 2 * NB) * NB, &lwork);
    liwork = iquery + 1;
    int *iwork = xmalloc((size_t)liwork * sizeof(int));
    pdsyevd_("V", "L", &m, G.a, &one, &one, G.desc, w, Z.a, &one, &one, Z.desc, work, &lwork, iwork, &liwork,
             &info);
    if (info != 0) die(EXIT_RUNTIME, "pdsyevd on the mode-%d Gram matrix: info %d", n, info);
    free(iwork);
    free(work);
    free(w);
    free(G.a);

    // Leading vector c is column m−1−c of Z: each rank writes its entries into a zero
    // matrix and the sum over ranks (exact: one non-zero term per entry) replicates it.
    out->n_vec = imin(m, imax(n_vec_min, numerical_rank(out->sv, k, energy)));
    out->U = xcalloc((size_t)m * imax(1, out->n_vec), sizeof(double));
    for (int jl = 0; jl < Z.nloc; jl++) {
        const int c = m - 1 - global_index(jl, g->mycol, g->npcol);
        if (c >= out->n_vec) continue;
        for (int il = 0; il < Z.mloc; il++)
            out->U[global_index(il, g->myrow, g->nprow) + (size_t)c * m] = Z.a[il + (size_t)jl * Z.lld];
    }
    free(Z.a);
    MPI_Allreduce(MPI_IN_PLACE, out->U, m * out->n_vec, MPI_DOUBLE, MPI_SUM, g->comm);
    fix_signs(out->U, m, out->n_vec);
}

void unfolding_svd_free(UnfoldingSvd *u) {
    free(u->sv);
    free(u->U);
    memset(u, 0, sizeof *u);
}

// ---- HOOI (local)

// out[a, r, b] = Σ_i U[i, ·] in[a, i, b]: the mode product in ×_k Uᵀ of a row-major
// tensor seen as [a, d, b]; U is d × r column-major, i.e. Uᵀ row-major r × d.
static void ttm(double *out, const double *in, int a, int d, int b, const double *U, int r) {
    if (b == 1) {  // out (a × r) = in (a × d) · U
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, a, r, d, 1.0, in, d, U, d, 0.0, out, r);
        return;
    }
    for (int al = 0; al < a; al++)  // out_a (r × b) = Uᵀ (r × d) · in_a (d × b)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, b, d, 1.0, U, d, in + (size_t)al * d * b, b, 0.0,
                    out + (size_t)al * r * b, b);
}

// U (m × r, column-major, orthonormal) = the leading r left singular vectors of Y
// (m × p, column-major), r ≤ min(m, p), from the smaller Gram matrix (YYᵀ or YᵀY) and
// dsyevr; returns Σ of the top r σ². With YᵀY = VΛVᵀ, U spans Y V_r and is
// re-orthonormalised by a QR.
static double leading_left_vectors(double *U, const double *Y, int m, int p, int r) {
    const int s = imin(m, p);
    double *M = xmalloc((size_t)s * s * sizeof(double));
    double *V = xmalloc((size_t)s * r * sizeof(double));
    double *w = xmalloc((size_t)s * sizeof(double));
    int *isuppz = xmalloc((size_t)2 * s * sizeof(int));
    if (s == m)
        cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, m, p, 1.0, Y, m, 0.0, M, m);
    else
        cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, p, m, 1.0, Y, m, 0.0, M, p);
    int found = 0;
    int info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', s, M, s, 0.0, 0.0, s - r + 1, s, 0.0, &found, w, V,
                              s, isuppz);
    if (info != 0 || found != r) die(EXIT_RUNTIME, "HOOI: dsyevr failed (info %d)", info);
    double kept = 0.0;
    for (int c = 0; c < r; c++) kept += w[c];
    // descending: column c of the result is column r−1−c of V
    double *Vd = M;  // M is free now: s·s ≥ s·r
    for (int c = 0; c < r; c++) memcpy(Vd + (size_t)c * s, V + (size_t)(r - 1 - c) * s, (size_t)s * sizeof(double));
    if (s == m) {
        memcpy(U, Vd, (size_t)m * r * sizeof(double));
    } else {
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, r, p, 1.0, Y, m, Vd, p, 0.0, U, m);
        double *tau = xmalloc((size_t)r * sizeof(double));
        if (LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, r, U, m, tau) != 0 ||
            LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, r, r, U, m, tau) != 0)
            die(EXIT_RUNTIME, "HOOI: QR of the projected vectors failed");
        free(tau);
    }
    free(isuppz);
    free(w);
    free(V);
    free(M);
    return kept;
}

// Yn (d_n × p, column-major) = the mode-n unfolding of X ×_k U_kᵀ over the three
// k ≠ n, in the order given; returns p = Π_{k≠n} r_k. buf: two buffers for the
// intermediates.
static int project_unfolded(double *Yn, const double *Xp, const int d[4], const int order[3], int n,
                            double *const U[4], const int r[4], double *const buf[2]) {
    int cd[4] = {d[0], d[1], d[2], d[3]};
    const double *src = Xp;
    for (int i = 0; i < 3; i++) {
        const int k = order[i];
        int a = 1, b = 1;
        for (int j = 0; j < k; j++) a *= cd[j];
        for (int j = k + 1; j < 4; j++) b *= cd[j];
        ttm(buf[i % 2], src, a, cd[k], b, U[k], r[k]);
        src = buf[i % 2];
        cd[k] = r[k];
    }
    tensor_unfold(Yn, src, cd, n);
    return cd[order[0]] * cd[order[1]] * cd[order[2]];
}

// The mode products run on a copy of X whose smallest mode comes first (the roles
// mode of an attention tensor): then every product is one GEMM or a loop of wide
// ones (b ≥ the product of the two largest modes), never a loop of GEMMs with b = 3.
void tucker_hooi(TuckerModel *t, const double *X, const int dims[4], const int ranks[4], const double *const U0[4],
                 double tol, int max_iter, int verbose) {
    // perm[q] = original mode at internal position q
    int perm[4], smallest = 0;
    for (int k = 1; k < 4; k++)
        if (dims[k] < dims[smallest]) smallest = k;
    perm[0] = smallest;
    for (int k = 0, q = 1; k < 4; k++)
        if (k != smallest) perm[q++] = k;
    int d[4], r[4];
    size_t size = 1;
    for (int q = 0; q < 4; q++) {
        d[q] = dims[perm[q]];
        r[q] = ranks[perm[q]];
        size *= (size_t)d[q];
    }

    // Xp[i_perm0, i_perm1, i_perm2, i_perm3] = X[i0, i1, i2, i3]
    double *Xp = xmalloc(size * sizeof(double));
    size_t stride[4];  // stride in Xp of original mode k
    for (int q = 3, s = 1; q >= 0; q--) {
        stride[perm[q]] = (size_t)s;
        s *= d[q];
    }
    const double *x = X;
    for (int i0 = 0; i0 < dims[0]; i0++)
        for (int i1 = 0; i1 < dims[1]; i1++)
            for (int i2 = 0; i2 < dims[2]; i2++) {
                double *dst = Xp + i0 * stride[0] + i1 * stride[1] + i2 * stride[2];
                for (int i3 = 0; i3 < dims[3]; i3++) dst[i3 * stride[3]] = *x++;
            }
    double normX2 = 0.0;
    for (size_t i = 0; i < size; i++) normX2 += Xp[i] * Xp[i];

    double *U[4];
    for (int q = 0; q < 4; q++) {
        U[q] = xmalloc((size_t)d[q] * r[q] * sizeof(double));
        memcpy(U[q], U0[perm[q]], (size_t)d[q] * r[q] * sizeof(double));
    }

    // Mode products for U_n in order of decreasing shrinkage r_k/d_k, so the large
    // intermediate comes first and is small; order[n] lists the three k ≠ n.
    int order[4][3];
    size_t buf_size = 1, p_max = 1;
    for (int n = 0; n < 4; n++) {
        int c = 0;
        for (int k = 0; k < 4; k++)
            if (k != n) order[n][c++] = k;
        for (int i = 1; i < 3; i++)
            for (int j = i; j > 0 && (double)r[order[n][j]] / d[order[n][j]] <
                                         (double)r[order[n][j - 1]] / d[order[n][j - 1]];
                 j--) {
                int tmp = order[n][j];
                order[n][j] = order[n][j - 1];
                order[n][j - 1] = tmp;
            }
        size_t s = size, p = 1;
        for (int i = 0; i < 3; i++) {
            s = s / d[order[n][i]] * r[order[n][i]];
            if (s > buf_size) buf_size = s;
            p *= (size_t)r[order[n][i]];
        }
        if (p * d[n] > p_max) p_max = p * d[n];
    }
    double *const buf[2] = {xmalloc(buf_size * sizeof(double)), xmalloc(buf_size * sizeof(double))};
    double *Yn = xmalloc(p_max * sizeof(double));

    if (verbose)
        fprintf(stderr, "tucker_hooi: ranks %d×%d×%d×%d, tol %.1e, max %d sweeps\n", ranks[0], ranks[1], ranks[2],
                ranks[3], tol, max_iter);
    // ‖X − X̂‖² = ‖X‖² − ‖C‖² for the core C = X ×_k U_kᵀ (all k), so the fit needs
    // only ‖C‖. The HOSVD start's fit is the reference for the first sweep's change.
    t->fit = NAN;
    t->iters = 0;
    double fit_prev = NAN;
    if (normX2 > 0.0) {  // ‖C‖ = ‖U_3ᵀ Y_(3)‖
        const double t0 = now_seconds();
        const int p = project_unfolded(Yn, Xp, d, order[3], 3, U, r, buf);
        double *C = buf[0];  // r_3 × p: no larger than the last intermediate
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, r[3], p, d[3], 1.0, U[3], d[3], Yn, d[3], 0.0, C, r[3]);
        double core2 = 0.0;
        for (size_t i = 0; i < (size_t)r[3] * p; i++) core2 += C[i] * C[i];
        t->fit = fit_prev = 1.0 - sqrt(fmax(0.0, normX2 - core2)) / sqrt(normX2);
        if (verbose) fprintf(stderr, "its = 0 (%.3fs)  fit = %.5f  (HOSVD)\n", now_seconds() - t0, fit_prev);
    }
    for (int it = 1; normX2 > 0.0 && it <= max_iter; it++) {
        const double t0 = now_seconds();
        double kept = 0.0;  // Σ top σ² of the last projected unfolding = ‖C‖²
        for (int n = 0; n < 4; n++) {
            const int p = project_unfolded(Yn, Xp, d, order[n], n, U, r, buf);
            kept = leading_left_vectors(U[n], Yn, d[n], p, r[n]);
        }
        const double fit = 1.0 - sqrt(fmax(0.0, normX2 - kept)) / sqrt(normX2);
        t->fit = fit;
        t->iters = it;
        if (verbose)
            fprintf(stderr, "its = %d (%.3fs)  fit = %.5f  delta = %+.1e\n", it, now_seconds() - t0, fit,
                    fit - fit_prev);
        if (fabs(fit - fit_prev) < tol) break;
        fit_prev = fit;
    }

    for (int q = 0; q < 4; q++) {
        t->ranks[perm[q]] = r[q];
        t->U[perm[q]] = U[q];
    }
    free(Yn);
    free(buf[0]);
    free(buf[1]);
    free(Xp);
}

void tucker_model_free(TuckerModel *t) {
    for (int n = 0; n < 4; n++) free(t->U[n]);
    memset(t, 0, sizeof *t);
}
