// metrics.h: the one table of what a trial is measured by. Each metric's name is its
// /summary column, its key in `attnsweep train --json`, its word in the text output and
// its spelling in a sweep's `metric:` and in `attnsweep report --metric`.
//
// Every decision (ASHA rungs, evolution's tournaments, the sweep metric, the leaderboard,
// the reward, trial/reward.h) reads the validation
// metrics or what is computed from them. The test metrics are measured once, when a trial
// finishes (status ok or pruned), and are only shown.
#ifndef ATTN_METRICS_H
#define ATTN_METRICS_H

#include <stddef.h>

#include "trial/trial.h"

// What a scheduler reads at one evaluation: the curve point's validation metrics and,
// where the invariants were traced at its step, the cheap pass's RankDeviation and
// Correlation (score.h: what the unfoldings' singular values give, the same numbers the
// full scores have) and the reward made of them with the validation accuracy; NaN where
// not traced. So every metric a sweep may optimise is known at every evaluation. A
// program's trial (trial/external.h) has the values of its metric line, and the sweep's
// metric there when it is a name of the program's own (metrics.h metric_program).
typedef struct {
    int step;
    double val_accuracy, val_loss, val_bits_per_byte;
    RewardTerms terms;      // the reward's terms from the invariants traced there (NaN: none traced)
    double reward;
    double program_metric;  // NaN unless a program reported the sweep's own metric
} EvalPoint;

typedef enum {
    METRIC_DECIDES,  // a sweep may optimise it and the report rank by it: reward, val_*
    METRIC_RANKS,    // the report may rank by it, no sweep optimises it: scores of the final tensors
    METRIC_SHOWN,    // test_*: shown beside its val_ twin; never ranks, selects, prunes or tests
} MetricUse;

typedef struct {
    const char *name;
    const char *label;  // heading of a report column ("val accuracy", "RankDeviation")
    const char *unit;   // "nats", or "" for fractions, bits per byte and scores
    size_t offset;      // of the double in TrialResult
    int maximize;       // its goal: 1 when higher is better
    MetricUse use;
    int charlm_only;    // bits per byte: NaN for the other tasks, and left out of --json
    int shown;          // a column of every table of trials in attnsweep report
    int integer;        // the field is a long, not a double (n_params)
    size_t at_eval;     // METRIC_DECIDES: the offset of its value in EvalPoint
} Metric;

// In /summary column order: the validation metrics, the test metrics, the scores (as
// measured, the correlation's chance, where each lies on its null in sds, the terms the
// reward charges: trial/reward.h RewardTerms), reward.
extern const Metric metrics[];
extern const int n_metrics;
enum { METRIC_COUNT = 14 };  // n_metrics, for arrays of a trial's metrics (store/summary.h)
// What a trial cost, lower is better: n_params and seconds (training wall time). motpe's
// objectives and report --metric may name them, no sweep's metric may; they are not in
// metrics[] because their /summary columns, JSON keys and copies go with the trial's
// other facts (trial.h).
extern const Metric cost_metrics[];
extern const int n_cost_metrics;

const Metric *metric_find(const char *name);  // in metrics[], then cost_metrics[]; NULL if none
double metric_value(const TrialResult *r, const Metric *m);
// Whether m is reported for the task (bits per byte only for charlm).
int metric_applies(const Metric *m, int task);
// Bits per byte of a loss in nats: charlm only, NaN for the other tasks.
double metric_bits_per_byte(int task, double loss);
// The test twin of a validation metric (test_loss for val_loss), else NULL.
const Metric *metric_test_twin(const Metric *m);

// The names of the metrics of use `most` or lower (METRIC_DECIDES: those a sweep may
// optimise; METRIC_RANKS: those the report ranks by and objectives name, the costs
// included), in table order, NULL-terminated in
// names[METRIC_NAMES]; returns how many.
enum { METRIC_NAMES = 24 };
enum { METRIC_MAX_OBJECTIVES = 4 };  // motpe's objectives: at most this many metrics  // more than there are metrics
int metric_names(MetricUse most, const char *names[METRIC_NAMES]);
// The same joined as "val_accuracy, val_loss, ..." into out.
void metric_names_text(MetricUse most, char *out, size_t len);

// A /summary column that holds one of a trial's facts rather than a metric or a
// parameter: its id and status before the parameters, the budget it ran and what it
// cost after the metrics (store/schema.h composes the file's tables from these).
typedef enum { COLUMN_INT32, COLUMN_INT64, COLUMN_FLOAT64, COLUMN_TEXT } ColumnType;
typedef struct {
    const char *name;
    ColumnType type;    // COLUMN_TEXT: the status, by its name (trial_status_names)
    const char *unit;   // "s", or "" for counts
    size_t offset;      // of the field in TrialResult
    const char *about;  // one line, for `attnsweep schema`
} TrialColumn;
enum { STATUS_COLUMN_LEN = 16 };  // bytes of the /summary status column (null-padded)
extern const TrialColumn trial_lead_columns[], trial_trail_columns[];  // trial, status | steps, n_params, seconds, group_size
extern const int n_trial_lead_columns, n_trial_trail_columns;

// A program's own metric (the metric of a sweep of the researcher's program that is none
// of the table's): named `name` (kept by the caller), read from TrialResult.program_metric,
// with the goal given; it decides as the validation metrics do.
void metric_program(Metric *m, const char *name, int maximize);
int metric_is_program(const Metric *m);
// Whether a /summary column of a trial's results (not of its parameters) has this name:
// a trial column above, or a metric of the table.
int metric_column_taken(const char *name);
// The /summary column of a program parameter: its name, or config_NAME when a result
// column has that name (as the trial parameter steps is config_steps).
void metric_param_column(const char *name, char *out, size_t len);

// Why `name` cannot be the metric decisions are made by, as a message that begins with
// the name in quotes and says what to write instead: a test metric ("test metrics never
// drive decisions") or a name of the versions before the validation split ("'accuracy' is
// now called 'val_accuracy'"). NULL for any other name, known or not (the caller checks
// it against metric_names(most)).
const char *metric_refusal(const char *name, MetricUse most, char *out, size_t len);

#endif
