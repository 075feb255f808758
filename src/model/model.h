// model.h: the pre-LayerNorm transformer (encoder for images, causal decoder for
// token tasks) with a pluggable attention sublayer, in float32.
//
//   block:  x ← x + Attn(LN1(x));  x ← x + W2·gelu(W1·LN2(x))
//   encoder: 16 patch tokens + [CLS] (position 0), head on [CLS] (10 classes)
//   decoder: token + position embedding, next-token head at every position
//
// Parameters, gradients, activations and activation gradients each live in one arena
// (common/arena.h); AdamW moments mirror the parameter arena.
#ifndef ATTN_MODEL_H
#define ATTN_MODEL_H

#include "common/arena.h"
#include "data/dataset.h"
#include "model/attn_grassmann.h"
#include "model/regularisers.h"
#include "params/config.h"

typedef struct {
    float *ln1_w, *ln1_b;        // (C)
    float *qkv_w, *qkv_b;        // mha, linear: (3C, C); all but grassmann: bias (3C)
    float *core, *factor;        // tucker: G (3, R, hs·C), U (NH, R)
    float *proj_w, *proj_b;      // all but grassmann: (C, C), (C)
    GrassmannWeights gm;         // grassmann
    float *ln2_w, *ln2_b;        // (C)
    float *fc_w, *fc_b;          // (F, C), (F)   F = mlp_ratio·C
    float *fcproj_w, *fcproj_b;  // (C, F), (C)
} BlockParams;

typedef struct {
    float *patch_w, *patch_b, *cls;  // encoder: (C, 49), (C), (C)
    float *wte;                      // decoder: (V, C)
    float *wpe;                      // (T, C)
    BlockParams *blocks;             // [L]
    float *lnf_w, *lnf_b;            // (C)
    float *head_w, *head_b;          // (K, C), (K)
} Params;

// A block's activations; as commented for the pre-LN block. The paper's Grassmann block
// (grassmann_block: paper) uses them in its own order: res1 = mix(x), ln1 = LN₁(res1),
// res2 = ln1 + MLP output + its bias, ln2 = LN₂(res2), the block's output (model.c).
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd;  // (BT, C), (BT), (BT)
    float *wqkv;                       // tucker: generated QKV weight (3C, C)
    float *qkv;                        // (BT, 3C)
    float *att;                        // (B, NH, T) saved by the core: the rows' log-sum-exp (mha, tucker), the denominators (linear)
    float *atty;                       // (BT, C) heads' outputs
    GrassmannActs gm;                  // grassmann
    float *res1;                       // (BT, C) x + attention output + its bias (see block_forward)
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fch, *fch_gelu;             // (BT, F) the MLP's first layer, then GELU's derivative there; its GELU
    float *res2;                       // (BT, C) res1 + MLP output + its bias
} BlockActs;

typedef struct {
    float *patches, *pemb;    // encoder: (B, 16, 49), (B, 16, C)
    float *x0;                // (BT, C) embeddings; in the gradients, the residual stream's
    BlockActs *blocks;        // [L]
    float *lnf, *lnf_mean, *lnf_rstd;
    float *headin;            // encoder: (B, C) the [CLS] rows of lnf
    float *logits, *probs;    // (NP, K)
} Acts;

typedef struct {
    TrialConfig cfg;
    // B batch, T tokens, C width, NH heads of hs, L blocks, F MLP width, K classes,
    // V vocabulary, R tucker core rank, r grassmann rank, NP predictions per batch.
    int B, T, C, NH, hs, L, F, K, V, R, r, NP;
    int causal, encoder;
    int dims[4];          // the attention tensor's four modes (see model_export_attention)
    int out_dims[2];      // the output side's shape (see model_export_output)
    int scored_dims[4], scored_out_dims[2];  // the same of what scoring reads (model_export_scored)
    long n_params;
    Arena params_arena, grads_arena, acts_arena, dacts_arena;
    Params params, grads;
    Acts acts, dacts;
    float *adam_m, *adam_v;        // AdamW moments, laid out like params_arena
    float *w4, *dw4;               // one layer's attention tensor and its gradient
    FunctionHeads heads;           // one layer's function-level heads, when lambda_orth or lambda_stability > 0
    StabilityHistory *stability;   // [L], used when lambda_stability > 0
} Model;

// Lay out and allocate everything for batches of B and initialise the parameters
// from cfg->seed (PyTorch-like: linear layers U(±1/√fan_in), embeddings N(0, 0.02)).
// Returns 0, or -1 (nothing left allocated) when the memory is not there: a sweep
// records that trial as failed and goes on.
int model_init(Model *m, const TrialConfig *cfg, const DatasetInfo *info, int B);
void model_free(Model *m);
// The bytes model_init would allocate for cfg and batches of B (parameters, gradients,
// AdamW's moments, activations and their gradients) and lanes − 1 lanes besides,
// without allocating them.
size_t model_bytes(const TrialConfig *cfg, const DatasetInfo *info, int B, int lanes);

