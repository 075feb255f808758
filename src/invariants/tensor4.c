// tensor4.c: dense and circuits tensors as the decompositions read them (see tensor4.h).
#include "invariants/tensor4.h"

#include <cblas.h>
#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

Tensor4 tensor4_dense(const double *X, const int dims[4]) {
    Tensor4 t = {.X = X};
    memcpy(t.dims, dims, sizeof t.dims);
    return t;
}

Tensor4 tensor4_circuits(const Circuits *c) {
    return (Tensor4){.dims = {c->heads, c->d_model, c->d_model, 2}, .c = c};
}

size_t tensor4_size(const Tensor4 *t) {
    return (size_t)t->dims[0] * t->dims[1] * t->dims[2] * t->dims[3];
}

// ---- dense: the fibres

// C[j − j0, i] = X[a, i, b] for the fibres j = a·inner + b in [j0, j1) (C column-major,
// leading dimension ldc): X is read in order within each a, each column of C written
// in order. For the last mode (inner = 1, fibre j = row j of X seen as N × m) that
// loop would copy one entry at a time: there each column is gathered at stride m
// (ten times faster for m = 3).
static void pack_fibres(double *C, size_t ldc, const double *X, int m, size_t inner, size_t j0, size_t j1) {
    if (inner == 1) {
        for (int i = 0; i < m; i++)
            for (size_t j = j0; j < j1; j++) C[(j - j0) + i * ldc] = X[j * m + i];
        return;
    }
    for (size_t j = j0; j < j1;) {
        const size_t a = j / inner, b0 = j % inner, b1 = (a + 1) * inner <= j1 ? inner : j1 - a * inner;
        const double *src = X + a * m * inner;
        for (int i = 0; i < m; i++) {
            double *dst = C + (j - j0) + i * ldc;
            const double *s = src + (size_t)i * inner;
            for (size_t b = b0; b < b1; b++) dst[b - b0] = s[b];
        }
        j = a * inner + b1;
    }
}

// ---- circuits: the rows of modes 1 and 2

// S (k × d_k row-major, zero below the diagonal, k = min(d_k, rows)) = the triangle of the
// QR of the column-major rows × d_k matrix F (a d_k × rows row-major block as it lies).
static void block_triangle(double *S, const double *F, int d_k, int rows, double *work, double *tau) {
    const int k = d_k < rows ? d_k : rows;
    memcpy(work, F, (size_t)d_k * rows * sizeof(double));
    if (LAPACKE_dgeqrf(LAPACK_COL_MAJOR, rows, d_k, work, rows, tau) != 0)
        die(EXIT_RUNTIME, "dgeqrf of a %d × %d circuit factor failed", rows, d_k);
    for (int a = 0; a < k; a++)
        for (int b = 0; b < d_k; b++) S[(size_t)a * d_k + b] = b >= a ? work[a + (size_t)b * rows] : 0.0;
}

int mode_rows_init(ModeRows *r, const Tensor4 *t, int n, const double *U, int rank_u) {
    memset(r, 0, sizeof *r);
    r->t = t, r->n = n, r->m = t->dims[n];
    if (t->X) {
        r->N = tensor4_size(t) / (size_t)t->dims[n];
        r->inner = 1;
        for (int k = n + 1; k < 4; k++) r->inner *= (size_t)t->dims[k];
        return 0;
    }
    if (n == 0 || n == 3) return -1;
    const Circuits *c = t->c;
    const int H = c->heads, dk = c->d_k, D = c->d_model, cols = U ? rank_u : D;
    r->k = dk < cols ? dk : cols;
    r->N = (size_t)2 * H * r->k;
    r->sigma_from_gram = 1;
    r->S = xmalloc((size_t)2 * H * r->k * dk * sizeof(double));
    double *work = xmalloc((size_t)dk * cols * sizeof(double)), *tau = xmalloc((size_t)dk * sizeof(double));
    double *Z = U ? xmalloc((size_t)H * dk * cols * sizeof(double)) : NULL;
    for (int rho = 0; rho < 2; rho++) {
        // mode 1 rows S_hρ L_hρ need the triangle of R_hρᵀ (projected: of Uᵀ R_hρᵀ, i.e. of
        // the rows of Z = R_ρ U); mode 2 rows S'_hρ R_hρ that of L_hρᵀ
        const double *other = n == 1 ? c->R[rho] : c->L[rho];
        if (U)  // Z (heads·d_k × rank_u, row-major) = other · U, U column-major D × rank_u
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, H * dk, cols, D, 1.0, other, D, U, D, 0.0, Z, cols);
        for (int h = 0; h < H; h++)
            block_triangle(r->S + ((size_t)rho * H + h) * r->k * dk, (U ? Z : other) + (size_t)h * dk * cols, dk,
                           cols, work, tau);
    }
    free(Z);
    free(tau);
    free(work);
    return 0;
}

