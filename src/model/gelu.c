// GELU, tanh approximation. tanh(u) = 1 − 2/(e^{2u} + 1) written with expf so the loop
// vectorises; the derivative reuses the same tanh.
#include <math.h>

#include "model/layers.h"

#define GELU_SCALE 0.7978845608028654f  // √(2/π)

static inline float tanh_via_exp(float u) {
    u = fminf(fmaxf(u, -15.0f), 15.0f);  // tanh is ±1 to float precision beyond
    return 1.0f - 2.0f / (expf(2.0f * u) + 1.0f);
}

void gelu_forward(float *out, const float *inp, long n) {
    for (long i = 0; i < n; i++) {
        float x = inp[i];
        float t = tanh_via_exp(GELU_SCALE * (x + 0.044715f * x * x * x));
        out[i] = 0.5f * x * (1.0f + t);
    }
}

void gelu_backward(float *dinp, const float *inp, const float *dout, long n) {
    for (long i = 0; i < n; i++) {
        float x = inp[i];
        float t = tanh_via_exp(GELU_SCALE * (x + 0.044715f * x * x * x));
        float sech2 = 1.0f - t * t;
        float local = 0.5f * (1.0f + t) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += local * dout[i];
    }
}
