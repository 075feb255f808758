// verdict.c: does the reward help? Kendall's τ of early predictors against the final
// metric and the fit of β and γ, with bootstrap intervals over configurations (verdict.h).
#include "report/verdict.h"

#include <gsl/gsl_multifit.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "report/stats.h"
#include "trial/metrics.h"
#include "trial/runner.h"

// What ranks the trials at an evaluation, in the order of the rows: the verdict's metric
// there, then the reward's terms and the reward.
typedef enum { P_METRIC, P_RANK_DEVIATION, P_CORRELATION, P_REWARD, P_COUNT } Predictor;
static const char *const invariant_names[P_COUNT] = {NULL, "rank_deviation", "correlation", "reward"};

// The fit's regressors after the intercept: the metric, RankDeviation and Correlation at
// the early evaluation.
enum { R_EARLY, R_RANK_DEVIATION, R_CORRELATION, R_COUNT };
static const char *const regressor_labels[R_COUNT] = {NULL, "RankDeviation", "Correlation"};

typedef struct {
    const VerdictInput *in;
    const Metric *metric, *twin;  // the verdict's metric and its test twin (NULL: none)
    int sign;                     // +1 when the metric is better higher, −1 when lower
    int traced;                   // some trial has invariants at some evaluation
} Verdict;

// A group of trials: the whole sweep or one variant.
typedef struct {
    const char *name;
    int n;
    int *member;     // indices into the input's trials, by configuration
    int *config;     // per member: its configuration within the group, 0.. in order
    int n_configs;
    int *first;      // configuration c's members are first[c] .. first[c + 1]
    int n_steps;
    int *steps;      // the evaluation steps at which VERDICT_MIN_CONFIGS configurations have a trial
} Group;

// ---------------------------------------------------------------- values

// Trial t's predictor p at its evaluation e, oriented: times −1 where lower reads better,
// so that higher is better for every one.
static double predictor(const Verdict *v, const SummaryRow *t, const SummaryEval *e, Predictor p) {
    switch (p) {
    case P_METRIC: return v->sign * summary_eval_value(t, e, v->metric);
    case P_RANK_DEVIATION: return -e->rank_deviation_excess;
    case P_CORRELATION: return -e->correlation_excess;
    default: return e->reward;
    }
}

// Trial i's predictor p at evaluation step (NaN when it has none there), oriented.
static double predictor_at(const Verdict *v, int i, int step, Predictor p) {
    const SummaryRow *t = v->in->trials[i].t;
    for (int k = 0; k < t->n_evals; k++)
        if (t->evals[k].step == step) return predictor(v, t, &t->evals[k], p);
    return NAN;
}

// The final value of m (the metric or its test twin) of trial i, oriented as the metric.
static double final_value(const Verdict *v, int i, const Metric *m) {
    return m ? v->sign * summary_value(v->in->trials[i].t, m) : NAN;
}

static const char *predictor_name(const Verdict *v, Predictor p) { return p == P_METRIC ? v->metric->name : invariant_names[p]; }

// ---------------------------------------------------------------- groups and resamples

static int by_int(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

// The group of the input's trials of variant k (-1: all of them).
static void group_make(const Verdict *v, int k, Group *g) {
    const VerdictInput *in = v->in;
    memset(g, 0, sizeof *g);
    g->name = k < 0 ? "all" : in->variants[k];
    g->member = xcalloc((size_t)(in->n ? in->n : 1), sizeof *g->member);
    g->config = xcalloc((size_t)(in->n ? in->n : 1), sizeof *g->config);
    int last = -1, n_evals = 0;
    for (int i = 0; i < in->n; i++) {
        if (k >= 0 && in->trials[i].variant != k) continue;
        if (in->trials[i].config != last) g->n_configs++, last = in->trials[i].config;
        g->config[g->n] = g->n_configs - 1;
        g->member[g->n++] = i;
        n_evals += in->trials[i].t->n_evals;
    }
    // The steps: every one some member evaluated at, kept where enough configurations did.
    int *all = xcalloc((size_t)(n_evals ? n_evals : 1), sizeof *all), n_all = 0;
    for (int m = 0; m < g->n; m++) {
        const SummaryRow *t = in->trials[g->member[m]].t;
        for (int c = 0; c < t->n_evals; c++) all[n_all++] = t->evals[c].step;
    }
    qsort(all, (size_t)n_all, sizeof *all, by_int);
    g->steps = xcalloc((size_t)(n_all ? n_all : 1), sizeof *g->steps);
    for (int a = 0; a < n_all; a++) {
        if (a > 0 && all[a] == all[a - 1]) continue;
        int configs = 0, seen = -1;
        for (int m = 0; m < g->n; m++) {
            if (g->config[m] == seen || isnan(predictor_at(v, g->member[m], all[a], P_METRIC))) continue;
            configs++, seen = g->config[m];
        }
        if (configs >= VERDICT_MIN_CONFIGS) g->steps[g->n_steps++] = all[a];
    }
    free(all);
}

// The VERDICT_RESAMPLES draws of the group's configurations with replacement (verdict.h),
// each bringing all its members, one after another: each pass over them replays the RNG
// from its seed and holds one resample, so the verdict holds O(n) per group rather than
// the VERDICT_RESAMPLES × n members of every resample (4 KB a trial).
typedef struct {
    const Group *g;
    gsl_rng *rng;
    int *drawn;  // the current resample: the configurations drawn, g->n_configs, in the order drawn
} Resampler;

static void resampler_start(Resampler *r, const Group *g) {
    r->g = g;
    r->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r->rng, VERDICT_SEED);
    r->drawn = xmalloc((size_t)(g->n_configs ? g->n_configs : 1) * sizeof *r->drawn);
}

