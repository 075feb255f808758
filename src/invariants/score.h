// score.h: invariants of one attention layer (the reward made of them: trial/reward.h).
//
// What is scored is a four-mode tensor of the layer, one of two views (TensorView):
//   function (default): what the layer computes, invariant under the reparameterisations
//       that leave the layer's function unchanged (circuits/circuits.h):
//       mha, tucker, linear, checkpoints   T[h, i, j, ρ], dims [heads, D, D, 2]:
//           ρ = 0 the QK form B_h = W_Q^hᵀW_K^h/√d_k weighted by ‖C_h‖/s
//           (circuits_weight_by_writes), ρ = 1 the OV map C_h = W_O^hW_V^h; the weights
//           as the whole network uses them (circuits_whole_network: D = d_model + 1 for
//           the engine's variants and the checkpoints);
//       grassmann                          K[o, m, n, 1], dims [d_model, d_model, d_model, 1]:
//           output feature o's antisymmetric form K_o = W_redᵀ A_o W_red on token pairs;
//   parameters: the seed's literal tensor W[G, Dg, Dm, R] (groups/heads, head feature,
//       input feature, roles) as the variants export it (model.h): [heads, d_k, d_model, 3]
//       (Q, K, V), or W_red as [r, 1, d_model, 1]. Its metrics move under per-head
//       invertible maps of Q/K and of V/O and under W_red ↦ O·W_red, which leave the
//       model's function unchanged; they are invariant only under orthogonal changes of
//       basis of modes 1 and 2 and permutations of mode 0.
// Modes are numbered 0..3 in that order (mode 0: the heads; the output features for
// Grassmann); mode-n unfoldings follow Kolda & Bader. Every metric here is invariant
// under orthogonal changes of basis of modes 1 and 2 and under permutation of mode 0,
// and RankDeviation and Correlation under scaling of the tensor.
#ifndef ATTN_SCORE_H
#define ATTN_SCORE_H

#include <stddef.h>

#include "circuits/circuits.h"
#include "invariants/grid.h"

typedef enum { TENSOR_FUNCTION = 0, TENSOR_PARAMETERS = 1 } TensorView;
extern const char *const tensor_view_names[3];  // "function", "parameters", NULL
// The view of that name, or -1.
int tensor_view_find(const char *name);

// One layer's weights as scoring reads them (model_export_attention and
// model_export_output for a trained model; safetensors.h for a checkpoint).
typedef struct {
    int grassmann;      // 0: softmax-family heads (mha, tucker, linear, checkpoints); 1: Grassmann mixing
    int dims[4];        // of qkv: [heads, d_k, d_model, 3], or [r, 1, d_model, 1] for W_red
    const float *qkv;   // the parameter tensor W (row-major, roles fastest)
    int out_dims[2];    // of out: [d_model, heads·d_k] (W_O), or [d_model, r(r−1)/2] (W_plu)
    const float *out;   // the output side; needed by the function view only
} LayerWeights;

// The dims of the tensor the view scores.
void scored_dims(int dims[4], const LayerWeights *w, TensorView view);

// The names of each view's modes: parameters heads, head_dim, model_dim, roles;
// function heads, dest_dim (the attending token's features: the query side of B_h, the
// output side of C_h; token t of a Grassmann pair), src_dim (the attended token's:
// the key side of B_h, the value side of C_h; the partner t − Δ), roles (QK, OV).
extern const char *const tensor_mode_names[2][4];
// Mode n for a name of that view's table or a digit 0..3; −1 if neither.
int tensor_mode_index(TensorView view, const char *name);

