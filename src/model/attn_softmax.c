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

// The tiles the forward pass keeps for the backward pass, per block of LANES sequences
// and per head: q, k, v (T, hs) and the probabilities p (T, T), all in lanes.
static inline size_t head_tile_lanes(int T, int hs) { return 3 * (size_t)T * hs + (size_t)T * T; }

size_t attn_softmax_saved_floats(int B, int T, int C, int NH) {
    size_t blocks = ((size_t)B + LANES - 1) / LANES;
    return blocks * NH * head_tile_lanes(T, C / NH) * LANES;
}

// Moving between rows (one per sequence) and lanes is a transpose. Full 16 × 16 blocks
// go through a fixed-size transpose that the compiler turns into vector permutes; the
// rest (a partial batch block, hs not a multiple of 16) element by element.

// dst[i][l] = src[l·stride + i], i, l < 16
static inline void block_to_lanes(Lane *restrict dst, const float *restrict src, long stride) {
    float rows[LANES][LANES];
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < LANES; i++) rows[l][i] = src[l * stride + i];
    for (int i = 0; i < LANES; i++)
        for (int l = 0; l < LANES; l++) dst[i][l] = rows[l][i];
}

// dst[l·stride + i] (+)= src[i][l], i, l < 16
static inline void block_from_lanes(float *restrict dst, long stride, const Lane *restrict src, int add) {
    float rows[LANES][LANES];
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < LANES; i++) rows[l][i] = src[i][l];
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < LANES; i++) dst[l * stride + i] = (add ? dst[l * stride + i] : 0.0f) + rows[l][i];
}

// tile[t·hs + i][lane] = src[(b0 + lane, t), col + i] for the nl real lanes; 0 beyond.
static void gather(Lane *tile, const float *src, int b0, int nl, int T, int stride, int col, int hs) {
    const long lane_stride = (long)T * stride;  // from one sequence's row to the next's
    const int full = nl == LANES ? hs / LANES * LANES : 0;
    if (nl < LANES) memset(tile, 0, (size_t)T * hs * sizeof(Lane));
    for (int t = 0; t < T; t++) {
        const float *row0 = src + ((long)b0 * T + t) * stride + col;
        for (int i = 0; i < full; i += LANES) block_to_lanes(tile + t * hs + i, row0 + i, lane_stride);
        for (int l = 0; l < nl; l++)
            for (int i = full; i < hs; i++) tile[t * hs + i][l] = row0[l * lane_stride + i];
    }
}

static void scatter(float *dst, const Lane *tile, int add, int b0, int nl, int T, int stride, int col, int hs) {
    const long lane_stride = (long)T * stride;
    const int full = nl == LANES ? hs / LANES * LANES : 0;
    for (int t = 0; t < T; t++) {
        float *row0 = dst + ((long)b0 * T + t) * stride + col;
        for (int i = 0; i < full; i += LANES) block_from_lanes(row0 + i, lane_stride, tile + t * hs + i, add);
        for (int l = 0; l < nl; l++)
            for (int i = full; i < hs; i++)
                row0[l * lane_stride + i] = (add ? row0[l * lane_stride + i] : 0.0f) + tile[t * hs + i][l];
    }
}

