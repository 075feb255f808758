// Softmax attention core (mha and tucker), flash-style (FlashAttention, Dao et al. 2022,
// with FlashAttention-2's loop order for the backward pass).
//
// Per sequence and head, tiles of tb queries meet tiles of tb keys: the scores
// S = q kᵀ/√hs of the pair of tiles, the online softmax (the running row maximum m and
// sum l; the output so far rescaled by e^{m_old − m_new} when m grows), O += P v. Only
// the log-sum-exp lse = m + log l of each row is kept for the backward pass, which
// recomputes S and P = e^{S − lse} tile by tile: memory O(T), not O(T²). Causal: tiles
// wholly above the diagonal are skipped, the diagonal tile is masked.
//
// Backward, per key tile, with D_t = dout_t · out_t (= Σ_s P_ts dP_ts):
//   dP = dout vᵀ,  dS = P ⊙ (dP − D),  dv += Pᵀ dout,  dk += dSᵀ q/√hs,  dq += dS k/√hs.
//
// The products are tile_gemm (attn_tiles.h). A tile of scores is held transposed, one
// row per key and the queries along the vectors, so that the softmax's statistics per
// query (maximum, sum, lse, D) are elementwise operations on vectors, with no horizontal
// sums; tile_gemm reads its scalar operand with any strides, which gives Pᵀ and dSᵀ for
// free. The vector operands are packed per head into zero-padded rows of Tp (T rounded
// up to TILE_VL) or HP (hs rounded up) floats; keys come straight from qkv.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/attention.h"
#include "model/attn_heads.h"
#include "model/attn_tiles.h"
#include "model/fastmath.h"

// Tiles of 64 (32 up to 256 tokens, where smaller tiles waste less of the causal diagonal).
enum { TILE_MAX = 64 };
static int tile_size(int T) { return T <= 256 ? 32 : TILE_MAX; }

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

// Per-head scratch; each pass says which fields it uses.
typedef struct {
    void *block;
    float *qt, *gt, *q, *k, *v, *g, *dq, *dk, *dv, *s, *dp, *o, *m, *l, *alpha, *lse, *d;
    int T, Tp, hs, HP, tb;
} Head;

static void *head_alloc(int T, int hs) {
    Head *w = xmalloc(sizeof *w);
    *w = (Head){.T = T, .Tp = tile_round(T), .hs = hs, .HP = tile_round(hs), .tb = tile_size(T)};
    const size_t th = (size_t)w->Tp * w->HP, tile = (size_t)TILE_MAX * TILE_MAX, rows = (size_t)TILE_MAX * w->HP;
    float *p = tile_alloc(8 * th + 3 * rows + 2 * tile + 3 * TILE_MAX + 2 * w->Tp, &w->block);
    w->qt = p, w->gt = p + th, w->q = p + 2 * th, w->k = p + 3 * th, w->v = p + 4 * th, w->g = p + 5 * th;
    w->dq = p + 6 * th;
    w->dk = p + 8 * th, w->dv = w->dk + rows;
    w->s = w->dv + rows, w->dp = w->s + tile;
    w->o = w->dp + tile, w->m = w->o + rows, w->l = w->m + TILE_MAX, w->alpha = w->l + TILE_MAX;
    w->lse = w->alpha + TILE_MAX, w->d = w->lse + w->Tp;
    return w;
}

static void head_release(void *work) {
    Head *w = work;
    free(w->block);
    free(w);
}

// One sequence and head: out rows (T, hs wide, stride C) and lse (T) from q, k, v rows
// of qkv (stride 3C). Uses w.qt (qᵀ/√hs), w.v, w.s (Sᵀ, then Pᵀ), w.o, w.m, w.l, w.alpha.
KERNEL_TARGETS
static void head_forward(void *work, float *out, float *lse, const float *qkv, int C, int causal) {
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
static void head_backward(void *work, float *dqkv, const float *dout, const float *out, const float *lse,
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

static const AttnCore CORE = {head_alloc, head_release, head_forward, head_backward};

void attn_softmax_forward(float *out, float *saved, const float *qkv, int B, int T, int C, int NH, int causal) {
    attn_heads_forward(&CORE, out, saved, qkv, B, T, C, NH, causal);
}

void attn_softmax_backward(float *dqkv, const float *dout, const float *out, const float *saved, const float *qkv,
                           int B, int T, int C, int NH, int causal) {
    attn_heads_backward(&CORE, dqkv, dout, out, saved, qkv, B, T, C, NH, causal);
}