// The next resample's configurations (valid until the next call).
static const int *resampler_next(Resampler *r) {
    for (int k = 0; k < r->g->n_configs; k++)
        r->drawn[k] = (int)gsl_rng_uniform_int(r->rng, (unsigned long)r->g->n_configs);
    return r->drawn;
}

static void resampler_end(Resampler *r) {
    gsl_rng_free(r->rng);
    free(r->drawn);
}

// Each member's multiplicity in the resample of the configurations drawn: its
// configuration's draws (count: scratch, g->n_configs).
static void resample_weights(const Group *g, const int *drawn, int *count, int *w) {
    memset(count, 0, (size_t)g->n_configs * sizeof *count);
    for (int k = 0; k < g->n_configs; k++) count[drawn[k]]++;
    for (int m = 0; m < g->n; m++) w[m] = count[g->config[m]];
}

// The configurations' members: configuration c's are g->first[c] .. g->first[c + 1].
static void group_resample(Group *g) {
    g->first = xcalloc((size_t)g->n_configs + 1, sizeof *g->first);
    for (int m = 0; m < g->n; m++) g->first[g->config[m] + 1] = m + 1;
}

static void group_free(Group *g) {
    free(g->member);
    free(g->config);
    free(g->first);
    free(g->steps);
}

// ---------------------------------------------------------------- estimates

typedef struct {
    double value, lo, hi;  // the estimate and its bootstrap interval (NaN: none)
} Estimate;

// The percentile interval of the VERDICT_RESAMPLES values r (reordered): none unless at
// least half of them are finite (a τ of a resample whose values all tie is not).
static void interval(double *r, Estimate *e) {
    int k = 0;
    for (int b = 0; b < VERDICT_RESAMPLES; b++)
        if (isfinite(r[b])) r[k++] = r[b];
    e->lo = e->hi = NAN;
    if (2 * k < VERDICT_RESAMPLES) return;
    gsl_sort(r, 1, (size_t)k);
    e->lo = gsl_stats_quantile_from_sorted_data(r, 1, (size_t)k, (1 - VERDICT_LEVEL) / 2);
    e->hi = gsl_stats_quantile_from_sorted_data(r, 1, (size_t)k, (1 + VERDICT_LEVEL) / 2);
}

// The best final value y of all members with a finite x, less the best among the
// VERDICT_TOP_K that x ranks first (ties by trial id): what choosing by x costs.
static double regret(const Verdict *v, const Group *g, const double *x, const double *y) {
    int top[VERDICT_TOP_K], n_top = 0;  // best first
    double best = -HUGE_VAL;
    for (int m = 0; m < g->n; m++) {
        if (!isfinite(x[m]) || !isfinite(y[m])) continue;
        best = fmax(best, y[m]);
        const int id = v->in->trials[g->member[m]].t->id;
        int pos = 0;
        while (pos < n_top && (x[top[pos]] > x[m] || (x[top[pos]] == x[m] && v->in->trials[g->member[top[pos]]].t->id < id)))
            pos++;
        if (pos == VERDICT_TOP_K) continue;
        if (n_top < VERDICT_TOP_K) n_top++;
        for (int k = n_top - 1; k > pos; k--) top[k] = top[k - 1];
        top[pos] = m;
    }
    double chosen = -HUGE_VAL;
    for (int k = 0; k < n_top; k++) chosen = fmax(chosen, y[top[k]]);
    return n_top ? best - chosen : NAN;
}

