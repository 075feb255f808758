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
#include <stdlib.h>
#include <string.h>

#include "model/attention.h"
#include "model/attn_heads.h"
#include "model/attn_tiles.h"
#include "model/fastmath.h"

// Tokens per chunk (a multiple of TILE_VL): a chunk's own products cost ∝ CH a token, the
// state's ∝ the head's width, so CH about the width (16 here; 32 cost 15 % more).
enum { CH = 16 };

static inline float phi(float x) { return x > 0.0f ? x + 1.0f : exp_fast(x); }

// Per-head scratch. Rows (T × HP): φq, φk, v, dn and the gradients dφq, dφk, dv; their
// transposes (hs × Tp): φqᵀ, φkᵀ, dnᵀ; the chunk's tiles A and G (CH × CH) and output
// (CH × HP); the states (hs × HP, or HP) and per-token values.
typedef struct {
    void *block;
    float *fq, *fk, *v, *dn, *dfq, *dfk, *dv, *fqt, *fkt, *dnt, *a, *g, *o, *u, *z, *rq, *rk, *r, *den, *dd;
    int T, Tp, hs, HP;
} Head;

static void *head_alloc(int T, int hs) {
    Head *w = xmalloc(sizeof *w);
    *w = (Head){.T = T, .Tp = tile_round(T), .hs = hs, .HP = tile_round(hs)};
    const size_t th = (size_t)w->Tp * w->HP, st = (size_t)w->HP * w->HP;
    float *p = tile_alloc(10 * th + 2 * CH * CH + (size_t)CH * w->HP + 3 * st + 2 * (size_t)w->HP + CH + w->Tp, &w->block);
    float **rows[] = {&w->fq, &w->fk, &w->v, &w->dn, &w->dfq, &w->dfk, &w->dv, &w->fqt, &w->fkt, &w->dnt};
    for (int i = 0; i < 10; i++) *rows[i] = p + i * th;
    w->a = p + 10 * th, w->g = w->a + CH * CH, w->o = w->g + CH * CH;
    w->u = w->o + (size_t)CH * w->HP, w->rq = w->u + st, w->rk = w->rq + st;
    w->z = w->rk + st, w->r = w->z + w->HP, w->den = w->r + w->HP, w->dd = w->den + CH;
    return w;
}

static void head_release(void *work) {
    Head *w = work;
    free(w->block);
    free(w);
}

// w.fq, w.fk (rows) and w.fqt, w.fkt (transposed) = φ of the head's q and k in qkv (stride ld).
TILES_INLINE void pack_phi(Head *w, const float *qkv, long ld, int C) {
    const int T = w->T, HP = w->HP, hs = w->hs;
    tile_pack_rows(w->fq, HP, qkv, ld, T, T, hs, 1.0f);
    tile_pack_rows(w->fk, HP, qkv + C, ld, T, T, hs, 1.0f);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < hs; i++) {
            w->fq[(long)t * HP + i] = phi(w->fq[(long)t * HP + i]);
            w->fk[(long)t * HP + i] = phi(w->fk[(long)t * HP + i]);
        }
    tile_pack_cols(w->fqt, w->Tp, w->fq, HP, T, hs, 1.0f);
    tile_pack_cols(w->fkt, w->Tp, w->fk, HP, T, hs, 1.0f);
}

// Zeroes the entries of a tile (n keys s × nq queries t, row stride CH) with s > t: the
// causal mask of the diagonal chunk.
TILES_INLINE void mask_upper(float *x, int n, int nq) {
    for (int s = 0; s < n; s++)
        for (int t = 0; t < nq; t++)
            if (s > t) x[s * CH + t] = 0.0f;
}

// The forward state S += φK_cᵀ V_c, z += φK_cᵀ 1 over the n tokens from t0.
TILES_INLINE void forward_state_add(Head *w, int t0, int n) {
    const int HP = w->HP;
    tile_gemm(w->u, HP, w->fkt + t0, w->Tp, 1, w->v + (long)t0 * HP, HP, w->hs, n, HP / TILE_VL, 1);
    for (int s = 0; s < n; s++)
        for (int i = 0; i < HP; i++) w->z[i] += w->fk[(long)(t0 + s) * HP + i];
}

