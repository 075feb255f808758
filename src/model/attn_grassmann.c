// attn_grassmann.c: Causal Grassmann mixing (attn_grassmann.h), forward and backward.
//
// The mean over pairs factors through the wedge product, which is bilinear. With
// p_s = z_t ∧ z_s, n_s = ‖p_s‖ and w_s = 1 / max(n_s, ε):
//   p̂_s = z_t ∧ (w_s z_s),  so  P̄_t = (1/c_t) Σ_s p̂_s = z_t ∧ u_t,  u_t = (1/c_t) Σ_s w_s z_s,
// and n_s² = ‖z_t‖² ‖z_s‖² − (z_t·z_s)² (Lagrange's identity, evaluated in double so the
// cancellation of nearly parallel pairs costs no more than the direct float sum would).
// A pair costs O(r) and a token one O(M) wedge, instead of O(M) per pair: the same
// numbers as the per-pair definition, and the GEMM with W_plu is what remains heavy.
//
// Backward of that step. G = dP̄_t (M) and D is the antisymmetric r×r matrix with
// D_ij = G_ij (i < j). For any x, Σ_{i<j} G_ij (z_t ∧ x)_ij = z_tᵀ D x, hence
//   through the wedge:  dz_t += D u_t,   du_t = −D z_t = −v_t,   dz_s += −(w_s / c_t) v_t;
//   through w_s (only where n_s > ε; below it w_s = 1/ε is constant):
//     ∂L/∂w_s = −(v_t·z_s) / c_t and ∂w_s/∂(n_s²/2) = −1/n_s³, so with κ_s = (v_t·z_s) / (c_t n_s³)
//     dz_t += κ_s (‖z_s‖² z_t − (z_t·z_s) z_s),   dz_s += κ_s (‖z_t‖² z_s − (z_t·z_s) z_t).
// This is the per-pair rule dp = (dp̂ − p̂(p̂·dp̂)) / n (else dp̂ / ε) pushed through
// p = z_t ∧ z_s and summed over the pairs, without forming any p.
#include "model/attn_grassmann.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/matmul.h"

// Per-call scratch, sized once: nothing is allocated per token.
typedef struct {
    int *s;       // (2·n_off) partners of the current token
    double *sq;   // (T) ‖z_t‖² of the current sequence
    double *dot;  // (2·n_off) z_t·z_s per partner
    double *nrm;  // (2·n_off) ‖z_t ∧ z_s‖ per partner
    float *u;     // (r) u_t
    float *v;     // (r) D z_t (backward)
    float *dzt;   // (r) dz_t of the current token (backward)
} Scratch;

static Scratch scratch_alloc(int T, int r, int n_off) {
    Scratch w;
    w.s = xmalloc((size_t)2 * n_off * sizeof(int));
    w.sq = xmalloc(((size_t)T + 4 * (size_t)n_off) * sizeof(double));
    w.dot = w.sq + T;
    w.nrm = w.dot + 2 * n_off;
    w.u = xmalloc((size_t)3 * r * sizeof(float));
    w.v = w.u + r;
    w.dzt = w.v + r;
    return w;
}

static void scratch_free(Scratch *w) {
    free(w->s);
    free(w->sq);
    free(w->u);
}

// a·b in double with four running sums (independent chains the compiler can vectorise).
static double dot_d(const float *restrict a, const float *restrict b, int n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += (double)a[k] * b[k];
        s1 += (double)a[k + 1] * b[k + 1];
        s2 += (double)a[k + 2] * b[k + 2];
        s3 += (double)a[k + 3] * b[k + 3];
    }
    for (; k < n; k++) s0 += (double)a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}

static inline double clamp_eps(double n) { return n > GRASSMANN_EPS ? n : GRASSMANN_EPS; }

// The valid partners of token t, in the order Δ = offsets[0..], t − Δ before t + Δ.
static int partners(int *s, int t, int T, const int *offsets, int n_off, int causal) {
    int c = 0;
    for (int k = 0; k < n_off; k++) {
        if (t - offsets[k] >= 0) s[c++] = t - offsets[k];
        if (!causal && t + offsets[k] < T) s[c++] = t + offsets[k];
    }
    return c;
}

// z is one sequence (T, r) and w.sq holds its squared row norms. Fills w.u with
// u_t = (1/c) Σ_s w_s z_s over the c partners in w.s, and w.dot, w.nrm per partner.
static void partner_mean(Scratch *w, const float *z, int t, int c, int r) {
    const float *zt = z + (long)t * r;
    float *restrict u = w->u;
    for (int i = 0; i < r; i++) u[i] = 0.0f;
    for (int k = 0; k < c; k++) {
        const float *restrict zs = z + (long)w->s[k] * r;
        double d = dot_d(zt, zs, r);
        double n2 = w->sq[t] * w->sq[w->s[k]] - d * d;
        double n = n2 > 0.0 ? sqrt(n2) : 0.0;
        w->dot[k] = d;
        w->nrm[k] = n;
        float ws = (float)(1.0 / (clamp_eps(n) * c));
        for (int i = 0; i < r; i++) u[i] += ws * zs[i];
    }
}

