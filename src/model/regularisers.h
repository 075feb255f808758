// regularisers.h: the four penalties on one layer's attention tensor, each with its gradient.
//
// W is the layer's four-mode tensor [G, Dg, Dm, R] (row-major, roles fastest) exactly
// as the attention variant exports it (attention.h): for mha/tucker/linear
// [heads, d_k, d_model, 3] with roles Q, K, V. The "head unfolding" is the G × (Dg·Dm·R)
// matrix whose row g is head g's parameters.
//
// Each function returns λ·penalty and ADDS λ·∂penalty/∂W into dW (same shape as W).
// Internally double precision; SVDs through LAPACKE.
#ifndef ATTN_REGULARISERS_H
#define ATTN_REGULARISERS_H

// lambda_orth: ‖Ĥ Ĥᵀ − I‖²_F, Ĥ = head unfolding with unit-norm rows.
double reg_orth(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda);
// lambda_nuclear: Σ_roles ‖W_ρ‖_*, W_ρ = W[:, :, :, ρ] as a (G·Dg) × Dm matrix; gradient U Vᵀ.
double reg_nuclear(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda);
// lambda_l2: ‖W‖²_F.
double reg_l2(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda);

// Normalised head singular values: the singular values σ of the head unfolding
// (min(G, Dg·Dm·R) of them, descending), divided by their sum. s has G entries
// (zeros past the rank). Also used by invariant monitoring.
void head_singular_values(double *s, const float *W, int G, int Dg, int Dm, int R);

// lambda_stability: ‖s(W) − s_ref‖² with s as above and s_ref = s(W_{t−k}) (a constant).
double reg_stability(float *dW, const float *W, const double *s_ref, int G, int Dg, int Dm, int R,
                     double lambda);

// The history of s(W_t) one layer needs for the stability penalty: a ring of the last
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
