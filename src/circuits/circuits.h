// circuits.h: the function-level view of an attention layer, shared by the scorer
// (invariants/) and the regularisers (model/), so both measure the same thing.
//
// Softmax-family layers (mha, tucker, linear, and checkpoints): head h computes with
// its QK form and its OV map (the "circuits" of Elhage et al. 2021),
//     B_h = W_Q^hᵀ W_K^h / √d_k,     C_h = W_O^h W_V^h          (d_model × d_model each)
// where W_Q^h, W_K^h, W_V^h are head h's d_k × d_model rows of the projections and W_O^h
// the d_model × d_k block of the output projection that reads head h. The logits are
// x_tᵀ B_h x_s and the head's contribution to the output is C_h Σ_s p_ts x_s (biases
// aside), so B_h and C_h are what the head computes: W_Q^h ↦ A W_Q^h, W_K^h ↦ A⁻ᵀ W_K^h
// (any invertible A) and W_V^h ↦ M W_V^h, W_O^h ↦ W_O^h M⁻¹ leave both unchanged.
// The layer's function-level tensor is T[h, i, j, ρ] = X_hρ[i, j] with X_h0 = B_h,
// X_h1 = C_h: dims [heads, d_model, d_model, 2]. It is never formed here: each slice is
// held as a product of two thin factors,
//     X_hρ = L_hρᵀ R_hρ,    L_hρ, R_hρ: d_k × d_model,
//     ρ = 0 (QK): L = W_Q^h / √d_k, R = W_K^h;    ρ = 1 (OV): L = W_O^hᵀ, R = W_V^h,
// and everything is computed from d_k × d_k products of the factors. For the whole
// layer, L_ρ and R_ρ stack the heads: (heads·d_k) × d_model, head h in rows
// [h·d_k, (h+1)·d_k).
//
// Grassmann mixing: with z = W_red h (r dims) the mixer reads each token pair through
// the Plücker coordinates of z_t ∧ z_s, and its output g = W_plu p̂ (p̂ the normalised
// coordinates, averaged over offsets). Output feature o reads the pair through the
// antisymmetric bilinear form
//     K_o = W_redᵀ A_o W_red    (d_model × d_model),   A_o[i, j] = W_plu[o, (i, j)] for i < j,
//                                                      A_o[j, i] = −A_o[i, j]  (r × r),
// K_o[m, n] = Σ_{i<j} W_plu[o, (i,j)] (W_red[i, m] W_red[j, n] − W_red[j, m] W_red[i, n]).
// A change of basis z ↦ O z (O ∈ O(r), W_red ↦ O W_red, W_plu ↦ W_plu (Λ²O)ᵀ, i.e.
// A_o ↦ O A_o Oᵀ) leaves the mixer's output and every K_o unchanged. The function-level
// tensor is K[o, m, n, 1]: dims [d_model, d_model, d_model, 1], the output features
// playing the part of heads. Two things it leaves out: the normalisation's metric
// W_redᵀ W_red (K is also unchanged under z ↦ A z for any invertible A, which is not a
// symmetry), and the gate, whose weights act per output feature and have no symmetry
// to remove.
//
// Both views agree on what a "head" is for the metrics: mode 0, heads for softmax
// layers, output features for Grassmann; the head Gram matrix is that of the rows of the
// mode-0 unfolding.
//
// Gradients (for penalties on the head Gram, model/regularisers.h). A function P of the
// Gram K is summarised by a symmetric coefficient matrix Γ with dP = Σ_gh (Γ_gh/2) dK_gh,
// i.e. ∂P/∂(row g) = Σ_h Γ_gh (row h). The *_backward functions turn Γ into gradients of
// the weights the factors were loaded from.
//   Softmax: ∂P/∂X_gρ = Σ_h Γ_gh X_hρ, and through X = Lᵀ R
//       ∂P/∂L_gρ = Σ_h Γ_gh PR_ρ[g,h] L_hρ,   ∂P/∂R_gρ = Σ_h Γ_gh PL_ρ[g,h] R_hρ,
//   PL_ρ[g,h] = L_gρ L_hρᵀ the d_k × d_k block of L_ρL_ρᵀ (likewise PR). For a whole
//   role that is ∂P/∂L_ρ = Z L_ρ with Z = (Γ ⊗ 1_{d_k×d_k}) ∘ PR_ρ (and ∂P/∂R_ρ from PL_ρ):
//   one (heads·d_k)² × d_model product per factor.
//   Grassmann: gram_op = tr(A_oᵀ M A_p M), M = W Wᵀ. With Ã_o = Σ_p Γ_op A_p and
//   Q_p = M A_p M:
//       ∂P/∂A_o = Σ_p Γ_op Q_p,   ∂P/∂M = S = Σ_o A_oᵀ M Ã_o (symmetric),   ∂P/∂W = 2 S W,
//   (∂/∂M of tr(A_oᵀ M A_p M) is A_o M A_pᵀ + A_pᵀ M A_o; summed against Γ/2 and with
//   A_oᵀ = −A_o both terms are Σ_op Γ_op A_oᵀ M A_p), and since A_o[j, i] = −A_o[i, j] =
//   −W_plu[o, (i,j)], ∂P/∂W_plu[o, (i,j)] = G[i,j] − G[j,i] for G = ∂P/∂A_o.
#ifndef ATTN_CIRCUITS_H
#define ATTN_CIRCUITS_H

