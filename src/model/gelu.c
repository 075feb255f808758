// GELU, tanh approximation, with a tanh the compiler vectorises (fastmath.h). The forward
// pass adds the dense layer's bias to its input and keeps the derivative in the input's
// place, so the backward pass is one multiply per element (and sums the bias's gradient
// in the same pass): no second tanh, no division. Rows are shared among the threads.
#include <omp.h>
#include <stdlib.h>

#include "common/util.h"
#include "model/fastmath.h"
#include "model/layers.h"
#include "model/targets.h"
#include "model/threads.h"

#define GELU_SCALE 0.7978845608028654f  // √(2/π)
#define GELU_CUBIC 0.044715f

KERNEL_TARGETS
static void forward_rows(float *restrict out, float *restrict pre, const float *restrict bias, long n0, long n1,
                         int F) {
    for (long n = n0; n < n1; n++) {
        float *restrict x = pre + n * F, *restrict y = out + n * F;
        for (int i = 0; i < F; i++) {
            const float v = x[i] + bias[i];
            const float t = tanh_fast(GELU_SCALE * (v + GELU_CUBIC * v * v * v));
            y[i] = 0.5f * v * (1.0f + t);
            x[i] = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_SCALE * (1.0f + 3.0f * GELU_CUBIC * v * v);
        }
    }
}

void gelu_forward(float *out, float *pre, const float *bias, int N, int F) {
    const int nt = split_threads();
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        long lo, hi;
        thread_span(N, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        forward_rows(out, pre, bias, lo, hi, F);
    }
}

// Rows [n0, n1); dbias (F) is added into.
KERNEL_TARGETS
static void backward_rows(float *restrict d, float *restrict dbias, const float *restrict deriv, long n0, long n1,
                          int F) {
    for (long n = n0; n < n1; n++) {
        const float *restrict g = deriv + n * F;
        float *restrict dr = d + n * F;
        for (int i = 0; i < F; i++) {
            dr[i] *= g[i];
            dbias[i] += dr[i];
        }
    }
}

void gelu_backward(float *d, float *dbias, const float *deriv, int N, int F) {
    const int nt = split_threads();
    if (nt == 1) {
        backward_rows(d, dbias, deriv, 0, N, F);
        return;
    }
    float *part = xcalloc((size_t)nt * F, sizeof(float));  // per thread's dbias
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        long lo, hi;
        thread_span(N, t, omp_get_num_threads(), &lo, &hi);
        backward_rows(d, part + (size_t)t * F, deriv, lo, hi, F);
    }
    add_in_thread_order(dbias, part, nt, F, F);
    free(part);
}