// ---------------------------------------------------------------- verdict.tau

// The columns that say which rows: the group, the predictor (with_predictor), the step, and
// the trials and configurations counted.
static void group_columns(Table *t, int with_predictor) {
    table_column(t, "attention", "variant", COL_TEXT, NULL);
    if (with_predictor) table_column(t, "predictor", "predictor", COL_TEXT, NULL);
    table_column(t, "step", "step", COL_INT, NULL);
    table_column(t, "n", "n", COL_INT, NULL);
    table_column(t, "configurations", "configs", COL_INT, NULL);
}

static Table *tau_table(const Verdict *v) {
    char title[256];
    snprintf(title, sizeof title,
             "Verdict: does the reward add information? Kendall τ against the final %s, at each evaluation",
             v->metric->name);
    Table *t = table_new("verdict.tau", title);
    table_note(t,
               "τ-b over the finished trials of each predictor at the evaluation against the final %s; oriented: "
               "τ > 0 when ranking by the predictor as the reward reads it (higher %s and reward, lower RankDeviation "
               "and Correlation) agrees with ranking by the final %s (%s is better)",
               v->metric->name, v->metric->name, v->metric->name, v->sign > 0 ? "higher" : "lower");
    table_note(t, "RankDeviation and Correlation here are the terms the reward charges: each beyond its chance level "
                  "(the rotation null's mean; Grassmann's layers pay none)");
    table_note(t,
               "τ lo, τ hi: %g %% percentile bootstrap interval over configurations (%d resamples, GSL mt19937 seed %d; "
               "a configuration's repeats are drawn together)",
               100 * VERDICT_LEVEL, VERDICT_RESAMPLES, VERDICT_SEED);
    table_note(t, "regret@%d: the best final %s of the group less the best among the %d trials the predictor ranks "
                  "first",
               VERDICT_TOP_K, v->metric->name, VERDICT_TOP_K);
    if (v->twin)
        table_note(t, "τ test: the same against the final %s, shown only: nothing is decided or fitted on it",
                   v->twin->name);
    table_note(t, "a group (all trials, each variant) needs %d configurations with a finished trial evaluated at the "
                  "step",
               VERDICT_MIN_CONFIGS);
    group_columns(t, 1);
    table_column(t, "tau", "τ", COL_REAL, "%+.3f");
    table_column(t, "tau_lo", "τ lo", COL_REAL, "%+.3f");
    table_column(t, "tau_hi", "τ hi", COL_REAL, "%+.3f");
    char head[32];
    snprintf(head, sizeof head, "regret@%d", VERDICT_TOP_K);
    table_column(t, "regret", head, COL_REAL, "%.4f");
    table_column(t, "tau_test", "τ test", COL_REAL, "%+.3f");
    table_column(t, "reason", "reason", COL_TEXT, NULL);
    return t;
}