#include <stddef.h>

// ---- The whole network's view of a layer (what the scorer reads; the penalties read
// the layer's own weights, model/regularisers.h).
//
// A head's B_h and C_h above are unchanged by its own reparameterisations, but the network
// has more symmetries, and the layer's biases are part of what it computes. The scored
// weights of a softmax-family layer are its weights as the network uses them:
//   * the normalisation it reads through, folded into its reading weights: a pre-LN
//     layer reads u = γ ⊙ n + β (n = (x − μ)/σ), so W ↦ W diag(γ) and b ↦ b + W β leave
//     q, k, v unchanged whatever γ and β are (TransformerLens's fold_ln); RMSNorm has a
//     gain only;
//   * reading weights centred under a LayerNorm: n has mean 0, so a row's mean never
//     reaches q, k or v (W diag(γ) ↦ W diag(γ) − a 1ᵀ changes nothing);
//   * writing weights centred when every reader of the residual stream subtracts the
//     mean (pre-LN and post-LN LayerNorm models): W_O ↦ P W_O, P = I − 11ᵀ/d_model;
//   * biases in homogeneous coordinates [x; 1] (d_model + 1 columns): the query bias is
//     the QK form's last row (b_Qᵀ W_K n_s moves the logits), the key bias its last
//     column only where it reaches the scores (linear attention's φ(k)); under softmax
//     b_K adds the same logit to every key of a query, which softmax removes. The value
//     bias adds the constant W_O b_V to the output; with b_O it is one constant of the
//     layer that any head's share of can be moved into b_O, so no head owns it (the
//     last column of OV is 0; the constant is not scored).
// Heads whose QK forms are equal are one function whose OV maps add (circuits_same_qk
// below); post-LN models (BERT) read the residual stream itself, so nothing is folded or
// centred on their reading side.
typedef enum { NORM_NONE = 0, NORM_LAYER = 1, NORM_RMS = 2 } NormKind;

typedef struct {
    NormKind norm;           // what the layer reads through (NORM_NONE: the raw stream, e.g. post-LN)
    const float *ln_w;       // its gain (d_model), NULL: 1
    const float *ln_b;       // its bias (d_model), NULL: 0 (always NULL for RMSNorm)
    const float *bias_qkv;   // 3·heads·d_k: Q | K | V, row h·d_k + k of each; NULL: none
    int centre_writes;       // every reader of what the layer writes subtracts the mean
    int key_bias;            // the key bias reaches the scores (linear attention)
} LayerForm;

// The scored weights of a softmax-family layer (see above) from its own: qkv [heads, d_k,
// d_model, 3] and out [d_model, heads·d_k] as circuits_init reads them, into qkv1
// [heads, d_k, d_model + 1, 3] and out1 [d_model + 1, heads·d_k] (last row 0), which
// circuits_init reads with d_model + 1 (out NULL: out1 is not written). Computed in
// double, rounded once.
void circuits_whole_network(float *qkv1, float *out1, const float *qkv, const float *out, const LayerForm *f,
                            int heads, int d_k, int d_model);

typedef struct {
    int heads, d_k, d_model;
    double *L[2], *R[2];  // (heads·d_k) × d_model row-major, ρ = 0 (QK) and 1 (OV)
} Circuits;

// From a layer's Q/K/V tensor qkv [heads, d_k, d_model, 3] (W[h, k, m, ρ], roles Q, K,
// V: the parameter tensor of score.h) and its output projection out [d_model, heads·d_k]
// (row i = output feature i; column h·d_k + k reads feature k of head h).
void circuits_init(Circuits *c, const float *qkv, const float *out, int heads, int d_k, int d_model);
void circuits_free(Circuits *c);
// Each head's QK factor scaled by ‖C_h‖_F / s, s² the mean of ‖C_h‖²_F over the heads: a
// head's QK form counts as much as the head writes (the first-order change of the
// layer's output with B_h is proportional to C_h), so a head that writes nothing is a
// zero row whatever its QK (no change when every head writes 0). Per-head
// reparameterisations and permutations leave every ‖C_h‖ unchanged. norm2 (2·heads, or
// NULL) receives the weighted slices' squared norms, norm2[2h + ρ] = ‖X_hρ‖²_F.
void circuits_weight_by_writes(Circuits *c, double *norm2);
// Heads whose QK forms are equal attend alike, so their OV maps add: one function, which
// trading output between them (C_g + C_h kept) does not change. Two heads' forms are taken
// as equal when ‖B_g − B_h‖_F ≤ CIRCUITS_SAME_QK · max(‖B_g‖, ‖B_h‖) (float32 weights agree
// to about 1e-7 after a per-head map; no two trained heads come near). circuits_same_qk
// sets first[h] to the first head (lowest index) of h's QK form (h itself when it has none
// before it) and returns how many heads share an earlier head's form; cost a sketch B_h v
// of every head (2·d_k·d_model each) and d_k × d_k products for the pairs it finds.
// circuits_merge_same_qk rewrites each such group in place: every head gets the group's QK
// factors, and the summed OV map M = Σ C_h is dealt over the group by its singular values,
// the largest d_k to the first head, the next d_k to the second, ... (σ at M's rounding
// level are 0): so a group whose M has rank ≤ d_k is one head and dead heads, and what its
// heads trade is no longer seen. For `linear` attention, whose feature map reads Q and K
// apart, equal forms with different factors are not quite one function (as the per-head
// maps on QK already are not).
#define CIRCUITS_SAME_QK 1e-5
int circuits_same_qk(const Circuits *c, int *first);
void circuits_merge_same_qk(Circuits *c, const int *first);
// circuits_init in two steps, for a caller that reloads the same buffers every step.
void circuits_alloc(Circuits *c, int heads, int d_k, int d_model);
void circuits_load(Circuits *c, const float *qkv, const float *out);