typedef struct {
    int decompose;           // 1: HOOI and the CP sweep too; 0: only what the unfoldings'
                             //   singular values give (ranks, effective ranks, correlation):
                             //   the cheap pass training runs at every evaluation
    double energy;           // numerical rank: smallest r whose σ² energy reaches this (0.99)
    int ranks[4];            // Tucker ranks; 0 = numerical rank of that mode
    double tucker_tol;       // HOOI stops when the fit changes by less (1e-4)
    int tucker_max_iter;     // (100)
    int cp;                  // run the CP rank sweep (1) or not (0)
    int cp_rank_max;         // R_max of the sweep (0: min(8, G·R))
    double cp_fit_threshold; // smallest rank whose fit reaches this is chosen (0.9)
    double cp_tol;           // ALS stops on |Δfit| below this (1e-8)
    int cp_max_iter;         // (100)
    int verbose;             // per-iteration lines (fit, Δ, time) on stderr, rank 0
    size_t dense_max;        // largest function-level tensor of softmax heads (entries) HOOI
                             //   takes whole (2^24: 128 MB, a BERT-base layer); a larger one
                             //   runs HOOI from its factors with the heads and roles modes whole
} ScoreOptions;

void score_options_default(ScoreOptions *o);

typedef struct {
    TensorView view;        // what was scored
    int mixing;             // 1: a Grassmann layer's (mode 0 its output features, or W_red's rows in the
                            //   parameters view: not heads; the reward charges it no head terms, reward.h)
    int dims[4];            // its shape
    double norm;            // ‖W‖_F
    double *sv[4];          // singular values of each mode-n unfolding, descending,
    int n_sv[4];            //   n_sv[n] = min(dims[n], Π others) of them
    int num_rank[4];        // numerical multilinear ranks at the energy threshold
    double eff_rank[4];     // exp(entropy of σ/Σσ) per mode
    double correlation;     // mean off-diagonal |cosine| between the G rows of the mode-0 unfolding
    double correlation_chance;     // its rotation null's mean (chance.h): each head's objects rotated at
                                   //   random, spectra kept (Grassmann: independent Gaussian weights)
    double correlation_chance_sd;  //   and its standard deviation (NaN for Grassmann: none computed)
    double eff_rank_chance, eff_rank_chance_sd;  // the heads mode's effective rank under the same null
                                                 //   (chance.h; NaN for Grassmann)
    double core_energy[4];  // fraction of ‖W‖² kept by mode n's leading num_rank[n] singular vectors
    int tucker_ranks[4];    // ranks the Tucker decomposition used
    double tucker_fit;      // 1 − ‖W − Ŵ‖/‖W‖ of the HOOI result
    int tucker_iters;
    int cp_rank;            // chosen CP rank (0 if the sweep did not run)
    double cp_fit;          // its fit, 1 − ‖W − Ŵ‖/‖W‖
    double *cp_fits;        // fit of every rank tried, 1..cp_rank_max
    int cp_rank_max;
    double cp_cond[4];      // condition number of each CP factor at the chosen rank
    double *cp_roles;       // cp_rank × dims[3]: each component's role weights (unit-norm role factor column)
} LayerScore;

// Collective over g->comm: every rank passes the same weights and gets the same result.
void score_layer(LayerScore *out, const LayerWeights *w, TensorView view, const ScoreOptions *o, const BlacsGrid *g);
// What score_layer runs for each kind of tensor, also for callers holding the factors
// in double (tests of invariance, which must not round them to float):
void score_circuits(LayerScore *out, const Circuits *c, const ScoreOptions *o, const BlacsGrid *g);
void score_mixing_kernel(LayerScore *out, const MixingKernel *k, const ScoreOptions *o, const BlacsGrid *g);
// the parameter view of a tensor W of any dims, scored as it is
void score_weights(LayerScore *out, const float *W, const int dims[4], const ScoreOptions *o, const BlacsGrid *g);
void layer_score_free(LayerScore *s);

// (correlation − correlation_chance) / correlation_chance_sd: where the layer's Correlation
// lies on its rotation null; NaN without one.
double correlation_z(const LayerScore *s);
// (eff_rank[0] − eff_rank_chance) / eff_rank_chance_sd: the heads' effective rank on its
// null (below 0: fewer distinct heads than chance gives); NaN without one.
double eff_rank_z(const LayerScore *s);

#endif
