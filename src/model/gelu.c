// GELU, tanh approximation, with a tanh the compiler vectorises (fastmath.h); the
// derivative reuses the same tanh. The forward pass adds the dense layer's bias to its
// input in the same pass, the backward pass sums the bias's gradient in the same pass.
#include "model/fastmath.h"
#include "model/layers.h"
#include "model/targets.h"

#define GELU_SCALE 0.7978845608028654f  // √(2/π)

KERNEL_TARGETS
void gelu_forward(float *out, float *pre, const float *bias, int N, int F) {
    for (int n = 0; n < N; n++) {
        float *x = pre + (long)n * F, *y = out + (long)n * F;
        for (int i = 0; i < F; i++) {
            const float v = x[i] + bias[i];
            const float t = tanh_fast(GELU_SCALE * (v + 0.044715f * v * v * v));
            x[i] = v;
            y[i] = 0.5f * v * (1.0f + t);
        }
    }
}

KERNEL_TARGETS
void gelu_backward(float *d, float *dbias, const float *pre, int N, int F) {
    for (int n = 0; n < N; n++) {
        const float *x = pre + (long)n * F;
        float *g = d + (long)n * F;
        for (int i = 0; i < F; i++) {
            const float v = x[i];
            const float t = tanh_fast(GELU_SCALE * (v + 0.044715f * v * v * v));
            const float sech2 = 1.0f - t * t;
            const float local = 0.5f * (1.0f + t) + 0.5f * v * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * v * v);
            g[i] *= local;
            dbias[i] += g[i];
        }
    }
}