// P (heads·d_k)² row-major, both triangles = F Fᵀ for F = c->L[rho] (left) or c->R[rho].
void circuits_factor_gram(double *P, const Circuits *c, int left, int rho);

// Gram of the heads' slices, one role: gram[g·heads + h] = ⟨X_gρ, X_hρ⟩_F
// = Σ_{a,b} PL[g·d_k + a, h·d_k + b] · PR[g·d_k + a, h·d_k + b] for PL = L_ρL_ρᵀ,
// PR = R_ρR_ρᵀ (circuits_factor_gram). Overwrites gram.
void circuits_block_inner(double *gram, const double *PL, const double *PR, int heads, int d_k);

// The head Gram matrix of T: gram[g·heads + h] = ⟨B_g, B_h⟩ + ⟨C_g, C_h⟩ (heads × heads,
// both triangles). Cost 2·(heads·d_k)²·d_model multiply-adds.
void circuits_head_gram(double *gram, const Circuits *c);

// The same with a caller's workspace ws (circuits_gram_workspace(c) doubles), in which
// the forward leaves the factor Grams the backward reads; the backward adds the
// gradient of P (coefficients Γ (heads, heads), see above) into dqkv and dout, laid out
// as circuits_init's qkv and out. The backward costs 4·(heads·d_k)²·d_model multiply-adds.
size_t circuits_gram_workspace(const Circuits *c);
void circuits_head_gram_forward(double *gram, double *ws, const Circuits *c);
void circuits_head_gram_backward(float *dqkv, float *dout, const Circuits *c, const double *coef, double *ws);

// The rows g ∈ [g0, g1) of the head Gram matrix, from the blocks h ≥ g only (so the
// ranks of a grid can share the work): writes gram[g·heads + h] and gram[h·heads + g]
// for those pairs and nothing else. roles (NULL: skipped) gets each head's 2 × 2 role
// Gram, roles[3g..3g+2] = ‖B_g‖², ⟨B_g, C_g⟩, ‖C_g‖², for g in the range.
void circuits_head_gram_rows(double *gram, double *roles, const Circuits *c, int g0, int g1);

// ---- Grassmann mixing kernel
typedef struct {
    int r, d_model;
    double *W;  // r × d_model row-major: W_red
    double *A;  // d_model × r × r: the antisymmetric A_o of every output feature o
} MixingKernel;

// From W_red (r, d_model) and W_plu (d_model, r(r−1)/2) as the model holds them.
void mixing_kernel_init(MixingKernel *k, const float *red, const float *plu, int r, int d_model);
void mixing_kernel_free(MixingKernel *k);
// mixing_kernel_init in two steps, as circuits_alloc and circuits_load.
void mixing_kernel_alloc(MixingKernel *k, int r, int d_model);
void mixing_kernel_load(MixingKernel *k, const float *red, const float *plu);

// K [d_model, d_model, d_model] row-major: K[o, m, n] = K_o[m, n].
void mixing_kernel_tensor(double *K, const MixingKernel *k);

// gram[o·d_model + p] = ⟨K_o, K_p⟩_F = tr(A_oᵀ M A_p M), M = W Wᵀ (both triangles).
void mixing_kernel_gram(double *gram, const MixingKernel *k);

// The same with a workspace (mixing_kernel_gram_workspace(k) doubles) kept for the
// backward, which adds the gradient of P (coefficients Γ (d_model, d_model), see above)
// into dred (r, d_model) and dplu (d_model, r(r−1)/2), laid out as W_red and W_plu.
// The forward costs d_model·r²·(d_model + 2r) multiply-adds, the backward d_model·r²·(2·d_model + r).
size_t mixing_kernel_gram_workspace(const MixingKernel *k);
void mixing_kernel_gram_forward(double *gram, double *ws, const MixingKernel *k);
void mixing_kernel_gram_backward(float *dred, float *dplu, const MixingKernel *k, const double *coef, double *ws);

#endif
