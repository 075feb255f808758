// sym_eig.c: the leading eigenpairs of a symmetric matrix on a rank's own 1×1 grid
// (grid.h): ScaLAPACK's tridiagonal reduction, MRRR for the wanted eigenpairs only, and
// the back-transformation; for the vectors task of the unfolding SVDs (unfolding_svd.c)
// and each HOOI update (tucker.c). Declared in tucker_impl.h.
#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "invariants/grid.h"
#include "invariants/tucker_impl.h"

void lapack_check(int info, const char *routine, int n) {
    if (info == 0) return;
    if (n >= 0) die(EXIT_RUNTIME, "%s on the mode-%d unfolding: info %d", routine, n, info);
    die(EXIT_RUNTIME, "%s in HOOI: info %d", routine, info);
}

// ---- ScaLAPACK on a rank's own 1×1 grid

enum { SCA_NB = 32 };  // ScaLAPACK block size: the panel width of pdgesvd's and pdsytrd's reductions

void self_desc(int desc[9], int m, int n, int ld, int ctxt) {
    const int nb = SCA_NB, zero = 0;
    int info;
    descinit_(desc, &m, &n, &nb, &nb, &zero, &zero, &ctxt, &ld, &info);
    if (info != 0) die(EXIT_RUNTIME, "descinit for a %d × %d matrix: info %d", m, n, info);
}

double *query_work(double q, int *lwork) {
    *lwork = imax(1, (int)q);
    return xmalloc((size_t)*lwork * sizeof(double));
}

// ---- leading eigenvectors of a symmetric matrix (the HOSVD's vectors task and HOOI)

void tridiagonalize(Tridiagonal *t, double *A, int n, int ctxt, int mode) {
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

void tridiagonal_free(Tridiagonal *t) {
    free(t->A);
    free(t->tau);
    free(t->d);
    free(t->e);
    memset(t, 0, sizeof *t);
}

void top_eigenvectors(double *V, double *lam, const Tridiagonal *t, int K, int mode) {
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
