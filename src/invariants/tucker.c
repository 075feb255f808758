// tucker.c: unfoldings, their SVDs over the ranks of a grid, and HOOI (see tucker.h).
//
// Shapes: X ∈ R^{d0×d1×d2×d3} row-major; for mode n, outer = Π_{k<n} d_k, inner =
// Π_{k>n} d_k, N = outer·inner, and X[a, i, b] (a < outer, i < d_n, b < inner) sits at
// (a·d_n + i)·inner + b. Column j = a·inner + b of X_(n) is the fibre X[a, :, b].
//
// Unfolding SVDs (the dense work of scoring). The unfoldings of an attention tensor are
// short and wide (m = d_n ≪ N), so everything goes through the m × m triangle R of
//     X_(n)ᵀ = QR     σ(X_(n)) = σ(R),   X_(n)X_(n)ᵀ = RᵀR,
// in three steps:
//  1. R by TSQR over a fixed tree: the N fibres (rows of X_(n)ᵀ) are cut into L leaves
//     (a power of two up to 64; see tree_triangle), dealt in contiguous runs to the
//     ranks taking part (step 2 says which); a leaf is packed in chunks of about 256 KB (factored in cache) and
//     each chunk folded into the leaf's triangle (dgeqrf, then dtpqrt); sibling triangles
//     are folded pairwise up the tree (dtpqrt of two triangles, (2/3)m³ flops), sent
//     between ranks where siblings live apart. 2·N·m² flops, split evenly. The tree does
//     not depend on the number of ranks, so neither do R's bits, nor anything after it:
//     with one BLAS thread per rank, scores are identical on any number of ranks (a
//     rank-dependent reduction moved the vectors by rounding, which an unconverged
//     CP-ALS amplified to 1e-9). R goes from the tree's root to the owners of the
//     mode's tasks without blocking the root (MPI_Isend).
//  2. Two tasks per mode, all eight dealt over the ranks by cost, each solved by
//     ScaLAPACK on its rank's own 1×1 grid (grid.h):
//     values   pdgesvd of R without vectors: σ as accurate as a direct SVD (ε‖X‖ absolute);
//     vectors  RᵀR (dsyrk), pdsytrd, then the leading eigenvectors only (dstemr for the
//              top K, pdormtr back-transforms K columns, not m).
//     Why one rank per task and not the whole grid per task: at m = 768 the bidiagonal
//     and tridiagonal reductions are latency-bound (one reduction per column), and on
//     a 2×1 grid pdgebrd and pdsytrd ran 2-7 times slower than on one rank; the two
//     tasks of one mode instead run at once. With more ranks than tasks, a task's grid
//     could grow to several ranks (the routines take any grid); at the sizes scored
//     here that does not pay.
//     The longest task (the σ of the largest mode, for an attention tensor) sets the
//     time, so its mode goes first: all ranks compute its R, then its owner starts it
//     while the other ranks compute the other modes' R without it. BERT-base's layer on
//     2 ranks: 0.13 s for this HOSVD, against 0.15 s when every R was computed by all
//     ranks before any task began, and 0.25 s on one rank.
//  3. Every task's result is broadcast from its rank.
// What is factored is mode n's tall matrix Y_nᵀ of tensor4.h: X_(n)ᵀ itself for a dense
// tensor, thin rows built from the factors for a circuits tensor's modes 1 and 2; its
// modes 0 and 3 have no rows, and R = diag(√λ)Vᵀ comes from their Gram matrix instead
// (gram_triangle; tensor4.h says what that costs in accuracy).
// Otherwise the singular values come from the bidiagonal, never from the Gram matrix: √λ of
// X_(n)X_(n)ᵀ has absolute error ε‖X‖²/σ, which puts every zero singular value of a
// low-rank unfolding near √ε‖X‖ ≈ 1e-8‖X‖ and moves the effective rank in the 5th
// digit. The vectors may come from the Gram matrix: they only start HOOI and CP-ALS, and
// their error, ε‖X‖²/gap, matters only where the subspace is ill-defined anyway.
// The vectors task does not wait for σ: it keeps the numerical rank of the Gram
// eigenvalues (the same as σ's but for a rounding-level tie at the energy threshold, in
// which case the missing vectors are computed once σ is known).
//
// HOOI: each update of U_n projects X on the other three factors, first on the most
// shrinking one (2·|X|·r_k flops, the bulk); that product is shared by the three
// updates of a sweep that precede its own mode's, and is split over the ranks in fixed
// blocks and gathered. The later, smaller products and the SVDs of the projected
// unfoldings run on every rank (the same inputs give the same bits).
#include "invariants/tucker.h"

