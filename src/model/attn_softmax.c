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
#include <stdlib.h>

#include "common/util.h"
#include "model/attention.h"
#include "model/attn_heads.h"
#include "model/attn_softmax_kernel.h"
#include "model/attn_tiles.h"

// Tiles of 64 (32 up to 256 tokens, where smaller tiles waste less of the causal diagonal).
enum { TILE_MAX = 64 };
static int tile_size(int T) { return T <= 256 ? 32 : TILE_MAX; }

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

static const AttnCore CORE = {head_alloc, head_release, attn_softmax_head_forward, attn_softmax_head_backward};

void attn_softmax_forward(float *out, float *saved, const float *qkv, int B, int T, int C, int NH, int causal) {
    attn_heads_forward(&CORE, out, saved, qkv, B, T, C, NH, causal);
}

void attn_softmax_backward(float *dqkv, const float *dout, const float *out, const float *saved, const float *qkv,
                           int B, int T, int C, int NH, int causal) {
    attn_heads_backward(&CORE, dqkv, dout, out, saved, qkv, B, T, C, NH, causal);
}