// One sequence and head: out rows (T, hs wide, stride C) and den (T) from qkv (stride 3C).
// The state S is w.u, z is w.z.
KERNEL_TARGETS
static void head_forward(void *work, float *out, float *den, const float *qkv, int C, int causal) {
    Head *w = work;
    const int T = w->T, Tp = w->Tp, hs = w->hs, HP = w->HP, nvh = HP / TILE_VL;
    const long ld = 3L * C;
    pack_phi(w, qkv, ld, C);
    tile_pack_rows(w->v, HP, qkv + 2 * C, ld, T, T, hs, 1.0f);
    memset(w->u, 0, (size_t)hs * HP * sizeof(float));
    memset(w->z, 0, (size_t)HP * sizeof(float));
    if (!causal)
        for (int t0 = 0; t0 < T; t0 += CH) forward_state_add(w, t0, T - t0 < CH ? T - t0 : CH);
    for (int t0 = 0; t0 < T; t0 += CH) {
        const int n = T - t0 < CH ? T - t0 : CH, nv = tile_round(n) / TILE_VL;
        tile_gemm(w->o, HP, w->fqt + t0, 1, Tp, w->u, HP, n, hs, nvh, 0);      // φQ_c S
        tile_gemm(w->den, CH, w->z, 0, 1, w->fqt + t0, Tp, 1, hs, nv, 0);       // φQ_c z
        if (causal) {
            tile_gemm(w->a, CH, w->fkt + t0, 1, Tp, w->fqt + t0, Tp, n, hs, nv, 0);  // Aᵀ
            mask_upper(w->a, n, nv * TILE_VL);
            for (int s = 0; s < n; s++)
                for (int t = 0; t < nv * TILE_VL; t++) w->den[t] += w->a[s * CH + t];
            tile_gemm(w->o, HP, w->a, 1, CH, w->v + (long)t0 * HP, HP, n, n, nvh, 1);
            forward_state_add(w, t0, n);
        }
        for (int t = 0; t < n; t++) {
            const float d = w->den[t] + LINEAR_ATTN_EPS, inv = 1.0f / d;
            for (int i = 0; i < hs; i++) out[(long)(t0 + t) * C + i] = w->o[(long)t * HP + i] * inv;
            den[t0 + t] = d;
        }
    }
}

// The prefix state of the backward pass, U += V_cᵀ φK_c (U[j][i] = Σ v_s,j φk_s,i) and
// z += φK_cᵀ 1, over the n tokens from t0; v rows straight from qkv (stride ld).
TILES_INLINE void prefix_add(Head *w, const float *v, long ld, int t0, int n) {
    const int HP = w->HP;
    tile_gemm(w->u, HP, v + t0 * ld, 1, ld, w->fk + (long)t0 * HP, HP, w->hs, n, HP / TILE_VL, 1);
    for (int s = 0; s < n; s++)
        for (int i = 0; i < HP; i++) w->z[i] += w->fk[(long)(t0 + s) * HP + i];
}

// The suffix states R += dN_cᵀ φQ_c (R[j][i] = Σ dn_t,j φq_t,i), R' += φQ_cᵀ dN_c and
// r += Σ dd_t φq_t over the n tokens from t0.
TILES_INLINE void suffix_add(Head *w, int t0, int n) {
    const int HP = w->HP, nvh = HP / TILE_VL;
    const float *fq = w->fq + (long)t0 * HP, *dn = w->dn + (long)t0 * HP;
    tile_gemm(w->rq, HP, dn, 1, HP, fq, HP, w->hs, n, nvh, 1);
    tile_gemm(w->rk, HP, fq, 1, HP, dn, HP, w->hs, n, nvh, 1);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < HP; i++) w->r[i] += w->dd[t0 + t] * fq[(long)t * HP + i];
}