#include <cblas.h>
#include <lapacke.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "invariants/tensor4.h"

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

// LAPACK's info for a routine on the mode-n unfolding (n ≥ 0) or in HOOI (n < 0).
static void lapack_check(int info, const char *routine, int n) {
    if (info == 0) return;
    if (n >= 0) die(EXIT_RUNTIME, "%s on the mode-%d unfolding: info %d", routine, n, info);
    die(EXIT_RUNTIME, "%s in HOOI: info %d", routine, info);
}

// ---- ScaLAPACK on a rank's own 1×1 grid

enum { SCA_NB = 32 };  // ScaLAPACK block size: the panel width of pdgesvd's and pdsytrd's reductions

// The descriptor of an m × n column-major matrix (leading dimension ld) that the calling
// rank holds whole, on its 1×1 grid ctxt.
static void self_desc(int desc[9], int m, int n, int ld, int ctxt) {
    const int nb = SCA_NB, zero = 0;
    int info;
    descinit_(desc, &m, &n, &nb, &nb, &zero, &zero, &ctxt, &ld, &info);
    if (info != 0) die(EXIT_RUNTIME, "descinit for a %d × %d matrix: info %d", m, n, info);
}

// A workspace of the size a ScaLAPACK query (lwork = −1) left in q.
static double *query_work(double q, int *lwork) {
    *lwork = imax(1, (int)q);
    return xmalloc((size_t)*lwork * sizeof(double));
}

// ---- leading eigenvectors of a symmetric matrix (the HOSVD's vectors task and HOOI)

// A = Q T Qᵀ (pdsytrd, lower triangle): T tridiagonal (d, e), Q in A's reflectors and
// tau.
typedef struct {
    int n, ctxt;
    int desc[9];
    double *A, *tau, *d, *e;
} Tridiagonal;

// Takes A (n × n, column-major, lower triangle set), which t owns from then on.
static void tridiagonalize(Tridiagonal *t, double *A, int n, int ctxt, int mode) {
    t->n = n;
    t->ctxt = ctxt;
    t->A = A;
    t->tau = xmalloc((size_t)n * sizeof(double));
    t->d = xmalloc((size_t)n * sizeof(double));
    t->e = xcalloc((size_t)n, sizeof(double));  // n − 1 used; dstemr's copy needs n
    self_desc(t->desc, n, n, n, ctxt);
    const int one = 1, minus1 = -1;
    int lwork, info;
    double q;
    pdsytrd_("L", &n, A, &one, &one, t->desc, t->d, t->e, t->tau, &q, &minus1, &info);
    lapack_check(info, "pdsytrd (workspace query)", mode);
    double *work = query_work(q, &lwork);
    pdsytrd_("L", &n, A, &one, &one, t->desc, t->d, t->e, t->tau, work, &lwork, &info);
    lapack_check(info, "pdsytrd", mode);
    free(work);
}

static void tridiagonal_free(Tridiagonal *t) {
    free(t->A);
    free(t->tau);
    free(t->d);
    free(t->e);
    memset(t, 0, sizeof *t);
}

