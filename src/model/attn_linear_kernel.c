// attn_linear_kernel.c: the passes of the linear attention core over one head (the
// algorithm: attn_linear.c), compiled for several instruction sets (KERNEL_TARGETS).
#include <string.h>

#include "model/attention.h"
#include "model/attn_linear_kernel.h"
#include "model/fastmath.h"

static inline float phi(float x) { return x > 0.0f ? x + 1.0f : exp_fast(x); }

// The slot of chunk c.
static inline Chunk chunk_at(const Head *w, int c) {
    float *p = w->slots + (size_t)c * w->slot;
    const size_t tile = (size_t)CH * w->HP;
    return (Chunk){p, p + tile, p + 2 * tile, p + 3 * tile, p + 4 * tile, p + 4 * tile + CH * CH};
}

static inline int chunk_len(const Head *w, int t0) { return w->T - t0 < CH ? w->T - t0 : CH; }

// The functions below take the head's width hs and its padded width HP as arguments:
// the entry points call them with the default models' width (16, one vector) as a
// constant, so that every product of a chunk has its shape known at compile time, and
// with the head's own width otherwise. A chunk's tiles are always CH rows, those past
// its n tokens zero, so the products run over whole tiles too.

// dst (CH × HP) = φ of the n rows of x (hs wide, stride ld), zero in the padding.
TILES_INLINE void load_phi(float *restrict dst, const float *restrict x, long ld, int n, int hs, int HP) {
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < hs; i++) dst[t * HP + i] = phi(x[t * ld + i]);
        for (int i = hs; i < HP; i++) dst[t * HP + i] = 0.0f;
    }
    memset(dst + n * HP, 0, (size_t)(CH - n) * HP * sizeof(float));
}

// The chunk's φq, φk and v from the n rows of qkv (stride ld), into k.
TILES_INLINE void load_qkv(const Chunk *k, const float *qkv, long ld, int C, int n, int hs, int HP) {
    load_phi(k->fq, qkv, ld, n, hs, HP);
    load_phi(k->fk, qkv + C, ld, n, hs, HP);
    tile_pack_rows(k->v, HP, qkv + 2 * C, ld, n, CH, hs, 1.0f);
}

// The chunk's dn = dout / d and dd = −(dout·out) / d, zero past n, into k.
TILES_INLINE void load_dn(const Chunk *k, const float *dout, const float *out, const float *den, int C, int n,
                          int hs, int HP) {
    for (int t = 0; t < n; t++) {
        const float *g = dout + (long)t * C, *o = out + (long)t * C;
        float d_o = 0.0f;
#pragma omp simd reduction(+ : d_o)
        for (int i = 0; i < hs; i++) d_o += g[i] * o[i];
        const float inv = 1.0f / den[t];
        k->dd[t] = -d_o * inv;
        tile_pack_rows(k->dn + t * HP, HP, g, C, 1, 1, hs, inv);
    }
    for (int t = n; t < CH; t++) k->dd[t] = 0.0f;
    memset(k->dn + n * HP, 0, (size_t)(CH - n) * HP * sizeof(float));
}

// xᵀ (HP × CH) of a chunk's rows x (CH × HP).
TILES_INLINE void transpose(float *restrict xt, const float *restrict x, int hs, int HP) {
    tile_pack_cols(xt, CH, x, HP, CH, hs, 1.0f);
}

// Zeroes the entries of a tile (CH keys s × CH queries t, one vector a row) with s > t:
// the causal mask of a chunk.
TILES_INLINE void mask_upper(float *x) {
    TileIdx lane;
    for (int t = 0; t < CH; t++) lane[t] = t;
    for (int s = 1; s < CH; s++) {
        TileVec *row = (TileVec *)(x + s * CH);
        *row = (TileVec)((TileIdx)*row & (lane >= s));
    }
}

// w.a = Aᵀ (keys × queries) = φK_c φQ_cᵀ, masked, from w.fqt = φQ_cᵀ.
TILES_INLINE void chunk_a(Head *w, const Chunk *k, int hs, int HP) {
    tile_gemm(w->a, CH, k->fk, HP, 1, w->fqt, CH, CH, hs, 1, 0);
    mask_upper(w->a);
}

// k.g = Gᵀ (keys s × queries t) = V_c dN_cᵀ + dd_t, masked.
TILES_INLINE void chunk_g(Head *w, const Chunk *k, int hs, int HP) {
    transpose(w->dnt, k->dn, hs, HP);
    tile_gemm(k->g, CH, k->v, HP, 1, w->dnt, CH, CH, hs, 1, 0);
    const TileVec dd = *(const TileVec *)k->dd;
    for (int s = 0; s < CH; s++) *(TileVec *)(k->g + s * CH) += dd;
    mask_upper(k->g);
}

