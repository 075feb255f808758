// tucker_impl.h: what the unfolding SVDs (unfolding_svd.c) and HOOI (tucker.c) share:
// the symmetric eigensolver on a rank's own 1×1 grid (sym_eig.c) and two integer
// helpers; not for other files of the module.
#ifndef ATTN_TUCKER_IMPL_H
#define ATTN_TUCKER_IMPL_H

static inline int imax(int a, int b) { return a > b ? a : b; }
static inline int imin(int a, int b) { return a < b ? a : b; }

// LAPACK's info for a routine on the mode-n unfolding (n ≥ 0) or in HOOI (n < 0).
void lapack_check(int info, const char *routine, int n);

// ---- ScaLAPACK on a rank's own 1×1 grid

// The descriptor of an m × n column-major matrix (leading dimension ld) that the calling
// rank holds whole, on its 1×1 grid ctxt.
void self_desc(int desc[9], int m, int n, int ld, int ctxt);
// A workspace of the size a ScaLAPACK query (lwork = −1) left in q.
double *query_work(double q, int *lwork);

// ---- leading eigenvectors of a symmetric matrix (the HOSVD's vectors task and HOOI)

// A = Q T Qᵀ (pdsytrd, lower triangle): T tridiagonal (d, e), Q in A's reflectors and
// tau.
typedef struct {
    int n, ctxt;
    int desc[9];
    double *A, *tau, *d, *e;
} Tridiagonal;

// Takes A (n × n, column-major, lower triangle set), which t owns from then on.
void tridiagonalize(Tridiagonal *t, double *A, int n, int ctxt, int mode);
void tridiagonal_free(Tridiagonal *t);
// V (n × K, column-major) and lam (K) = the eigenpairs of A for its K largest
// eigenvalues, descending: those of T by MRRR (dstemr, for the K only: O(n·K) flops,
// where dsyevr with a partial range bisects and inverse-iterates), back-transformed by
// Q (pdormtr on K columns, not n).
void top_eigenvectors(double *V, double *lam, const Tridiagonal *t, int K, int mode);

#endif