// A row that says why a group or a predictor has no τ.
static void reason_row(Table *t, const Group *g, const char *predictor, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reason_row(Table *t, const Group *g, const char *predictor, const char *fmt, ...) {
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    table_row(t);
    table_text(t, "%s", g->name);
    if (predictor)
        table_text(t, "%s", predictor);
    else
        table_empty(t);
    table_empty(t);
    table_number(t, g->n);
    table_number(t, g->n_configs);
    for (int k = 0; k < 5; k++) table_empty(t);
    table_text(t, "%s", why);
}

static void tau_rows(const Verdict *v, const Group *g, Table *t) {
    if (g->n_configs < VERDICT_MIN_CONFIGS) {
        reason_row(t, g, NULL, "%d configurations with a finished trial, fewer than the %d τ needs", g->n_configs,
                   VERDICT_MIN_CONFIGS);
        return;
    }
    if (!g->n_steps) {
        reason_row(t, g, v->metric->name, "no evaluation step with %s measured in %d configurations", v->metric->name,
                   VERDICT_MIN_CONFIGS);
        return;
    }
    const size_t n = (size_t)g->n + 1;
    double *x = xmalloc(n * sizeof *x), *y = xmalloc(n * sizeof *y), *yt = xmalloc(n * sizeof *yt);
    double *r = xmalloc(VERDICT_RESAMPLES * sizeof *r);
    int *count = xmalloc(((size_t)g->n_configs + 1) * sizeof *count), *w = xmalloc(n * sizeof *w);
    for (int m = 0; m < g->n; m++) y[m] = final_value(v, g->member[m], v->metric), yt[m] = final_value(v, g->member[m], v->twin);
    for (int p = 0; p < P_COUNT; p++) {
        if (p != P_METRIC && !v->traced) continue;
        int rows = 0;
        for (int s = 0; s < g->n_steps; s++) {
            for (int m = 0; m < g->n; m++) x[m] = predictor_at(v, g->member[m], g->steps[s], (Predictor)p);
            int configs = 0, seen = -1;
            KendallSample ks;
            kendall_prepare(&ks, x, y, g->n);
            Estimate e = {kendall_tau_b_weighted(&ks, NULL), NAN, NAN};
            for (int m = 0; m < g->n; m++)
                if (isfinite(x[m]) && isfinite(y[m]) && g->config[m] != seen) configs++, seen = g->config[m];
            if (configs >= VERDICT_MIN_CONFIGS) {
                Resampler rs;
                resampler_start(&rs, g);
                for (int b = 0; b < VERDICT_RESAMPLES; b++) {
                    resample_weights(g, resampler_next(&rs), count, w);
                    r[b] = kendall_tau_b_weighted(&ks, w);
                }
                resampler_end(&rs);
                interval(r, &e);
                table_row(t);
                table_text(t, "%s", g->name);
                table_text(t, "%s", predictor_name(v, (Predictor)p));
                table_number(t, g->steps[s]);
                table_number(t, ks.n);
                table_number(t, configs);
                table_number(t, e.value);
                table_number(t, e.lo);
                table_number(t, e.hi);
                table_number(t, regret(v, g, x, y));
                table_number(t, kendall_tau_b(x, yt, g->n));
                table_empty(t);
                rows++;
            }
            kendall_free(&ks);
        }
        if (!rows && p != P_METRIC)
            reason_row(t, g, predictor_name(v, (Predictor)p), "not traced at an evaluation in %d configurations",
                       VERDICT_MIN_CONFIGS);
    }
    free(x), free(y), free(yt), free(r), free(count), free(w);
}

// ---------------------------------------------------------------- verdict.fit

// Whether col holds two different values among rows[0..m).
static int varies(const double *col, const int *rows, int m) {
    for (int i = 1; i < m; i++)
        if (col[rows[i]] != col[rows[0]]) return 1;
    return 0;
}

// Least squares of y on an intercept and the regressors col[j] with use[j], over the
// members rows[0..m) (a resample's may repeat): coef[0] the intercept, coef[1 + j]
// regressor j's (NaN where unused). Returns -1 (coef all NaN) unless the rows hold more
// distinct members than coefficients and every regressor varies among them: no fit rests
// on how a solver picks among the solutions of a singular system.
static int least_squares(double *const col[R_COUNT], const int use[R_COUNT], const double *y, const int *rows, int m,
                         double coef[1 + R_COUNT]) {
    int p = 1, distinct = 0, fit = 1;
    for (int j = 0; j < R_COUNT; j++) p += use[j], fit &= !use[j] || varies(col[j], rows, m);
    for (int j = 0; j <= R_COUNT; j++) coef[j] = NAN;
    for (int i = 0; i < m && distinct <= p; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++) seen = rows[k] == rows[i];
        distinct += !seen;
    }
    if (!fit || distinct <= p) return -1;
    gsl_matrix *X = gsl_matrix_alloc((size_t)m, (size_t)p), *cov = gsl_matrix_alloc((size_t)p, (size_t)p);
    gsl_vector *Y = gsl_vector_alloc((size_t)m), *c = gsl_vector_alloc((size_t)p);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc((size_t)m, (size_t)p);
    for (int i = 0; i < m; i++) {
        gsl_matrix_set(X, (size_t)i, 0, 1.0);
        for (int j = 0, k = 1; j < R_COUNT; j++)
            if (use[j]) gsl_matrix_set(X, (size_t)i, (size_t)k++, col[j][rows[i]]);
        gsl_vector_set(Y, (size_t)i, y[rows[i]]);
    }
    double chisq;
    gsl_multifit_linear(X, Y, c, cov, &chisq, w);
    coef[0] = gsl_vector_get(c, 0);
    for (int j = 0, k = 1; j < R_COUNT; j++)
        if (use[j]) coef[1 + j] = gsl_vector_get(c, (size_t)k++);
    gsl_multifit_linear_free(w);
    gsl_vector_free(c), gsl_vector_free(Y);
    gsl_matrix_free(cov), gsl_matrix_free(X);
    return 0;
}

