// verdict.h: does the reward help? The report's verdict on one sweep, two tables after
// the leaderboard (report/table.h):
//
//   verdict.tau  per group (the whole sweep, "all", and each attention variant when there
//                are several), per evaluation step and per predictor — the report's
//                validation metric at that step, RankDeviation, Correlation and the reward
//                there (trial_eval_point: the invariants traced at the evaluation, the
//                reward under the trial's reward_spec) — Kendall's τ-b against the final
//                value of the metric over the finished trials, oriented so that τ > 0 means
//                ranking by the predictor the way the reward reads it (higher metric and
//                reward, lower RankDeviation and Correlation) agrees with ranking by the
//                final metric; its percentile bootstrap interval over configurations; the
//                top-k regret of choosing by it; and τ against the final test twin, shown
//                beside and never used.
//   verdict.fit  per group, a least-squares fit of the final metric (negated when lower
//                is better) on the metric, RankDeviation and Correlation at one early
//                evaluation: the coefficients with bootstrap intervals, leave-one-
//                configuration-out R² of the metric alone, the invariant terms alone and
//                all three, β = −c/b and γ = −d/b (the weights with which val_accuracy −
//                β·RankDeviation − γ·Correlation ranks as the fit does) and the answer in
//                words: "the invariant terms add nothing this sweep can detect" when 0 lies
//                inside the intervals of both invariant coefficients.
//
// The metric is the report's when it is a validation metric of the task (val_accuracy,
// val_loss, val_bits_per_byte), else val_accuracy (a sweep ranked by the reward asks whether
// the reward predicts accuracy). Every resample draws VERDICT_RESAMPLES times the group's
// configurations with replacement (GSL's mt19937 seeded with VERDICT_SEED, afresh for
// each group, gsl_rng_uniform_int in the order resample by resample, configuration by
// configuration; a configuration brings all its repeats), so the numbers are reproducible
// and a configuration's repeats are never split. A group with fewer than
// VERDICT_MIN_CONFIGS configurations, or a fit with fewer than VERDICT_MIN_FIT trials, has
// one row saying so in its reason (verdict.tau) or answer (verdict.fit) column.
#ifndef ATTN_VERDICT_H
#define ATTN_VERDICT_H

#include <stddef.h>

#include "report/report.h"

#define VERDICT_RESAMPLES 1000
#define VERDICT_SEED 27
#define VERDICT_LEVEL 0.95     // of every interval: the 2.5 % and 97.5 % percentiles
#define VERDICT_TOP_K 3        // regret of choosing the top 3 by a predictor
#define VERDICT_MIN_CONFIGS 5  // configurations with a finished trial, for τ and the fit
#define VERDICT_MIN_FIT 8      // trials with every regressor measured, for the fit

typedef struct {
    const SummaryRow *t;   // a finished trial
    int config;            // its configuration (every parameter but the seed), numbered 0.. in table order
    int variant;           // its variant, an index into VerdictInput.variants; -1: none
} VerdictTrial;

typedef struct {
    const SweepSummary *s;
    const ReportOptions *o;
    int n;
    const VerdictTrial *trials;  // one per seed of each configuration, by configuration
    int n_variants;
    const char *const *variants;
} VerdictInput;

// The verdict's two tables.
void verdict_tables(const VerdictInput *in, Table **tau, Table **fit);

// `attnsweep report --suggest-reward`: the whole sweep's β and γ of a report's verdict.fit
// as the `reward:` line of the next sweep's YAML, after a comment line with their intervals
// and the answer; the other keys (tensor, modes, ideal_ranks) are those of spec, the
// sweep's. An estimate below 0 is written as 0 (the reward's weights are ≥ 0) and said so.
// Returns 0, or -1 with why (the row's answer) when there is no estimate.
int verdict_suggest_reward(const Report *r, const RewardSpec *spec, char *out, size_t len, char *why, size_t why_len);

#endif