// p (M) = a ∧ b: p_ij = a_i b_j − a_j b_i, i < j, rows of the upper triangle packed.
static void wedge(float *restrict p, const float *restrict a, const float *restrict b, int r) {
    for (int i = 0; i < r; i++) {
        const float ai = a[i], bi = b[i];
        for (int j = i + 1; j < r; j++) p[j - i - 1] = ai * b[j] - a[j] * bi;
        p += r - i - 1;
    }
}

// v (r) = D x and y (r) = D x2 for the antisymmetric D packed in g (M) as in wedge().
static void antisym_matvec2(float *restrict v, float *restrict y, const float *restrict g,
                            const float *restrict x, const float *restrict x2, int r) {
    for (int i = 0; i < r; i++) v[i] = y[i] = 0.0f;
    for (int i = 0; i < r; i++) {
        const int len = r - i - 1;
        const float *xj = x + i + 1, *x2j = x2 + i + 1;
        float *vj = v + i + 1, *yj = y + i + 1;
        float vi = 0.0f, yi = 0.0f;
        for (int k = 0; k < len; k++) {  // row i of D: the upper triangle
            vi += g[k] * xj[k];
            yi += g[k] * x2j[k];
        }
        for (int k = 0; k < len; k++) {  // column i of D below the diagonal: −row i
            vj[k] -= g[k] * x[i];
            yj[k] -= g[k] * x2[i];
        }
        v[i] += vi;
        y[i] += yi;
        g += len;
    }
}

// The per-token Plücker mean: pbar (B,T,M) from z (B,T,r).
static void pluecker_mean_forward(float *pbar, Scratch *w, const float *z, int B, int T, int r,
                                  const int *offsets, int n_off, int causal) {
    const int M = grassmann_pairs(r);
    for (int b = 0; b < B; b++) {
        const float *zb = z + (long)b * T * r;
        for (int t = 0; t < T; t++) w->sq[t] = dot_d(zb + (long)t * r, zb + (long)t * r, r);
        for (int t = 0; t < T; t++) {
            int c = partners(w->s, t, T, offsets, n_off, causal);
            partner_mean(w, zb, t, c, r);  // c = 0 leaves u = 0, so P̄_t = 0
            wedge(pbar + ((long)b * T + t) * M, zb + (long)t * r, w->u, r);
        }
    }
}

// Adds into dz (B,T,r) from dpbar (B,T,M); z (B,T,r).
static void pluecker_mean_backward(float *dz, Scratch *w, const float *dpbar, const float *z,
                                   int B, int T, int r, const int *offsets, int n_off, int causal) {
    const int M = grassmann_pairs(r);
    for (int b = 0; b < B; b++) {
        const float *zb = z + (long)b * T * r;
        float *dzb = dz + (long)b * T * r;
        for (int t = 0; t < T; t++) w->sq[t] = dot_d(zb + (long)t * r, zb + (long)t * r, r);
        for (int t = 0; t < T; t++) {
            int c = partners(w->s, t, T, offsets, n_off, causal);
            if (c == 0) continue;  // P̄_t = 0 does not depend on z
            const float *restrict zt = zb + (long)t * r;
            partner_mean(w, zb, t, c, r);
            float *restrict v = w->v, *restrict dzt = w->dzt;
            antisym_matvec2(v, dzt, dpbar + ((long)b * T + t) * M, zt, w->u, r);  // dz_t = D u_t
            for (int k = 0; k < c; k++) {
                const float *restrict zs = zb + (long)w->s[k] * r;
                float *restrict dzs = dzb + (long)w->s[k] * r;
                double n = w->nrm[k], d = w->dot[k];
                float wc = (float)(1.0 / (clamp_eps(n) * c));  // w_s / c
                if (n > GRASSMANN_EPS) {
                    double kappa = dot_d(v, zs, r) / (c * n * n * n);
                    // dz_t += κ (‖z_s‖² z_t − d z_s),  dz_s += κ (‖z_t‖² z_s − d z_t) − (w_s/c) v
                    float kss = (float)(kappa * w->sq[w->s[k]]), ktt = (float)(kappa * w->sq[t]);
                    float kd = (float)(kappa * d);
                    for (int i = 0; i < r; i++) {
                        dzt[i] += kss * zt[i] - kd * zs[i];
                        dzs[i] += ktt * zs[i] - kd * zt[i] - wc * v[i];
                    }
                } else {
                    for (int i = 0; i < r; i++) dzs[i] -= wc * v[i];
                }
            }
            float *dzrow = dzb + (long)t * r;
            for (int i = 0; i < r; i++) dzrow[i] += dzt[i];
        }
    }
}

