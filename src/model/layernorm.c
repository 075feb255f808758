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
void layernorm_forward(float *out, float *mean, float *rstd, float *res, const float *add, const float *add_bias,
                       const float *weight, const float *bias, int N, int C) {
    for (int n = 0; n < N; n++) {
        float *x = res + (long)n * C;
        if (add) {
            const float *y = add + (long)n * C;
            for (int i = 0; i < C; i++) x[i] += y[i] + (add_bias ? add_bias[i] : 0.0f);
        }
        float m = 0.0f;
#pragma omp simd reduction(+ : m)
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        float v = 0.0f;
#pragma omp simd reduction(+ : v)
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        v /= C;
        float s = 1.0f / sqrtf(v + LAYERNORM_EPS);
        float *o = out + (long)n * C;
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

KERNEL_TARGETS
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (long)n * C, *d = dout + (long)n * C;
        float m = mean[n], s = rstd[n];
        float dmean = 0.0f, dmean_xhat = 0.0f;
#pragma omp simd reduction(+ : dmean, dmean_xhat)
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s, dxhat = d[i] * weight[i];
            dmean += dxhat;
            dmean_xhat += dxhat * xhat;
        }
        dmean /= C;
        dmean_xhat /= C;
        float *dx = dinp + (long)n * C;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s, dxhat = d[i] * weight[i];
            dbias[i] += d[i];
            dweight[i] += d[i] * xhat;
            dx[i] += s * (dxhat - dmean - xhat * dmean_xhat);
        }
    }
}
