// tucker.c: unfoldings, their ranks, and HOOI (see tucker.h). The SVDs of the
// unfoldings over the ranks of a grid are in unfolding_svd.c, the eigensolver both use in
// sym_eig.c.
//
// Shapes: X ∈ R^{d0×d1×d2×d3} row-major; for mode n, outer = Π_{k<n} d_k, inner =
// Π_{k>n} d_k, N = outer·inner, and X[a, i, b] (a < outer, i < d_n, b < inner) sits at
// (a·d_n + i)·inner + b. Column j = a·inner + b of X_(n) is the fibre X[a, :, b].
//
// HOOI: each update of U_n projects X on the other three factors, first on the most
// shrinking one (2·|X|·r_k flops, the bulk); that product is shared by the three
// updates of a sweep that precede its own mode's, and is split over the ranks in fixed
// blocks and gathered. The later, smaller products and the SVDs of the projected
// unfoldings run on every rank (the same inputs give the same bits).
#include "invariants/tucker.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "invariants/tensor4.h"
#include "invariants/tucker_impl.h"

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

double effective_rank(const double *sv, int n_sv) {
    double sum = 0.0, h = 0.0;
    for (int i = 0; i < n_sv; i++) sum += sv[i];
    if (sum == 0.0) return 0.0;
    for (int i = 0; i < n_sv; i++) {
        const double p = sv[i] / sum;
        if (p > 0.0) h -= p * log(p);
    }
    return exp(h);
}

// ---- HOOI

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
// (m × p, column-major; trans: given as Yᵀ, p × m column-major), r ≤ min(m, p), from
// the smaller Gram matrix (YYᵀ or YᵀY); returns Σ of the top r σ². With YᵀY = VΛVᵀ, U
// spans Y V_r and is re-orthonormalised by a QR. ctxt: the calling rank's 1×1 grid.
static double leading_left_vectors(double *U, const double *Y, int m, int p, int r, int trans, int ctxt) {
    const int s = imin(m, p), ld = trans ? p : m;
    const CBLAS_TRANSPOSE N = trans ? CblasTrans : CblasNoTrans, T = trans ? CblasNoTrans : CblasTrans;
    double *M = xmalloc((size_t)s * s * sizeof(double));
    double *V = s == m ? U : xmalloc((size_t)s * r * sizeof(double));
    double *lam = xmalloc((size_t)r * sizeof(double));
    if (s == m)
        cblas_dsyrk(CblasColMajor, CblasLower, N, m, p, 1.0, Y, ld, 0.0, M, m);
    else
        cblas_dsyrk(CblasColMajor, CblasLower, T, p, m, 1.0, Y, ld, 0.0, M, p);
    Tridiagonal t;
    tridiagonalize(&t, M, s, ctxt, -1);
    top_eigenvectors(V, lam, &t, r, -1);
    tridiagonal_free(&t);
    double kept = 0.0;
    for (int c = 0; c < r; c++) kept += lam[c];
    if (s < m) {
        cblas_dgemm(CblasColMajor, N, CblasNoTrans, m, r, p, 1.0, Y, ld, V, p, 0.0, U, m);
        double *tau = xmalloc((size_t)r * sizeof(double));
        lapack_check(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, r, U, m, tau), "dgeqrf", -1);
        lapack_check(LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, r, r, U, m, tau), "dorgqr", -1);
        free(tau);
        free(V);
    }
    free(lam);
    return kept;
}

enum { HOOI_BLOCKS = 8 };  // blocks of the outer index of a split mode product

// out = in ×_k Uᵀ as ttm (in seen as [a, d, b]), with the outer index cut into
// HOOI_BLOCKS fixed blocks, block β computed on rank β·P/HOOI_BLOCKS and gathered on
// every rank. For the first product of a projection, the one on X itself (2·|X|·r
// flops); the blocks do not depend on the number of ranks, so neither do the bits.
static void ttm_split(double *out, const double *in, int a, int d, int b, const double *U, int r, const BlacsGrid *g) {
    const int nb = imin(a, HOOI_BLOCKS), P = g->size;
    int *count = xcalloc((size_t)P, sizeof(int)), *displ = xcalloc((size_t)P, sizeof(int));
    for (int blk = 0; blk < nb; blk++) {
        const int a0 = (int)((long long)a * blk / nb), a1 = (int)((long long)a * (blk + 1) / nb);
        const int owner = blk * P / nb;
        if (owner == g->rank) ttm(out + (size_t)a0 * r * b, in + (size_t)a0 * d * b, a1 - a0, d, b, U, r);
        count[owner] += (a1 - a0) * r * b;
    }
    for (int p = 1; p < P; p++) displ[p] = displ[p - 1] + count[p - 1];
    if (P > 1) MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, count, displ, MPI_DOUBLE, g->comm);
    free(displ);
    free(count);
}