// A lane: the parameters' gradients, the activations and their gradients of a second
// pass over m's parameters, so that a rank's threads each run whole micro-batches at once
// (train.c). model_forward, model_zero_grads and model_backward_add run on a lane as on
// m; it reads m's parameters and nothing else of m's. Returns 0, or -1 (nothing left
// allocated) when the memory is not there.
int model_lane_init(Model *lane, const Model *m);
void model_lane_free(Model *lane);
// m's gradients += lane's, thread t of nt's share of them (each thread of a team adds
// its own share, so that the team adds them all).
void model_lane_add_grads(Model *m, const Model *lane, int t, int nt);

// Forward pass on a batch; returns the summed loss (nats) over predictions with a
// target, their number in *count and the correct ones in *correct.
double model_forward(Model *m, const Batch *batch, long *count, long *correct);
// Probes (`attnsweep probe`): model_forward with the input embeddings x0 (B·T × C rows,
// after the patch or token embedding and the positions) passed through perturb first,
// e.g. noise on a token model's inputs; n: the floats of the batch's rows of data (the
// padding rows follow them). model_forward is this with perturb NULL.
typedef void (*EmbedPerturb)(void *ctx, float *x0, long n);
double model_forward_perturbed(Model *m, const Batch *batch, EmbedPerturb perturb, void *ctx, long *count,
                               long *correct);
// Probes: layer l's attention probabilities for sequence b of the last forward pass,
// recomputed from the q and k it saved (acts.blocks[l].qkv), into P [heads, T, T]
// (row t: how much token t reads each token s; 0 above the diagonal when causal):
// mha, tucker softmax(q·k/√d_k); linear the weights of its output, φ(q_t)·φ(k_s) /
// (Σ_s' φ(q_t)·φ(k_s') + 10⁻⁶). Returns 0, or -1 for grassmann (no attention).
// (attn_maps.c, apart from the kernels.)
int model_attention_map(const Model *m, int l, int b, float *P);

// Gradients of (summed loss / count + Σ λ·penalties) into m->grads, after model_forward on
// the same batch (count: its predictions for the mean loss; a data-parallel rank passes
// the group's over G). Returns Σ λ·penalty (0 when every λ is 0). It is the three steps
// below, which a step over several micro-batches (train.c) takes apart:
double model_backward(Model *m, const Batch *batch, double count);
// the gradients to zero;
void model_zero_grads(Model *m);
// after model_forward on batch, the gradient of its summed loss added to them;
void model_backward_add(Model *m, const Batch *batch);
// once all are added, their sum times scale (1 / the predictions, for the mean) and the
// penalties' gradients (a regulariser's history, as the stability penalty's, advances
// once per call); returns Σ λ·penalty.
double model_backward_finish(Model *m, float scale);

// Floating-point operations of one training step over `rows` rows (forward + backward ≈
// 3 × forward; a step over several micro-batches of m->B rows counts them all), counting
// the GEMMs and the attention/mixing cores: multiply and add count one each.
double model_flops_per_step(const Model *m, int rows);

// Layer l's attention parameters as the four-mode tensor [dims[0], dims[1], dims[2], dims[3]]
// (row-major, last mode fastest) into W (m->dims product floats):
//   mha, linear, tucker: [heads, d_k, d_model, 3], roles Q, K, V; W[h,k,m,ρ] is the weight
//       from input feature m to feature k of head h's query/key/value (tucker: the
//       generated weight G ×₁ U);
//   grassmann: [r, 1, d_model, 1], the reduction W_red: its r rows play the part of heads.
void model_export_attention(Model *m, int l, float *W);
// Layer l's output side into O (out_dims[0]·out_dims[1] floats, row-major), what the
// function-level view (circuits/circuits.h) reads besides the tensor above:
//   mha, linear, tucker: W_O (d_model, heads·d_k), row i = output feature i, column
//       h·d_k + k reads feature k of head h;
//   grassmann: W_plu (d_model, r(r−1)/2), the projection of the Plücker coordinates.
void model_export_output(const Model *m, int l, float *O);
// Layer l's weights as scoring reads them (circuits/circuits.h, the whole network's view):
// mha, linear, tucker: the two above with LN1 folded in, the reading weights centred,
// the query bias (and linear attention's key bias) as a last column, W_O centred, into
// W [heads, d_k, d_model + 1, 3] and O [d_model + 1, heads·d_k] (scored_dims,
// scored_out_dims); grassmann: the two above as they are.
void model_export_scored(Model *m, int l, float *W, float *O);

#endif
