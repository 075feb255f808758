// GELU, tanh approximation, with a tanh the compiler vectorises (fastmath.h); the
// derivative reuses the same tanh.
#include "model/fastmath.h"
#include "model/layers.h"

#define GELU_SCALE 0.7978845608028654f  // √(2/π)

void gelu_forward(float *out, const float *inp, long n) {
    for (long i = 0; i < n; i++) {
        float x = inp[i];
        float t = tanh_fast(GELU_SCALE * (x + 0.044715f * x * x * x));
        out[i] = 0.5f * x * (1.0f + t);
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, long n) {
    for (long i = 0; i < n; i++) {
        float x = inp[i];
        float t = tanh_fast(GELU_SCALE * (x + 0.044715f * x * x * x));
        float sech2 = 1.0f - t * t;
        float local = 0.5f * (1.0f + t) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += local * dout[i];
    }
}
