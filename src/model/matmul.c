#include "model/matmul.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/threads.h"

// Products of fewer multiply-adds run on the calling thread: below this OpenBLAS, too,
// runs on one thread (its SMP_THRESHOLD_MIN x GEMM_MULTITHREAD_THRESHOLD), and a fork
// costs more than it saves.
#define SPLIT_MIN_MACS 262144.0
enum { SPLIT_ALIGN = 16 };  // block edges on multiples of the widest sgemm micro-tile
// Column sums of fewer elements run on the calling thread too (a fork costs about as
// much as summing this many).
#define SPLIT_MIN_SUMS 65536.0

static void sgemm(int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans, transb ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// sums[o] += Σ x[n][o] over rows [lo, hi) of x (stride OC).
static void add_rows(float *restrict sums, const float *restrict x, int lo, int hi, int OC) {
    for (int n = lo; n < hi; n++)
        for (int o = 0; o < OC; o++) sums[o] += x[(long)n * OC + o];
}

// Block t of nt of n rows or columns, its edges on multiples of SPLIT_ALIGN.
static void aligned_span(int n, int t, int nt, int *lo, int *hi) {
    const long units = (n + SPLIT_ALIGN - 1) / SPLIT_ALIGN;
    long a, b;
    thread_span(units, t, nt, &a, &b);
    *lo = (int)(a * SPLIT_ALIGN < n ? a * SPLIT_ALIGN : n);
    *hi = (int)(b * SPLIT_ALIGN < n ? b * SPLIT_ALIGN : n);
}

// C's rows [r0, r1) and columns [c0, c1) = bias (one value a column), when there is one:
// the product then adds to it.
static void fill_bias(float *C, int ldc, const float *bias, int r0, int r1, int c0, int c1) {
    for (int r = r0; r < r1; r++)
        for (int c = c0; c < c1; c++) C[(long)r * ldc + c] = bias[c];
}

// The rank's threads take blocks of C's rows (or, when C is wider than tall, of its
// columns), each one sgemm on one thread: every element of C is computed by one thread
// in the order a one-thread sgemm computes it. On a thread of a team (a lane, a head of
// an attention layer: split_threads) the product stays on its thread. With a bias
// (then beta is 1), each thread first writes it into its own block: the block stays in
// the cache of the core that computes it.
static void gemm_bias(int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc, const float *bias) {
    const int nt = split_threads();
    if (nt == 1 || (double)M * N * K < SPLIT_MIN_MACS) {
        if (bias) fill_bias(C, ldc, bias, 0, M, 0, N);
        sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const int by_rows = M >= N;
#pragma omp parallel num_threads(nt)
    {
        int lo, hi;
        aligned_span(by_rows ? M : N, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        if (hi > lo) {
            if (bias) fill_bias(C, ldc, bias, by_rows ? lo : 0, by_rows ? hi : M, by_rows ? 0 : lo, by_rows ? N : hi);
            if (by_rows)
                sgemm(transa, transb, hi - lo, N, K, alpha, A + (transa ? lo : (long)lo * lda), lda, B, ldb, beta,
                      C + (long)lo * ldc, ldc);
            else
                sgemm(transa, transb, M, hi - lo, K, alpha, A, lda, B + (transb ? (long)lo * ldb : lo), ldb, beta,
                      C + lo, ldc);
        }
    }
}

void gemm(int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc) {
    gemm_bias(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC) {
    gemm_bias(0, 1, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC, bias);
}

// sums[o] += Σ_n x[n][o] over the N rows of x (N × OC): each thread sums its own rows
// (the block of them it computed), the threads' sums are added in thread order.
static void column_sums(float *sums, const float *x, int N, int OC) {
    const int nt = split_threads();
    if (nt == 1 || (double)N * OC < SPLIT_MIN_SUMS) {
        add_rows(sums, x, 0, N, OC);
        return;
    }
    float *part = xcalloc((size_t)nt * OC, sizeof(float));
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        int lo, hi;
        aligned_span(N, t, omp_get_num_threads(), &lo, &hi);
        add_rows(part + (size_t)t * OC, x, lo, hi, OC);
    }
    add_in_thread_order(sums, part, nt, OC, OC);
    free(part);
}

// dweight (OC, C) += doutᵀ · inp over the N rows: each thread takes the product over its
// own block of rows (those it computed; split over dweight's rows instead, each thread
// would read every row, half of them from the other core's cache: 7 % of a 2-thread ViT
// step), then each adds the threads' products in thread order into its share of dweight.
static void weight_grad(float *dweight, const float *dout, const float *inp, int N, int C, int OC) {
    const int nt = split_threads();
    if (nt == 1 || (double)OC * C * N < SPLIT_MIN_MACS) {
        gemm(1, 0, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
        return;
    }
    const size_t size = (size_t)OC * C;
    float *part = xmalloc((size_t)nt * size * sizeof(float));
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), n = omp_get_num_threads();
        int lo, hi;
        aligned_span(N, t, n, &lo, &hi);
        if (hi > lo)
            sgemm(1, 0, OC, C, hi - lo, 1.0f, dout + (long)lo * OC, OC, inp + (long)lo * C, C, 0.0f, part + t * size, C);
        else
            memset(part + t * size, 0, size * sizeof(float));
#pragma omp barrier
        long a, b;
        thread_span((long)size, t, n, &a, &b);
        add_in_thread_order(dweight + a, part + a, n, b - a, (long)size);
    }
    free(part);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int C, int OC) {
    if (dinp) gemm(0, 0, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);       // dout · W
    if (dweight) weight_grad(dweight, dout, inp, N, C, OC);                          // doutᵀ · inp
    if (dbias) column_sums(dbias, dout, N, OC);
}