// Leave-one-configuration-out R² of the model use over rows[0..m): 1 − Σ (y − ŷ₋c)² /
// Σ (y − ȳ)², ŷ₋c fitted without the row's configuration. NaN when a model has no
// regressor, y does not vary or a fold has too few rows.
static double cv_r2(double *const col[R_COUNT], const int use[R_COUNT], const double *y, const int *config,
                    const int *rows, int m) {
    if (!use[0] && !use[1] && !use[2]) return NAN;
    int *train = xmalloc((size_t)m * sizeof *train);
    double press = 0, mean = 0, ss = 0, coef[1 + R_COUNT];
    for (int i = 0; i < m; i++) mean += y[rows[i]] / m;
    for (int i = 0; i < m; i++) ss += (y[rows[i]] - mean) * (y[rows[i]] - mean);
    for (int i = 0; i < m && isfinite(press); i++) {
        const int c = config[rows[i]];
        if (i > 0 && config[rows[i - 1]] == c) continue;  // rows are by configuration: each fold once
        int n_train = 0;
        for (int k = 0; k < m; k++)
            if (config[rows[k]] != c) train[n_train++] = rows[k];
        if (least_squares(col, use, y, train, n_train, coef) != 0) press = NAN;
        for (int k = i; k < m && config[rows[k]] == c && isfinite(press); k++) {
            double fitted = coef[0];
            for (int j = 0; j < R_COUNT; j++)
                if (use[j]) fitted += coef[1 + j] * col[j][rows[k]];
            press += (y[rows[k]] - fitted) * (y[rows[k]] - fitted);
        }
    }
    free(train);
    return ss > 0 ? 1 - press / ss : NAN;
}

// The early step of the group's fit: --early-step's, else the first step every member
// has, else the one most have (the earliest of those); -1 when none.
static int early_step(const Verdict *v, const Group *g) {
    if (v->in->o->early_step > 0) return v->in->o->early_step;
    int best = -1, most = 0;
    for (int s = 0; s < g->n_steps; s++) {
        int have = 0;
        for (int m = 0; m < g->n; m++) have += !isnan(predictor_at(v, g->member[m], g->steps[s], P_METRIC));
        if (have == g->n) return g->steps[s];
        if (have > most) most = have, best = g->steps[s];
    }
    return best;
}

static Table *fit_table(const Verdict *v) {
    char title[256];
    snprintf(title, sizeof title,
             "Verdict: β and γ estimated — the final %s fitted on %s, RankDeviation and Correlation at an early "
             "evaluation",
             v->metric->name, v->metric->name);
    Table *t = table_new("verdict.fit", title);
    table_note(t,
               "least squares over the finished trials: final %s = a + b·%s + c·RankDeviation + d·Correlation, the "
               "regressors at the step (by default the first evaluation every trial of the group has; attnsweep report "
               "--early-step S)%s",
               v->metric->name, v->metric->name, v->sign > 0 ? "" : "; both values of the metric negated (higher is better)");
    table_note(t,
               "lo, hi: %g %% percentile bootstrap intervals over configurations (the resamples of verdict.tau); a "
               "regressor that does not vary is left out (empty)",
               100 * VERDICT_LEVEL);
    table_note(t, "R² cv: leave-one-configuration-out, 1 − Σ(y − ŷ)²/Σ(y − ȳ)², of the early %s alone, the invariant "
                  "terms alone and all three",
               v->metric->name);
    table_note(t,
               "RankDeviation and Correlation are beyond chance, as the reward charges them; β = −c/b, γ = −d/b: the "
               "weights with which val_accuracy − β·RankDeviation − γ·Correlation ranks as the "
               "fit does; given for val_accuracy where b's interval lies above 0 (`attnsweep report --suggest-reward` "
               "writes them as a reward: line)");
    table_note(t, "a fit needs %d trials of %d configurations with all three measured at the step", VERDICT_MIN_FIT,
               VERDICT_MIN_CONFIGS);
    group_columns(t, 0);
    table_column(t, "r2_cv_early", "R² cv early", COL_REAL, "%.3f");
    table_column(t, "r2_cv_invariants", "R² cv inv", COL_REAL, "%.3f");
    table_column(t, "r2_cv_both", "R² cv both", COL_REAL, "%.3f");
    static const char *const keys[R_COUNT] = {"b_early", "c_rank_deviation", "d_correlation"};
    static const char *const heads[R_COUNT] = {"b", "c", "d"};
    for (int j = 0; j < R_COUNT; j++) {
        char key[64];
        table_column(t, keys[j], heads[j], COL_REAL, "%+.4g");
        snprintf(key, sizeof key, "%s_lo", keys[j]);
        table_column(t, key, "lo", COL_REAL, "%+.4g");
        snprintf(key, sizeof key, "%s_hi", keys[j]);
        table_column(t, key, "hi", COL_REAL, "%+.4g");
    }
    table_column(t, "beta", "β", COL_REAL, "%.4g");
    table_column(t, "beta_lo", "lo", COL_REAL, "%.4g");
    table_column(t, "beta_hi", "hi", COL_REAL, "%.4g");
    table_column(t, "gamma", "γ", COL_REAL, "%.4g");
    table_column(t, "gamma_lo", "lo", COL_REAL, "%.4g");
    table_column(t, "gamma_hi", "hi", COL_REAL, "%.4g");
    table_column(t, "answer", "answer", COL_TEXT, NULL);
    return t;
}

