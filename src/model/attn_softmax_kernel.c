// attn_softmax_kernel.c: the passes of the softmax attention core over one head (the
// algorithm: attn_softmax.c), compiled for several instruction sets (KERNEL_TARGETS).
#include <math.h>
#include <string.h>

#include "model/attn_softmax_kernel.h"
#include "model/attn_tiles.h"
#include "model/fastmath.h"

// The online softmax on one tile of scores: s holds Sᵀ (nc keys × nq queries, row stride
// tb) and becomes Pᵀ = e^{S − m}; m, sum (nq) are the queries' running maximum and sum,
// updated, and alpha (nq) receives e^{m_old − m_new}, the factor for the output so far.
// diag: the tile is on the causal diagonal (query tile = key tile), where key c is masked
// for the queries l < c (a compile-time constant after inlining).
TILES_INLINE void online_softmax(float *restrict s, float *restrict m, float *restrict sum, float *restrict alpha,
                                 int tb, int nc, int nq, int diag) {
    for (int l = 0; l < nq; l++) alpha[l] = m[l];
    for (int c = 0; c < nc; c++)
        for (int l = 0; l < nq; l++) {
            const float x = diag && c > l ? -INFINITY : s[c * tb + l];
            m[l] = x > m[l] ? x : m[l];
        }
    for (int l = 0; l < nq; l++) {
        alpha[l] = exp_fast(alpha[l] - m[l]);  // 0 on the first tile (m was −∞)
        sum[l] *= alpha[l];
    }
    for (int c = 0; c < nc; c++)
        for (int l = 0; l < nq; l++) {
            const float p = diag && c > l ? 0.0f : exp_fast(s[c * tb + l] - m[l]);
            s[c * tb + l] = p;
            sum[l] += p;
        }
}

// The backward's tile: p holds Sᵀ and becomes Pᵀ = e^{S − lse}; dp holds dPᵀ and becomes
// dSᵀ = Pᵀ ⊙ (dPᵀ − D); lse and d per query (nq); diag as in online_softmax.
TILES_INLINE void softmax_grad_tile(float *restrict p, float *restrict dp, const float *restrict lse,
                                    const float *restrict d, int tb, int nc, int nq, int diag) {
    for (int c = 0; c < nc; c++)
        for (int l = 0; l < nq; l++) {
            const float e = diag && c > l ? 0.0f : exp_fast(p[c * tb + l] - lse[l]);
            p[c * tb + l] = e;
            dp[c * tb + l] = e * (dp[c * tb + l] - d[l]);
        }
}

// One sequence and head: out rows (T, hs wide, stride C) and lse (T) from q, k, v rows
// of qkv (stride 3C). Uses w.qt (qᵀ/√hs), w.v, w.s (Sᵀ, then Pᵀ), w.o, w.m, w.l, w.alpha.
KERNEL_TARGETS
void attn_softmax_head_forward(void *work, float *out, float *lse, const float *qkv, int C, int causal) {
    Head *w = work;
    const int T = w->T, Tp = w->Tp, hs = w->hs, HP = w->HP, nvh = HP / TILE_VL, tb = w->tb;
    const long ld = 3L * C;
    tile_pack_cols(w->qt, Tp, qkv, ld, T, hs, 1.0f / sqrtf((float)hs));
    tile_pack_rows(w->v, HP, qkv + 2 * C, ld, T, T, hs, 1.0f);
    for (int i0 = 0; i0 < T; i0 += tb) {
        const int nr = T - i0 < tb ? T - i0 : tb, nq = tile_round(nr), kend = causal ? i0 + nr : T;
        for (int l = 0; l < nq; l++) w->m[l] = -INFINITY, w->l[l] = 0.0f;
        memset(w->o, 0, (size_t)nr * HP * sizeof(float));
        for (int j0 = 0; j0 < kend; j0 += tb) {
            const int nc = kend - j0 < tb ? kend - j0 : tb;
            tile_gemm(w->s, tb, qkv + C + j0 * ld, ld, 1, w->qt + i0, Tp, nc, hs, nq / TILE_VL, 0);
            if (causal && j0 == i0)
                online_softmax(w->s, w->m, w->l, w->alpha, tb, nc, nq, 1);
            else
                online_softmax(w->s, w->m, w->l, w->alpha, tb, nc, nq, 0);
            for (int r = 0; r < nr; r++)
                for (int i = 0; i < HP; i++) w->o[(long)r * HP + i] *= w->alpha[r];
            tile_gemm(w->o, HP, w->s, 1, tb, w->v + (long)j0 * HP, HP, nr, nc, nvh, 1);
        }
        for (int r = 0; r < nr; r++) {
            const float inv = 1.0f / w->l[r];
            float *dst = out + (long)(i0 + r) * C;
            for (int i = 0; i < hs; i++) dst[i] = w->o[(long)r * HP + i] * inv;
            lse[i0 + r] = w->m[r] + logf(w->l[r]);
        }
    }
}