// V (n × K, column-major) and lam (K) = the eigenpairs of A for its K largest
// eigenvalues, descending: those of T by MRRR (dstemr, for the K only: O(n·K) flops,
// where dsyevr with a partial range bisects and inverse-iterates), back-transformed by
// Q (pdormtr on K columns, not n).
static void top_eigenvectors(double *V, double *lam, const Tridiagonal *t, int K, int mode) {
    const int n = t->n;
    if (K == 0) return;
    double *d = xmalloc((size_t)n * sizeof(double)), *e = xmalloc((size_t)n * sizeof(double));
    double *w = xmalloc((size_t)n * sizeof(double)), *Z = xmalloc((size_t)n * K * sizeof(double));
    int *isuppz = xmalloc((size_t)2 * K * sizeof(int));
    memcpy(d, t->d, (size_t)n * sizeof(double));
    memcpy(e, t->e, (size_t)n * sizeof(double));
    int found = 0, tryrac = 1;
    lapack_check(LAPACKE_dstemr(LAPACK_COL_MAJOR, 'V', 'I', n, d, e, 0.0, 0.0, n - K + 1, n, &found, w, Z, n, K,
                                isuppz, &tryrac),
                 "dstemr", mode);
    if (found != K) lapack_check(-1, "dstemr (eigenvector count)", mode);
    int descz[9], lwork, info;
    const int one = 1, minus1 = -1;
    double q;
    self_desc(descz, n, K, n, t->ctxt);
    pdormtr_("L", "L", "N", &n, &K, t->A, &one, &one, t->desc, t->tau, Z, &one, &one, descz, &q, &minus1, &info);
    lapack_check(info, "pdormtr (workspace query)", mode);
    double *work = query_work(q, &lwork);
    pdormtr_("L", "L", "N", &n, &K, t->A, &one, &one, t->desc, t->tau, Z, &one, &one, descz, work, &lwork, &info);
    lapack_check(info, "pdormtr", mode);
    free(work);
    for (int c = 0; c < K; c++) {  // dstemr's order is ascending
        memcpy(V + (size_t)c * n, Z + (size_t)(K - 1 - c) * n, (size_t)n * sizeof(double));
        lam[c] = w[K - 1 - c];
    }
    free(isuppz);
    free(Z);
    free(w);
    free(e);
    free(d);
}

// ---- step 1: the triangle R of X_(n)ᵀ = QR

enum { CHUNK_DOUBLES = 32768, TP_NB = 32 };  // chunk of X_(n)ᵀ: 256 KB; dtpqrt block size

// R (m × m column-major, upper triangular, zero below) := the triangle of the QR of
// [R; B] for B upper trapezoidal in its last l rows (dtpqrt; l = 0: B rectangular).
static void fold_rows(double *R, int m, double *B, int rows, int ldb, int l, int n) {
    const int nb = imin(TP_NB, m);
    double *T = xmalloc((size_t)nb * m * sizeof(double));
    lapack_check(LAPACKE_dtpqrt(LAPACK_COL_MAJOR, rows, m, l, nb, R, m, B, ldb, T, nb), "dtpqrt", n);
    free(T);
}

// R (m × m, upper triangular) of the QR of rows [j0, j1) of Y_nᵀ (one leaf), zero if
// there are none: chunks of at least m rows, the first factored by dgeqrf, the next
// ones folded in (2·rows·m² flops each, what dgeqrf spends on the same rows).
static void local_triangle(double *R, const ModeRows *src, size_t j0, size_t j1) {
    const int m = src->m, n = src->n;
    const size_t chunk = (size_t)imax(m, CHUNK_DOUBLES / m), ldc = j1 - j0 < chunk ? j1 - j0 : chunk;
    double *C = xmalloc((ldc ? ldc : 1) * m * sizeof(double));
    double *tau = xmalloc((size_t)m * sizeof(double));
    memset(R, 0, (size_t)m * m * sizeof(double));
    for (size_t c0 = j0; c0 < j1; c0 += chunk) {
        const int rows = (int)(j1 - c0 < chunk ? j1 - c0 : chunk);
        mode_rows_pack(C, ldc, src, c0, c0 + rows);
        if (c0 > j0) {
            fold_rows(R, m, C, rows, (int)ldc, 0, n);
            continue;
        }
        lapack_check(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, rows, m, C, (int)ldc, tau), "dgeqrf", n);
        lapack_check(LAPACKE_dlacpy(LAPACK_COL_MAJOR, 'U', imin(rows, m), m, C, (int)ldc, R, m), "dlacpy", n);
    }
    free(tau);
    free(C);
}

