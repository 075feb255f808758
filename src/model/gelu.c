// GELU, tanh approximation, with a tanh the compiler vectorises (fastmath.h). The forward
// pass adds the dense layer's bias to its input and keeps the derivative in the input's
// place, so the backward pass is one multiply per element (and sums the bias's gradient
// in the same pass): no second tanh, no division.
#include "model/fastmath.h"
#include "model/layers.h"
#include "model/targets.h"

#define GELU_SCALE 0.7978845608028654f  // √(2/π)
#define GELU_CUBIC 0.044715f

KERNEL_TARGETS
void gelu_forward(float *restrict out, float *restrict pre, const float *restrict bias, int N, int F) {
    for (int n = 0; n < N; n++) {
        float *restrict x = pre + (long)n * F, *restrict y = out + (long)n * F;
        for (int i = 0; i < F; i++) {
            const float v = x[i] + bias[i];
            const float t = tanh_fast(GELU_SCALE * (v + GELU_CUBIC * v * v * v));
            y[i] = 0.5f * v * (1.0f + t);
            x[i] = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_SCALE * (1.0f + 3.0f * GELU_CUBIC * v * v);
        }
    }
}

KERNEL_TARGETS
void gelu_backward(float *restrict d, float *restrict dbias, const float *restrict deriv, int N, int F) {
    for (int n = 0; n < N; n++) {
        const float *restrict g = deriv + (long)n * F;
        float *restrict dr = d + (long)n * F;
        for (int i = 0; i < F; i++) {
            dr[i] *= g[i];
            dbias[i] += dr[i];
        }
    }
}