// The products of one HOOI run: the permuted X, the factors, and the first product of
// the last projection, A = Xp ×_k U_kᵀ (k = A_mode, −1 if none), reused while U_k is
// unchanged: every order starts with the most shrinking mode, so A serves the three
// updates of a sweep before that mode's own.
typedef struct {
    const double *Xp;
    int d[4], r[4], order[4][3];
    double *U[4];
    double *A, *buf[2];
    int A_mode;
    const BlacsGrid *g;
} Hooi;

// Yn (d_n × p, column-major) = the mode-n unfolding of X ×_k U_kᵀ over the three
// k ≠ n, in the order given; returns p = Π_{k≠n} r_k.
static int project_unfolded(double *Yn, Hooi *h, int n) {
    const int *order = h->order[n], k0 = order[0];
    int cd[4] = {h->d[0], h->d[1], h->d[2], h->d[3]};
    if (h->A_mode != k0) {
        int a = 1, b = 1;
        for (int j = 0; j < k0; j++) a *= cd[j];
        for (int j = k0 + 1; j < 4; j++) b *= cd[j];
        ttm_split(h->A, h->Xp, a, cd[k0], b, h->U[k0], h->r[k0], h->g);
        h->A_mode = k0;
    }
    cd[k0] = h->r[k0];
    const double *src = h->A;
    for (int i = 1; i < 3; i++) {
        const int k = order[i];
        int a = 1, b = 1;
        for (int j = 0; j < k; j++) a *= cd[j];
        for (int j = k + 1; j < 4; j++) b *= cd[j];
        ttm(h->buf[i % 2], src, a, cd[k], b, h->U[k], h->r[k]);
        src = h->buf[i % 2];
        cd[k] = h->r[k];
    }
    tensor_unfold(Yn, src, cd, n);
    return cd[order[0]] * cd[order[1]] * cd[order[2]];
}

