// unfolding_svd.c: the singular values and leading left singular vectors of the four
// unfoldings of a tensor, over the ranks of a grid (unfolding_svds, see tucker.h).
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
#include "invariants/tucker.h"

#include <cblas.h>
#include <lapacke.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "invariants/tensor4.h"
#include "invariants/tucker_impl.h"

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
