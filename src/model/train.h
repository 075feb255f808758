// train.h: train and evaluate one model. The built-in trial runner (trial/builtin.c)
// calls it for `attnsweep train` and the sweep's workers alike; it knows nothing of
// scoring or of the sweep, which reach it through the hooks.
#ifndef ATTN_TRAIN_H
#define ATTN_TRAIN_H

#include <gsl/gsl_rng.h>
#include <mpi.h>

#include "data/dataset.h"
#include "model/model.h"
#include "params/config.h"

// One evaluation point of the learning curve.
typedef struct {
    int step;
    double lr;
    double train_loss;     // mean training loss since the previous evaluation (nats)
    double val_loss;       // validation cross-entropy (nats per prediction)
    double val_accuracy;   // validation accuracy (fraction of predictions right)
    double penalty;        // sum of λ·regulariser penalties at this step
    double seconds;        // wall time since the start of training
} CurvePoint;

// How training ended.
typedef enum {
    TRAIN_DONE,         // the whole budget
    TRAIN_STOPPED,      // on_eval asked to stop before the end of the budget
    TRAIN_INTERRUPTED,  // should_stop asked
    TRAIN_FAILED,       // the loss diverged or the time limit passed (see reason)
} TrainEnd;

// Where a run is between two steps: everything besides the model (its parameters, AdamW's
// moments, the stability history) and the data position that its continuation needs to go
// on exactly as if it had never stopped (model/checkpoint.h saves and restores it).
typedef struct {
    long step;              // optimizer steps taken
    double loss_sum;        // training loss summed over the steps since the last evaluation
    long loss_n;            // those steps
    double penalty;         // the last step's Σ λ·penalty
    double train_seconds;   // optimizer-step seconds so far (earlier runs included)
    double seconds;         // wall seconds of the earlier runs
    int n_curve, cap;
    CurvePoint *curve;      // the curve so far (cap points allocated)
    gsl_rng *rng;           // this rank's batch stream
} TrainState;

typedef struct {
    // Called on every rank after each evaluation with the model as trained so far (its
    // weights may be read: model_export_attention) and the new curve point; nonzero
    // stops training (TRAIN_STOPPED) unless the budget is reached. Every rank of the
    // group must give the same answer. May be NULL.
    int (*on_eval)(void *ctx, Model *m, const CurvePoint *pt, long total_steps, double train_seconds);
    // Asked after every step on every rank (the answers are combined): nonzero ends
    // training with TRAIN_INTERRUPTED. May be NULL.
    int (*should_stop)(void *ctx);
    void *ctx;
    double time_limit;  // seconds of training before it fails; 0: none
    // Data parallelism: every rank of *group draws the same global batch of c->batch rows
    // and trains the same model on its share (train_rank_rows), the gradients averaged
    // with MPI_Allreduce into the global batch's; every held-out batch is split likewise,
    // so the numbers do not depend on the group's size. NULL: alone.
    const MPI_Comm *group;
    // Checkpoints: checkpoint(ctx, m, d, st) on every rank with the run's state between two
    // steps: after the step when st->step is a multiple of checkpoint_every (> 0), or after
    // each evaluation (checkpoint_every -1), short of the budget's end; and, whatever
    // checkpoint_every, when should_stop ends the run (the step in which it was asked is
    // finished first, so the state is whole). NULL: none.
    void (*checkpoint)(void *ctx, const Model *m, const Dataset *d, const TrainState *st);
    long checkpoint_every;
    // A state to continue from, restored with the model and the data position
    // (checkpoint_load): train_model takes over its curve and rng. NULL: from step 0.
    TrainState *resume;
} TrainHooks;

typedef struct {
    TrainEnd end;
    char reason[256];       // why it stopped or failed ("" when done)
    int steps;              // optimizer steps taken
    double seconds;         // wall time
    double train_seconds;   // of which optimizer steps (no evaluation)
    int n_curve;
    CurvePoint *curve;      // n_curve points; the caller frees it
    double test_loss, test_accuracy;  // of the final model when DONE or STOPPED, else NaN
} Training;

// Steps a configuration trains for (from steps, or epochs × examples / batch).
long train_total_steps(const TrialConfig *c, long n_train);
// A fresh state for c: step 0, an empty curve, the batch stream (the same on every rank of a group).
void train_state_init(TrainState *st, const TrialConfig *c, long total_steps);
void train_state_free(TrainState *st);

// Rows a rank of the group (NULL: alone) trains on per step: its share of the global
// batch, ceil(batch / G).
int train_rank_rows(const TrialConfig *c, const MPI_Comm *group);

// Rows model_init allocates for a rank's training (NULL group: alone): its share of the
// batch or, when that holds more than about 512 tokens, a micro-batch of it; a step then
// runs over its micro-batches and sums their gradients. With several threads
// (kernel_threads) and at least as many rows, the micro-batches are a multiple of the
// threads in number, so that each thread runs as many on its lane.
int train_model_rows(const TrialConfig *c, const DatasetInfo *info, const MPI_Comm *group);
// The lanes micro_batches makes for that training (1: the model alone), for model_bytes.
int train_lanes(const TrialConfig *c, const DatasetInfo *info, const MPI_Comm *group);

// A batch of a rank's rows as micro-batches of the model's m->B rows (the probes evaluate
// as training does through these), run by `lanes` threads at once: thread t on lane t (a
// model_lane_init of the model; lane 0 is the model itself), one a thread and at most one
// a micro-batch.
typedef struct {
    int lanes;
    Model *lane;  // [lanes]: lanes 1 …; lane[0] unused (the model)
    Batch *micro;  // [lanes]: each lane's micro-batch rows, copied; NULL when the model takes batches whole
    DatasetInfo info;
    EmbedPerturb perturb;  // each micro-batch's embeddings through this first (probes); NULL: none
    void *ctx;
} MicroBatches;
MicroBatches micro_batches(const DatasetInfo *info, const Model *m, int batch_rows);
void micro_batches_free(MicroBatches *u);
// Forward passes over the first `rows` rows of b, a micro-batch at a time on each lane,
// adding the summed loss, the predictions and the correct ones to sums[0..2]; with
// backward, each micro-batch's gradient of its summed loss is added to m's
// (model_backward_add on its lane, the lanes' then added to m's). With a perturbation,
// on the model alone.
void micro_passes(Model *m, MicroBatches *u, const Batch *b, int rows, int backward, double sums[3]);

// Train m, fresh from model_init for c with train_model_rows (or train_rank_rows: one pass a step), on d (as dataset_open or
// dataset_restart leaves it), or continue the run hooks->resume describes; fill out. With
// a group, collective over it.
void train_model(Model *m, Dataset *d, const TrialConfig *c, const TrainHooks *hooks, Training *out);

#endif