// The TSQR tree of one unfolding: L leaves of rows [N·ℓ/L, N·(ℓ+1)/L), leaf ℓ on
// rank ranks[ℓ·n_ranks/L] (the ranks taking part, in increasing order).
typedef struct {
    const ModeRows *src;
    int m, n, L;
    size_t N;
    const int *ranks;
    int n_ranks;
    const BlacsGrid *g;
} Tsqr;

static int leaf_rank(const Tsqr *t, int leaf) { return t->ranks[(long long)leaf * t->n_ranks / t->L]; }

// The triangle of leaves [lo, hi), on leaf_rank(lo) (NULL on the other ranks): the two
// halves' triangles folded, the right one first sent over if it lives elsewhere. Every
// rank walks the same tree depth first, so sends and receives pair up in order.
static double *subtree_triangle(const Tsqr *t, int lo, int hi) {
    const int me = t->g->rank, m = t->m, a = leaf_rank(t, lo);
    if (hi - lo == 1) {
        if (a != me) return NULL;
        double *R = xmalloc((size_t)m * m * sizeof(double));
        local_triangle(R, t->src, t->N * lo / t->L, t->N * (lo + 1) / t->L);
        return R;
    }
    const int mid = (lo + hi) / 2, b = leaf_rank(t, mid);
    double *A = subtree_triangle(t, lo, mid), *B = subtree_triangle(t, mid, hi);
    if (me == b && b != a) {
        MPI_Send(B, m * m, MPI_DOUBLE, a, t->n, t->g->comm);
        free(B);
        return A;
    }
    if (me == a && b != a) {
        B = xmalloc((size_t)m * m * sizeof(double));
        MPI_Recv(B, m * m, MPI_DOUBLE, b, t->n, t->g->comm, MPI_STATUS_IGNORE);
    }
    if (me == a) fold_rows(A, m, B, m, m, m, t->n);
    free(B);
    return A;
}

// R of the whole Y_nᵀ, computed by ranks[0..n_ranks) (all of which call this), on
// ranks[0] (NULL on the others). The tree, and so R's bits, depend only on the shape,
// not on which ranks take part. Leaves: the largest power of two
// up to 64 that leaves at least m rows and one chunk in each: a leaf's QR then costs at
// least twice the (2/3)m³ flops of folding it in (BERT's mode 2, m = 768, N = 2304: 2
// leaves, 0.089 s against 0.086 s for one dgeqrf; 4 leaves took 0.097 s), and a small
// tensor gains nothing from being cut.
static double *tree_triangle(const ModeRows *src, const int *ranks, int n_ranks, const BlacsGrid *g) {
    Tsqr t = {.src = src, .m = src->m, .n = src->n, .L = 1, .N = src->N, .ranks = ranks, .n_ranks = n_ranks, .g = g};
    const size_t min_rows = (size_t)imax(t.m, CHUNK_DOUBLES / t.m);
    while (t.L < 64 && t.N / (2 * (size_t)t.L) >= min_rows) t.L *= 2;
    return subtree_triangle(&t, 0, t.L);
}

// √λ for the eigenvalues λ of an m × m Gram matrix whose largest is lam_max: 0 for
// λ ≤ m·ε·lam_max, the level of its rounding (a direction the tensor does not have, e.g.
// the mean direction of centred weights, or two heads of one function, would otherwise
// come out as √ε‖T‖, not 0).
static double sigma_of(double lambda, double lam_max, int m) {
    return lambda > (double)m * DBL_EPSILON * lam_max ? sqrt(lambda) : 0.0;
}