// "RankDeviation adds information (c −0.12, interval [−0.2, −0.05])" for each invariant
// term whose interval leaves out 0, else that they add nothing; then the R² cv.
static void fit_answer(char *out, size_t len, const Estimate *e, const double r2[3], const char *metric) {
    size_t n = 0;
    out[0] = 0;
    for (int j = R_RANK_DEVIATION; j < R_COUNT; j++)
        if (e[j].lo > 0 || e[j].hi < 0)
            n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s adds information (%c %+.3g, interval [%+.3g, %+.3g])",
                                  n ? "; " : "", regressor_labels[j], "bcd"[j], e[j].value, e[j].lo, e[j].hi);
    if (!n) n += (size_t)snprintf(out, len, "the invariant terms add nothing this sweep can detect");
    if (n < len)
        snprintf(out + n, len - n, " (R² cv: early %s alone %.3f, with the invariant terms %.3f)", metric, r2[0], r2[2]);
}

static void fit_row(const Verdict *v, const Group *g, Table *t) {
    const int step = early_step(v, g);
    const size_t n = (size_t)g->n + 1;
    double *col[R_COUNT], *y = xmalloc(n * sizeof *y);
    for (int j = 0; j < R_COUNT; j++) col[j] = xmalloc(n * sizeof *col[j]);
    int *rows = xmalloc(n * sizeof *rows), m = 0, configs = 0;
    for (int k = 0; k < g->n; k++) {
        const int i = g->member[k];
        col[R_EARLY][k] = predictor_at(v, i, step, P_METRIC);
        col[R_RANK_DEVIATION][k] = -predictor_at(v, i, step, P_RANK_DEVIATION);  // as the reward has them
        col[R_CORRELATION][k] = -predictor_at(v, i, step, P_CORRELATION);
        y[k] = final_value(v, i, v->metric);
        if (!isfinite(y[k]) || !isfinite(col[0][k]) || !isfinite(col[1][k]) || !isfinite(col[2][k])) continue;
        configs += !m || g->config[rows[m - 1]] != g->config[k];
        rows[m++] = k;
    }
    char answer[512] = "";
    Estimate e[R_COUNT + 2];  // b, c, d, β, γ
    for (int j = 0; j < R_COUNT + 2; j++) e[j] = (Estimate){NAN, NAN, NAN};
    double r2[3] = {NAN, NAN, NAN};
    if (step < 0 || g->n_configs < VERDICT_MIN_CONFIGS)
        snprintf(answer, sizeof answer, "%d configurations with a finished trial, fewer than the %d the fit needs",
                 g->n_configs, VERDICT_MIN_CONFIGS);
    else if (!v->traced)
        snprintf(answer, sizeof answer, "no invariants traced (the trials were not scored): nothing to fit");
    else if (m < VERDICT_MIN_FIT || configs < VERDICT_MIN_CONFIGS)
        snprintf(answer, sizeof answer,
                 "%d trials of %d configurations with %s, RankDeviation and Correlation at step %d: the fit needs %d of "
                 "%d",
                 m, configs, v->metric->name, step, VERDICT_MIN_FIT, VERDICT_MIN_CONFIGS);
    if (!answer[0]) {
        const int use[R_COUNT] = {varies(col[0], rows, m), varies(col[1], rows, m), varies(col[2], rows, m)};
        const int early_only[R_COUNT] = {use[0], 0, 0}, invariants_only[R_COUNT] = {0, use[1], use[2]};
        r2[0] = cv_r2(col, early_only, y, g->config, rows, m);
        r2[1] = cv_r2(col, invariants_only, y, g->config, rows, m);
        r2[2] = cv_r2(col, use, y, g->config, rows, m);
        double coef[1 + R_COUNT], *r[R_COUNT + 2];
        least_squares(col, use, y, rows, m, coef);
        for (int j = 0; j < R_COUNT; j++) e[j].value = coef[1 + j];
        const int ratios = v->metric == metric_find("val_accuracy");
        e[R_COUNT].value = coef[1] > 0 ? -coef[2] / coef[1] : NAN;
        e[R_COUNT + 1].value = coef[1] > 0 ? -coef[3] / coef[1] : NAN;
        for (int j = 0; j < R_COUNT + 2; j++) r[j] = xmalloc(VERDICT_RESAMPLES * sizeof *r[j]);
        // A resample's rows: the rows of each configuration drawn, rows[from[c] .. from[c + 1])
        // for configuration c (rows are by configuration), in the order drawn.
        int *from = xcalloc((size_t)g->n_configs + 1, sizeof *from), *rb = xmalloc(sizeof *rb), room = 1;
        for (int i = 0; i < m; i++) from[g->config[rows[i]] + 1] = i + 1;
        for (int c = 0; c < g->n_configs; c++) from[c + 1] = from[c + 1] > from[c] ? from[c + 1] : from[c];
        Resampler rs;
        resampler_start(&rs, g);
        for (int b = 0; b < VERDICT_RESAMPLES; b++) {
            const int *drawn = resampler_next(&rs);
            int k = 0;
            for (int d = 0; d < g->n_configs; d++) k += from[drawn[d] + 1] - from[drawn[d]];
            if (k > room) rb = xrealloc(rb, (size_t)(room = k) * sizeof *rb);
            k = 0;
            for (int d = 0; d < g->n_configs; d++) {
                const int c = drawn[d];
                memcpy(rb + k, rows + from[c], (size_t)(from[c + 1] - from[c]) * sizeof *rb);
                k += from[c + 1] - from[c];
            }
            least_squares(col, use, y, rb, k, coef);
            for (int j = 0; j < R_COUNT; j++) r[j][b] = coef[1 + j];
            r[R_COUNT][b] = coef[1] > 0 ? -coef[2] / coef[1] : NAN;
            r[R_COUNT + 1][b] = coef[1] > 0 ? -coef[3] / coef[1] : NAN;
        }
        resampler_end(&rs);
        for (int j = 0; j < R_COUNT + 2; j++) interval(r[j], &e[j]), free(r[j]);
        free(rb), free(from);
        if (!ratios || !(e[0].lo > 0)) e[R_COUNT] = e[R_COUNT + 1] = (Estimate){NAN, NAN, NAN};
        fit_answer(answer, sizeof answer, e, r2, v->metric->name);
        if (ratios && !(e[0].lo > 0))
            snprintf(answer + strlen(answer), sizeof answer - strlen(answer),
                     "; the early val_accuracy does not predict the final one (b's interval reaches 0): no β, γ");
    }
    table_row(t);
    table_text(t, "%s", g->name);
    if (step >= 0)
        table_number(t, step);
    else
        table_empty(t);
    table_number(t, m);
    table_number(t, configs);
    for (int k = 0; k < 3; k++) table_number(t, r2[k]);
    for (int j = 0; j < R_COUNT + 2; j++) {
        table_number(t, e[j].value);
        table_number(t, e[j].lo);
        table_number(t, e[j].hi);
    }
    table_text(t, "%s", answer);
    for (int j = 0; j < R_COUNT; j++) free(col[j]);
    free(y);
    free(rows);
}

