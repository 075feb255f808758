// Softmax attention core (mha and tucker). T is small here (17 patches, 64 bytes), so
// the per-head products are plain loops over contiguous head slices rather than tiny
// GEMMs; the big projections around it are GEMMs in model.c.
#include <math.h>
#include <stdlib.h>

#include "common/util.h"
#include "model/attention.h"

void attn_softmax_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH,
                          int causal) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((long)b * T + t) * C3 + h * hs;
                float *a = att + (((long)b * NH + h) * T + t) * T;
                int send = causal ? t + 1 : T;
                float mx = -INFINITY;
                for (int s = 0; s < send; s++) {
                    const float *k = qkv + ((long)b * T + s) * C3 + C + h * hs;
                    float dot = 0.0f;
                    for (int i = 0; i < hs; i++) dot += q[i] * k[i];
                    a[s] = dot * scale;
                    if (a[s] > mx) mx = a[s];
                }
                float sum = 0.0f;
                for (int s = 0; s < send; s++) {
                    a[s] = expf(a[s] - mx);
                    sum += a[s];
                }
                float inv = 1.0f / sum;
                for (int s = 0; s < send; s++) a[s] *= inv;
                for (int s = send; s < T; s++) a[s] = 0.0f;
                float *o = out + ((long)b * T + t) * C + h * hs;
                for (int i = 0; i < hs; i++) o[i] = 0.0f;
                for (int s = 0; s < send; s++) {
                    const float *v = qkv + ((long)b * T + s) * C3 + 2 * C + h * hs;
                    for (int i = 0; i < hs; i++) o[i] += a[s] * v[i];
                }
            }
}

// With P = att, dP_ts = dout_t·v_s, the softmax backward is dS_ts = P_ts (dP_ts − Σ_s' P_ts' dP_ts').
void attn_softmax_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                           int B, int T, int C, int NH, int causal) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    float *dp = xmalloc((size_t)T * sizeof(float));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *a = att + (((long)b * NH + h) * T + t) * T;
                const float *d = dout + ((long)b * T + t) * C + h * hs;
                const float *q = qkv + ((long)b * T + t) * C3 + h * hs;
                float *dq = dqkv + ((long)b * T + t) * C3 + h * hs;
                int send = causal ? t + 1 : T;
                float dot_pdp = 0.0f;
                for (int s = 0; s < send; s++) {
                    long row = ((long)b * T + s) * C3;
                    const float *v = qkv + row + 2 * C + h * hs;
                    float *dv = dqkv + row + 2 * C + h * hs;
                    float x = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        x += d[i] * v[i];
                        dv[i] += a[s] * d[i];
                    }
                    dp[s] = x;
                    dot_pdp += a[s] * x;
                }
                for (int s = 0; s < send; s++) {
                    float ds = a[s] * (dp[s] - dot_pdp) * scale;
                    long row = ((long)b * T + s) * C3;
                    const float *k = qkv + row + C + h * hs;
                    float *dk = dqkv + row + C + h * hs;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += ds * k[i];
                        dk[i] += ds * q[i];
                    }
                }
            }
    free(dp);
}
