// report.c: attnsweep report (report.h) from a SweepSummary: the analysis of the sweep
// (analysis.h) handed to every section in the order printed; the leaderboard, the
// variants and the verdict's input are built here, the other sections in pareto.c,
// ablation.c and failures.c.
#include "report/report.h"

#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "data/dataset.h"
#include "report/analysis.h"
#include "report/verdict.h"

int report_metric_known(const char *name, char *allowed, size_t len) {
    metric_names_text(METRIC_RANKS, allowed, len);
    const Metric *m = metric_find(name);
    return m && m->use <= METRIC_RANKS;
}

// ---------------------------------------------------------------- leaderboard

typedef struct {
    double key;  // smaller ranks first
    const SummaryRow *t;
} Ranked;

static int by_rank(const void *x, const void *y) {
    const Ranked *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->t->id > b->t->id) - (a->t->id < b->t->id);
}

static int any_recall(const Analysis *a) {
    for (int i = 0; i < a->n_ok; i++)
        if (a->ok[i]->task == TASK_RECALL) return 1;
    return 0;
}

// Whether a finished trial was scored with no heads (Grassmann's mixing: its scores have
// no rotation null, so no z, and the reward charges it no head terms).
static int any_headless(const Analysis *a) {
    const Metric *correlation = metric_find("correlation"), *correlation_z = metric_find("correlation_z");
    for (int i = 0; i < a->n_ok; i++)
        if (isfinite(summary_value(a->ok[i], correlation)) && isnan(summary_value(a->ok[i], correlation_z))) return 1;
    return 0;
}

static Table *leaderboard(const Analysis *a, const ReportOptions *o) {
    const Metric *m = summary_metric(a->s, o->metric);
    Ranked *r = xcalloc((size_t)(a->n_ok ? a->n_ok : 1), sizeof *r);
    int n = 0;
    for (int i = 0; i < a->n_ok; i++) {
        const double v = summary_value(a->ok[i], m);
        if (isfinite(v)) r[n++] = (Ranked){o->maximize ? -v : v, a->ok[i]};
    }
    qsort(r, (size_t)n, sizeof *r, by_rank);
    const int shown = n < o->top ? n : o->top;
    char title[256];
    snprintf(title, sizeof title, "Leaderboard: the top %d of %d finished trials by %s (%s is better)", shown, n,
             o->metric, o->maximize ? "higher" : "lower");
    Table *t = table_new("leaderboard", title);
    table_note(t, "finished trials only (status ok); pruned and failed ones are counted under Failures and pruning");
    table_note(t, "the test metrics, measured once per trial, are shown beside the validation ones and rank nothing");
    table_note(t, "RankDeviation and Correlation as measured; Corr z, rank z: where the layers' Correlation and heads' "
                  "effective rank lie on their rotation nulls (sds); the reward charges each term beyond its null's mean");
    if (any_headless(a))
        table_note(t, "a grassmann trial has no heads (its scores read its output features): no z, and the reward "
                      "charges it no head terms");
    table_column(t, "rank", "#", COL_INT, NULL);
    table_column(t, "trial", "trial", COL_INT, NULL);
    param_columns(t, a, 1, NULL);
    shown_columns(t, a, COL_REAL);
    const int recall = any_recall(a);
    if (recall) {
        table_note(t, "recall chance is a value at random (2/recall_vocab); values only, a model that knows which "
                      "values the sequence holds but not which key has which (1/recall_pairs)");
        table_column(t, "recall_chance", "recall chance", COL_REAL, "%.4f");
        table_column(t, "recall_values_only", "values only", COL_REAL, "%.4f");
    }
    table_column(t, "steps", "steps", COL_INT, NULL);
    table_column(t, "seconds", "time (s)", COL_REAL, "%.1f");
    ConfigView *v = config_view_new(a->s);
    for (int i = 0; i < shown; i++) {
        const SummaryRow *x = r[i].t;
        const TrialConfig *c = config_view(v, x);
        table_row(t);
        table_number(t, i + 1);
        table_number(t, x->id);
        param_cells(t, a, c, 1, NULL);
        shown_cells(t, a, x);
        if (recall) {
            double chance = NAN, values_only = NAN;
            if (c->task == TASK_RECALL) recall_baselines(c->recall_pairs, c->recall_vocab, &chance, &values_only);
            table_number(t, chance);
            table_number(t, values_only);
        }
        table_number(t, x->steps);
        table_number(t, x->seconds);
    }
    free(v);
    free(r);
    return t;
}

