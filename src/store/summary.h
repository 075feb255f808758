// summary.h: a sweep's results file as plain C data, for attnsweep report: every trial
// of /summary as a compact row (its metrics, steps and seconds) with what /trials/NNNNNN
// adds that the report reads (h5store_read_trial_details: its configuration and reason,
// and a finished trial's evaluations as the verdict reads them), the root attributes, the
// sweep's metric and its objectives. What else a trial's group holds (host, times, curves,
// invariants trace, a program's run) is read again one trial at a time where it is shown
// (summary_groups_open, summary_trial); the weights and the scores are not read.
//
// A file whose sweep is still running can be read: HDF5 1.10 locks a file open for
// writing, so this opens it with file locking switched off and reads what the writer
// has flushed (the coordinator flushes after every trial). A read that catches the
// writer between two flushes is retried.
#ifndef ATTN_SUMMARY_H
#define ATTN_SUMMARY_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "store/h5read.h"
#include "trial/metrics.h"
#include "trial/trial.h"

// A finished trial's evaluation as the verdict reads it (trial_eval_point of its curve point):
// the validation metrics there and the reward's terms and reward from the invariants traced
// there (NaN where none were). 48 bytes, where the curve point and its trace are 56 and more.
typedef struct {
    int step;
    double val_accuracy, val_loss;
    double rank_deviation_excess, correlation_excess, reward;
} SummaryEval;

// One trial as the report holds it (192 bytes, and its reason, words and evaluations; a
// TrialResult is 5,568 bytes, 4,784 of them the configuration): its /summary row, its
// reason, its configuration as the 8-byte words in which it differs from the sweep's base
// configuration (SweepSummary.base; 10 bytes a word with its place: a random sweep's
// trials differ in a few), and for a finished trial its evaluations (docs/report.md, Memory).
typedef struct {
    int id;
    TrialStatus status;
    int steps;
    int seed, task;         // of its configuration, which the tables read often
    int n_words;            // words of its configuration that differ from the base
    int n_evals;
    long n_params;
    double seconds;
    double metric[METRIC_COUNT];  // metrics[] in their order
    double program_metric;  // the sweep's program metric (0 in a file without one)
    char *reason;           // why it failed or was pruned; NULL when it has none
    uint64_t *words;        // n_words words, then their places in TrialConfig (uint16_t each)
    SummaryEval *evals;     // a finished trial's evaluations, one per curve point; else NULL
} SummaryRow;

typedef struct {
    char *sweep;          // root attribute "sweep"
    char *yaml;           // root attribute "yaml": the search space (or the trained configuration)
    char metric[32];      // the sweep's metric: root attribute metric (schema.h)
    int maximize;         // its goal: root attribute goal
    Metric program_metric;  // a program's sweep whose metric (or motpe objective) is its own
                            // (its name in metric or program_objective; read from its /summary
                            // column); name NULL otherwise
    char program_objective[32];
    int n_objectives;     // motpe's objectives (2..METRIC_MAX_OBJECTIVES): root attribute objectives; else 0
    const Metric *objective[METRIC_MAX_OBJECTIVES];
    int objective_maximize[METRIC_MAX_OBJECTIVES];
    int until_stopped;    // a sampled sweep without trials (W&B's without run_cap): root attribute until_stopped
    int being_written;    // another process held the file open for writing
    TrialConfig base;     // the configuration the rows' words are written against: the first read
    int n_trials;
    SummaryRow *trials;   // sorted by id
} SweepSummary;

