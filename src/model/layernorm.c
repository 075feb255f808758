// LayerNorm forward and backward (derivation as in llm.c's layernorm.md):
// with x̂ = (x − μ)·rstd and dx̂ = dout ⊙ w,
//   dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)).
// The forward pass first completes the residual connection in place (x += add + bias of
// the sublayer before), so the stream is read and written once per LayerNorm.
#include <math.h>
#include <stddef.h>

#include "model/layers.h"
#include "model/targets.h"

KERNEL_TARGETS
void layernorm_forward(float *restrict out, float *restrict mean, float *restrict rstd, float *restrict res,
                       const float *restrict add, const float *restrict add_bias, const float *restrict weight,
                       const float *restrict bias, int N, int C) {
    const float inv_c = 1.0f / (float)C;
    for (int n = 0; n < N; n++) {
        float *restrict x = res + (long)n * C;
        if (add) {
            const float *restrict y = add + (long)n * C;
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
        float *restrict o = out + (long)n * C;
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

KERNEL_TARGETS
void layernorm_backward(float *restrict dinp, float *restrict dweight, float *restrict dbias,
                        const float *restrict dout, const float *restrict inp, const float *restrict weight,
                        const float *restrict mean, const float *restrict rstd, int N, int C) {
    const float inv_c = 1.0f / (float)C;
    for (int n = 0; n < N; n++) {
        const float *restrict x = inp + (long)n * C, *restrict d = dout + (long)n * C;
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
        float *restrict dx = dinp + (long)n * C;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s, dxhat = d[i] * weight[i];
            dbias[i] += d[i];
            dweight[i] += d[i] * xhat;
            dx[i] += s * (dxhat - dmean - xhat * dmean_xhat);
        }
    }
}