// R (m × m, column-major) with RᵀR = gram (m × m, symmetric positive semi-definite):
// R = diag(√λ) Vᵀ from gram = V diag(λ) Vᵀ (sigma_of). For the modes whose Gram matrix
// is computed directly (tensor4.h); R then feeds the same tasks.
static double *gram_triangle(const double *gram, int m, int n) {
    double *V = xmalloc((size_t)m * m * sizeof(double)), *lam = xmalloc((size_t)m * sizeof(double));
    double *R = xmalloc((size_t)m * m * sizeof(double));
    memcpy(V, gram, (size_t)m * m * sizeof(double));
    lapack_check(LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'L', m, V, m, lam), "dsyev", n);
    for (int i = 0; i < m; i++)  // ascending: the largest last
        for (int j = 0; j < m; j++) R[i + (size_t)j * m] = sigma_of(lam[i], lam[m - 1], m) * V[j + (size_t)i * m];
    free(lam);
    free(V);
    return R;
}

// ---- step 2: the tasks

typedef struct {
    int m, k;               // d_n; rows of R, min(d_n, N)
    int owner[2];           // ranks of the values task [0] and the vectors task [1]
    int root;               // the rank R is computed on
    double *R;              // on the owners: R for their tasks
    double *R_sent;         // on the root when it sends R and R is not its own (freed last)
    MPI_Request send[2];    // on the root: R on its way to the owners
    Tridiagonal gram;       // vectors task: RᵀR = Q T Qᵀ
    int sigma_from_gram;    // no values task: σ = √λ of RᵀR, from the vectors task (tensor4.h)
} ModeWork;

// The values task: σ of R (k × m, k ≤ m), descending, by pdgesvd without vectors (a
// bidiagonal reduction, pdgebrd, then implicit zero-shift QR, dbdsqr). R is destroyed.
static void values_task(double *sv, double *R, int k, int m, int ctxt, int n) {
    int desc[9], lwork, info;
    const int one = 1, minus1 = -1;
    double q;
    self_desc(desc, k, m, m, ctxt);
    pdgesvd_("N", "N", &k, &m, R, &one, &one, desc, sv, NULL, &one, &one, desc, NULL, &one, &one, desc, &q, &minus1,
             &info);
    lapack_check(info, "pdgesvd (workspace query)", n);
    double *work = query_work(q, &lwork);
    pdgesvd_("N", "N", &k, &m, R, &one, &one, desc, sv, NULL, &one, &one, desc, NULL, &one, &one, desc, work, &lwork,
             &info);
    lapack_check(info, "pdgesvd", n);
    free(work);
}

// RᵀR (m × m, both triangles) of the first k rows of R (m × m, column-major).
static double *gram_of_triangle(const double *R, int k, int m) {
    double *A = xmalloc((size_t)m * m * sizeof(double));
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, m, k, 1.0, R, m, 0.0, A, m);
    for (int j = 0; j < m; j++)
        for (int i = 0; i < j; i++) A[i + (size_t)j * m] = A[j + (size_t)i * m];
    return A;
}

// The vectors task, first half: RᵀR (lower triangle) in tridiagonal form.
static void gram_tridiagonal(ModeWork *w, int ctxt, int n) {
    double *A = xmalloc((size_t)w->m * w->m * sizeof(double));
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, w->m, w->k, 1.0, w->R, w->m, 0.0, A, w->m);
    tridiagonalize(&w->gram, A, w->m, ctxt, n);
}

