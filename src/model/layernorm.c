// LayerNorm forward and backward (derivation as in llm.c's layernorm.md):
// with x̂ = (x − μ)·rstd and dx̂ = dout ⊙ w,
//   dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)).
// The forward pass first completes the residual connection in place (x += add + bias of
// the sublayer before), so the stream is read and written once per LayerNorm. Rows are
// shared among the threads (threads.h).
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "common/util.h"
#include "model/layers.h"
#include "model/targets.h"
#include "model/threads.h"

KERNEL_TARGETS
static void forward_rows(float *restrict out, float *restrict mean, float *restrict rstd, float *restrict res,
                         const float *restrict add, const float *restrict add_bias, const float *restrict weight,
                         const float *restrict bias, long n0, long n1, int C) {
    const float inv_c = 1.0f / (float)C;
    for (long n = n0; n < n1; n++) {
        float *restrict x = res + n * C;
        if (add) {
            const float *restrict y = add + n * C;
            for (int i = 0; i < C; i++) x[i] += y[i] + (add_bias ? add_bias[i] : 0.0f);
        }
        float m = 0.0f;
#pragma omp simd reduction(+ : m)
        for (int i = 0; i < C; i++) m += x[i];
        m *= inv_c;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        const float s = 1.0f / sqrtf(v * inv_c + LAYERNORM_EPS);
        float *restrict o = out + n * C;
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, float *res, const float *add, const float *add_bias,
                       const float *weight, const float *bias, int N, int C) {
    const int nt = split_threads();
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        long lo, hi;
        thread_span(N, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        forward_rows(out, mean, rstd, res, add, add_bias, weight, bias, lo, hi, C);
    }
}

// Rows [n0, n1); dweight and dbias (C) are added into.
KERNEL_TARGETS
static void backward_rows(float *restrict dinp, float *restrict dweight, float *restrict dbias,
                          const float *restrict dout, const float *restrict inp, const float *restrict weight,
                          const float *restrict mean, const float *restrict rstd, long n0, long n1, int C) {
    const float inv_c = 1.0f / (float)C;
    for (long n = n0; n < n1; n++) {
        const float *restrict x = inp + n * C, *restrict d = dout + n * C;
        const float m = mean[n], s = rstd[n];
        float dmean = 0.0f, dmean_xhat = 0.0f;
#pragma omp simd reduction(+ : dmean, dmean_xhat)
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s, dxhat = d[i] * weight[i];
            dmean += dxhat;
            dmean_xhat += dxhat * xhat;
        }
        dmean *= inv_c;
        dmean_xhat *= inv_c;
        float *restrict dx = dinp + n * C;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s, dxhat = d[i] * weight[i];
            dbias[i] += d[i];
            dweight[i] += d[i] * xhat;
            dx[i] += s * (dxhat - dmean - xhat * dmean_xhat);
        }
    }
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                        const float *weight, const float *mean, const float *rstd, int N, int C) {
    const int nt = split_threads();
    if (nt == 1) {
        backward_rows(dinp, dweight, dbias, dout, inp, weight, mean, rstd, 0, N, C);
        return;
    }
    float *part = xcalloc((size_t)2 * nt * C, sizeof(float));  // per thread: dweight, dbias
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        long lo, hi;
        thread_span(N, t, omp_get_num_threads(), &lo, &hi);
        backward_rows(dinp, part + (size_t)2 * t * C, part + (size_t)(2 * t + 1) * C, dout, inp, weight, mean,
                      rstd, lo, hi, C);
    }
    add_in_thread_order(dweight, part, nt, C, 2L * C);
    add_in_thread_order(dbias, part + C, nt, C, 2L * C);
    free(part);
}