// One sequence and head: writes dq, dk, dv into the rows of dqkv (stride 3C).
KERNEL_TARGETS
static void head_backward(void *work, float *dqkv, const float *dout, const float *out, const float *den,
                          const float *qkv, int C, int causal) {
    Head *w = work;
    const int T = w->T, Tp = w->Tp, hs = w->hs, HP = w->HP, nvh = HP / TILE_VL;
    const long ld = 3L * C;
    const float *v = qkv + 2 * C;
    pack_phi(w, qkv, ld, C);
    tile_pack_rows(w->dn, HP, dout, C, T, T, hs, 1.0f);
    for (int t = 0; t < T; t++) {
        const float *g = dout + (long)t * C, *o = out + (long)t * C;
        float d_o = 0.0f;
#pragma omp simd reduction(+ : d_o)
        for (int i = 0; i < hs; i++) d_o += g[i] * o[i];
        const float inv = 1.0f / den[t];
        w->dd[t] = -d_o * inv;
        for (int i = 0; i < HP; i++) w->dn[(long)t * HP + i] *= inv;
    }
    for (int t = T; t < Tp; t++) w->dd[t] = 0.0f;
    tile_pack_cols(w->dnt, Tp, w->dn, HP, T, hs, 1.0f);
    memset(w->dfq, 0, 3 * (size_t)Tp * HP * sizeof(float));  // dfq, dfk, dv are adjacent

    // Within each chunk: Gᵀ and Aᵀ (keys s × queries t), masked to s ≤ t.
    for (int t0 = 0; causal && t0 < T; t0 += CH) {
        const int n = T - t0 < CH ? T - t0 : CH, nv = tile_round(n) / TILE_VL;
        const long c0 = (long)t0 * HP;
        tile_gemm(w->g, CH, v + t0 * ld, ld, 1, w->dnt + t0, Tp, n, hs, nv, 0);
        for (int s = 0; s < n; s++)
            for (int t = 0; t < nv * TILE_VL; t++) w->g[s * CH + t] += w->dd[t0 + t];
        mask_upper(w->g, n, nv * TILE_VL);
        tile_gemm(w->a, CH, w->fkt + t0, 1, Tp, w->fqt + t0, Tp, n, hs, nv, 0);
        mask_upper(w->a, n, nv * TILE_VL);
        tile_gemm(w->dfq + c0, HP, w->g, 1, CH, w->fk + c0, HP, n, n, nvh, 1);
        tile_gemm(w->dfk + c0, HP, w->g, CH, 1, w->fq + c0, HP, n, n, nvh, 1);
        tile_gemm(w->dv + c0, HP, w->a, CH, 1, w->dn + c0, HP, n, n, nvh, 1);
    }
    // From the chunks before: dφq_t += Uᵀ dn_t + dd_t z.
    memset(w->u, 0, (size_t)hs * HP * sizeof(float));
    memset(w->z, 0, (size_t)HP * sizeof(float));
    if (!causal)
        for (int t0 = 0; t0 < T; t0 += CH) prefix_add(w, v, ld, t0, T - t0 < CH ? T - t0 : CH);
    for (int t0 = 0; t0 < T; t0 += CH) {
        const int n = T - t0 < CH ? T - t0 : CH;
        const long c0 = (long)t0 * HP;
        tile_gemm(w->dfq + c0, HP, w->dn + c0, HP, 1, w->u, HP, n, hs, nvh, 1);
        for (int t = 0; t < n; t++)
            for (int i = 0; i < HP; i++) w->dfq[c0 + (long)t * HP + i] += w->dd[t0 + t] * w->z[i];
        if (causal) prefix_add(w, v, ld, t0, n);
    }
    // From the chunks after: dφk_s += Rᵀ v_s + r and dv_s += R'ᵀ φk_s.
    memset(w->rq, 0, 2 * (size_t)HP * HP * sizeof(float));  // rq and rk are adjacent
    memset(w->r, 0, (size_t)HP * sizeof(float));
    if (!causal)
        for (int t0 = 0; t0 < T; t0 += CH) suffix_add(w, t0, T - t0 < CH ? T - t0 : CH);
    for (int t0 = (T - 1) / CH * CH; t0 >= 0; t0 -= CH) {
        const int n = T - t0 < CH ? T - t0 : CH;
        const long c0 = (long)t0 * HP;
        tile_gemm(w->dfk + c0, HP, v + t0 * ld, ld, 1, w->rq, HP, n, hs, nvh, 1);
        for (int t = 0; t < n; t++)
            for (int i = 0; i < HP; i++) w->dfk[c0 + (long)t * HP + i] += w->r[i];
        tile_gemm(w->dv + c0, HP, w->fk + c0, HP, 1, w->rk, HP, n, hs, nvh, 1);
        if (causal) suffix_add(w, t0, n);
    }
    // Through φ (φ' = 1 above 0, e^x = φ below: min(φ, 1)) into dqkv.
    for (long i = 0; i < (long)T * HP; i++) {
        w->dfq[i] *= w->fq[i] < 1.0f ? w->fq[i] : 1.0f;
        w->dfk[i] *= w->fk[i] < 1.0f ? w->fk[i] : 1.0f;
    }
    tile_unpack_rows(dqkv, ld, w->dfq, HP, T, hs, 1.0f);
    tile_unpack_rows(dqkv + C, ld, w->dfk, HP, T, hs, 1.0f);
    tile_unpack_rows(dqkv + 2 * C, ld, w->dv, HP, T, hs, 1.0f);
}

static const AttnCore CORE = {head_alloc, head_release, head_forward, head_backward};

void attn_linear_forward(float *out, float *saved, const float *qkv, int B, int T, int C, int NH, int causal) {
    attn_heads_forward(&CORE, out, saved, qkv, B, T, C, NH, causal);
}

void attn_linear_backward(float *dqkv, const float *dout, const float *out, const float *saved, const float *qkv,
                          int B, int T, int C, int NH, int causal) {
    attn_heads_backward(&CORE, dqkv, dout, out, saved, qkv, B, T, C, NH, causal);
}
