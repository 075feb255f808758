// report.h: what `attnsweep report` says about a sweep, as tables (report/table.h):
//
//   leaderboard                the top trials by the metric (finished trials)
//   verdict.tau, verdict.fit   does the reward add information? (report/verdict.h)
//   variants.by_variant        per attention variant: mean ± sd of the metrics, n
//   variants.by_configuration  per configuration (all parameters but the seed), when the
//                              sweep has repeats
//   pareto                     trials no other beats on the report's metric (the sweep's
//                              with its goal, or --metric's), Correlation and RankDeviation
//                              at once (finished trials); a motpe sweep's: its objectives
//   ablations.REGULARISER      each λ > 0 of lambda_orth, lambda_nuclear, lambda_stability
//                              against λ = 0 and against plain L2 at λ · l2_scale (equal
//                              strength by default), matched on every other parameter;
//                              the paired t-test over the seeds both arms share (2 pairs
//                              or more), else Welch's t-test over repeats; its p and
//                              Holm's over every test of the report
//   failures.by_status, failures.by_reason, failures.asha   counts, and the steps ASHA saved
//
// Every metric is read from the file (val_accuracy, rank_deviation, correlation, reward, ...);
// nothing is recomputed. Every table of trials shows the report's metric (the sweep's, with
// the YAML's goal, or --metric's) beside val_accuracy and reward, and the ablations test it. Ranking, the Pareto front and the tests read validation metrics
// (and the reward, computed from val_accuracy) only; test_accuracy is shown beside
// val_accuracy, as is the test twin of a validation metric the leaderboard ranks by.
// "Finished" is status ok: a pruned trial stopped early and a failed one has no metrics.
#ifndef ATTN_REPORT_H
#define ATTN_REPORT_H

#include <stddef.h>

#include "report/table.h"
#include "store/summary.h"

typedef struct {
    const char *metric;  // ranks the leaderboard: reward, val_accuracy, val_loss, ... (report_metric_known)
    int maximize;        // its goal
    int top;             // leaderboard rows (at most)
    double l2_scale;     // the L2 control of an arm at λ is lambda_l2 = λ · l2_scale (0 or 1: equal strength)
    int early_step;      // the evaluation step of the verdict's fit (report/verdict.h); 0: its default
} ReportOptions;

// The hypervolume that the front of a motpe sweep's objectives dominates (k 0: the sweep
// has no objectives), which the pareto table's title prints and the JSON report carries
// as "pareto_hypervolume" (scripts/analyze.py's objectives.png takes it from there).
typedef struct {
    int k;
    const char *name[METRIC_MAX_OBJECTIVES];
    double reference[METRIC_MAX_OBJECTIVES];  // the worst of each objective over the finished trials, in its units
    double hypervolume;
} ParetoVolume;

typedef struct {
    int n;
    Table **tables;  // in the order printed
    ParetoVolume volume;
} Report;

// The significance level of the ablation verdicts.
#define REPORT_ALPHA 0.05

void report_build(const SweepSummary *s, const ReportOptions *o, Report *out);
void report_free(Report *r);

// Whether name is a metric the leaderboard can rank by; allowed gets the list ("reward, ...").
int report_metric_known(const char *name, char *allowed, size_t len);

// What a Pareto front is over: k metrics and their goals. The report's default is the
// sweep's metric with its goal (val_accuracy, higher is better, for a file without one),
// correlation and rank_deviation (lower are better); a motpe sweep's is its objectives.
typedef struct {
    int k;
    const Metric *metric[METRIC_MAX_OBJECTIVES];
    int maximize[METRIC_MAX_OBJECTIVES];
} ParetoObjectives;

// The objectives of a sweep's front: its objectives when it has some, else the default.
ParetoObjectives pareto_objectives(const SweepSummary *s);

// The trials of t[0..n) that no other trial dominates on the objectives o (another is at
// least as good on every one and better on one). Writes their indices to front, best on
// the first objective first (then by index), and returns how many. Trials with a NaN among
// the objectives are left out.
int pareto_front(const SummaryRow *const *t, int n, const ParetoObjectives *o, int *front);

// The plain-words verdict of one ablation comparison: a claim only where its test,
// adjusted by Holm–Bonferroni over every test of the report, supports it (p <
// REPORT_ALPHA), e.g. "λ_orth = 0.1 raises reward (Holm p = 0.01) over λ = 0 for mha";
// otherwise "no significant difference in val_accuracy (Holm p = 0.4) or reward (Holm
// p = 0.6)", and "n too small (...)" below 2 trials per arm. reg: the regulariser's
// parameter name; against: the control in words; d[k] and p[k]: for the metric tested[k]
// (k < k_tested: the sweep's metric when it is another, val_accuracy, reward), the
// difference of the means (arm − control) and the adjusted p-value (NaN: neither arm varies).
void ablation_verdict(char *out, size_t len, const char *reg, double lambda, const char *against,
                      const char *variant, int n_arm, int n_ctl, int k_tested, const char *const *tested,
                      const double *d, const double *p);

#endif