// One sequence and head: writes dq, dk, dv into the rows of dqkv (stride 3C). Uses w.qt
// (qᵀ/√hs), w.gt (doutᵀ), w.q (q/√hs), w.k, w.g (dout), w.dq, w.dk, w.dv, w.s (Sᵀ, then
// Pᵀ), w.dp (dPᵀ, then dSᵀ), w.lse and w.d.
KERNEL_TARGETS
void attn_softmax_head_backward(void *work, float *dqkv, const float *dout, const float *out, const float *lse,
                                const float *qkv, int C, int causal) {
    Head *w = work;
    const int T = w->T, Tp = w->Tp, hs = w->hs, HP = w->HP, nvh = HP / TILE_VL, tb = w->tb;
    const long ld = 3L * C;
    const float scale = 1.0f / sqrtf((float)hs);
    tile_pack_cols(w->qt, Tp, qkv, ld, T, hs, scale);
    tile_pack_cols(w->gt, Tp, dout, C, T, hs, 1.0f);
    tile_pack_rows(w->q, HP, qkv, ld, T, T, hs, scale);
    tile_pack_rows(w->k, HP, qkv + C, ld, T, T, hs, 1.0f);
    tile_pack_rows(w->g, HP, dout, C, T, T, hs, 1.0f);
    for (int t = 0; t < T; t++) {
        const float *g = dout + (long)t * C, *o = out + (long)t * C;
        float d = 0.0f;
#pragma omp simd reduction(+ : d)
        for (int i = 0; i < hs; i++) d += g[i] * o[i];
        w->d[t] = d;
        w->lse[t] = lse[t];
    }
    for (int t = T; t < Tp; t++) w->d[t] = w->lse[t] = 0.0f;
    memset(w->dq, 0, (size_t)T * HP * sizeof(float));
    for (int j0 = 0; j0 < T; j0 += tb) {
        const int nc = T - j0 < tb ? T - j0 : tb;
        memset(w->dk, 0, (size_t)nc * HP * sizeof(float));
        memset(w->dv, 0, (size_t)nc * HP * sizeof(float));
        for (int i0 = causal ? j0 : 0; i0 < T; i0 += tb) {
            const int nr = T - i0 < tb ? T - i0 : tb, nq = tile_round(nr);
            tile_gemm(w->s, tb, qkv + C + j0 * ld, ld, 1, w->qt + i0, Tp, nc, hs, nq / TILE_VL, 0);
            tile_gemm(w->dp, tb, qkv + 2 * C + j0 * ld, ld, 1, w->gt + i0, Tp, nc, hs, nq / TILE_VL, 0);
            if (causal && j0 == i0)
                softmax_grad_tile(w->s, w->dp, w->lse + i0, w->d + i0, tb, nc, nq, 1);
            else
                softmax_grad_tile(w->s, w->dp, w->lse + i0, w->d + i0, tb, nc, nq, 0);
            tile_gemm(w->dv, HP, w->s, tb, 1, w->g + (long)i0 * HP, HP, nc, nr, nvh, 1);
            tile_gemm(w->dk, HP, w->dp, tb, 1, w->q + (long)i0 * HP, HP, nc, nr, nvh, 1);
            tile_gemm(w->dq + (long)i0 * HP, HP, w->dp, 1, tb, w->k + (long)j0 * HP, HP, nr, nc, nvh, 1);
        }
        tile_unpack_rows(dqkv + j0 * ld + C, ld, w->dk, HP, nc, hs, 1.0f);
        tile_unpack_rows(dqkv + j0 * ld + 2 * C, ld, w->dv, HP, nc, hs, 1.0f);
    }
    tile_unpack_rows(dqkv, ld, w->dq, HP, T, hs, scale);
}
