// runner.h: running one trial. A runner trains a configuration its own way and fills a
// TrialResult; trial_run calls it, then scores the final attention weights and computes
// the reward the same way for every runner (so neither model/ nor a researcher's program
// ever calls the scorer). The built-in engine (builtin.c: data, model, train) is the
// first runner; a runner that launches the researcher's own program fits behind the same
// interface.
//
// The straight walk of one trial: the worker (sweep/worker.c) or `attnsweep train` calls
// trial_run → the runner trains (model/train.c) and reports each evaluation to
// hooks->on_eval (ASHA) → trial_run scores the final weights (invariants/score.h) and
// sets the reward (reward.h) → the caller stores the result (store/h5store.h).
#ifndef ATTN_RUNNER_H
#define ATTN_RUNNER_H

#include <mpi.h>
#include <stdio.h>

#include "invariants/grid.h"
#include "trial/metrics.h"
#include "trial/trial.h"



// The evaluation at curve point pt of r (its trace and dims as far as the run has gone,
// live or from the journal), the reward under spec.
EvalPoint trial_eval_point(const TrialResult *r, const CurvePoint *pt, const RewardSpec *spec);
// A metric a sweep may optimise (METRIC_DECIDES) at the evaluation; NaN for any other.
double eval_point_value(const EvalPoint *e, const Metric *m);

typedef struct {
    // The scheduler, after each evaluation (on every rank of the group) with what it
    // measured; nonzero stops the trial (status pruned) unless it reached its budget.
    // Every rank must give the same answer. May be NULL.
    int (*on_eval)(void *ctx, const EvalPoint *e, long total_steps);
    // Asked while the trial runs, on every rank (the answers are combined): nonzero
    // abandons it with status interrupted (a signal: the caller does not record it).
    // May be NULL.
    int (*should_stop)(void *ctx);
    void *ctx;
    double time_limit;          // seconds before the trial fails; 0: none
    const MPI_Comm *group;      // the ranks that run the trial together (NULL: alone)
    // The BLACS grid over the group (every rank of it calls trial_run): with a grid the
    // invariants of every layer are traced at each evaluation where the runner can, and
    // the final weights are scored; NULL: neither.
    const BlacsGrid *grid;
    const RewardSpec *reward;   // how the scores become the reward (NULL: defaults)
    const ScoreOptions *score;  // how the final weights are scored (NULL: defaults)
    FILE *progress;             // progress lines (steps, losses, ETA), or NULL
    int id;                     // the trial's number in the sweep (0 for attnsweep train)
    int device_slot;            // a program's trial: the group's place among its node's groups
                                // (its GPUs: external.h program_devices)
    // The trial's directory (trial/trialdir.h), or NULL: where its checkpoints go, every
    // checkpoint_every steps (-1: at each evaluation; 0: only when should_stop ends it),
    // and where a trial that has one continues from.
    const char *trial_dir;
    long checkpoint_every;
    // When a trial continues from a checkpoint taken after `step` steps, before it trains on
    // (every rank): its evaluations so far as on_eval saw them, so the scheduler knows the
    // rungs already passed and their metrics. May be NULL.
    void (*on_resume)(void *ctx, long step, const EvalPoint *evals, int n_evals, long total_steps);
    // Bytes the group may use (resources.mem), 0: not limited. A trial whose estimated peak
    // over the group exceeds it fails before it starts.
    double mem_limit;
} TrialHooks;

typedef struct TrialRunner TrialRunner;
struct TrialRunner {
    // Run c. r arrives with its configuration, start time and host set, status ok and
    // the metrics NaN; the runner sets the status (and reason) unless ok, the curve
    // (and the invariant trace, on hooks->grid, if it can), steps, n_params, seconds,
    // train_seconds, flops_per_step, the test loss and accuracy of a measured trial
    // (trial_status_measured), and the final weights (n_layers, dims, weights,
    // out_dims, weights_out). hooks->reward and hooks->score are set. Collective over
    // hooks->group.
    void (*run)(TrialRunner *self, const TrialConfig *c, const TrialHooks *hooks, TrialResult *r);
    void (*free)(TrialRunner *self);
};

// The built-in engine: the task's data (kept open across trials of the same data),
// the model and its training loop. Bad data files end the program with exit code 2.
// The runner of a researcher's program: trial/external.h.
TrialRunner *trial_builtin_runner(void);
// The same engine on images under a fixed linear map of their input features (data/
// dataset.h dataset_set_input_transform: Q, dim × dim, copied): `attnsweep probe`'s
// transformed training. fashion_mnist only.
TrialRunner *trial_builtin_runner_transformed(const float *Q, int dim);
void trial_runner_free(TrialRunner *runner);

// Run c with runner and fill out (trial_result_free it): status ok; failed with the
// reason when the runner failed it (the loss diverged, the time limit passed, the model
// could not be allocated, the program failed); pruned when on_eval stopped it;
// interrupted when should_stop did. The validation metrics are the last evaluation's; a
// measured trial's final weights are scored on hooks->grid with its reward (otherwise,
// or without weights, rank_deviation, correlation and reward are NaN). Returns 0 when the status is ok. With a group,
// collective over it.
int trial_run(TrialRunner *runner, const TrialConfig *c, const TrialHooks *hooks, TrialResult *out);
// What trial_run does after the runner for a measured trial: score every layer's final
// weights on g with o and set rank_deviation, correlation, its chance and the reward
// from val_accuracy under spec (the scores of out are replaced).
void trial_score(TrialResult *out, const BlacsGrid *g, const ScoreOptions *o, const RewardSpec *spec);

#endif