// What a read takes.
typedef enum {
    SUMMARY_ROWS,    // the root attributes and /summary only, for a caller that reads one trial's
                     // group itself (summary_trial): every row's reason, words and evaluations
                     // are empty, its seed and task 0, and base is zero
    SUMMARY_REPORT,  // and what each trial's group adds to its row (h5store_read_trial_details:
                     // TRIAL_DETAILS_ROW)
    SUMMARY_PAGE,    // the same, the guarding child reading every group whole, for a caller that
                     // reads them again (summary_groups_read: the HTML page)
} SummaryRead;
// Read the file. Returns 0, or -1 with one line "PATH: what is wrong" in err (missing
// file, not HDF5, damaged, not an attnsweep results file, another format version). The
// file is read first in a child process (h5read_survives): a damaged file that makes
// libhdf5 itself crash is "PATH: damaged (the HDF5 library failed reading it: ...)".
int summary_read(const char *path, SummaryRead what, SweepSummary *out, char *err, size_t errlen);
// The same read in this process, unguarded (SUMMARY_PAGE: every group read whole): for
// tests/test_results_fuzz.c, whose own child must see a sanitizer's report of the checks
// rather than the guard's line.
int summary_read_here(const char *path, SummaryRead what, SweepSummary *out, char *err, size_t errlen);
void summary_free(SweepSummary *s);
// The metric of that name: one of the table's, or the sweep's program metric; NULL if neither.
const Metric *summary_metric(const SweepSummary *s, const char *name);
// The rows of /summary of an open results file, in file order: id, status, the metrics,
// steps, n_params and seconds of each trial (the rest of each row empty), and the column
// program_metric (NULL: none) as SummaryRow.program_metric. Returns 0 with *rows (the
// caller frees it) and *n_rows, or -1 with the reason in rd's err. The table is read
// SUMMARY_ROWS_READ rows at a time (hyperslabs: a buffer of about 250 KB at any size).
enum { SUMMARY_ROWS_READ = 1024 };
int summary_rows(const H5Reader *rd, hid_t file, const char *program_metric, SummaryRow **rows, int *n_rows);

// ---- rows (summary_row.c)

// The /summary columns of t into row (what summary_rows reads), and back.
void summary_row_set(SummaryRow *row, const TrialResult *t);
void summary_row_values(const SummaryRow *row, TrialResult *t);
// What row takes of t's group: its configuration (as words against s->base), its seed and
// task, its reason, and when it finished ok its evaluations (trial_eval_point of each curve
// point under t's reward_spec).
void summary_row_details(const SweepSummary *s, SummaryRow *row, const TrialResult *t);
// A trial made in memory as the last row of s (tests): summary_row_set and _details; the
// first sets s->base.
void summary_append(SweepSummary *s, const TrialResult *t);
void summary_row_free(SummaryRow *row);
// A metric of a row: one of metrics[], a cost (n_params, seconds) or the program's own.
double summary_value(const SummaryRow *row, const Metric *m);
// A metric a sweep may optimise (METRIC_DECIDES) at one of row's evaluations, as
// eval_point_value reads it from trial_eval_point's point; NaN for any other.
double summary_eval_value(const SummaryRow *row, const SummaryEval *e, const Metric *m);

// Rows' configurations, materialised one at a time: a view holds one TrialConfig, and
// showing it another row's changes only the words in which the two rows differ from the
// base, so a pass over every row costs its words, not a configuration each.
typedef struct {
    const SweepSummary *s;
    const SummaryRow *row;  // whose configuration config is (NULL: the base)
    TrialConfig config;
} ConfigView;
// A view of s (showing its base at first); free() frees it.
ConfigView *config_view_new(const SweepSummary *s);
// row's configuration, valid until v shows another.
const TrialConfig *config_view(ConfigView *v, const SummaryRow *row);
// row's configuration in an allocation of its own (free() frees it).
TrialConfig *summary_config(const SweepSummary *s, const SummaryRow *row);

// ---- a trial's group read again (summary.c)

// The trial of row as the file has it but its weights: row's /summary values and what
// h5store_read_trial_details reads (configuration, reason, host, times, reward_spec, a
// program's run, curves, invariants trace). summary_trial reads one (guarded as
// summary_read, for rerun and the reward's spec); summary_groups_* read one after another
// from one opening (the HTML page, after summary_read's SUMMARY_PAGE has read every group
// whole once in its child). Each returns 0, or -1 with one line "PATH: ..." in err;
// trial_result_free frees out.
int summary_trial(const char *path, const SummaryRow *row, TrialResult *out, char *err, size_t errlen);
typedef struct {
    H5Reader rd;
    hid_t file;
} SummaryGroups;
int summary_groups_open(SummaryGroups *g, const char *path, char *err, size_t errlen);
// The page's read (TRIAL_DETAILS_PAGE), its configuration and reason from the row of s.
int summary_groups_read(SummaryGroups *g, const SweepSummary *s, const SummaryRow *row, TrialResult *out);
void summary_groups_close(SummaryGroups *g);

#endif
