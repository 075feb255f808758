// summary.h: a sweep's results file as plain C data, for attnsweep report: every trial
// of /summary (its metrics) with what /trials/NNNNNN adds (h5store_read_trial_details: its
// configuration, reason, host and times, reward_spec, a program's run, curves, invariants
// trace and the weights' shapes), the root attributes, the sweep's metric and its
// objectives. The weights themselves and the scores are not read.
//
// A file whose sweep is still running can be read: HDF5 1.10 locks a file open for
// writing, so this opens it with file locking switched off and reads what the writer
// has flushed (the coordinator flushes after every trial). A read that catches the
// writer between two flushes is retried.
#ifndef ATTN_SUMMARY_H
#define ATTN_SUMMARY_H

#include <hdf5.h>
#include <stddef.h>

#include "store/h5read.h"
#include "trial/metrics.h"
#include "trial/trial.h"

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
    int n_trials;
    TrialResult *trials;  // sorted by id; its /summary row and h5store_read_trial_details are set.
                          // What the report holds per trial: 5,568 bytes of TrialResult (4,784 of
                          // them its TrialConfig, 3,584 of those the room for 32 program
                          // parameters) and 56 bytes per curve point (docs/report.md, Memory)
} SweepSummary;

// Read the file. Returns 0, or -1 with one line "PATH: what is wrong" in err (missing
// file, not HDF5, damaged, not an attnsweep results file, another format version). The
// file is read first in a child process (h5read_survives): a damaged file that makes
// libhdf5 itself crash is "PATH: damaged (the HDF5 library failed reading it: ...)".
int summary_read(const char *path, SweepSummary *out, char *err, size_t errlen);
// The same read in this process, unguarded: for tests/test_results_fuzz.c, whose own child
// must see a sanitizer's report of the checks rather than the guard's line.
int summary_read_here(const char *path, SweepSummary *out, char *err, size_t errlen);
void summary_free(SweepSummary *s);
// The metric of that name: one of the table's, or the sweep's program metric; NULL if neither.
const Metric *summary_metric(const SweepSummary *s, const char *name);
// The rows of /summary of an open results file, in file order: id, status and the
// metrics of each trial (the rest of each TrialResult zero), and the column
// program_metric (NULL: none) as TrialResult.program_metric. Returns 0 with *trials
// (the caller frees it) and *n_trials, or -1 with the reason in rd's err. The table is
// read SUMMARY_ROWS_READ rows at a time (hyperslabs: a buffer of about 250 KB at any size).
enum { SUMMARY_ROWS_READ = 1024 };
int summary_rows(const H5Reader *rd, hid_t file, const char *program_metric, TrialResult **trials, int *n_trials);

#endif