void attn_softmax_forward(float *out, float *saved, const float *qkv, int B, int T, int C, int NH,
                          int causal) {
    const int hs = C / NH, C3 = 3 * C;
    const size_t th = (size_t)T * hs;
    const float scale = 1.0f / sqrtf((float)hs);
    Lane *o = xmalloc(th * sizeof(Lane));
    for (int b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? B - b0 : LANES;
        for (int h = 0; h < NH; h++) {
            Lane *q = (Lane *)saved + ((size_t)(b0 / LANES) * NH + h) * head_tile_lanes(T, hs);
            Lane *k = q + th, *v = k + th, *p = v + th;
            gather(q, qkv, b0, nl, T, C3, h * hs, hs);
            gather(k, qkv, b0, nl, T, C3, C + h * hs, hs);
            gather(v, qkv, b0, nl, T, C3, 2 * C + h * hs, hs);
            for (int t = 0; t < T; t++) {
                const int send = causal ? t + 1 : T;
                Lane *pt = p + (long)t * T, mx, sum;
                // Scores in pairs of keys: two independent FMA chains hide the latency.
                int s = 0;
                for (; s + 1 < send; s += 2) {
                    Lane a0 = {0}, a1 = {0};
                    for (int i = 0; i < hs; i++) {
                        lane_fma(a0, q[t * hs + i], k[s * hs + i]);
                        lane_fma(a1, q[t * hs + i], k[(s + 1) * hs + i]);
                    }
                    for (int l = 0; l < LANES; l++) pt[s][l] = a0[l] * scale, pt[s + 1][l] = a1[l] * scale;
                }
                for (; s < send; s++) {
                    Lane a0 = {0};
                    for (int i = 0; i < hs; i++) lane_fma(a0, q[t * hs + i], k[s * hs + i]);
                    for (int l = 0; l < LANES; l++) pt[s][l] = a0[l] * scale;
                }
                memcpy(mx, pt[0], sizeof(Lane));
                for (s = 1; s < send; s++)
                    for (int l = 0; l < LANES; l++) mx[l] = pt[s][l] > mx[l] ? pt[s][l] : mx[l];
                memset(sum, 0, sizeof(Lane));
                for (s = 0; s < send; s++)
                    for (int l = 0; l < LANES; l++) {
                        pt[s][l] = exp_fast(pt[s][l] - mx[l]);
                        sum[l] += pt[s][l];
                    }
                for (int l = 0; l < LANES; l++) sum[l] = 1.0f / sum[l];
                for (s = 0; s < send; s++)
                    for (int l = 0; l < LANES; l++) pt[s][l] *= sum[l];
                for (s = send; s < T; s++) memset(pt[s], 0, sizeof(Lane));
                memset(o + (long)t * hs, 0, (size_t)hs * sizeof(Lane));
                for (s = 0; s < send; s++)
                    for (int i = 0; i < hs; i++) lane_fma(o[t * hs + i], pt[s], v[s * hs + i]);
            }
            scatter(out, o, 0, b0, nl, T, C, h * hs, hs);
        }
    }
    free(o);
}

// With P = att, dP_ts = dout_t·v_s, the softmax backward is dS_ts = P_ts (dP_ts − Σ_s' P_ts' dP_ts').
void attn_softmax_backward(float *dqkv, const float *dout, const float *saved, int B, int T, int C, int NH,
                           int causal) {
    const int hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t th = (size_t)T * hs;
    Lane *d = xmalloc((4 * th + T) * sizeof(Lane));
    Lane *dq = d + th, *dk = dq + th, *dv = dk + th, *dp = dv + th;
    for (int b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? B - b0 : LANES;
        for (int h = 0; h < NH; h++) {
            const Lane *q = (const Lane *)saved + ((size_t)(b0 / LANES) * NH + h) * head_tile_lanes(T, hs);
            const Lane *k = q + th, *v = k + th, *p = v + th;
            gather(d, dout, b0, nl, T, C, h * hs, hs);
            memset(dq, 0, 3 * th * sizeof(Lane));  // dq, dk, dv are adjacent
            for (int t = 0; t < T; t++) {
                const int send = causal ? t + 1 : T;
                const Lane *pt = p + (long)t * T;
                Lane dot = {0};
                for (int s = 0; s < send; s++) {
                    Lane a0 = {0}, a1 = {0};  // two chains over i hide the FMA latency
                    int i = 0;
                    for (; i + 1 < hs; i += 2) {
                        lane_fma(a0, d[t * hs + i], v[s * hs + i]);
                        lane_fma(a1, d[t * hs + i + 1], v[s * hs + i + 1]);
                    }
                    for (; i < hs; i++) lane_fma(a0, d[t * hs + i], v[s * hs + i]);
                    for (int l = 0; l < LANES; l++) dp[s][l] = a0[l] + a1[l];
                    for (i = 0; i < hs; i++) lane_fma(dv[s * hs + i], pt[s], d[t * hs + i]);
                    lane_fma(dot, pt[s], dp[s]);
                }
                for (int s = 0; s < send; s++) {
                    Lane ds;
                    for (int l = 0; l < LANES; l++) ds[l] = pt[s][l] * (dp[s][l] - dot[l]) * scale;
                    for (int i = 0; i < hs; i++) {
                        lane_fma(dq[t * hs + i], ds, k[s * hs + i]);
                        lane_fma(dk[s * hs + i], ds, q[t * hs + i]);
                    }
                }
            }
            scatter(dqkv, dq, 1, b0, nl, T, C3, h * hs, hs);
            scatter(dqkv, dk, 1, b0, nl, T, C3, C + h * hs, hs);
            scatter(dqkv, dv, 1, b0, nl, T, C3, 2 * C + h * hs, hs);
        }
    }
    free(d);
}