// Gated fusion, elementwise over n = N·C: alpha holds the gate's logits on entry and
// α = σ(logit) on exit; out = α h + (1 − α) g.
static void fusion_forward(float *restrict out, float *restrict alpha, const float *restrict h,
                           const float *restrict g, long n) {
    for (long i = 0; i < n; i++) {
        float al = 1.0f / (1.0f + expf(-alpha[i]));
        alpha[i] = al;
        out[i] = al * h[i] + (1.0f - al) * g[i];
    }
}

// dlogit = dout (h − g) α(1 − α) (the gate's pre-activation gradient), dg = dout (1 − α)
// and dh += dout α (the direct path).
static void fusion_backward(float *restrict dlogit, float *restrict dg, float *restrict dh,
                            const float *restrict dout, const float *restrict h,
                            const float *restrict g, const float *restrict alpha, long n) {
    for (long i = 0; i < n; i++) {
        float al = alpha[i];
        dlogit[i] = dout[i] * (h[i] - g[i]) * al * (1.0f - al);
        dg[i] = dout[i] * (1.0f - al);
        dh[i] += dout[i] * al;
    }
}

// One row of d[h; g] (2C) added into dh (C) and dg (C).
static void split_add(float *restrict dh, float *restrict dg, const float *restrict dhg, int C) {
    for (int i = 0; i < C; i++) {
        dh[i] += dhg[i];
        dg[i] += dhg[C + i];
    }
}

void grassmann_forward(float *out, GrassmannActs a, const float *inp, GrassmannWeights w,
                       int B, int T, int C, int r, const int *offsets, int n_off, int causal) {
    const int N = B * T, M = grassmann_pairs(r);
    Scratch s = scratch_alloc(T, r, n_off);
    matmul_forward(a.z, inp, w.red_w, w.red_b, N, C, r);  // z (N,r)
    pluecker_mean_forward(a.pbar, &s, a.z, B, T, r, offsets, n_off, causal);  // P̄ (N,M)
    matmul_forward(a.g, a.pbar, w.plu_w, w.plu_b, N, M, C);  // g (N,C)
    for (int n = 0; n < N; n++) {  // gate_in (N,2C) = [h; g]
        memcpy(a.gate_in + (long)n * 2 * C, inp + (long)n * C, (size_t)C * sizeof(float));
        memcpy(a.gate_in + (long)n * 2 * C + C, a.g + (long)n * C, (size_t)C * sizeof(float));
    }
    matmul_forward(a.alpha, a.gate_in, w.gate_w, w.gate_b, N, 2 * C, C);  // gate logits (N,C)
    fusion_forward(out, a.alpha, inp, a.g, (long)N * C);
    scratch_free(&s);
}

void grassmann_backward(float *dinp, GrassmannWeights dw, GrassmannActs da, const float *dout,
                        const float *inp, GrassmannActs a, GrassmannWeights w,
                        int B, int T, int C, int r, const int *offsets, int n_off, int causal) {
    const int N = B * T, M = grassmann_pairs(r);
    Scratch s = scratch_alloc(T, r, n_off);
    // dlogit (N,C) into da.alpha, dg (N,C) into da.g, the direct path into dinp.
    fusion_backward(da.alpha, da.g, dinp, dout, inp, a.g, a.alpha, (long)N * C);
    // d[h; g] (N,2C) = dlogit · W_gate and dP̄ (N,M) = dg · W_plu are written (β = 0) into
    // the scratch; the weight gradients add.
    gemm(0, 0, N, 2 * C, C, 1.0f, da.alpha, C, w.gate_w, 2 * C, 0.0f, da.gate_in, 2 * C);
    matmul_backward(NULL, dw.gate_w, dw.gate_b, da.alpha, a.gate_in, w.gate_w, N, 2 * C, C);
    for (int n = 0; n < N; n++)
        split_add(dinp + (long)n * C, da.g + (long)n * C, da.gate_in + (long)n * 2 * C, C);
    gemm(0, 0, N, M, C, 1.0f, da.g, C, w.plu_w, M, 0.0f, da.pbar, M);
    matmul_backward(NULL, dw.plu_w, dw.plu_b, da.g, a.pbar, w.plu_w, N, M, C);
    memset(da.z, 0, (size_t)N * r * sizeof(float));
    pluecker_mean_backward(da.z, &s, da.pbar, a.z, B, T, r, offsets, n_off, causal);  // dz (N,r)
    matmul_backward(dinp, dw.red_w, dw.red_b, da.z, inp, w.red_w, N, C, r);
    scratch_free(&s);
}
