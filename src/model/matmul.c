#include "model/matmul.h"

#include <cblas.h>
#include <omp.h>

#include "model/threads.h"

// Products of fewer multiply-adds run on the calling thread: below this OpenBLAS, too,
// runs on one thread (its SMP_THRESHOLD_MIN x GEMM_MULTITHREAD_THRESHOLD), and a fork
// costs more than it saves.
#define SPLIT_MIN_MACS 262144.0
enum { SPLIT_ALIGN = 16 };  // block edges on multiples of the widest sgemm micro-tile

static void sgemm(int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans, transb ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Block t of nt of n rows or columns, its edges on multiples of SPLIT_ALIGN.
static void aligned_span(int n, int t, int nt, int *lo, int *hi) {
    const long units = (n + SPLIT_ALIGN - 1) / SPLIT_ALIGN;
    long a, b;
    thread_span(units, t, nt, &a, &b);
    *lo = (int)(a * SPLIT_ALIGN < n ? a * SPLIT_ALIGN : n);
    *hi = (int)(b * SPLIT_ALIGN < n ? b * SPLIT_ALIGN : n);
}

// The rank's threads take blocks of C's rows (or, when C is wider than tall, of its
// columns), each one sgemm on one thread: every element of C is computed by one thread
// in the order a one-thread sgemm computes it. Inside a parallel region (the heads of
// an attention layer, one per thread) the product stays on its thread.
void gemm(int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc) {
    const int nt = kernel_threads();
    if (nt == 1 || omp_in_parallel() || (double)M * N * K < SPLIT_MIN_MACS) {
        sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const int by_rows = M >= N;
#pragma omp parallel num_threads(nt)
    {
        int lo, hi;
        aligned_span(by_rows ? M : N, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        if (hi > lo) {
            if (by_rows)
                sgemm(transa, transb, hi - lo, N, K, alpha, A + (transa ? lo : (long)lo * lda), lda, B, ldb, beta,
                      C + (long)lo * ldc, ldc);
            else
                sgemm(transa, transb, M, hi - lo, K, alpha, A, lda, B + (transb ? (long)lo * ldb : lo), ldb, beta,
                      C + lo, ldc);
        }
    }
}

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC) {
    if (bias) {
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) out[(long)n * OC + o] = bias[o];
    }
    gemm(0, 1, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int C, int OC) {
    if (dinp) gemm(0, 0, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);       // dout · W
    if (dweight) gemm(1, 0, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);    // doutᵀ · inp
    if (dbias) {
        for (int n = 0; n < N; n++) {
            const float *d = dout + (long)n * OC;
            for (int o = 0; o < OC; o++) dbias[o] += d[o];
        }
    }
}
