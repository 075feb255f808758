// trial.h: what one trained trial produced, as the store writes it and the report reads it.
#ifndef ATTN_TRIAL_H
#define ATTN_TRIAL_H

#include <cjson/cJSON.h>

#include "model/train.h"
#include "params/config.h"
#include "trial/reward.h"

// How a trial ended. The names are what the results file, the journal and --json hold.
typedef enum {
    TRIAL_OK,           // trained to its budget
    TRIAL_PRUNED,       // stopped early by the scheduler (ASHA), with its last metrics
    TRIAL_FAILED,       // non-finite loss, time limit, no memory for the model: see its reason
    TRIAL_INTERRUPTED,  // abandoned on a signal: never recorded (--resume runs it again)
    TRIAL_STATUS_COUNT
} TrialStatus;
extern const char *const trial_status_names[TRIAL_STATUS_COUNT];  // "ok", "pruned", "failed", "interrupted"
// The status of that name, or -1.
int trial_status_find(const char *name);
// Whether the trial was measured: its metrics, test split and scores are taken (ok, pruned).
int trial_status_measured(TrialStatus s);

// Invariants of every layer recorded at each evaluation during training: how the
// heads' singular values and correlation move (heads collapsing shows here).
typedef struct {
    int n, cap;           // evaluation points recorded
    int layers, groups;   // per point: `layers` layers of `groups` heads
    int *step;            // n
    double *correlation;  // n × layers: mean off-diagonal |cosine| between heads
    double *eff_rank;     // n × layers × 4: effective rank of each mode
    double *head_sv;      // n × layers × groups: singular values of the mode-0 unfolding
    double *chance;       // n × layers × 4: the rotation nulls (reward.h reward_terms' chance)
} InvariantTrace;

// Where a program's trial ran (trial/external.h), as its results file records it; every
// field NULL for the built-in engine's trials.
typedef struct {
    char *dir;          // ATTNSWEEP_TRIAL_DIR
    char *stdout_path, *stderr_path, *metrics_path;
    char *command;      // the words run, as a JSON array
    char *stderr_tail;  // the last lines of stderr (at most 20 lines, 4 KiB)
    char *checkpoint;   // the weights scored, "" when none were
} ProgramRun;

typedef struct {
    TrialConfig config;
    int id;                 // trial number in the sweep (0 for attnsweep train)
    TrialStatus status;
    char reason[256];       // why it failed or was pruned ("" when ok)
    // Metrics (trial/metrics.h): on the validation split at the last evaluation (NaN
    // before the first), and on the test split once, when the trial finished ok or pruned
    // (NaN otherwise). Loss in nats per prediction; bits per byte = loss / ln 2, charlm
    // only (NaN for the other tasks).
    double val_accuracy, val_loss, val_bits_per_byte;
    double test_accuracy, test_loss, test_bits_per_byte;
    int steps;              // optimizer steps taken
    long n_params;
    double seconds;         // training wall time
    double train_seconds;   // of which optimizer steps (no evaluation, no start-up)
    double flops_per_step;  // model_flops_per_step
    double start_time, end_time;  // Unix time (seconds)
    char host[64];
    int rank;               // MPI rank that trained it (0 for attnsweep train)
    int group_size;         // ranks that trained it data-parallel (1 alone; 0: not recorded,
                            // a trial from before group sizes were recorded)

    int n_curve;
    CurvePoint *curve;      // the learning curve (model/train.h)
    InvariantTrace trace;

    // Scores of the final attention tensors (scores == NULL until scored), the reward's terms
    // (reward.h RewardTerms) and the reward val_accuracy − β·rank_deviation_excess −
    // γ·correlation_excess with the RewardSpec they were scored under.
    LayerScore *scores;     // n_layers
    RewardSpec reward_spec;
    double rank_deviation, correlation, reward;
    double correlation_chance;  // mean over layers of the scores' correlation_chance
    double rank_deviation_excess, correlation_excess, correlation_z, eff_rank_z;
    // A program's trial: the sweep's metric when it is a name of the program's own, at the
    // last evaluation (NaN otherwise: metrics.h metric_program), and where it ran.
    double program_metric;
    ProgramRun run;

    // Final attention weights of each layer, what scoring reads (score.h LayerWeights):
    // the parameter tensor, shape dims = [groups, d_group, d_model, roles] (row-major,
    // roles fastest), and the output side, shape out_dims (W_O or W_plu), as the variant
    // documents (model.h).
    int n_layers;
    int dims[4];
    float **weights;      // n_layers pointers to dims[0]*dims[1]*dims[2]*dims[3] floats
    int out_dims[2];
    float **weights_out;  // n_layers pointers to out_dims[0]*out_dims[1] floats

    // The whole trained model, what `attnsweep probe` rebuilds it from (NULL when the
    // runner has none to give, or the file predates it): n_params floats, the parameter
    // arena's tensors one after the other (common/arena.h arena_gather), and their names
    // and sizes, "name:count,..." (arena_layout).
    float *params;
    char *param_layout;
} TrialResult;

void trial_result_free(TrialResult *r);

// A failed program's trial: r->reason gets "; stderr: " and the last line its program
// wrote to stderr (the last non-blank line of r->run.stderr_tail, as one line of printable
// text, at most TRIAL_STDERR_LINE bytes, the cause cut short if both do not fit), so
// "the program exited with code 1" reads "the program exited with code 1; stderr:
// ModuleNotFoundError: No module named 'torch'" wherever the reason is shown. Nothing
// when the program wrote nothing there.
enum { TRIAL_STDERR_LINE = 160 };
void trial_reason_add_stderr(TrialResult *r);
// The kind of failure or pruning a reason tells: what trials that failed the same way
// share (the report's failures.by_reason, and the sweep's budget.max_failures). The text
// before " at step" ("diverged: non-finite training loss at step 12" is "diverged:
// non-finite training loss"), with every number of a program's stderr line as N (a
// "CUDA out of memory. Tried to allocate 2.00 GiB" is one failure whatever it tried).
void trial_reason_key(const char *reason, char *out, size_t len);
// The reward's terms into r's fields of them.
void trial_set_terms(TrialResult *r, const RewardTerms *t);
// Layer l's weights as scoring reads them.
LayerWeights trial_layer_weights(const TrialResult *r, int l);
// Weights of the trial's shapes (its variant, dims and out_dims) as scoring reads them.
LayerWeights trial_weights(const TrialResult *r, const float *qkv, const float *out);
// {"trial", "status", "reason", "config": {...}, then every metric of trial/metrics.h
//  under its name (the bits per byte for charlm only), "steps", "n_params", "seconds"};
//  NaN and infinities print as null.
cJSON *trial_result_to_json(const TrialResult *r);

#endif
