// train.h: train and evaluate one configuration. The CLI's `train` verb and the sweep
// workers call the same function.
#ifndef ATTN_TRAIN_H
#define ATTN_TRAIN_H

#include <stdio.h>

#include "common/config.h"
#include "trial/trial.h"
#include "invariants/grid.h"
#include "trial/reward.h"

typedef struct {
    // Called after each evaluation with the new curve point; return nonzero to stop
    // training early (the trial is then recorded with status "pruned"). May be NULL.
    int (*on_eval)(void *ctx, const CurvePoint *point, long total_steps);
    void *ctx;
    FILE *progress;  // progress lines (step, losses, validation metrics, steps/s, ETA), or NULL
    // The BLACS grid the invariants are computed on (every rank of it trains the same
    // model and calls train_trial). With a grid, training records the invariants of every
    // layer at each evaluation and scores the final tensors; NULL skips both.
    const BlacsGrid *grid;
    const RewardSpec *reward;  // how the final scores become the reward (NULL: defaults)
    const ScoreOptions *score; // how the final tensors are scored (NULL: defaults)
    // Data parallelism: every rank of *group trains the same model on its own batches
    // (its data stream is seeded with its rank) and the gradients are averaged with
    // MPI_Allreduce before the update; evaluation is split over the ranks. NULL: alone.
    const MPI_Comm *group;
    // Asked after every step on every rank (the answers are combined): nonzero ends the
    // trial with status "interrupted" (a signal: the caller does not record it). May be NULL.
    int (*should_stop)(void *ctx);
    double time_limit;  // seconds of training before the trial fails; 0: none
    // An open dataset that serves this trial (dataset_serves), kept by the caller across
    // trials to save reloading; train_trial restarts it. NULL: opened and freed here.
    struct Dataset *dataset;
} TrainHooks;

// Steps a configuration trains for (from steps, or epochs × examples / batch).
long train_total_steps(const TrialConfig *c, long n_train);

// Train c from scratch and fill out: status "ok"; "failed" with the reason when the loss
// diverges, the time limit passes or the model cannot be allocated; "pruned" when
// on_eval stopped it; "interrupted" when should_stop did. Bad data files end the program
// with exit code 2 before any training. Returns 0 when status is "ok". With a group,
// collective over it.
int train_trial(const TrialConfig *c, const TrainHooks *hooks, TrialResult *out);

#endif