void mode_rows_free(ModeRows *r) {
    free(r->S);
    memset(r, 0, sizeof *r);
}

void mode_rows_pack(double *C, size_t ldc, const ModeRows *r, size_t j0, size_t j1) {
    const Tensor4 *t = r->t;
    if (t->X) {
        pack_fibres(C, ldc, t->X, r->m, r->inner, j0, j1);
        return;
    }
    const Circuits *c = t->c;
    const int H = c->heads, dk = c->d_k, D = c->d_model, k = r->k;
    for (size_t j = j0; j < j1;) {  // row j = (ρ·heads + h)·k + a
        const size_t blk = j / k;
        const int a0 = (int)(j % k), a1 = (blk + 1) * k <= j1 ? k : (int)(j1 - blk * k);
        const int rho = (int)(blk / H), h = (int)(blk % H);
        const double *F = (r->n == 1 ? c->L[rho] : c->R[rho]) + (size_t)h * dk * D;
        // C rows (a1 − a0) × D = S[a0:a1, :] (row-major k × d_k) · F (row-major d_k × D)
        cblas_dgemm(CblasColMajor, CblasTrans, CblasTrans, a1 - a0, D, dk, 1.0, r->S + (blk * k + a0) * dk, dk, F, D,
                    0.0, C + (j - j0), (int)ldc);
        j = blk * k + a1;
    }
}

// ---- circuits: the Gram matrices of modes 0 and 3

void circuits_mode_grams(double *gram0, double *gram3, const Circuits *c, const BlacsGrid *g) {
    const int H = c->heads, per = c->d_k >= 256 ? 1 : (256 + c->d_k - 1) / c->d_k;  // heads per block: ≥ 256 rows
    double *roles = xcalloc((size_t)3 * H, sizeof(double));
    double *load = xcalloc((size_t)g->size, sizeof(double));
    memset(gram0, 0, (size_t)H * H * sizeof(double));
    for (int h0 = 0; h0 < H; h0 += per) {  // a block's rows cost ∝ its rows × the heads from h0 on: least loaded rank
        const int h1 = h0 + per < H ? h0 + per : H;
        int best = 0;
        for (int p = 1; p < g->size; p++)
            if (load[p] < load[best]) best = p;
        load[best] += (double)(h1 - h0) * (H - h0 + h1 - h0);
        if (best == g->rank) circuits_head_gram_rows(gram0, roles, c, h0, h1);
    }
    if (g->size > 1) {
        MPI_Allreduce(MPI_IN_PLACE, gram0, H * H, MPI_DOUBLE, MPI_SUM, g->comm);
        MPI_Allreduce(MPI_IN_PLACE, roles, 3 * H, MPI_DOUBLE, MPI_SUM, g->comm);
    }
    memset(gram3, 0, 4 * sizeof(double));
    for (int h = 0; h < H; h++) {
        gram3[0] += roles[3 * h];
        gram3[1] += roles[3 * h + 1];
        gram3[3] += roles[3 * h + 2];
    }
    gram3[2] = gram3[1];
    free(load);
    free(roles);
}

