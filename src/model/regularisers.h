// regularisers.h: the four penalties on one layer's attention, each with its gradient.
//
// Two act on what the layer computes, two on its parameters:
//
//  * lambda_orth and lambda_stability act on the layer's function-level heads
//    (circuits/circuits.h): softmax head h (mha, tucker, linear) is the pair (B_h, C_h) of
//    its QK form and OV map, Grassmann output feature o its antisymmetric form K_o. Both
//    are functions of the heads' Gram matrix K (G, G) alone, so they do not move under
//    reparameterisations that leave every head's function unchanged (per head
//    W_Q ↦ A W_Q, W_K ↦ A⁻ᵀ W_K, W_V ↦ M W_V, W_O ↦ W_O M⁻¹; Grassmann's
//    W_red ↦ O W_red, W_plu ↦ W_plu (Λ²O)ᵀ) nor under head permutations. Each takes K
//    and ADDS λ·Γ into coef (G, G), the symmetric coefficients of its gradient,
//    dP = Σ_gh (Γ_gh/2) dK_gh; FunctionHeads supplies K and turns the summed
//    coefficients into gradients of the weights.
//
//  * lambda_nuclear and lambda_l2 act on the parameter tensor W [G, Dg, Dm, R]
//    (row-major, roles fastest) exactly as the attention variant exports it
//    (model_export_attention): for mha/tucker/linear [heads, d_k, d_model, 3] with roles
//    Q, K, V, for grassmann W_red as [r, 1, d_model, 1]. Each ADDS λ·∂penalty/∂W into dW
//    (same shape as W). lambda_l2 is the control arm: plain weight decay of the same
//    tensors.
//
// Each returns λ·penalty. Internally double precision; decompositions through LAPACKE.
#ifndef ATTN_REGULARISERS_H
#define ATTN_REGULARISERS_H

#include "circuits/circuits.h"

// lambda_orth: ‖Ĉ − I‖²_F, Ĉ_gh = K_gh / √(K_gg K_hh) the Gram of the heads scaled to
// unit norm: 0 when the heads compute in orthogonal directions, G(G−1) when all compute
// the same up to scale.
double reg_orth(double *coef, const double *K, int G, double lambda);

// lambda_stability: ‖s − s_ref‖², s the normalised head singular values: σ_j = √λ_j for
// the eigenvalues λ_j of K, descending, divided by their sum (G entries, zeros past
// `rank`, the most independent rows the heads can have: FunctionHeads.rank). s_ref is
// s at step t − k (a constant). s receives s now, which the history keeps (NaN if LAPACK
// fails); with s_ref NULL (the first k steps) only s is computed and the penalty is 0
// (NaN if LAPACK fails).
double reg_stability(double *coef, double *s, const double *K, const double *s_ref, int G, int rank,
                     double lambda);

// lambda_nuclear: Σ_roles ‖W_ρ‖_*, W_ρ = W[:, :, :, ρ] as a (G·Dg) × Dm matrix; gradient U Vᵀ.
double reg_nuclear(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda);
// lambda_l2: ‖W‖²_F.
double reg_l2(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda);

// One layer's function-level heads for the penalties, with every buffer they need
// allocated once (a model reuses it for each layer, every step). The cycle per layer:
// function_heads_gram (K, coef cleared), the penalties add into coef,
// function_heads_backward.
typedef struct {
    int grassmann;   // the heads are: 1, the output features' forms; 0, the softmax heads' circuits
    int G, rank;     // heads (grassmann: d_model), and the dimension their rows span at most
    Circuits c;      // softmax: the factors of B_h and C_h
    MixingKernel k;  // grassmann: W_red and the forms A_o
    double *ws;      // the representation's Gram workspace (circuits.h)
    double *K, *coef;  // (G, G): the head Gram, the penalties' summed gradient coefficients
} FunctionHeads;

// The layer's shape as the parameter tensor's first three modes: softmax
// (heads, d_k, d_model), grassmann (r, 1, d_model).
void function_heads_init(FunctionHeads *f, int grassmann, int groups, int d_group, int d_model);
void function_heads_free(FunctionHeads *f);  // also of a zeroed one, never initialised
// From the layer's parameter tensor W (as above) and its output side out (softmax: W_O
// (d_model, heads·d_k); grassmann: W_plu (d_model, r(r−1)/2)): f->K, and f->coef = 0.
void function_heads_gram(FunctionHeads *f, const float *W, const float *out);
// Adds the gradient f->coef stands for into dW (W's shape) and dout (out's).
void function_heads_backward(float *dW, float *dout, FunctionHeads *f);

// The history of s one layer needs for the stability penalty: a ring of the last
// `window` vectors, so s_ref at step t is s(W_{t−window}) exactly.
typedef struct {
    int G, window, count;  // count: vectors pushed so far
    double *ring;          // window × G
} StabilityHistory;

void stability_init(StabilityHistory *h, int G, int window);
void stability_free(StabilityHistory *h);
// s(W_{t−window}), or NULL while fewer than `window` steps have been pushed.
const double *stability_reference(const StabilityHistory *h);
void stability_push(StabilityHistory *h, const double *s);

#endif
