// attention.h: the attention cores that work on projected queries, keys and values,
// and the Tucker weight generator. The block (model.c) wraps them with the QKV and
// output projections; the Grassmann mixing sublayer is in attn_grassmann.h.
//
// qkv (B,T,3C) holds [q | k | v] per token, each C = NH·hs wide with head h in
// columns [h·hs, (h+1)·hs). out (B,T,C) is the concatenation of the heads' outputs.
// causal: token t attends to tokens s ≤ t only (decoder tasks); otherwise to all.
#ifndef ATTN_ATTENTION_H
#define ATTN_ATTENTION_H

#include <stddef.h>

// Each core saves one float per sequence, head and token for its backward pass.
static inline size_t attn_saved_floats(int B, int T, int NH) { return (size_t)B * NH * T; }

// attn_softmax.c, variants mha and tucker: out_t = Σ_s softmax_s(q_t·k_s/√hs) v_s.
// saved keeps each row's log-sum-exp of the scores for the backward pass, which reads
// qkv and out again, recomputes the scores and writes (does not add into) dqkv.
void attn_softmax_forward(float *out, float *saved, const float *qkv, int B, int T, int C, int NH,
                          int causal);
void attn_softmax_backward(float *dqkv, const float *dout, const float *out, const float *saved,
                           const float *qkv, int B, int T, int C, int NH, int causal);

// attn_linear.c, variant linear: φ(x) = elu(x) + 1 and
//   out_t = φ(q_t)ᵀ S_t / (φ(q_t)·z_t + ε),  S_t = Σ_s φ(k_s) v_sᵀ,  z_t = Σ_s φ(k_s),
// the sums over s ≤ t (causal, in chunks: O(T·hs²)) or over all s. saved keeps the
// denominators for the backward pass, which recomputes the rest from qkv and out and
// writes (does not add into) dqkv.
#define LINEAR_ATTN_EPS 1e-6f
void attn_linear_forward(float *out, float *saved, const float *qkv, int B, int T, int C, int NH, int causal);
void attn_linear_backward(float *dqkv, const float *dout, const float *out, const float *saved,
                          const float *qkv, int B, int T, int C, int NH, int causal);

// attn_tucker.c, variant tucker: the QKV weight is generated from a head-interaction core,
//   W[h, k, m, ρ] = Σ_r U[h, r] · G[r, k, m, ρ]      (W = G ×₁ U),
// stored as core (3, R, hs·C) (role-major, so each role is one GEMM) and factor U (NH, R).
// wqkv (3C, C) is the generated weight in the layout the QKV projection uses
// (row ρ·C + h·hs + k, column m).
void tucker_generate_forward(float *wqkv, const float *core, const float *factor, int NH, int R,
                             int hs, int C);
void tucker_generate_backward(float *dcore, float *dfactor, const float *dwqkv, const float *core,
                              const float *factor, int NH, int R, int hs, int C);

#endif
