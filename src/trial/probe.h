// probe.h: what `attnsweep probe` measures on a trained trial, rebuilt from its stored
// parameter arena (TrialResult.params), on the validation split only:
//
//   * linear CKA (Kornblith et al. 2019) between the heads' outputs of each layer and
//     between the layers' outputs (the embeddings, then each block's residual stream),
//     over every token of the first validation examples: for column-centred X (n × p)
//     and Y (n × q), CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F), 1 for representations
//     that differ by an orthogonal map and a scale;
//   * accuracy under Gaussian input noise: the validation split evaluated as training
//     evaluates it (same batches), each input feature plus σ·N(0, 1) — images on the
//     normalised pixels (unit variance over the training file), token models on the
//     embeddings x0 in units of their RMS over the batch's real rows; σ = 0 is the clean
//     pass, the trial's own val_accuracy;
//   * attention maps of the first validation examples (model_attention_map);
//   * per-head ablation (Michel et al. 2019; softmax variants, Grassmann has no heads):
//     the validation split evaluated as the clean noise pass evaluates it, with head h's
//     output removed (its d_model × d_k block of W_O zeroed), one head at a time and every
//     head of a layer at once; beside it each head's redundancy as the invariants see it
//     (max over g ≠ h of |cos| between rows g and h of the layer's function-level head
//     Gram, circuits/circuits.h, from the trial's stored weights weighted by what each head
//     writes, as the scorer reads them) and Spearman's ρ between
//     redundancy and Δloss over the heads (expected negative when redundant heads cost
//     little to remove);
//   * the stability-under-transformation experiment: the same configuration (same seed,
//     same budget) trained by the built-in engine on images under a fixed random
//     orthogonal map Q of their input features, scored like every trial, and each
//     function-level invariant of the original (its stored weights, scored again the
//     same way) against the transformed model's: stays when |relative change| ≤ tol.
#ifndef ATTN_PROBE_H
#define ATTN_PROBE_H

#include "data/dataset.h"
#include "invariants/grid.h"
#include "model/model.h"
#include "trial/trial.h"

typedef enum { TRANSFORM_NONE, TRANSFORM_PATCH, TRANSFORM_PIXELS } TransformKind;
extern const char *const transform_names[4];  // "none", "patch", "pixels", NULL

typedef struct {
    int cka_examples;       // validation examples the CKA reads (0: all)
    int n_sigma;
    double sigma[16];       // noise levels
    int noise_seed;
    int maps;               // attention maps of validation examples 0..maps−1
    TransformKind transform;
    int transform_seed;     // Q's seed
    double tolerance;       // |relative change| at most this: the invariant stays
    int seed_control;       // also train the untransformed configuration with seed + 1
} ProbeOptions;

void probe_options_default(ProbeOptions *o);

typedef struct {
    char name[32];       // val_accuracy, rank_deviation, correlation, reward (model), or a
                         // layer's correlation, eff_rank_MODE, num_rank_MODE, tucker_fit, cp_fit, cp_rank
    int layer;           // −1: the whole model
    double original, transformed, change;  // change = (transformed − original) / |original|
    int stays;           // |change| ≤ tolerance
    double control, control_change;        // the seed control's value and change (NaN without it)
} ProbeRow;

typedef struct {
    int n_examples;      // validation examples the CKA read
    long n_rows;         // token rows (n_examples × T)
    int layers, heads;   // heads 0 for grassmann (no heads' outputs)
    double *cka_heads;   // [layers][heads][heads]
    double *cka_layers;  // [layers + 1][layers + 1]: the embeddings, then each block's output
    int n_sigma;
    double sigma[16], noise_accuracy[16], noise_loss[16];
    int n_maps, T;
    float *maps;         // [n_maps][layers][heads][T][T] (NULL for grassmann)

    double clean_loss, clean_accuracy;           // the validation split, nothing removed
    double *ablation_loss, *ablation_accuracy;   // [layers][heads]: head h removed (NULL for grassmann)
    double *layer_loss, *layer_accuracy;         // [layers]: every head of the layer removed
    double *redundancy;                          // [layers][heads]
    double *spearman;  // [layers + 1]: ρ(redundancy, Δloss) over each layer's heads, then pooled (NaN: undefined)

    TransformKind transform;
    int transform_seed, q_dim;
    float *Q;              // q_dim × q_dim, orthogonal
    double tolerance;
    TrialResult transformed;  // the trial trained on transformed inputs (scored)
    TrialResult control;      // the seed control (when asked; status interrupted otherwise)
    int has_control;
    int n_table;
    ProbeRow *table;
} Probe;

// The trained model of r on batches of B = r's batch: 0, or −1 with one line in err
// (no stored parameters, or parameters of another layout).
int probe_rebuild(Model *m, const TrialResult *r, const DatasetInfo *info, char *err, size_t errlen);
// CKA, noise and maps of the rebuilt model m (r's) on d's validation split into p.
void probe_measure(Probe *p, Model *m, const Dataset *d, const ProbeOptions *o);
// The per-head ablation of the rebuilt model m on d's validation split into p (clean_*,
// ablation_*, layer_*; nothing for grassmann). m's parameters are left as they were.
// (probe_ablation.c)
void probe_ablate_heads(Probe *p, Model *m, const Dataset *d);
// After probe_ablate_heads: the redundancy of the heads of r (the trial m was rebuilt
// from) from its stored weights, and the rank correlations with Δloss.
void probe_redundancy(Probe *p, const TrialResult *r);
// The validation split as training evaluates it (model/train.c: batches of the trial's
// batch rows, at most eval_batches of them, in the model's micro-batches), inputs under
// Gaussian noise σ (0: none) from seed: accuracy and loss (nats).
void probe_eval(Model *m, const Dataset *d, double sigma, int seed, double *accuracy, double *loss);
// Spearman's ρ of x and y (n values each; NaN for n < 2 or a constant side).
double probe_spearman(const double *x, const double *y, int n);
// The transformation experiment of r (a fashion_mnist trial whose scores it replaces by
// a fresh scoring of its stored weights, on g) into p. progress: the training's lines or NULL.
void probe_transform(Probe *p, TrialResult *r, const ProbeOptions *o, const BlacsGrid *g, FILE *progress);
void probe_free(Probe *p);
// probe_measure's CKA over validation examples [0, examples), in batches (probe_cka.c):
// sets n_rows, cka_layers and, when p->heads > 0, cka_heads.
void probe_cka(Probe *p, Model *m, const Dataset *d, Batch *batch, int examples);

// A Haar-random orthogonal n × n matrix (QR of a Gaussian matrix, signs fixed by R's
// diagonal) from seed, row-major, into Q.
void random_orthogonal(float *Q, int n, int seed);

#endif
