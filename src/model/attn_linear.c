// Linear attention core with φ(x) = elu(x) + 1, in the chunked form (as in Katharopoulos
// et al. 2020's causal linear attention computed by chunks, e.g. Yang et al. 2023):
//
//   out_t = n_t / d_t,  n_t = φq_t S_t,  d_t = φq_t·z_t + ε,  S_t = Σ_{s≤t} φk_s v_sᵀ,  z_t = Σ_{s≤t} φk_s.
//
// Tokens go in chunks of CH. Within chunk c, with S and z the state after the chunks
// before it and A = φQ_c φK_cᵀ masked to s ≤ t:
//   n_c = φQ_c S + A V_c,  d_c = φQ_c z + A 1 + ε,  then S += φK_cᵀ V_c,  z += φK_cᵀ 1,
// all products of tiles (tile_gemm, attn_tiles.h), so the core runs at the kernel's speed
// instead of one rank-1 update and one matrix-vector product per token. Not causal: S
// and z over all tokens first, then n_c = φQ_c S for every chunk.
//
// Backward, with dn_t = dout_t / d_t, dd_t = −(dout_t·out_t) / d_t and G_ts = v_s·dn_t + dd_t:
//   dφq_t = Σ_{s≤t} G_ts φk_s,  dφk_s = Σ_{t≥s} G_ts φq_t,  dv_s = Σ_{t≥s} (φq_t·φk_s) dn_t
// (all s and t when not causal), split the same way: within a chunk G and A as masked
// tiles; from the chunks before, the prefix state U = Σ v_s φk_sᵀ and z (for dφq); from
// the chunks after, the suffix states R = Σ dn_t φq_tᵀ, R' = Σ φq_t dn_tᵀ and
// r = Σ dd_t φq_t (for dφk and dv). The forward pass saves d_t; the rest is recomputed.
//
// Every pass streams: a chunk's rows are packed from qkv (and dout) into tiles, used, and
// its results written out before the next chunk, so the forward pass's working set is a
// few tiles and the states, whatever T. The backward pass goes twice over the chunks: forward
// in time carrying the prefix states and writing dq, then backward in time carrying the
// suffix states and writing dk and dv. The first packs each chunk's tiles (φq, φk, v, dn,
// dd and its masked G) into a slot of its own, written once and read once by the second,
// which therefore computes no φ and reads neither qkv nor dout.
#include <stdlib.h>

#include "common/util.h"
#include "model/attention.h"
#include "model/attn_heads.h"
#include "model/attn_linear_kernel.h"

static void *head_alloc(int T, int hs) {
    Head *w = xmalloc(sizeof *w);
    *w = (Head){.T = T, .hs = hs, .HP = tile_round(hs)};
    const size_t tile = (size_t)CH * w->HP, st = (size_t)w->HP * w->HP, chunks = (size_t)(T + CH - 1) / CH;
    w->slot = 4 * tile + CH * CH + CH;
    float *p = tile_alloc(chunks * w->slot + 3 * tile + CH * CH + 3 * st + 2 * (size_t)w->HP + CH, &w->block);
    w->slots = p, w->o = p + chunks * w->slot, w->fqt = w->o + tile, w->dnt = w->fqt + tile, w->a = w->dnt + tile;
    w->u = w->a + CH * CH, w->rq = w->u + st, w->rk = w->rq + st;
    w->z = w->rk + st, w->r = w->z + w->HP, w->den = w->r + w->HP;
    return w;
}

static void head_release(void *work) {
    Head *w = work;
    free(w->block);
    free(w);
}

static const AttnCore CORE = {head_alloc, head_release, attn_linear_head_forward, attn_linear_head_backward};

void attn_linear_forward(float *out, float *saved, const float *qkv, int B, int T, int C, int NH, int causal) {
    attn_heads_forward(&CORE, out, saved, qkv, B, T, C, NH, causal);
}

void attn_linear_backward(float *dqkv, const float *dout, const float *out, const float *saved, const float *qkv,
                          int B, int T, int C, int NH, int causal) {
    attn_heads_backward(&CORE, dqkv, dout, out, saved, qkv, B, T, C, NH, causal);
}
