// matmul.h: the one GEMM wrapper and the dense (fully connected) layer.
#ifndef ATTN_MATMUL_H
#define ATTN_MATMUL_H

// out (N, OC) = inp (N, C) · weightᵀ + bias;  weight is (OC, C), bias (OC) or NULL.
void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                    int N, int C, int OC);
// Adds into dinp (N, C), dweight (OC, C) and dbias (OC); any of them may be NULL to skip.
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int N, int C, int OC);

// Row-major C (M, N) = alpha · op(A) · op(B) + beta · C, through cblas_sgemm.
// transa/transb: 0 = as stored, 1 = transposed; lda/ldb/ldc as in BLAS (row-major).
void gemm(int transa, int transb, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc);

#endif