// ---------------------------------------------------------------- the tables

void verdict_tables(const VerdictInput *in, Table **tau, Table **fit) {
    Verdict v = {.in = in};
    const Metric *m = summary_metric(in->s, in->o->metric);
    v.metric = m && m->use == METRIC_DECIDES && strncmp(m->name, "val_", 4) == 0 ? m : metric_find("val_accuracy");
    v.sign = v.metric->maximize ? 1 : -1;
    v.twin = metric_test_twin(v.metric);
    for (int i = 0; i < in->n; i++) {
        const SummaryRow *t = in->trials[i].t;
        for (int k = 0; k < t->n_evals; k++)
            v.traced |= isfinite(t->evals[k].rank_deviation_excess) || isfinite(t->evals[k].correlation_excess);
    }
    *tau = tau_table(&v);
    *fit = fit_table(&v);
    if (!v.traced) {
        table_note(*tau, "no trial has invariants traced at its evaluations (a sweep without scoring): only %s is "
                         "shown",
                   v.metric->name);
    }
    int present = 0;  // variants with trials: each is a group when there are several
    for (int k = 0; k < in->n_variants; k++)
        for (int i = 0; i < in->n; i++)
            if (in->trials[i].variant == k) {
                present++;
                break;
            }
    for (int k = -1; k < (present > 1 ? in->n_variants : 0); k++) {
        Group g;
        group_make(&v, k, &g);
        if (k < 0 || g.n) {
            group_resample(&g);
            tau_rows(&v, &g, *tau);
            fit_row(&v, &g, *fit);
        }
        group_free(&g);
    }
}