// sig (m) = √λ of RᵀR's eigenvalues, descending (dsterf on a copy of T; sigma_of).
static void gram_sigma(double *sig, const ModeWork *w, int n) {
    const int m = w->m;
    double *e = xmalloc((size_t)m * sizeof(double));
    memcpy(sig, w->gram.d, (size_t)m * sizeof(double));
    memcpy(e, w->gram.e, (size_t)m * sizeof(double));
    lapack_check(LAPACKE_dsterf(m, sig, e), "dsterf", n);
    for (int i = 0; i < m / 2; i++) {  // descending
        const double t = sig[i];
        sig[i] = sig[m - 1 - i];
        sig[m - 1 - i] = t;
    }
    const double lam_max = sig[0];
    for (int i = 0; i < m; i++) sig[i] = sigma_of(sig[i], lam_max, m);
    free(e);
}

// Numerical rank of √λ for the eigenvalues λ of RᵀR.
static int gram_rank(const ModeWork *w, double energy, int n) {
    double *sig = xmalloc((size_t)w->m * sizeof(double));
    gram_sigma(sig, w, n);
    const int r = numerical_rank(sig, w->m, energy);
    free(sig);
    return r;
}

// Flip U's columns so each one's largest-|·| entry (the first of equals) is positive:
// the eigensolver's sign is arbitrary.
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

// The vectors task, second half: U (m × K) = RᵀR's leading K eigenvectors, signs fixed.
static double *gram_vectors(const ModeWork *w, int K, int n) {
    double *U = xcalloc((size_t)w->m * imax(1, K), sizeof(double));
    double *lam = xmalloc((size_t)imax(1, K) * sizeof(double));
    top_eigenvectors(U, lam, &w->gram, K, n);
    fix_signs(U, w->m, K);
    free(lam);
    return U;
}

// ---- the four unfoldings

// Owners of the eight tasks: longest first, each to the least loaded rank (ties: the
// lowest), by flop counts: values dgebrd 4mk² − (4/3)k³; vectors dsyrk m²k + dsytrd
// (4/3)m³. Depends only on the shapes, so every rank computes the same deal. Returns
// the longest task, 2n for mode n's values, 2n + 1 for its vectors.
static int deal_tasks(ModeWork w[4], int vectors, int size) {
    double cost[8], *load = xcalloc((size_t)size, sizeof(double));
    int order[8], n_tasks = 0;
    for (int n = 0; n < 4; n++) {
        const double m = w[n].m, k = w[n].k;
        cost[2 * n] = w[n].sigma_from_gram ? -1.0 : 4.0 * m * k * k - 4.0 / 3.0 * k * k * k;
        cost[2 * n + 1] = vectors || w[n].sigma_from_gram ? m * m * k + 4.0 / 3.0 * m * m * m : -1.0;
        w[n].owner[0] = w[n].owner[1] = 0;
    }
    for (int t = 0; t < 8; t++)
        if (cost[t] >= 0.0) order[n_tasks++] = t;
    for (int i = 1; i < n_tasks; i++)  // insertion sort, decreasing cost
        for (int j = i; j > 0 && cost[order[j]] > cost[order[j - 1]]; j--) {
            const int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < n_tasks; i++) {
        int best = 0;
        for (int p = 1; p < size; p++)
            if (load[p] < load[best]) best = p;
        load[best] += cost[order[i]];
        w[order[i] / 2].owner[order[i] % 2] = best;
    }
    for (int n = 0; n < 4; n++)  // σ from the vectors task's owner
        if (w[n].sigma_from_gram) w[n].owner[0] = w[n].owner[1];
    free(load);
    return order[0];
}

enum { TAG_R = 4 };  // R of mode n to a task owner: tag TAG_R + n (the trees use tag n)

