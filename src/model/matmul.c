#include "model/matmul.h"

#include <cblas.h>

void gemm(int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc) {
    cblas_sgemm(CblasRowMajor, transa ? CblasTrans : CblasNoTrans, transb ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
