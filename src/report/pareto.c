// pareto.c: the report's Pareto front (report.h pareto_front, pareto_objectives): the
// finished trials no other dominates on the sweep's metric, Correlation and
// RankDeviation, or on a motpe sweep's objectives with the hypervolume of the front.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/pareto.h"
#include "common/util.h"
#include "report/analysis.h"

// ---------------------------------------------------------------- Pareto front

ParetoObjectives pareto_objectives(const SweepSummary *s) {
    const Metric *m = summary_metric(s, s->metric[0] ? s->metric : "val_accuracy");
    ParetoObjectives o = {.k = 3,
                          .metric = {m, metric_find("correlation"), metric_find("rank_deviation")},
                          .maximize = {s->metric[0] ? s->maximize : 1, 0, 0}};
    if (s->n_objectives >= 2) {
        o.k = s->n_objectives;
        for (int j = 0; j < o.k; j++) o.metric[j] = s->objective[j], o.maximize[j] = s->objective_maximize[j];
    }
    return o;
}

// Objective j of trial x, larger is better.
static double gain(const SummaryRow *x, const ParetoObjectives *o, int j) {
    const double v = summary_value(x, o->metric[j]);
    return o->maximize[j] ? v : -v;
}

static int has_nan(const SummaryRow *x, const ParetoObjectives *o) {
    for (int j = 0; j < o->k; j++)
        if (isnan(gain(x, o, j))) return 1;
    return 0;
}

int pareto_front(const SummaryRow *const *t, int n, const ParetoObjectives *o, int *front) {
    double *pts = xmalloc((size_t)(n ? n : 1) * o->k * sizeof(double));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < o->k; j++) pts[(size_t)i * o->k + j] = gain(t[i], o, j);
    const int m = pareto_front_of(pts, n, o->k, front);
    free(pts);
    return m;
}

// "val_accuracy (higher is better), correlation (lower is better)"
static void objectives_text(const ParetoObjectives *o, char *out, size_t len) {
    out[0] = 0;
    for (int j = 0; j < o->k; j++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s (%s is better)", j ? ", " : "", o->metric[j]->name,
                 o->maximize[j] ? "higher" : "lower");
}

// The hypervolume that front[0..n) dominates, against ref: the worst value of each
// objective over the finished trials (in the objectives' own units, signs as their goals).
static double front_hypervolume(const Analysis *a, const ParetoObjectives *o, const int *front, int n, double *ref) {
    double *pts = xmalloc((size_t)(n + 1) * o->k * sizeof(double));
    for (int j = 0; j < o->k; j++) {
        ref[j] = HUGE_VAL;
        for (int i = 0; i < a->n_ok; i++)
            if (!has_nan(a->ok[i], o)) ref[j] = fmin(ref[j], gain(a->ok[i], o, j));
        for (int i = 0; i < n; i++) pts[(size_t)i * o->k + j] = gain(a->ok[front[i]], o, j);
    }
    const double hv = n ? pareto_hypervolume(pts, n, o->k, ref) : 0.0;
    free(pts);
    return hv;
}

Table *pareto(const Analysis *a, ParetoVolume *volume) {
    ParetoObjectives o = pareto_objectives(a->s);
    if (!a->s->n_objectives) o.metric[0] = summary_metric(a->s, a->o->metric), o.maximize[0] = a->o->maximize;  // --metric's
    int *front = xcalloc((size_t)(a->n_ok ? a->n_ok : 1), sizeof *front);
    const int n = pareto_front(a->ok, a->n_ok, &o, front);
    char title[256], goals[512];
    objectives_text(&o, goals, sizeof goals);
    double ref[METRIC_MAX_OBJECTIVES], hv = 0.0;
    if (a->s->n_objectives) {
        hv = front_hypervolume(a, &o, front, n, ref);
        *volume = (ParetoVolume){.k = o.k, .hypervolume = hv};
        for (int j = 0; j < o.k; j++)
            volume->name[j] = o.metric[j]->name, volume->reference[j] = o.maximize[j] ? ref[j] : -ref[j];
        snprintf(title, sizeof title, "Pareto front of the sweep's objectives: %d of %d finished trials, hypervolume %.4g",
                 n, a->n_ok, hv);
    } else {
        snprintf(title, sizeof title, "Pareto front: %d of %d finished trials", n, a->n_ok);
    }
    Table *t = table_new("pareto", title);
    table_note(t, "%s: no other trial is at least as good on all of them and better on one; finished trials only "
                  "(status ok)", goals);
    if (a->s->n_objectives) {
        char at[256] = "";
        for (int j = 0; j < o.k; j++)
            snprintf(at + strlen(at), sizeof at - strlen(at), "%s%s %.6g", j ? ", " : "", volume->name[j],
                     volume->reference[j]);
        table_note(t, "hypervolume: of the region the front dominates, up to the worst of each objective over the "
                      "finished trials (%s)", at);
    }
    table_column(t, "trial", "trial", COL_INT, NULL);
    param_columns(t, a, 1, NULL);
    shown_columns(t, a, COL_REAL);
    const Metric *more[METRIC_MAX_OBJECTIVES];  // objectives in no column yet
    int n_more = 0;
    for (int j = 0; j < o.k; j++) {
        int have = o.metric[j]->shown;
        for (int k = 0; k < a->n_extra; k++) have |= o.metric[j] == a->extra[k];
        if (!have) more[n_more++] = o.metric[j];
    }
    for (int j = 0; j < n_more; j++) metric_column(t, more[j], COL_REAL);
    ConfigView *v = config_view_new(a->s);
    for (int i = 0; i < n; i++) {
        const SummaryRow *x = a->ok[front[i]];
        table_row(t);
        table_number(t, x->id);
        param_cells(t, a, config_view(v, x), 1, NULL);
        shown_cells(t, a, x);
        for (int j = 0; j < n_more; j++) table_number(t, summary_value(x, more[j]));
    }
    free(v);
    free(front);
    return t;
}