// ---------------------------------------------------------------- variants


static Table *by_variant(const Analysis *a) {
    Table *t = table_new("variants.by_variant", "Per attention variant: mean ± sd over its finished trials");
    metric_note(t, a);
    duplicates_note(t, a);
    table_column(t, "attention", "variant", COL_TEXT, NULL);
    table_column(t, "n", "n", COL_INT, NULL);
    shown_columns(t, a, COL_MEAN_SD);
    if (!a->n_variants) table_note(t, "the program has no parameter named attention: no variants");
    const SummaryRow **v = xcalloc((size_t)(a->n_ok ? a->n_ok : 1), sizeof *v);
    ConfigView *view = config_view_new(a->s);
    for (int k = 0; k < a->n_variants; k++) {
        int n = 0;
        for (int i = 0; i < a->n_configs; i++) {
            const Config *c = &a->configs[i];
            if (variant_of(a, config_view(view, c->first)) != k) continue;
            memcpy(v + n, c->ok, (size_t)c->n * sizeof *v);
            n += c->n;
        }
        if (!n) continue;
        table_row(t);
        table_text(t, "%s", a->variants[k]);
        stats_cells(t, a, v, n);
    }
    free(view);
    free(v);
    return t;
}

static Table *by_configuration(const Analysis *a) {
    Table *t = table_new("variants.by_configuration",
                         "Per configuration: mean ± sd over repeats (finished trials with the same parameters apart "
                         "from the seed)");
    if (!a->has_repeats) table_note(t, "the sweep has no repeats: every configuration ran with one seed (see the leaderboard)");
    metric_note(t, a);
    duplicates_note(t, a);
    param_columns(t, a, 0, NULL);
    table_column(t, "n", "n", COL_INT, NULL);
    shown_columns(t, a, COL_MEAN_SD);
    ConfigView *v = config_view_new(a->s);
    for (int i = 0; a->has_repeats && i < a->n_configs; i++) {
        const Config *c = &a->configs[a->order[i]];
        if (!c->n) continue;
        table_row(t);
        param_cells(t, a, config_view(v, c->first), 0, NULL);
        stats_cells(t, a, c->ok, c->n);
    }
    free(v);
    return t;
}

// ---------------------------------------------------------------- the verdict

// The verdict's tables (report/verdict.h) over the trials of the statistics: one per seed
// of each configuration, the configurations in table order.
static void verdict(const Analysis *a, Table **tau, Table **fit) {
    VerdictTrial *v = xcalloc((size_t)(a->n_ok ? a->n_ok : 1), sizeof *v);
    ConfigView *view = config_view_new(a->s);
    int n = 0;
    for (int i = 0; i < a->n_configs; i++) {
        const Config *c = &a->configs[a->order[i]];
        for (int k = 0; k < c->n; k++) v[n++] = (VerdictTrial){c->ok[k], i, variant_of(a, config_view(view, c->ok[k]))};
    }
    free(view);
    verdict_tables(&(VerdictInput){a->s, a->o, n, v, a->n_variants, a->variants}, tau, fit);
    free(v);
}

// ---------------------------------------------------------------- the report

void report_build(const SweepSummary *s, const ReportOptions *o, Report *out) {
    gsl_set_error_handler_off();  // a results file's values never abort the report: GSL returns NaN instead
    Analysis a;
    analyse(s, o, &a);
    Table *verdict_tau, *verdict_fit, *ablations[ABLATION_TABLES];
    verdict(&a, &verdict_tau, &verdict_fit);
    ablation_tables(&a, ablations);
    out->volume = (ParetoVolume){0};
    Table *tables[] = {leaderboard(&a, o), verdict_tau,          verdict_fit,   by_variant(&a),
                       by_configuration(&a), pareto(&a, &out->volume),         ablations[0],  ablations[1],
                       ablations[2],       ablations[3],         by_status(&a), by_reason(&a),
                       asha(&a)};
    _Static_assert(ABLATION_TABLES == 4, "three ablation tables and the dose-response");
    out->n = (int)COUNT(tables);
    out->tables = xmalloc(sizeof tables);
    memcpy(out->tables, tables, sizeof tables);
    analysis_free(&a);
}

void report_free(Report *r) {
    for (int i = 0; i < r->n; i++) table_free(r->tables[i]);
    free(r->tables);
    r->n = 0;
}
