// Softmax attention core (mha and tucker).
//
// T is small here (17 image tokens, 64 bytes), so per-head products are too small for
// GEMMs and too short for vector loops over t or the head dimension (17 = 16 + a
// scalar tail, and dot products need horizontal sums). Instead the batch is the
// vector dimension: LANES consecutive sequences are gathered into tiles laid out
// [t][i][lane], and every operation below is an elementwise op on LANES-wide rows,
// which the compiler turns into full-width vector instructions. Lanes past the end
// of the batch hold zeros and are never scattered back.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/attention.h"
#include "model/fastmath.h"

enum { LANES = 16 };
typedef float Lane[LANES];

// y += a ⊙ b, lane by lane (and the other small lane ops).
static inline void lane_fma(float *restrict y, const float *restrict a, const float *restrict b) {
    for (int l = 0; l < LANES; l++) y[l] += a[l] * b[l];
}

typedef struct {
    Lane *q, *k, *v, *d;     // (T, hs) tiles of lanes: inputs and the output gradient
    Lane *dq, *dk, *dv;      // (T, hs) gradient tiles
    Lane *p;                 // (T, T) probabilities
    Lane *dp;                // (T) one row of dP
} LaneTiles;

static LaneTiles tiles_alloc(int T, int hs) {
    size_t th = (size_t)T * hs;
    Lane *m = xmalloc((7 * th + (size_t)T * T + T) * sizeof(Lane));
    return (LaneTiles){m, m + th, m + 2 * th, m + 3 * th, m + 4 * th, m + 5 * th, m + 6 * th, m + 7 * th,
                       m + 7 * th + (size_t)T * T};
}

// tile[t·hs + i][lane] = src[(b0 + lane, t), col + i] for the nl real lanes; 0 beyond.
static void gather(Lane *tile, const float *src, int b0, int nl, int T, int stride, int col, int hs) {
    if (nl < LANES) memset(tile, 0, (size_t)T * hs * sizeof(Lane));
    for (int l = 0; l < nl; l++)
        for (int t = 0; t < T; t++) {
            const float *row = src + ((long)(b0 + l) * T + t) * stride + col;
            for (int i = 0; i < hs; i++) tile[t * hs + i][l] = row[i];
        }
}

static void scatter(float *dst, const Lane *tile, int add, int b0, int nl, int T, int stride, int col, int hs) {
    for (int l = 0; l < nl; l++)
        for (int t = 0; t < T; t++) {
            float *row = dst + ((long)(b0 + l) * T + t) * stride + col;
            for (int i = 0; i < hs; i++) row[i] = (add ? row[i] : 0.0f) + tile[t * hs + i][l];
        }
}

void attn_softmax_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH,
                          int causal) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    LaneTiles w = tiles_alloc(T, hs);
    Lane *o = w.d;  // the output tile reuses the gradient tile's space
    for (int b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? B - b0 : LANES;
        for (int h = 0; h < NH; h++) {
            gather(w.q, qkv, b0, nl, T, C3, h * hs, hs);
            gather(w.k, qkv, b0, nl, T, C3, C + h * hs, hs);
            gather(w.v, qkv, b0, nl, T, C3, 2 * C + h * hs, hs);
            for (int t = 0; t < T; t++) {
                const int send = causal ? t + 1 : T;
                Lane *p = w.p + (long)t * T, mx, sum;
                for (int s = 0; s < send; s++) {
                    Lane acc = {0};
                    for (int i = 0; i < hs; i++) lane_fma(acc, w.q[t * hs + i], w.k[s * hs + i]);
                    for (int l = 0; l < LANES; l++) p[s][l] = acc[l] * scale;
                }
                memcpy(mx, p[0], sizeof(Lane));
                for (int s = 1; s < send; s++)
                    for (int l = 0; l < LANES; l++) mx[l] = p[s][l] > mx[l] ? p[s][l] : mx[l];
                memset(sum, 0, sizeof(Lane));
                for (int s = 0; s < send; s++)
                    for (int l = 0; l < LANES; l++) {
                        p[s][l] = exp_fast(p[s][l] - mx[l]);
                        sum[l] += p[s][l];
                    }
                for (int l = 0; l < LANES; l++) sum[l] = 1.0f / sum[l];
                for (int s = 0; s < send; s++)
                    for (int l = 0; l < LANES; l++) p[s][l] *= sum[l];
                for (int s = send; s < T; s++) memset(p[s], 0, sizeof(Lane));
                memset(o + (long)t * hs, 0, (size_t)hs * sizeof(Lane));
                for (int s = 0; s < send; s++)
                    for (int i = 0; i < hs; i++) lane_fma(o[t * hs + i], p[s], w.v[s * hs + i]);
            }
            scatter(out, o, 0, b0, nl, T, C, h * hs, hs);
            for (int l = 0; l < nl; l++)  // att[b][h][t][s] = p[t][s][lane]
                for (int ts = 0; ts < T * T; ts++) att[((long)(b0 + l) * NH + h) * T * T + ts] = w.p[ts][l];
        }
    }
    free(w.q);
}

// With P = att, dP_ts = dout_t·v_s, the softmax backward is dS_ts = P_ts (dP_ts − Σ_s' P_ts' dP_ts').
void attn_softmax_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
                           int B, int T, int C, int NH, int causal) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t th = (size_t)T * hs;
    LaneTiles w = tiles_alloc(T, hs);
    for (int b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? B - b0 : LANES;
        for (int h = 0; h < NH; h++) {
            gather(w.q, qkv, b0, nl, T, C3, h * hs, hs);
            gather(w.k, qkv, b0, nl, T, C3, C + h * hs, hs);
            gather(w.v, qkv, b0, nl, T, C3, 2 * C + h * hs, hs);
            gather(w.d, dout, b0, nl, T, C, h * hs, hs);
            gather(w.p, att + (long)h * T * T, b0, nl, 1, NH * T * T, 0, T * T);
            memset(w.dq, 0, 3 * th * sizeof(Lane));  // dq, dk, dv are adjacent
            for (int t = 0; t < T; t++) {
                const int send = causal ? t + 1 : T;
                const Lane *p = w.p + (long)t * T;
                Lane dot = {0};
                for (int s = 0; s < send; s++) {
                    Lane *dp = w.dp + s;
                    memset(dp, 0, sizeof(Lane));
                    for (int i = 0; i < hs; i++) {
                        lane_fma(*dp, w.d[t * hs + i], w.v[s * hs + i]);
                        lane_fma(w.dv[s * hs + i], p[s], w.d[t * hs + i]);
                    }
                    lane_fma(dot, p[s], *dp);
                }
                for (int s = 0; s < send; s++) {
                    Lane ds;
                    for (int l = 0; l < LANES; l++) ds[l] = p[s][l] * (w.dp[s][l] - dot[l]) * scale;
                    for (int i = 0; i < hs; i++) {
                        lane_fma(w.dq[t * hs + i], ds, w.k[s * hs + i]);
                        lane_fma(w.dk[s * hs + i], ds, w.q[t * hs + i]);
                    }
                }
            }
            scatter(dqkv, w.dq, 1, b0, nl, T, C3, h * hs, hs);
            scatter(dqkv, w.dk, 1, b0, nl, T, C3, C + h * hs, hs);
            scatter(dqkv, w.dv, 1, b0, nl, T, C3, 2 * C + h * hs, hs);
        }
    }
    free(w.q);
}
