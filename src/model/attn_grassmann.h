// attn_grassmann.h: attention-free Causal Grassmann mixing ("Attention Is Not What You
// Need", 2025), forward and backward.
//
// For each token t (inp = h, the LayerNorm'd hidden state, (B,T,C)):
//   z_t = W_red h_t + b_red                                  (r)
//   for each offset Δ with a valid partner s (causal: s = t − Δ ≥ 0;
//   non-causal: s = t − Δ ≥ 0 and s = t + Δ < T, each a separate pair):
//     p_ij = z_t,i z_s,j − z_t,j z_s,i   (i < j, M = r(r−1)/2 Plücker coordinates)
//     p̂ = p / max(‖p‖, ε)
//   P̄_t = mean of p̂ over the valid pairs (0 if there is none)
//   g_t = W_plu P̄_t + b_plu                                  (C)
//   α_t = σ(W_gate [h_t; g_t] + b_gate)                      (C)
//   out_t = α_t ⊙ h_t + (1 − α_t) ⊙ g_t
// The block adds out to the residual stream like any other attention sublayer.
// Pairs are ordered (i, j) with i < j, row-major: index(i,j) = i·r − i(i+1)/2 + (j − i − 1).
#ifndef ATTN_GRASSMANN_H
#define ATTN_GRASSMANN_H

#define GRASSMANN_EPS 1e-6f

typedef struct {
    float *red_w;   // (r, C)
    float *red_b;   // (r)
    float *plu_w;   // (C, M)
    float *plu_b;   // (C)
    float *gate_w;  // (C, 2C): columns [0, C) act on h, [C, 2C) on g
    float *gate_b;  // (C)
} GrassmannWeights;

typedef struct {
    float *z;      // (B, T, r)
    float *pbar;   // (B, T, M)
    float *g;      // (B, T, C)
    float *alpha;  // (B, T, C)
    float *gate_in;  // (B, T, 2C): [h; g] rows, the gate's input
} GrassmannActs;

static inline int grassmann_pairs(int r) { return r * (r - 1) / 2; }

void grassmann_forward(float *out, GrassmannActs a, const float *inp, GrassmannWeights w,
                       int B, int T, int C, int r, const int *offsets, int n_off, int causal);
// Adds into dinp (B,T,C) and the weight gradients dw. da is scratch of the same shapes
// as the activations (its contents are overwritten). Stores nothing per pair: the mean
// over partners is taken before the Plücker product (it is linear in the partner), and
// the backward recomputes the partner norms and means.
void grassmann_backward(float *dinp, GrassmannWeights dw, GrassmannActs da, const float *dout,
                        const float *inp, GrassmannActs a, GrassmannWeights w,
                        int B, int T, int C, int r, const int *offsets, int n_off, int causal);

#endif