// The mode products run on a copy of X whose smallest mode comes first (the roles
// mode of an attention tensor): then every product is one GEMM or a loop of wide
// ones (b ≥ the product of the two largest modes), never a loop of GEMMs with b = 3.
void tucker_hooi(TuckerModel *t, const double *X, const int dims[4], const int ranks[4], const double *const U0[4],
                 double tol, int max_iter, int verbose, const BlacsGrid *g) {
    Hooi h = {.A_mode = -1, .g = g};
    int *d = h.d, *r = h.r;
    // perm[q] = original mode at internal position q
    int perm[4], smallest = 0;
    for (int k = 1; k < 4; k++)
        if (dims[k] < dims[smallest]) smallest = k;
    perm[0] = smallest;
    for (int k = 0, q = 1; k < 4; k++)
        if (k != smallest) perm[q++] = k;
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
    h.Xp = Xp;
    double normX2 = 0.0;
    for (size_t i = 0; i < size; i++) normX2 += Xp[i] * Xp[i];

    double **U = h.U;
    for (int q = 0; q < 4; q++) {
        U[q] = xmalloc((size_t)d[q] * r[q] * sizeof(double));
        memcpy(U[q], U0[perm[q]], (size_t)d[q] * r[q] * sizeof(double));
    }

    // Mode products for U_n in order of decreasing shrinkage r_k/d_k, so the large
    // intermediate comes first and is small; order[n] lists the three k ≠ n.
    size_t A_size = 1, buf_size = 1, p_max = 1;  // the first product, the later ones, Y_(n)
    for (int n = 0; n < 4; n++) {
        int *order = h.order[n], c = 0;
        for (int k = 0; k < 4; k++)
            if (k != n) order[c++] = k;
        for (int i = 1; i < 3; i++)
            for (int j = i; j > 0 && (double)r[order[j]] / d[order[j]] < (double)r[order[j - 1]] / d[order[j - 1]];
                 j--) {
                int tmp = order[j];
                order[j] = order[j - 1];
                order[j - 1] = tmp;
            }
        size_t s = size, p = 1;
        for (int i = 0; i < 3; i++) {
            s = s / d[order[i]] * r[order[i]];
            size_t *max = i ? &buf_size : &A_size;
            if (s > *max) *max = s;
            p *= (size_t)r[order[i]];
        }
        if (p * d[n] > p_max) p_max = p * d[n];
    }
    h.A = xmalloc(A_size * sizeof(double));
    h.buf[0] = xmalloc(buf_size * sizeof(double));
    h.buf[1] = xmalloc(buf_size * sizeof(double));
    double *Yn = xmalloc(p_max * sizeof(double));

    if (verbose)
        fprintf(stderr, "tucker_hooi: ranks %d×%d×%d×%d, tol %.1e, max %d sweeps\n", ranks[0], ranks[1], ranks[2],
                ranks[3], tol, max_iter);
    // ‖X − X̂‖² = ‖X‖² − ‖C‖² for the core C = X ×_k U_kᵀ (all k), so the fit needs
    // only ‖C‖. The HOSVD start's fit, ‖C‖ = ‖U_0ᵀ Y_(0)‖ from the first update's own
    // projection, is the reference for the first sweep's change.
    t->fit = NAN;
    t->iters = 0;
    double fit_prev = NAN;
    for (int it = 1; normX2 > 0.0 && it <= max_iter; it++) {
        double t0 = now_seconds();
        double kept = 0.0;  // Σ top σ² of the last projected unfolding = ‖C‖²
        for (int n = 0; n < 4; n++) {
            const int p = project_unfolded(Yn, &h, n);
            if (it == 1 && n == 0) {
                double *C = h.buf[0];  // r_0 × p: no larger than the last intermediate
                cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, r[0], p, d[0], 1.0, U[0], d[0], Yn, d[0], 0.0, C,
                            r[0]);
                double core2 = 0.0;
                for (size_t i = 0; i < (size_t)r[0] * p; i++) core2 += C[i] * C[i];
                t->fit = fit_prev = 1.0 - sqrt(fmax(0.0, normX2 - core2)) / sqrt(normX2);
                if (verbose) fprintf(stderr, "its = 0 (%.3fs)  fit = %.5f  (HOSVD)\n", now_seconds() - t0, fit_prev);
                t0 = now_seconds();
            }
            kept = leading_left_vectors(U[n], Yn, d[n], p, r[n], 0, g->self_ctxt);
            if (h.A_mode == n) h.A_mode = -1;
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
    free(h.A);
    free(h.buf[0]);
    free(h.buf[1]);
    free(Xp);
}

// HOOI of a circuits tensor from its factors, the heads and roles modes kept whole:
// with U_0 and U_3 square the projections on them are the identity, so each update of
// U_1 needs only Σ_hρ X_hρ U_2U_2ᵀ X_hρᵀ, whose factor Y is the rows of mode 1 projected
// on U_2 (tensor4.h: thin, 2·heads·min(d_k, r_2) of them), and U_2 likewise. The fit is
// that of the dense HOOI: ‖core‖² is the energy the last update keeps. Every rank runs
// the whole iteration (the same inputs give the same bits).
void tucker_hooi_circuits(TuckerModel *t, const Circuits *c, double norm2, const int ranks[4],
                          const double *const U0[4], double tol, int max_iter, int verbose, const BlacsGrid *g) {
    const Tensor4 t4 = tensor4_circuits(c);
    if (ranks[0] != t4.dims[0] || ranks[3] != t4.dims[3])
        die(EXIT_RUNTIME, "tucker_hooi_circuits: the heads and roles modes must keep their full ranks");
    for (int n = 0; n < 4; n++) {
        t->ranks[n] = ranks[n];
        t->U[n] = xmalloc((size_t)t4.dims[n] * ranks[n] * sizeof(double));
        memcpy(t->U[n], U0[n], (size_t)t4.dims[n] * ranks[n] * sizeof(double));
    }
    const int D = c->d_model;
    if (verbose)
        fprintf(stderr, "tucker_hooi_circuits: ranks %d×%d×%d×%d, tol %.1e, max %d sweeps\n", ranks[0], ranks[1],
                ranks[2], ranks[3], tol, max_iter);
    t->fit = NAN;
    t->iters = 0;
    double fit_prev = NAN;
    for (int it = 1; norm2 > 0.0 && it <= max_iter; it++) {
        double t0 = now_seconds(), kept = 0.0;
        for (int n = 1; n <= 2; n++) {
            ModeRows rows;
            mode_rows_init(&rows, &t4, n, t->U[3 - n], ranks[3 - n]);
            double *Yt = xmalloc(rows.N * D * sizeof(double));  // Yᵀ: N × D, column-major
            mode_rows_pack(Yt, rows.N, &rows, 0, rows.N);
            if (it == 1 && n == 1) {  // the HOSVD start's ‖core‖² = ‖U_1ᵀ Y‖²
                double *C = xmalloc(rows.N * ranks[1] * sizeof(double));
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)rows.N, ranks[1], D, 1.0, Yt,
                            (int)rows.N, t->U[1], D, 0.0, C, (int)rows.N);
                double core2 = 0.0;
                for (size_t i = 0; i < rows.N * ranks[1]; i++) core2 += C[i] * C[i];
                free(C);
                t->fit = fit_prev = 1.0 - sqrt(fmax(0.0, norm2 - core2)) / sqrt(norm2);
                if (verbose) fprintf(stderr, "its = 0  fit = %.5f  (HOSVD)\n", fit_prev);
            }
            kept = leading_left_vectors(t->U[n], Yt, D, (int)rows.N, ranks[n], 1, g->self_ctxt);
            free(Yt);
            mode_rows_free(&rows);
        }
        const double fit = 1.0 - sqrt(fmax(0.0, norm2 - kept)) / sqrt(norm2);
        t->fit = fit;
        t->iters = it;
        if (verbose)
            fprintf(stderr, "its = %d (%.3fs)  fit = %.5f  delta = %+.1e\n", it, now_seconds() - t0, fit, fit - fit_prev);
        if (fabs(fit - fit_prev) < tol) break;
        fit_prev = fit;
    }
}

void tucker_model_free(TuckerModel *t) {
    for (int n = 0; n < 4; n++) free(t->U[n]);
    memset(t, 0, sizeof *t);
}