// x (CH × HP) += a[t] · y (HP) on each row t: a rank-1 update by a state vector.
TILES_INLINE void add_outer(float *restrict x, const float *restrict a, const float *restrict y, int HP) {
    for (int t = 0; t < CH; t++)
        for (int i = 0; i < HP; i++) x[t * HP + i] += (a ? a[t] : 1.0f) * y[i];
}

// y (HP) += the sum of the rows of x (CH × HP), each times a[t] (1 without a), in four
// chains of four rows, so that the sum does not wait on the latency of each addition.
TILES_INLINE void add_rows(float *restrict y, const float *restrict a, const float *restrict x, int HP) {
    for (int v = 0; v < HP; v += TILE_VL) {
        TileVec acc[4] = {{0}};
        for (int t = 0; t < CH; t++)
            acc[t % 4] += (a ? a[t] : 1.0f) * *(const TileVec *)(x + t * HP + v);
        *(TileVec *)(y + v) += (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
}

// The state of the chunks so far, u += Xᵀ Y over the chunk's rows and z += Σ φk_s: the
// forward's S = Σ φk_s v_sᵀ (X = φK_c, Y = V_c) or the backward's prefix state
// U = Σ v_s φk_sᵀ (X = V_c, Y = φK_c).
TILES_INLINE void state_add(Head *w, const float *x, const float *y, const float *fk, int hs, int HP) {
    tile_gemm(w->u, HP, x, 1, HP, y, HP, hs, CH, HP / TILE_VL, 1);
    add_rows(w->z, NULL, fk, HP);
}

// R += dN_cᵀ φQ_c (R[j][i] = Σ dn_t,j φq_t,i), R' += φQ_cᵀ dN_c and r += Σ dd_t φq_t: the
// backward's suffix states.
TILES_INLINE void suffix_add(Head *w, const Chunk *k, int hs, int HP) {
    tile_gemm(w->rq, HP, k->dn, 1, HP, k->fq, HP, hs, CH, HP / TILE_VL, 1);
    tile_gemm(w->rk, HP, k->fq, 1, HP, k->dn, HP, hs, CH, HP / TILE_VL, 1);
    add_rows(w->r, k->dd, k->fq, HP);
}

// The n rows of d (hs wide, stride ld) = o · φ'(x) for the chunk's φ values f (rows):
// φ' = 1 above 0, e^x = φ below, i.e. min(φ, 1).
TILES_INLINE void store_through_phi(float *restrict d, long ld, float *restrict o, const float *restrict f, int n,
                                    int hs, int HP) {
    for (int i = 0; i < CH * HP; i++) o[i] *= f[i] < 1.0f ? f[i] : 1.0f;
    tile_unpack_rows(d, ld, o, HP, n, hs, 1.0f);
}

// One sequence and head: out rows (T, hs wide, stride C) and den (T) from qkv (stride 3C).
// The state S is w.u, z is w.z; every chunk goes through the first slot.
TILES_INLINE void forward(Head *w, float *out, float *den, const float *qkv, int C, int causal, int hs, int HP) {
    const int T = w->T, nvh = HP / TILE_VL;
    const long ld = 3L * C;
    const Chunk k = chunk_at(w, 0);
    memset(w->u, 0, (size_t)hs * HP * sizeof(float));
    memset(w->z, 0, (size_t)HP * sizeof(float));
    for (int t0 = 0; !causal && t0 < T; t0 += CH) {
        load_qkv(&k, qkv + t0 * ld, ld, C, chunk_len(w, t0), hs, HP);
        state_add(w, k.fk, k.v, k.fk, hs, HP);
    }
    for (int t0 = 0; t0 < T; t0 += CH) {
        const int n = chunk_len(w, t0);
        load_qkv(&k, qkv + t0 * ld, ld, C, n, hs, HP);
        transpose(w->fqt, k.fq, hs, HP);
        tile_gemm(w->o, HP, k.fq, HP, 1, w->u, HP, CH, hs, nvh, 0);  // φQ_c S
        tile_gemm(w->den, CH, w->z, 0, 1, w->fqt, CH, 1, hs, 1, 0);  // φQ_c z
        if (causal) {
            chunk_a(w, &k, hs, HP);
            add_rows(w->den, NULL, w->a, CH);
            tile_gemm(w->o, HP, w->a, 1, CH, k.v, HP, CH, CH, nvh, 1);  // + A V_c
            state_add(w, k.fk, k.v, k.fk, hs, HP);
        }
        for (int t = 0; t < n; t++) {
            const float d = w->den[t] + LINEAR_ATTN_EPS;
            tile_unpack_rows(out + (long)(t0 + t) * C, C, w->o + t * HP, HP, 1, hs, 1.0f / d);
            den[t0 + t] = d;
        }
    }
}

// One sequence and head: writes dq, dk, dv into the rows of dqkv (stride 3C).
TILES_INLINE void backward(Head *w, float *dqkv, const float *dout, const float *out, const float *den,
                           const float *qkv, int C, int causal, int hs, int HP) {
    const int T = w->T, nvh = HP / TILE_VL, last = (T - 1) / CH;
    const long ld = 3L * C;
    memset(w->u, 0, 3 * (size_t)HP * HP * sizeof(float));  // u, rq, rk are adjacent
    memset(w->z, 0, 2 * (size_t)HP * sizeof(float));        // z, r
    // Each chunk's slot is filled where the chunk is first reached: here when not causal,
    // where every token sees the states of all tokens.
    for (int c = 0; c <= last; c++) {
        const Chunk k = chunk_at(w, c);
        const int t0 = c * CH, n = chunk_len(w, t0);
        if (causal) break;
        load_qkv(&k, qkv + t0 * ld, ld, C, n, hs, HP);
        load_dn(&k, dout + (long)t0 * C, out + (long)t0 * C, den + t0, C, n, hs, HP);
        state_add(w, k.v, k.fk, k.fk, hs, HP);
        suffix_add(w, &k, hs, HP);
    }
    // Forward in time: dφq_c = G φK_c + dN_c U + dd z, then the prefix states.
    for (int c = 0; c <= last; c++) {
        const Chunk k = chunk_at(w, c);
        const int t0 = c * CH, n = chunk_len(w, t0);
        if (causal) {
            load_qkv(&k, qkv + t0 * ld, ld, C, n, hs, HP);
            load_dn(&k, dout + (long)t0 * C, out + (long)t0 * C, den + t0, C, n, hs, HP);
        }
        tile_gemm(w->o, HP, k.dn, HP, 1, w->u, HP, CH, hs, nvh, 0);
        add_outer(w->o, k.dd, w->z, HP);
        if (causal) {
            chunk_g(w, &k, hs, HP);
            tile_gemm(w->o, HP, k.g, 1, CH, k.fk, HP, CH, CH, nvh, 1);
            state_add(w, k.v, k.fk, k.fk, hs, HP);
        }
        store_through_phi(dqkv + t0 * ld, ld, w->o, k.fq, n, hs, HP);
    }
    // Backward in time: dφk_c = Gᵀ φQ_c + V_c R + r and dv_c = Aᵀ dN_c + φK_c R', then the
    // suffix states.
    for (int c = last; c >= 0; c--) {
        const Chunk k = chunk_at(w, c);
        const int t0 = c * CH, n = chunk_len(w, t0);
        tile_gemm(w->o, HP, k.v, HP, 1, w->rq, HP, CH, hs, nvh, 0);
        add_outer(w->o, NULL, w->r, HP);
        if (causal) tile_gemm(w->o, HP, k.g, CH, 1, k.fq, HP, CH, CH, nvh, 1);
        store_through_phi(dqkv + t0 * ld + C, ld, w->o, k.fk, n, hs, HP);
        tile_gemm(w->o, HP, k.fk, HP, 1, w->rk, HP, CH, hs, nvh, 0);
        if (causal) {
            transpose(w->fqt, k.fq, hs, HP);
            chunk_a(w, &k, hs, HP);
            tile_gemm(w->o, HP, w->a, CH, 1, k.dn, HP, CH, CH, nvh, 1);
            suffix_add(w, &k, hs, HP);
        }
        tile_unpack_rows(dqkv + t0 * ld + 2 * C, ld, w->o, HP, n, hs, 1.0f);
    }
}

KERNEL_TARGETS
void attn_linear_head_forward(void *work, float *out, float *den, const float *qkv, int C, int causal) {
    Head *w = work;
    if (w->hs == TILE_VL)
        forward(w, out, den, qkv, C, causal, TILE_VL, TILE_VL);
    else
        forward(w, out, den, qkv, C, causal, w->hs, w->HP);
}

KERNEL_TARGETS
void attn_linear_head_backward(void *work, float *dqkv, const float *dout, const float *out, const float *den,
                                const float *qkv, int C, int causal) {
    Head *w = work;
    if (w->hs == TILE_VL)
        backward(w, dqkv, dout, out, den, qkv, C, causal, TILE_VL, TILE_VL);
    else
        backward(w, dqkv, dout, out, den, qkv, C, causal, w->hs, w->HP);
}