void circuits_materialize(double *X, const Circuits *c) {
    const int H = c->heads, dk = c->d_k, D = c->d_model;
    double *S = xmalloc((size_t)D * D * sizeof(double));
    for (int h = 0; h < H; h++)
        for (int rho = 0; rho < 2; rho++) {  // S = L_hρᵀ R_hρ, then into X[h, :, :, ρ]
            const size_t off = (size_t)h * dk * D;
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, D, dk, 1.0, c->L[rho] + off, D, c->R[rho] + off, D,
                        0.0, S, D);
            double *x = X + (size_t)h * D * D * 2 + rho;
            for (size_t e = 0; e < (size_t)D * D; e++) x[2 * e] = S[e];
        }
    free(S);
}

double tensor4_norm2(const Tensor4 *t) {
    double s = 0.0;
    if (t->X) {
        const size_t n = tensor4_size(t);
        for (size_t i = 0; i < n; i++) s += t->X[i] * t->X[i];
        return s;
    }
    const Circuits *c = t->c;
    const int dk = c->d_k, D = c->d_model;
    double *PL = xmalloc((size_t)dk * dk * sizeof(double)), *PR = xmalloc((size_t)dk * dk * sizeof(double));
    for (int rho = 0; rho < 2; rho++)
        for (int h = 0; h < c->heads; h++) {
            const size_t off = (size_t)h * dk * D;
            cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, dk, D, 1.0, c->L[rho] + off, D, 0.0, PL, dk);
            cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, dk, D, 1.0, c->R[rho] + off, D, 0.0, PR, dk);
            for (int a = 0; a < dk; a++)  // the upper triangle, the off-diagonal twice
                for (int b = a; b < dk; b++) s += (a == b ? 1.0 : 2.0) * PL[a * dk + b] * PR[a * dk + b];
        }
    free(PR);
    free(PL);
    return s;
}

// Z (heads·d_k × rank, column-major) = F A for the stacked factor F (row-major
// heads·d_k × d_model) and A (d_model × rank, column-major), then row block h scaled
// column by column: Z[h·d_k + k, r] *= w[h + r·ld_w] (w NULL: unscaled).
static void project_factor(double *Z, const Circuits *c, const double *F, const double *A, int rank,
                           const double *w, int ld_w) {
    const int n = c->heads * c->d_k, dk = c->d_k;
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, rank, c->d_model, 1.0, F, c->d_model, A, c->d_model, 0.0,
                Z, n);
    if (!w) return;
    for (int r = 0; r < rank; r++)
        for (int h = 0; h < c->heads; h++) cblas_dscal(dk, w[h + (size_t)r * ld_w], Z + (size_t)r * n + h * dk, 1);
}

void circuits_partial_right(double *Tr, const Circuits *c, const double *A2, const double *A3, int rank) {
    const int H = c->heads, dk = c->d_k, D = c->d_model, n = H * dk, P = H * D;
    double *Z = xmalloc((size_t)n * rank * sizeof(double));
    for (int rho = 0; rho < 2; rho++) {
        project_factor(Z, c, c->R[rho], A2, rank, NULL, 0);
        for (int r = 0; r < rank; r++) cblas_dscal(n, A3[rho + 2 * r], Z + (size_t)r * n, 1);
        for (int h = 0; h < H; h++)  // rows h·D.. of Tr (+)= L_hρᵀ Z_h
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, D, rank, dk, 1.0, c->L[rho] + (size_t)h * dk * D,
                        D, Z + h * dk, n, rho ? 1.0 : 0.0, Tr + (size_t)h * D, P);
    }
    free(Z);
}

void circuits_partial_left(double *Ul, const Circuits *c, const double *A0, const double *A1, int rank) {
    const int H = c->heads, D = c->d_model, n = H * c->d_k;
    double *Z = xmalloc((size_t)n * rank * sizeof(double)), *part = xmalloc((size_t)D * rank * sizeof(double));
    for (int rho = 0; rho < 2; rho++) {
        project_factor(Z, c, c->L[rho], A1, rank, A0, H);
        // part (D × rank) = R_ρᵀ Z: the sum over heads is the inner dimension; rows j·2 + ρ of Ul
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, D, rank, n, 1.0, c->R[rho], D, Z, n, 0.0, part, D);
        for (int r = 0; r < rank; r++)
            for (int j = 0; j < D; j++) Ul[(size_t)2 * j + rho + (size_t)r * 2 * D] = part[j + (size_t)r * D];
    }
    free(part);
    free(Z);
}
