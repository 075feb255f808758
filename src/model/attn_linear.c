// Linear attention core with φ(x) = elu(x) + 1, causal by running prefix sums.
//
// Backward, per head, with n_t = S_tᵀ φq_t, d_t = φq_t·z_t + ε, o_t = n_t / d_t:
//   dn_t = do_t / d_t,  dd_t = −(do_t·o_t) / d_t,
//   dφq_t = S_t dn_t + dd_t z_t,
//   R_s = Σ_{t ≥ s} φq_t dn_tᵀ,  r_s = Σ_{t ≥ s} dd_t φq_t   (suffix sums; all t if not causal)
//   dφk_s = R_s v_s + r_s,  dv_s = R_sᵀ φk_s.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/attention.h"
#include "model/fastmath.h"

static inline float phi(float x) { return x > 0.0f ? x + 1.0f : exp_fast(x); }
static inline float dphi(float x) { return x > 0.0f ? 1.0f : exp_fast(x); }

// Scratch for one head: φ(q), φ(k), v gathered into contiguous (T, hs) rows, the
// running state S (hs, hs) and z (hs), and per-token backward quantities.
typedef struct {
    float *fq, *fk, *v, *S, *z, *dn, *dd, *dfq, *dfk, *dv;
} LinearScratch;

static LinearScratch scratch_alloc(int T, int hs) {
    size_t th = (size_t)T * hs;
    float *m = xmalloc((7 * th + (size_t)hs * hs + hs + T) * sizeof(float));
    LinearScratch s = {.fq = m, .fk = m + th, .v = m + 2 * th, .dn = m + 3 * th, .dfq = m + 4 * th,
                       .dfk = m + 5 * th, .dv = m + 6 * th};
    s.S = m + 7 * th;
    s.z = s.S + (size_t)hs * hs;
    s.dd = s.z + hs;
    return s;
}

static void gather_head(LinearScratch *w, const float *qkv, int b, int h, int T, int C, int hs) {
    for (int t = 0; t < T; t++) {
        const float *row = qkv + ((long)b * T + t) * 3 * C + h * hs;
        for (int i = 0; i < hs; i++) {
            w->fq[t * hs + i] = phi(row[i]);
            w->fk[t * hs + i] = phi(row[C + i]);
            w->v[t * hs + i] = row[2 * C + i];
        }
    }
}

// S += a ⊗ c (outer product), z += alpha·a: one step of a prefix (or suffix) sum.
static inline void accumulate(float *S, float *z, const float *a, const float *c, float alpha, int hs) {
    for (int i = 0; i < hs; i++) {
        for (int j = 0; j < hs; j++) S[i * hs + j] += a[i] * c[j];
        z[i] += alpha * a[i];
    }
}

// The running sums S = Σ a_s ⊗ c_s and z = Σ α_s a_s over the rows of a and c (T, hs):
// sums_begin starts them (empty when causal; over all s otherwise) and sums_step
// adds row t when causal, so at row t they cover s ≤ t or all s. α = NULL means 1.
static void sums_begin(float *S, float *z, const float *a, const float *c, const float *alpha, int T, int hs,
                       int causal) {
    memset(S, 0, (size_t)hs * hs * sizeof(float));
    memset(z, 0, (size_t)hs * sizeof(float));
    if (!causal)
        for (int t = 0; t < T; t++) accumulate(S, z, a + t * hs, c + t * hs, alpha ? alpha[t] : 1.0f, hs);
}

static inline void sums_step(float *S, float *z, const float *a, const float *c, const float *alpha, int t, int hs,
                             int causal) {
    if (causal) accumulate(S, z, a + t * hs, c + t * hs, alpha ? alpha[t] : 1.0f, hs);
}