// On the root of mode n's tree, which holds its R: R to the owners of the mode's tasks
// (nonblocking: they take it when they get to their task), and what the root keeps.
// The values task overwrites its R, so a root that runs it while sending R works on a
// copy.
static void send_triangle(ModeWork *w, double *R, int vectors, int n, const BlacsGrid *g) {
    const int me = g->rank, mm = w->m * w->m, val = w->owner[0], vec = vectors ? w->owner[1] : val;
    int sends = 0;
    if (val != me) MPI_Isend(R, mm, MPI_DOUBLE, val, TAG_R + n, g->comm, &w->send[sends++]);
    if (vec != me && vec != val) MPI_Isend(R, mm, MPI_DOUBLE, vec, TAG_R + n, g->comm, &w->send[sends++]);
    if (val == me && sends) {
        w->R = xmalloc((size_t)mm * sizeof(double));
        memcpy(w->R, R, (size_t)mm * sizeof(double));
        w->R_sent = R;
    } else if (val == me || vec == me) {
        w->R = R;
    } else {
        w->R_sent = R;
    }
}

void unfolding_svds(UnfoldingSvd out[4], const Tensor4 *t, const int *n_vec_min, double energy, const BlacsGrid *g) {
    const int me = g->rank, P = g->size, *dims = t->dims;
    ModeWork w[4];
    for (int n = 0; n < 4; n++) {
        size_t N = 1;
        for (int k = 0; k < 4; k++)
            if (k != n) N *= (size_t)dims[k];
        w[n] = (ModeWork){.m = dims[n], .k = N < (size_t)dims[n] ? (int)N : dims[n],
                          .send = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
        memset(&out[n], 0, sizeof out[n]);
        out[n].m = w[n].m;
        out[n].n_sv = w[n].k;
        out[n].sv = xmalloc((size_t)w[n].k * sizeof(double));
    }
    ModeRows rows[4];
    int has_rows[4];
    for (int n = 0; n < 4; n++) {
        has_rows[n] = mode_rows_init(&rows[n], t, n, NULL, 0) == 0;
        w[n].sigma_from_gram = has_rows[n] && rows[n].sigma_from_gram;
    }
    const int vectors = n_vec_min != NULL, lead_task = deal_tasks(w, vectors, P);
    const int lead = lead_task / 2, lead_owner = w[lead].owner[lead_task % 2];

    // The modes in the order every rank takes them: the lead mode (that of the longest
    // task) first, then the others from the smallest. The lead's R is computed by all
    // ranks; the other modes' by all but the lead task's owner, which starts that task
    // as soon as the lead's R is done.
    int seq[4] = {lead}, n_seq = 1;
    for (int n = 0; n < 4; n++)
        if (n != lead) seq[n_seq++] = n;
    for (int i = 2; i < 4; i++)
        for (int j = i; j > 1 && dims[seq[j]] < dims[seq[j - 1]]; j--) {
            const int tmp = seq[j];
            seq[j] = seq[j - 1];
            seq[j - 1] = tmp;
        }
    int *all = xmalloc((size_t)P * sizeof(int)), *helpers = xmalloc((size_t)P * sizeof(int)), n_helpers = 0;
    for (int p = 0; p < P; p++) {
        all[p] = p;
        if (P == 1 || p != lead_owner) helpers[n_helpers++] = p;
    }

    // step 1: R of every unfolding on its tree's root, sent on to the owners of its
    // tasks; for a mode without rows (tensor4.h) from its Gram matrix, which every rank
    // has, on the owners themselves
    double *gram[4] = {NULL, NULL, NULL, NULL};
    if (!has_rows[0]) {
        gram[0] = xmalloc((size_t)dims[0] * dims[0] * sizeof(double));
        gram[3] = xmalloc((size_t)dims[3] * dims[3] * sizeof(double));
        circuits_mode_grams(gram[0], gram[3], t->c, g);
    }
    for (int i = 0; i < 4; i++) {
        const int n = seq[i], *ranks = n == lead ? all : helpers, n_ranks = n == lead ? P : n_helpers;
        if (!has_rows[n]) {
            w[n].root = -1;
            if (me == w[n].owner[0] || (vectors && me == w[n].owner[1])) w[n].R = gram_triangle(gram[n], w[n].m, n);
            continue;
        }
        w[n].root = ranks[0];
        int in = 0;
        for (int q = 0; q < n_ranks; q++) in |= ranks[q] == me;
        double *R = in ? tree_triangle(&rows[n], ranks, n_ranks, g) : NULL;
        if (me == w[n].root) send_triangle(&w[n], R, vectors, n, g);
    }
    // mode 0's Gram matrix (the head correlation reads it) where it exists already
    out[0].gram = gram[0];
    gram[0] = NULL;
    for (int n = 0; n < 4; n++) {
        if (has_rows[n]) mode_rows_free(&rows[n]);
        free(gram[n]);
    }
    free(helpers);
    free(all);

    // step 2: this rank's tasks, in the same order; the vectors task keeps K = the Gram
    // matrix's numerical rank (at least n_vec_min) and its tridiagonal form, should σ's
    // rank be larger
    int K[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        const int n = seq[i], val = !w[n].sigma_from_gram && me == w[n].owner[0];
        const int vec = (vectors || w[n].sigma_from_gram) && me == w[n].owner[1];
        if (!val && !vec) continue;
        if (!w[n].R) {
            w[n].R = xmalloc((size_t)w[n].m * w[n].m * sizeof(double));
            MPI_Recv(w[n].R, w[n].m * w[n].m, MPI_DOUBLE, w[n].root, TAG_R + n, g->comm, MPI_STATUS_IGNORE);
        }
        if (vec) gram_tridiagonal(&w[n], g->self_ctxt, n);
        if (vec && w[n].sigma_from_gram) {
            double *sig = xmalloc((size_t)w[n].m * sizeof(double));
            gram_sigma(sig, &w[n], n);
            memcpy(out[n].sv, sig, (size_t)w[n].k * sizeof(double));
            free(sig);
        }
        if (vec && vectors) {
            K[n] = imin(w[n].m, imax(n_vec_min[n], gram_rank(&w[n], energy, n)));
            out[n].U = gram_vectors(&w[n], K[n], n);
        }
        if (val && n == 0 && !out[0].gram) out[0].gram = gram_of_triangle(w[0].R, w[0].k, w[0].m);
        if (val) values_task(out[n].sv, w[n].R, w[n].k, w[n].m, g->self_ctxt, n);
    }

    // step 3: results from their owners
    if (has_rows[0]) {
        if (!out[0].gram) out[0].gram = xmalloc((size_t)w[0].m * w[0].m * sizeof(double));
        MPI_Bcast(out[0].gram, w[0].m * w[0].m, MPI_DOUBLE, w[0].owner[0], g->comm);
    }
    for (int n = 0; n < 4; n++) {
        MPI_Bcast(out[n].sv, w[n].k, MPI_DOUBLE, w[n].owner[0], g->comm);
        if (!n_vec_min) continue;
        const int m = w[n].m, vec = w[n].owner[1];
        MPI_Bcast(&K[n], 1, MPI_INT, vec, g->comm);
        out[n].n_vec = imin(m, imax(n_vec_min[n], numerical_rank(out[n].sv, w[n].k, energy)));
        if (me == vec && out[n].n_vec > K[n]) {  // a tie at the energy threshold (see above)
            free(out[n].U);
            out[n].U = gram_vectors(&w[n], out[n].n_vec, n);
        }
        if (me != vec) out[n].U = xmalloc((size_t)m * imax(1, out[n].n_vec) * sizeof(double));
        MPI_Bcast(out[n].U, m * out[n].n_vec, MPI_DOUBLE, vec, g->comm);
    }
    for (int n = 0; n < 4; n++) {
        MPI_Waitall(2, w[n].send, MPI_STATUSES_IGNORE);
        free(w[n].R_sent);
        free(w[n].R);
        tridiagonal_free(&w[n].gram);
    }
}

void unfolding_svd_free(UnfoldingSvd *u) {
    free(u->sv);
    free(u->gram);
    free(u->U);
    memset(u, 0, sizeof *u);
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
