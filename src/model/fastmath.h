// fastmath.h: an exp that the compiler can vectorise (no libm call in the loop).
//
// Cody–Waite range reduction x = n·ln2 + r, |r| ≤ ln2/2, and the Cephes degree-6
// polynomial for e^r: relative error below 2e-7 over the float range, the same as
// libm's expf to within an ulp or two. NaN in, NaN out (divergence must stay visible);
// below −87.3 the result is 0's neighbourhood (e^−87.3 ≈ 1.2e−38), above 88.3 it
// saturates near FLT_MAX.
#ifndef ATTN_FASTMATH_H
#define ATTN_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float exp_fast(float x) {
    float xc = x > -87.3f ? x : -87.3f;  // written so a NaN lands inside the range
    xc = xc < 88.3f ? xc : 88.3f;
    // n = round(x / ln2) by the 1.5·2²³ trick (floorf would be a libm call in the loop).
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x == x ? p * scale : x;
}

// tanh(u) = 1 − 2 / (e^{2u} + 1), exact to float precision at both ends.
static inline float tanh_fast(float u) { return 1.0f - 2.0f / (exp_fast(2.0f * u) + 1.0f); }

// 1 / (1 + e^{−x})
static inline float sigmoid_fast(float x) { return 1.0f / (1.0f + exp_fast(-x)); }

#endif
