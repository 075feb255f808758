// importance.h: how much each parameter matters to the report's metric, by fANOVA (Hutter,
// Hoos and Leyton-Brown 2014, "An Efficient Approach for Assessing Hyperparameter
// Importance"), computed as Optuna's default evaluator computes it
// (optuna.importance.FanovaImportanceEvaluator, Optuna 3.1) so the two can be compared:
//
//   * the finished trials (status ok) with a finite metric; the parameters that vary among
//     them (not the seed), encoded as Optuna encodes a search space without its log and
//     step transforms: a number as it is, on the bounds of its distribution (the smallest
//     and largest value a draw gives; those seen when the sweep's YAML does not load); a
//     listed parameter (`values`) and a text one-hot, a column per value, each on [0, 1];
//   * a random forest of 64 regression trees (CART, squared error, every column tried at
//     each split, thresholds halfway between neighbouring values, leaves of one row, depth
//     at most 64), each on a bootstrap sample of the trials, seeded (GSL's MT19937), as
//     scikit-learn's RandomForestRegressor grows them;
//   * per tree, the variance over the search-space box of the tree's prediction and the
//     variance of the parameter's marginal (the prediction averaged over every other
//     column, a function of the parameter's columns), both weighted by volume; the
//     parameter's importance is the mean over the trees of the ratio, and the importances
//     are normalised to sum to 1.
//
// The trees differ from scikit-learn's only in their random numbers, so importances from
// the two agree to within the spread of the forest (tests/test_report_html.sh).
#ifndef ATTN_IMPORTANCE_H
#define ATTN_IMPORTANCE_H

#include "report/report.h"
#include "report/table.h"
#include "space/space.h"
#include "store/summary.h"

enum { FANOVA_TREES = 64, FANOVA_MAX_DEPTH = 64 };

// The parameters of a sweep's trials but the seed: the trial parameters, or a program's (as
// its first trial names them, their specs made here); the importance and the page read them.
typedef struct {
    TrialConfig *first;  // the first trial's configuration (a program's parameters' names)
    int n;
    const ParamSpec **p;
    ParamSpec *program;
    char (*columns)[PROGRAM_NAME + 8];
} SweepParams;
void sweep_params(const SweepSummary *s, SweepParams *out);
void sweep_params_free(SweepParams *sp);
// The swept parameter of that name in spec (NULL: none, or no spec).
const SpaceParam *sweep_space_param(const SweepSpec *spec, const char *name);

// The importances of n_params parameters from n rows of X (n × d, row-major) and y: column
// j of X lies in [lo[j], hi[j]] and belongs to parameter param_of[j]. Writes importance[p]
// (summing to 1) and returns 0; -1 when the forest's trees are all constant (fewer than
// two distinct values of y, or no column varies).
int fanova_importance(const double *X, const double *y, int n, int d, const double *lo, const double *hi,
                      const int *param_of, int n_params, unsigned long seed, double *importance);

// The table "importance" of the report: parameter, importance, best first, over the
// finished trials of s by o's metric. spec: the sweep's space (its distributions' bounds
// and which parameters are listed), or NULL when its YAML does not load here.
Table *importance_table(const SweepSummary *s, const ReportOptions *o, const SweepSpec *spec);

#endif