// num (hs) = Sᵀ fq; returns fq·z + ε.
static inline float readout(float *num, const float *S, const float *z, const float *fq, int hs) {
    float den = LINEAR_ATTN_EPS;
    for (int j = 0; j < hs; j++) num[j] = 0.0f;
    for (int i = 0; i < hs; i++) {
        for (int j = 0; j < hs; j++) num[j] += fq[i] * S[i * hs + j];
        den += fq[i] * z[i];
    }
    return den;
}

void attn_linear_forward(float *out, const float *qkv, int B, int T, int C, int NH, int causal) {
    const int hs = C / NH;
    LinearScratch w = scratch_alloc(T, hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            gather_head(&w, qkv, b, h, T, C, hs);
            sums_begin(w.S, w.z, w.fk, w.v, NULL, T, hs, causal);
            for (int t = 0; t < T; t++) {
                sums_step(w.S, w.z, w.fk, w.v, NULL, t, hs, causal);
                float *o = out + ((long)b * T + t) * C + h * hs;
                float inv = 1.0f / readout(o, w.S, w.z, w.fq + t * hs, hs);
                for (int j = 0; j < hs; j++) o[j] *= inv;
            }
        }
    free(w.fq);
}

void attn_linear_backward(float *dqkv, const float *dout, const float *qkv, int B, int T, int C,
                          int NH, int causal) {
    const int hs = C / NH;
    LinearScratch w = scratch_alloc(T, hs);
    float *num = xmalloc((size_t)hs * sizeof(float));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            gather_head(&w, qkv, b, h, T, C, hs);
            // Pass 1, forward in t: S_t, z_t again, then dn_t, dd_t and dφq_t.
            sums_begin(w.S, w.z, w.fk, w.v, NULL, T, hs, causal);
            for (int t = 0; t < T; t++) {
                sums_step(w.S, w.z, w.fk, w.v, NULL, t, hs, causal);
                const float *fq = w.fq + t * hs;
                const float *d = dout + ((long)b * T + t) * C + h * hs;
                float den = readout(num, w.S, w.z, fq, hs);
                float *dn = w.dn + t * hs, d_o = 0.0f;
                for (int j = 0; j < hs; j++) {
                    dn[j] = d[j] / den;
                    d_o += d[j] * num[j] / den;
                }
                float dd = -d_o / den;
                w.dd[t] = dd;
                float *dfq = w.dfq + t * hs;
                for (int i = 0; i < hs; i++) {
                    float x = dd * w.z[i];
                    for (int j = 0; j < hs; j++) x += w.S[i * hs + j] * dn[j];
                    dfq[i] = x;
                }
            }
            // Pass 2, backward in t: suffix sums R (in S) and r (in z).
            sums_begin(w.S, w.z, w.fq, w.dn, w.dd, T, hs, causal);
            for (int t = T - 1; t >= 0; t--) {
                sums_step(w.S, w.z, w.fq, w.dn, w.dd, t, hs, causal);
                const float *fk = w.fk + t * hs, *v = w.v + t * hs;
                float *dfk = w.dfk + t * hs, *dv = w.dv + t * hs;
                for (int j = 0; j < hs; j++) dv[j] = 0.0f;
                for (int i = 0; i < hs; i++) {
                    float x = w.z[i];
                    for (int j = 0; j < hs; j++) {
                        x += w.S[i * hs + j] * v[j];
                        dv[j] += w.S[i * hs + j] * fk[i];
                    }
                    dfk[i] = x;
                }
            }
            // Through φ into dqkv.
            for (int t = 0; t < T; t++) {
                const float *row = qkv + ((long)b * T + t) * 3 * C + h * hs;
                float *drow = dqkv + ((long)b * T + t) * 3 * C + h * hs;
                for (int i = 0; i < hs; i++) {
                    drow[i] += w.dfq[t * hs + i] * dphi(row[i]);
                    drow[C + i] += w.dfk[t * hs + i] * dphi(row[C + i]);
                    drow[2 * C + i] += w.dv[t * hs + i];
                }
            }
        }
    free(num);
    free(w.fq);
}