// ---------------------------------------------------------------- --suggest-reward

// The value of column key in row of t (NaN where empty or absent).
static double cell_value(const Table *t, int row, const char *key) {
    for (int c = 0; c < t->n_cols; c++)
        if (!strcmp(t->cols[c].key, key)) return t->cells[(size_t)row * t->n_cols + c].value;
    return NAN;
}

static const char *cell_text(const Table *t, int row, const char *key) {
    for (int c = 0; c < t->n_cols; c++)
        if (!strcmp(t->cols[c].key, key)) return t->cells[(size_t)row * t->n_cols + c].text;
    return NULL;
}

int verdict_suggest_reward(const Report *r, const RewardSpec *spec, char *out, size_t len, char *why, size_t why_len) {
    const Table *fit = NULL;
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->tables[i]->key, "verdict.fit")) fit = r->tables[i];
    int row = -1;
    for (int i = 0; fit && i < fit->n_rows && row < 0; i++) {
        const char *group = cell_text(fit, i, "attention");
        if (group && !strcmp(group, "all")) row = i;
    }
    if (row < 0) {
        snprintf(why, why_len, "no finished trial");
        return -1;
    }
    const double beta = cell_value(fit, row, "beta"), gamma = cell_value(fit, row, "gamma");
    if (!isfinite(beta) || !isfinite(gamma)) {
        snprintf(why, why_len, "%s", cell_text(fit, row, "answer"));
        return -1;
    }
    size_t n = (size_t)snprintf(out, len,
                                "# attnsweep report: fitted on %g finished trials at step %g; β %.4g [%.4g, %.4g], γ "
                                "%.4g [%.4g, %.4g] (%g %% bootstrap intervals); %s\n",
                                cell_value(fit, row, "n"), cell_value(fit, row, "step"), beta,
                                cell_value(fit, row, "beta_lo"), cell_value(fit, row, "beta_hi"), gamma,
                                cell_value(fit, row, "gamma_lo"), cell_value(fit, row, "gamma_hi"), 100 * VERDICT_LEVEL,
                                cell_text(fit, row, "answer"));
    if ((beta < 0 || gamma < 0) && n < len)
        n += (size_t)snprintf(out + n, len - n, "# an estimate below 0 is written as 0: the reward's weights are ≥ 0\n");
    if (n < len)
        n += (size_t)snprintf(out + n, len - n, "reward: {tensor: %s, beta: %.4g, gamma: %.4g, modes: [",
                              tensor_view_names[spec->tensor], fmax(beta, 0), fmax(gamma, 0));
    const char *const *names = tensor_mode_names[spec->tensor];
    int first = 1, ideal = 0;
    for (int k = 0; k < 4 && n < len; k++)
        if (spec->use_mode[k]) n += (size_t)snprintf(out + n, len - n, "%s%s", first ? "" : ", ", names[k]), first = 0;
    for (int k = 0; k < 4; k++) ideal |= spec->use_mode[k] && spec->ideal_rank[k] >= 0;
    if (n < len) n += (size_t)snprintf(out + n, len - n, "]%s", ideal ? ", ideal_ranks: {" : "");
    first = 1;
    for (int k = 0; k < 4 && ideal && n < len; k++)
        if (spec->use_mode[k] && spec->ideal_rank[k] >= 0)
            n += (size_t)snprintf(out + n, len - n, "%s%s: %g", first ? "" : ", ", names[k], spec->ideal_rank[k]), first = 0;
    if (n < len) snprintf(out + n, len - n, "%s}\n", ideal ? "}" : "");
    return 0;
}
