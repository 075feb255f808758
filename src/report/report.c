// report.c: the sections of attnsweep report (report.h), built from a SweepSummary.
#include "report/report.h"

#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/pareto.h"
#include "common/util.h"
#include "data/dataset.h"
#include "report/stats.h"
#include "report/verdict.h"
#include "trial/metrics.h"

// Every table of trials has the metrics marked shown (trial/metrics.h): the test accuracy
// beside the validation one (shown only: nothing ranks, selects or tests by it) and
// Correlation's chance level beside it (what independent Gaussian heads of the shape
// give), and the sweep's metric (or the one --metric names) with its test twin when they
// are not among them: reward, val_accuracy and the metric side by side everywhere.
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
// The metrics each ablation tests besides the sweep's, in the order of its columns.
static const char *const always_tested[2] = {"val_accuracy", "reward"};

// The regularisers ablated, and the control: plain L2 of the same strength.
static const char *const regularisers[] = {"lambda_orth", "lambda_nuclear", "lambda_stability"};
#define CONTROL "lambda_l2"

int report_metric_known(const char *name, char *allowed, size_t len) {
    metric_names_text(METRIC_RANKS, allowed, len);
    const Metric *m = metric_find(name);
    return m && m->use <= METRIC_RANKS;
}

static int is_ok(const TrialResult *t) { return t->status == TRIAL_OK; }

// A real parameter (a λ) of a configuration, by name.
static double *lambda_at(TrialConfig *c, const char *name) { return (double *)((char *)c + config_find(name)->offset); }
static double lambda_of(const TrialConfig *c, const char *name) {
    return *(const double *)((const char *)c + config_find(name)->offset);
}

// ---------------------------------------------------------------- the sweep's structure

// A configuration: every parameter but the seed. Its trials with different seeds are its
// repeats; trials with the same seed are the same run (same seed, same numbers: a random
// sweep may draw a configuration twice) and count once in the statistics.
typedef struct {
    char *key;                 // "name=value\n" for every parameter but the seed
    const TrialResult *first;  // its trial with the lowest id
    int seeds;                 // distinct seeds among its trials of any status
    int n;                     // its finished trials, one per seed (the lowest id), in ok[]
    const TrialResult **ok;
} Config;

typedef struct {
    const SweepSummary *s;
    const ReportOptions *o;
    const Metric *extra[2];    // the report's metric and its test twin, where not shown already
    int n_extra;
    // The parameters: the trial parameters, or for a program's sweep its parameters (from
    // the first trial's configuration) and the seed. The variant is the attention
    // parameter; a program's sweep has one when its program has a text parameter so named.
    int n_params;
    const ParamSpec **params;
    ParamSpec *program;        // the specs made for a program's parameters
    char (*columns)[PROGRAM_NAME + 8];  //   and their columns
    int n_variants;
    const char **variants;     // the variants' names, in table order
    int *swept;                // per parameter: differs across trials (the variant: always shown apart)
    int n_ok;
    const TrialResult **ok;    // finished trials, by id
    int n_configs;
    Config *configs;           // sorted by key
    int *order;                // configs by attention variant, then first trial
    int has_repeats;           // some configuration has more than one seed
    int duplicates;            // finished trials left out of the statistics: a seed seen before
} Analysis;

static char *config_key(const Analysis *a, const TrialConfig *c) {
    size_t cap = 1024, len = 0;
    char *key = xmalloc(cap);
    key[0] = 0;
    for (int i = 0; i < a->n_params; i++) {
        const ParamSpec *p = a->params[i];
        if (!strcmp(p->name, "seed")) continue;
        char value[CONFIG_TEXT + 64];
        config_format(c, p, value, sizeof value);
        const size_t need = strlen(p->name) + strlen(value) + 3;
        if (len + need > cap) key = xrealloc(key, cap = 2 * (len + need));
        len += (size_t)snprintf(key + len, cap - len, "%s=%s\n", p->name, value);
    }
    return key;
}

// For qsort and bsearch of Config and of the Keyed trials below: both begin with the key.
static int by_key(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static const Config *find_config(const Analysis *a, const TrialConfig *c) {
    Config probe = {.key = config_key(a, c)};
    const Config *found = bsearch(&probe, a->configs, (size_t)a->n_configs, sizeof *a->configs, by_key);
    free(probe.key);
    return found;
}

// Configurations in the order of the tables: by attention variant, then first trial.
typedef struct {
    int attention, id, index;
} ConfigPlace;

static int by_place(const void *x, const void *y) {
    const ConfigPlace *a = x, *b = y;
    if (a->attention != b->attention) return a->attention - b->attention;
    return (a->id > b->id) - (a->id < b->id);
}

// The variant of c: its attention variant, or its program's parameter "attention"; NULL
// when a program has none.
static const char *variant_text(const TrialConfig *c) {
    if (c->n_program == 0) return attention_names[c->attention];
    const ProgramValue *v = config_program_find(c, "attention");
    return v && v->type == PT_TEXT && v->set ? v->text : NULL;
}

// Index of c's variant in a->variants (-1: none).
static int variant_of(const Analysis *a, const TrialConfig *c) {
    const char *v = variant_text(c);
    for (int k = 0; v && k < a->n_variants; k++)
        if (!strcmp(a->variants[k], v)) return k;
    return -1;
}

// The parameters (see Analysis) and the variants: the attention variants in their order,
// or a program's in the order of their first trials.
static void parameters(const SweepSummary *s, Analysis *a) {
    const TrialConfig *first = s->n_trials ? &s->trials[0].config : NULL;
    if (!first || first->n_program == 0) {
        a->n_params = config_nparams;
        a->params = xcalloc((size_t)config_nparams, sizeof *a->params);
        for (int i = 0; i < config_nparams; i++) a->params[i] = &config_params[i];
        a->variants = xcalloc(ATTN_COUNT, sizeof *a->variants);
        for (int k = 0; k < ATTN_COUNT; k++) a->variants[a->n_variants++] = attention_names[k];
        return;
    }
    a->program = xcalloc((size_t)first->n_program, sizeof *a->program);
    a->columns = xcalloc((size_t)first->n_program, sizeof *a->columns);
    a->params = xcalloc((size_t)first->n_program + 1, sizeof *a->params);
    for (int k = 0; k < first->n_program; k++) {
        metric_param_column(first->program[k].name, a->columns[k], sizeof a->columns[k]);
        config_program_param(&a->program[k], first->program[k].name, a->columns[k], first->program[k].type, k);
        a->params[a->n_params++] = &a->program[k];
    }
    a->params[a->n_params++] = config_find("seed");
    a->variants = xcalloc((size_t)s->n_trials, sizeof *a->variants);
    for (int t = 0; t < s->n_trials; t++)
        if (variant_text(&s->trials[t].config) && variant_of(a, &s->trials[t].config) < 0)
            a->variants[a->n_variants++] = variant_text(&s->trials[t].config);
}

static void analyse(const SweepSummary *s, const ReportOptions *o, Analysis *a) {
    memset(a, 0, sizeof *a);
    a->s = s;
    a->o = o;
    const Metric *m = summary_metric(s, o->metric), *twin = metric_test_twin(m);
    if (!m->shown) a->extra[a->n_extra++] = m;
    if (twin && !twin->shown) a->extra[a->n_extra++] = twin;
    const int n = s->n_trials;
    parameters(s, a);
    a->swept = xcalloc((size_t)a->n_params, sizeof *a->swept);
    for (int i = 0; i < a->n_params && n > 0; i++) {
        const ParamSpec *p = a->params[i];
        char first[CONFIG_TEXT + 64], other[CONFIG_TEXT + 64];
        config_format(&s->trials[0].config, p, first, sizeof first);
        for (int t = 1; t < n && !a->swept[i]; t++) {
            config_format(&s->trials[t].config, p, other, sizeof other);
            a->swept[i] = strcmp(first, other) != 0;
        }
    }
    a->ok = xcalloc((size_t)n, sizeof *a->ok);
    for (int t = 0; t < n; t++)
        if (is_ok(&s->trials[t])) a->ok[a->n_ok++] = &s->trials[t];

    // Trials by configuration key: each run of equal keys is one configuration.
    typedef struct {
        char *key;
        const TrialResult *t;
    } Keyed;
    Keyed *all = xcalloc((size_t)n, sizeof *all);
    for (int t = 0; t < n; t++) all[t] = (Keyed){config_key(a, &s->trials[t].config), &s->trials[t]};
    qsort(all, (size_t)n, sizeof *all, by_key);
    a->configs = xcalloc((size_t)n, sizeof *a->configs);
    for (int t = 0; t < n;) {
        int end = t + 1;
        while (end < n && !strcmp(all[end].key, all[t].key)) end++;
        Config *c = &a->configs[a->n_configs++];
        *c = (Config){.key = all[t].key, .first = all[t].t};
        c->ok = xcalloc((size_t)(end - t), sizeof *c->ok);
        for (int k = t; k < end; k++) {
            if (all[k].t->id < c->first->id) c->first = all[k].t;
            int seen = 0;
            for (int j = t; j < k && !seen; j++) seen = all[j].t->config.seed == all[k].t->config.seed;
            c->seeds += !seen;
            if (k > t) free(all[k].key);
        }
        a->has_repeats |= c->seeds > 1;
        t = end;
    }
    free(all);
    for (int i = 0; i < a->n_ok; i++) {  // in id order, so each ok[] is by id and keeps a seed's first
        Config *c = (Config *)find_config(a, &a->ok[i]->config);
        int seen = 0;
        for (int j = 0; j < c->n && !seen; j++) seen = c->ok[j]->config.seed == a->ok[i]->config.seed;
        if (seen)
            a->duplicates++;
        else
            c->ok[c->n++] = a->ok[i];
    }
    ConfigPlace *place = xcalloc((size_t)(a->n_configs ? a->n_configs : 1), sizeof *place);
    for (int i = 0; i < a->n_configs; i++)
        place[i] = (ConfigPlace){variant_of(a, &a->configs[i].first->config), a->configs[i].first->id, i};
    qsort(place, (size_t)a->n_configs, sizeof *place, by_place);
    a->order = xcalloc((size_t)(a->n_configs ? a->n_configs : 1), sizeof *a->order);
    for (int i = 0; i < a->n_configs; i++) a->order[i] = place[i].index;
    free(place);
}

static void analysis_free(Analysis *a) {
    for (int i = 0; i < a->n_configs; i++) free(a->configs[i].key), free(a->configs[i].ok);
    free(a->configs);
    free(a->order);
    free(a->ok);
    free(a->swept);
    free(a->params);
    free(a->program);
    free(a->columns);
    free(a->variants);
}

// ---------------------------------------------------------------- columns and cells

// Whether parameter i gets a column: swept, not the variant (its own column), and not
// the seed or `skip` when asked.
// skip: a parameter left out, or every parameter whose name begins with it when it ends in '*'.
static int param_shown(const Analysis *a, int i, int with_seed, const char *skip) {
    const char *name = a->params[i]->name;
    const size_t n = skip ? strlen(skip) : 0;
    const int skipped = skip && (n && skip[n - 1] == '*' ? !strncmp(name, skip, n - 1) : !strcmp(name, skip));
    return a->swept[i] && (strcmp(name, "attention") || !a->n_variants) && (with_seed || strcmp(name, "seed")) &&
           !skipped;
}

static void param_columns(Table *t, const Analysis *a, int with_seed, const char *skip) {
    if (a->n_variants) table_column(t, "attention", "variant", COL_TEXT, NULL);
    for (int i = 0; i < a->n_params; i++) {
        if (!param_shown(a, i, with_seed, skip)) continue;
        const ParamSpec *p = a->params[i];
        const ColumnKind kind = p->type == PT_INT ? COL_INT : p->type == PT_REAL ? COL_REAL : COL_TEXT;
        table_column(t, config_column(p), p->name, kind, "%g");
    }
}

// A parameter that does not apply to the configuration (core_rank of mha) is empty.
static void param_cells(Table *t, const Analysis *a, const TrialConfig *c, int with_seed, const char *skip) {
    if (a->n_variants) {
        if (variant_text(c))
            table_text(t, "%s", variant_text(c));
        else
            table_empty(t);
    }
    for (int i = 0; i < a->n_params; i++) {
        if (!param_shown(a, i, with_seed, skip)) continue;
        const ParamSpec *p = a->params[i];
        char text[CONFIG_TEXT + 64];
        if (!config_relevant(c, p))
            table_empty(t);
        else if (p->type == PT_INT || p->type == PT_REAL)
            table_number(t, config_number(c, p));
        else {
            config_format(c, p, text, sizeof text);
            table_text(t, "%s", text);
        }
    }
}

// A metric's column: its name, its label with the unit.
static void metric_column(Table *t, const Metric *m, ColumnKind kind) {
    char head[64];
    snprintf(head, sizeof head, m->unit[0] ? "%s (%s)" : "%s", m->label, m->unit);
    table_column(t, m->name, head, kind, "%.4f");
}

// The shown metrics, then the report's metric and its test twin where not among them.
static int table_metrics(const Analysis *a, const Metric **out) {
    int n = 0;
    for (int i = 0; i < n_metrics; i++)
        if (metrics[i].shown) out[n++] = &metrics[i];
    for (int k = 0; k < a->n_extra; k++) out[n++] = a->extra[k];
    return n;
}

static void shown_columns(Table *t, const Analysis *a, ColumnKind kind) {
    const Metric *m[METRIC_NAMES];
    const int n = table_metrics(a, m);
    for (int i = 0; i < n; i++) metric_column(t, m[i], kind);
}

static void shown_cells(Table *t, const Analysis *a, const TrialResult *x) {
    const Metric *m[METRIC_NAMES];
    const int n = table_metrics(a, m);
    for (int i = 0; i < n; i++) table_number(t, metric_value(x, m[i]));
}

static SampleStats stats_of(const TrialResult *const *t, int n, const Metric *m) {
    double *x = xmalloc((size_t)(n ? n : 1) * sizeof *x);
    for (int i = 0; i < n; i++) x[i] = metric_value(t[i], m);
    SampleStats s = sample_stats(x, n);
    free(x);
    return s;
}

// n, then mean ± sd of the shown metrics (and the report's).
static void stats_cells(Table *t, const Analysis *a, const TrialResult *const *trials, int n) {
    const Metric *m[METRIC_NAMES];
    const int k = table_metrics(a, m);
    table_number(t, n);
    for (int i = 0; i < k; i++) {
        const SampleStats s = stats_of(trials, n, m[i]);
        table_mean_sd(t, s.mean, s.sd);
    }
}

// "the sweep's metric val_loss (lower is better)", a note for the tables of statistics.
static void metric_note(Table *t, const Analysis *a) {
    table_note(t, "the sweep's metric: %s (%s is better), beside val_accuracy and reward", a->o->metric,
               a->o->maximize ? "higher" : "lower");
}

// ---------------------------------------------------------------- leaderboard

typedef struct {
    double key;  // smaller ranks first
    const TrialResult *t;
} Ranked;

static int by_rank(const void *x, const void *y) {
    const Ranked *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->t->id > b->t->id) - (a->t->id < b->t->id);
}

static int any_recall(const Analysis *a) {
    for (int i = 0; i < a->n_ok; i++)
        if (a->ok[i]->config.task == TASK_RECALL) return 1;
    return 0;
}

// Whether a finished trial was scored with no heads (Grassmann's mixing: its scores have
// no rotation null, so no z, and the reward charges it no head terms).
static int any_headless(const Analysis *a) {
    for (int i = 0; i < a->n_ok; i++)
        if (isfinite(a->ok[i]->correlation) && isnan(a->ok[i]->correlation_z)) return 1;
    return 0;
}

static Table *leaderboard(const Analysis *a, const ReportOptions *o) {
    const Metric *m = summary_metric(a->s, o->metric);
    Ranked *r = xcalloc((size_t)(a->n_ok ? a->n_ok : 1), sizeof *r);
    int n = 0;
    for (int i = 0; i < a->n_ok; i++) {
        const double v = metric_value(a->ok[i], m);
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
    for (int i = 0; i < shown; i++) {
        const TrialResult *x = r[i].t;
        table_row(t);
        table_number(t, i + 1);
        table_number(t, x->id);
        param_cells(t, a, &x->config, 1, NULL);
        shown_cells(t, a, x);
        if (recall) {
            double chance = NAN, values_only = NAN;
            if (x->config.task == TASK_RECALL)
                recall_baselines(x->config.recall_pairs, x->config.recall_vocab, &chance, &values_only);
            table_number(t, chance);
            table_number(t, values_only);
        }
        table_number(t, x->steps);
        table_number(t, x->seconds);
    }
    free(r);
    return t;
}

// ---------------------------------------------------------------- variants

// The note of the tables of statistics when a configuration ran twice with one seed.
static void duplicates_note(Table *t, const Analysis *a) {
    if (a->duplicates)
        table_note(t, "%d finished trial%s repeated a configuration with the same seed (the same run) and count once",
                   a->duplicates, a->duplicates == 1 ? "" : "s");
}

static Table *by_variant(const Analysis *a) {
    Table *t = table_new("variants.by_variant", "Per attention variant: mean ± sd over its finished trials");
    metric_note(t, a);
    duplicates_note(t, a);
    table_column(t, "attention", "variant", COL_TEXT, NULL);
    table_column(t, "n", "n", COL_INT, NULL);
    shown_columns(t, a, COL_MEAN_SD);
    if (!a->n_variants) table_note(t, "the program has no parameter named attention: no variants");
    const TrialResult **v = xcalloc((size_t)(a->n_ok ? a->n_ok : 1), sizeof *v);
    for (int k = 0; k < a->n_variants; k++) {
        int n = 0;
        for (int i = 0; i < a->n_configs; i++) {
            const Config *c = &a->configs[i];
            if (variant_of(a, &c->first->config) != k) continue;
            memcpy(v + n, c->ok, (size_t)c->n * sizeof *v);
            n += c->n;
        }
        if (!n) continue;
        table_row(t);
        table_text(t, "%s", a->variants[k]);
        stats_cells(t, a, v, n);
    }
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
    for (int i = 0; a->has_repeats && i < a->n_configs; i++) {
        const Config *c = &a->configs[a->order[i]];
        if (!c->n) continue;
        table_row(t);
        param_cells(t, a, &c->first->config, 0, NULL);
        stats_cells(t, a, c->ok, c->n);
    }
    return t;
}

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
static double gain(const TrialResult *x, const ParetoObjectives *o, int j) {
    const double v = metric_value(x, o->metric[j]);
    return o->maximize[j] ? v : -v;
}

static int has_nan(const TrialResult *x, const ParetoObjectives *o) {
    for (int j = 0; j < o->k; j++)
        if (isnan(gain(x, o, j))) return 1;
    return 0;
}

int pareto_front(const TrialResult *const *t, int n, const ParetoObjectives *o, int *front) {
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

static Table *pareto(const Analysis *a, ParetoVolume *volume) {
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
    for (int i = 0; i < n; i++) {
        const TrialResult *x = a->ok[front[i]];
        table_row(t);
        table_number(t, x->id);
        param_cells(t, a, &x->config, 1, NULL);
        shown_cells(t, a, x);
        for (int j = 0; j < n_more; j++) table_number(t, metric_value(x, more[j]));
    }
    free(front);
    return t;
}

// ---------------------------------------------------------------- ablations

// "Holm p = 0.012", or "Holm p < 0.001"; with more digits where two would round across or
// onto the significance level (0.0501 is "Holm p = 0.0501", not "Holm p = 0.05").
static void p_text(char *out, size_t len, double p) {
    if (p < 0.001) {
        snprintf(out, len, "Holm p < 0.001");
        return;
    }
    for (int digits = 2; digits <= 6; digits++) {
        snprintf(out, len, "Holm p = %.*g", digits, p);
        const double shown = strtod(out + strlen("Holm p = "), NULL);
        if ((shown < REPORT_ALPHA) == (p < REPORT_ALPHA) && (shown != REPORT_ALPHA || p == REPORT_ALPHA)) return;
    }
}

void ablation_verdict(char *out, size_t len, const char *reg, double lambda, const char *against,
                      const char *variant, int n_arm, int n_ctl, int k_tested, const char *const *tested,
                      const double *d, const double *p) {
    if (n_arm < 2 || n_ctl < 2) {
        snprintf(out, len, "n too small (%d against %d trials; the test needs at least 2 each)", n_arm, n_ctl);
        return;
    }
    char claims[512] = "", plain[512] = "", untested[256] = "";
    for (int k = 0; k < k_tested; k++) {
        const char *name = tested[k];
        char pt[32];
        p_text(pt, sizeof pt, p[k]);
        if (isnan(p[k]))
            snprintf(untested + strlen(untested), sizeof untested - strlen(untested), "%s%s", untested[0] ? " and " : "",
                     name);
        else if (p[k] < REPORT_ALPHA)
            snprintf(claims + strlen(claims), sizeof claims - strlen(claims), "%s%s %s (%s)", claims[0] ? " and " : "",
                     d[k] > 0 ? "raises" : "lowers", name, pt);
        else
            snprintf(plain + strlen(plain), sizeof plain - strlen(plain), "%s%s (%s)",
                     plain[0] ? " or " : "no significant difference in ", name, pt);
    }
    int n = 0;
    if (claims[0])
        n += snprintf(out, len, "λ_%s = %g %s over %s for %s", reg + strlen("lambda_"), lambda, claims, against, variant);
    if (plain[0] && n >= 0 && (size_t)n < len) n += snprintf(out + n, len - (size_t)n, "%s%s", n ? "; " : "", plain);
    if (untested[0] && n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "%s%s: no spread within the arms or in their differences, no test",
                 n ? "; " : "", untested);
}

// One comparison of an ablation: a configuration with λ > 0 against its control, for each
// metric tested the difference of the means (arm − control), the test's p and Holm's.
// Where the arms share seeds (seed·1000 + repeat is the seed of repeat r of every
// configuration) the test is paired over those seeds, else Welch's.
typedef struct {
    const Config *arm, *ctl;
    double lambda;
    int vs_l2;  // the control is plain L2 at λ · l2_scale (else λ = 0)
    int pairs;  // trials of the two arms with the same seed: the paired test's when ≥ 2
    double d[3], p[3], p_holm[3], d_twin[3];
    int nan[3];  // the metric is NaN in a trial of the arms: no test
} Comparison;

// The trials of arm and ctl with the same seed: a[i] and c[i] are pair i (a and c may be
// NULL). Returns how many.
static int pairs_of(const Config *arm, const Config *ctl, const TrialResult **a, const TrialResult **c) {
    int n = 0;
    for (int i = 0; i < arm->n; i++)
        for (int j = 0; j < ctl->n; j++) {
            if (arm->ok[i]->config.seed != ctl->ok[j]->config.seed) continue;
            if (a) a[n] = arm->ok[i], c[n] = ctl->ok[j];
            n++;
        }
    return n;
}

// x's test of metric m: over the pairs when x has 2 of them (d the mean of the
// differences), else Welch's over the arms (d the difference of the means); p NaN where
// there is no test. Returns -1, with d and p NaN, when m is NaN in a trial tested.
static int arm_test(const Comparison *x, const Metric *m, double *d, double *p) {
    const int n = x->arm->n + x->ctl->n;
    const TrialResult **a = xcalloc((size_t)n, sizeof *a), **c = xcalloc((size_t)n, sizeof *c);
    double *diff = xcalloc((size_t)n, sizeof *diff);
    int rc = 0;
    *d = *p = NAN;
    if (x->pairs >= 2) {
        pairs_of(x->arm, x->ctl, a, c);
        for (int i = 0; i < x->pairs; i++) {
            diff[i] = metric_value(a[i], m) - metric_value(c[i], m);
            rc |= isnan(diff[i]) ? -1 : 0;
        }
        PairedTest t;
        if (rc == 0) *d = sample_stats(diff, x->pairs).mean, *p = paired_t_test(diff, x->pairs, &t) == 0 ? t.p : NAN;
    } else {
        const SampleStats sa = stats_of(x->arm->ok, x->arm->n, m), sc = stats_of(x->ctl->ok, x->ctl->n, m);
        WelchTest w;
        rc = isnan(sa.mean) || isnan(sc.mean) ? -1 : 0;
        if (rc == 0) *d = sa.mean - sc.mean, *p = welch_test(sa, sc, &w) == 0 ? w.p : NAN;
    }
    free(a), free(c), free(diff);
    return rc;
}

// The ablations of one report: the metrics tested (the sweep's when it is another,
// val_accuracy, reward) and the comparisons of each regulariser; the p-values of them
// all are one family for Holm's adjustment.
typedef struct {
    int k_tested;
    const char *tested[3];
    int n[COUNT(regularisers)];
    Comparison *c[COUNT(regularisers)];
    int family;  // the tests made (p not NaN) over every table
    double l2_scale;  // the L2 control of an arm at λ is lambda_l2 = λ · l2_scale
} Ablations;

// Every finished configuration with regulariser r > 0 that has a finished control.
static void compare(const Analysis *a, Ablations *ab, int r) {
    const char *reg = regularisers[r];
    ab->c[r] = xcalloc((size_t)(2 * a->n_configs + 1), sizeof *ab->c[r]);
    for (int i = 0; i < a->n_configs; i++) {
        const Config *arm = &a->configs[a->order[i]];
        const double lambda = lambda_of(&arm->first->config, reg);
        if (lambda <= 0 || !arm->n) continue;
        for (int vs_l2 = 0; vs_l2 < 2; vs_l2++) {
            if (vs_l2 && lambda_of(&arm->first->config, CONTROL) != 0) continue;
            TrialConfig c = arm->first->config;
            *lambda_at(&c, reg) = 0;
            if (vs_l2) *lambda_at(&c, CONTROL) = lambda * ab->l2_scale;
            const Config *ctl = find_config(a, &c);
            if (!ctl || !ctl->n) continue;
            Comparison *x = &ab->c[r][ab->n[r]++];
            *x = (Comparison){.arm = arm, .ctl = ctl, .lambda = lambda, .vs_l2 = vs_l2};
            x->pairs = pairs_of(arm, ctl, NULL, NULL);
            for (int k = 0; k < ab->k_tested; k++) {
                const Metric *m = summary_metric(a->s, ab->tested[k]), *twin = metric_test_twin(m);
                x->nan[k] = arm_test(x, m, &x->d[k], &x->p[k]) != 0;
                x->d_twin[k] = twin ? stats_of(arm->ok, arm->n, twin).mean - stats_of(ctl->ok, ctl->n, twin).mean : NAN;
            }
        }
    }
}

static void ablations_analyse(const Analysis *a, Ablations *ab) {
    memset(ab, 0, sizeof *ab);
    ab->l2_scale = a->o->l2_scale > 0 ? a->o->l2_scale : 1;
    if (strcmp(a->o->metric, "val_accuracy") && strcmp(a->o->metric, "reward")) ab->tested[ab->k_tested++] = a->o->metric;
    for (size_t k = 0; k < COUNT(always_tested); k++) ab->tested[ab->k_tested++] = always_tested[k];
    int total = 0;
    for (size_t r = 0; r < COUNT(regularisers); r++) compare(a, ab, (int)r), total += ab->n[r] * ab->k_tested;
    double *p = xmalloc((size_t)(total ? total : 1) * sizeof *p);  // the family, flat
    int n = 0;
    for (size_t r = 0; r < COUNT(regularisers); r++)
        for (int i = 0; i < ab->n[r]; i++)
            for (int k = 0; k < ab->k_tested; k++) p[n++] = ab->c[r][i].p[k], ab->family += !isnan(ab->c[r][i].p[k]);
    holm_adjust(p, n, p);
    n = 0;
    for (size_t r = 0; r < COUNT(regularisers); r++)
        for (int i = 0; i < ab->n[r]; i++)
            for (int k = 0; k < ab->k_tested; k++) ab->c[r][i].p_holm[k] = p[n++];
    free(p);
}

static void ablations_free(Ablations *ab) {
    for (size_t r = 0; r < COUNT(regularisers); r++) free(ab->c[r]);
}

static Table *ablation(const Analysis *a, const Ablations *ab, int r) {
    const char *reg = regularisers[r];
    char key[64], title[256];
    snprintf(key, sizeof key, "ablations.%s", reg);
    char control[64] = "of equal strength", control_lambda[64] = "λ", l2_words[96];
    if (ab->l2_scale != 1) {
        snprintf(control, sizeof control, "at λ × %g", ab->l2_scale);
        snprintf(control_lambda, sizeof control_lambda, "λ × %g", ab->l2_scale);
    }
    snprintf(l2_words, sizeof l2_words, "plain L2 %s", control);
    snprintf(title, sizeof title, "Ablation of %s: each λ > 0 against λ = 0 and against plain L2 %s", reg, control);
    Table *t = table_new(key, title);
    duplicates_note(t, a);
    table_note(t,
               "matched on every other parameter (the L2 control: " CONTROL " = %s, %s = 0); finished trials; the "
               "paired t-test over the seeds both arms share where there are 2 (repeat r of every configuration has "
               "the seed seed·1000 + r), Welch's t-test over the repeats otherwise (the test column)",
               control_lambda, reg);
    table_note(t,
               "p: the test's; p Holm: adjusted by Holm–Bonferroni over the %d tests of this report (every ablation "
               "table, every metric tested); a verdict only at p Holm < %g; a metric that is NaN in a trial of an arm "
               "is not tested",
               ab->family, REPORT_ALPHA);
    const int k_tested = ab->k_tested;
    const char *const *tested = ab->tested;
    table_note(t, "the tests and the verdict read %s%s; the test twins' differences are shown only",
               k_tested == 3 ? tested[0] : "", k_tested == 3 ? " (the sweep's metric), val_accuracy and reward" : "val_accuracy and reward");
    table_column(t, reg, "λ", COL_REAL, "%g");
    table_column(t, "against", "against", COL_TEXT, NULL);
    param_columns(t, a, 0, reg);
    table_column(t, "n", "n", COL_INT, NULL);
    table_column(t, "n_control", "n ctrl", COL_INT, NULL);
    table_column(t, "test", "test", COL_TEXT, NULL);
    for (int k = 0; k < k_tested; k++) {
        const Metric *m = summary_metric(a->s, tested[k]), *twin = metric_test_twin(m);
        char col[80], head[80];
        snprintf(col, sizeof col, "d_%s", m->name);
        snprintf(head, sizeof head, "Δ %s", m->label);
        table_column(t, col, head, COL_REAL, "%+.4f");
        snprintf(col, sizeof col, "p_%s", m->name);
        table_column(t, col, "p", COL_REAL, "%.3g");
        snprintf(col, sizeof col, "p_holm_%s", m->name);
        table_column(t, col, "p Holm", COL_REAL, "%.3g");
        if (twin) {
            snprintf(col, sizeof col, "d_%s", twin->name);
            snprintf(head, sizeof head, "Δ %s", twin->label);
            table_column(t, col, head, COL_REAL, "%+.4f");
        }
    }
    table_column(t, "verdict", "verdict", COL_TEXT, NULL);
    int any_arm = 0;
    for (int i = 0; i < a->n_configs; i++) any_arm |= lambda_of(&a->configs[i].first->config, reg) > 0;
    for (int i = 0; i < ab->n[r]; i++) {
        const Comparison *x = &ab->c[r][i];
        char against[64], words[1024];
        if (x->vs_l2)
            snprintf(against, sizeof against, CONTROL " = %g", x->lambda * ab->l2_scale);
        else
            snprintf(against, sizeof against, "%s = 0", reg);
        // The verdict on the metrics tested; those NaN in a trial are said apart.
        const char *measured[3];
        double d[3], p[3];
        int k_measured = 0;
        char skipped[128] = "";
        for (int k = 0; k < k_tested; k++) {
            if (x->nan[k])
                snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "%s%s", skipped[0] ? " and " : "",
                         tested[k]);
            else
                measured[k_measured] = tested[k], d[k_measured] = x->d[k], p[k_measured++] = x->p_holm[k];
        }
        words[0] = 0;  // stays empty when every metric is NaN somewhere
        ablation_verdict(words, sizeof words, reg, x->lambda, x->vs_l2 ? l2_words : "λ = 0",
                         attention_names[x->arm->first->config.attention], x->arm->n, x->ctl->n, k_measured, measured,
                         d, p);
        if (skipped[0])
            snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s: NaN in a trial of an arm, no test",
                     words[0] ? "; " : "", skipped);
        const int unpaired = x->arm->n + x->ctl->n - 2 * x->pairs;
        table_row(t);
        table_number(t, x->lambda);
        table_text(t, "%s", against);
        param_cells(t, a, &x->arm->first->config, 0, reg);
        table_number(t, x->arm->n);
        table_number(t, x->ctl->n);
        if (x->pairs < 2)
            table_text(t, "Welch");
        else if (unpaired)
            table_text(t, "paired t, %d pairs (%d unpaired trial%s left out)", x->pairs, unpaired, unpaired == 1 ? "" : "s");
        else
            table_text(t, "paired t, %d pairs", x->pairs);
        for (int k = 0; k < k_tested; k++) {
            table_number(t, x->d[k]);
            table_number(t, x->p[k]);
            table_number(t, x->p_holm[k]);
            if (metric_test_twin(summary_metric(a->s, tested[k]))) table_number(t, x->d_twin[k]);
        }
        table_text(t, "%s", words);
    }
    if (!any_arm)
        table_note(t, "%s is 0 in every trial: nothing to compare", reg);
    else if (!t->n_rows)
        table_note(t, "no finished configuration with %s > 0 has a finished counterpart that differs only in %s "
                      "(or in %s and " CONTROL ")",
                   reg, reg, reg);
    return t;
}

// The dose–response of every regulariser and of plain L2: for each background (the other
// parameters) the configurations in which it is the only λ > 0, with the one where every λ
// is 0, by strength; mean ± sd over their finished repeats of the metrics a regulariser is
// weighed by (the sweep's, val_accuracy) and of what it acts on (Correlation,
// RankDeviation). A curve needs a configuration with the λ > 0.
typedef struct {
    const Config *c;
    int background;  // index in a->configs of the background's first configuration, in table order
    double lambda;
} DosePoint;

static int by_background(const void *x, const void *y) {
    const DosePoint *p = x, *q = y;
    if (p->background != q->background) return p->background < q->background ? -1 : 1;
    return p->lambda < q->lambda ? -1 : p->lambda > q->lambda;
}

static Table *dose_response(const Analysis *a) {
    static const char *const all[] = {"lambda_orth", "lambda_nuclear", "lambda_stability", CONTROL};
    Table *t = table_new("ablations.dose",
                         "Dose–response: each regulariser and plain L2 over their strengths, the rest of the "
                         "configuration fixed");
    table_note(t, "for each background (every other parameter), the configurations in which the regulariser is the "
                  "only λ > 0, and the one with every λ = 0 (λ = 0 of each curve); mean ± sd over finished repeats");
    table_note(t, "read a regulariser's curve against " CONTROL "'s on the same background: what it does beyond plain "
                  "weight decay of a like strength, over the range swept rather than at one calibrated point");
    duplicates_note(t, a);
    table_column(t, "regulariser", "regulariser", COL_TEXT, NULL);
    param_columns(t, a, 0, "lambda_*");
    table_column(t, "lambda", "λ", COL_REAL, "%g");
    table_column(t, "n", "n", COL_INT, NULL);
    const char *names[4];
    int k = 0;
    if (strcmp(a->o->metric, "val_accuracy")) names[k++] = a->o->metric;
    names[k++] = "val_accuracy", names[k++] = "correlation", names[k++] = "rank_deviation";
    for (int j = 0; j < k; j++) metric_column(t, summary_metric(a->s, names[j]), COL_MEAN_SD);
    DosePoint *pt = xcalloc((size_t)a->n_configs + 1, sizeof *pt);
    for (size_t r = 0; r < COUNT(all); r++) {
        int n = 0, dosed = 0;
        for (int i = 0; i < a->n_configs; i++) {
            const Config *c = &a->configs[a->order[i]];
            int others = 0;
            for (size_t q = 0; q < COUNT(all); q++) others |= q != r && lambda_of(&c->first->config, all[q]) != 0;
            if (others || !c->n) continue;
            TrialConfig bare = c->first->config;
            *lambda_at(&bare, all[r]) = 0;
            const Config *b = find_config(a, &bare);
            int background = i;  // the bare configuration's place in table order when it ran
            for (int j = 0; b && j < a->n_configs; j++)
                if (&a->configs[a->order[j]] == b) background = j;
            pt[n++] = (DosePoint){c, background, lambda_of(&c->first->config, all[r])};
            dosed |= pt[n - 1].lambda != 0;
        }
        if (!dosed) continue;
        qsort(pt, (size_t)n, sizeof *pt, by_background);
        for (int i = 0; i < n; i++) {
            int curve = 0;  // a background with the regulariser > 0 somewhere
            for (int j = 0; j < n; j++) curve |= pt[j].background == pt[i].background && pt[j].lambda != 0;
            if (!curve) continue;
            table_row(t);
            table_text(t, "%s", all[r]);
            param_cells(t, a, &pt[i].c->first->config, 0, "lambda_*");
            table_number(t, pt[i].lambda);
            table_number(t, pt[i].c->n);
            for (int j = 0; j < k; j++) {
                const SampleStats st = stats_of(pt[i].c->ok, pt[i].c->n, summary_metric(a->s, names[j]));
                table_mean_sd(t, st.mean, st.sd);
            }
        }
    }
    free(pt);
    if (!t->n_rows) table_note(t, "no regulariser and no " CONTROL " was swept above 0 with the rest fixed");
    return t;
}

// ---------------------------------------------------------------- failures and pruning

static Table *by_status(const Analysis *a) {
    const SweepSummary *s = a->s;
    Table *t = table_new("failures.by_status", "Failures and pruning: trials by status");
    table_column(t, "status", "status", COL_TEXT, NULL);
    table_column(t, "n", "trials", COL_INT, NULL);
    // in the order of the status table: ok, pruned, failed
    for (int k = 0; k < TRIAL_STATUS_COUNT; k++) {
        int n = 0;
        for (int i = 0; i < s->n_trials; i++) n += s->trials[i].status == (TrialStatus)k;
        if (!n) continue;
        table_row(t);
        table_text(t, "%s", trial_status_names[k]);
        table_number(t, n);
    }
    return t;
}

typedef struct {
    const char *status;
    char reason[256];
    int n;
} ReasonCount;

static int by_count(const void *x, const void *y) {
    const ReasonCount *a = x, *b = y;
    if (a->n != b->n) return b->n - a->n;
    const int c = strcmp(a->status, b->status);
    return c ? c : strcmp(a->reason, b->reason);
}

static Table *by_reason(const Analysis *a) {
    const SweepSummary *s = a->s;
    Table *t = table_new("failures.by_reason", "Failures and pruning: trials by reason (the text before \"at step\"; "
                                               "the numbers of a program's stderr line as N)");
    table_column(t, "status", "status", COL_TEXT, NULL);
    table_column(t, "reason", "reason", COL_TEXT, NULL);
    table_column(t, "n", "trials", COL_INT, NULL);
    ReasonCount *r = xcalloc((size_t)(s->n_trials ? s->n_trials : 1), sizeof *r);
    int n = 0;
    for (int i = 0; i < s->n_trials; i++) {
        const TrialResult *x = &s->trials[i];
        if (!x->reason[0]) continue;
        ReasonCount c = {.status = trial_status_names[x->status]};
        trial_reason_key(x->reason, c.reason, sizeof c.reason);
        int k = 0;
        while (k < n && (strcmp(r[k].status, c.status) || strcmp(r[k].reason, c.reason))) k++;
        if (k == n) r[n++] = c;
        r[k].n++;
    }
    qsort(r, (size_t)n, sizeof *r, by_count);
    for (int k = 0; k < n; k++) {
        table_row(t);
        table_text(t, "%s", r[k].status);
        table_text(t, "%s", r[k].reason);
        table_number(t, r[k].n);
    }
    free(r);
    return t;
}

// The steps trial x was to run: its steps parameter; when that is 0 (a budget in epochs,
// which ASHA does not allow) the steps it took if it finished, else those of a finished
// trial with the same training set, epochs and batch (epochs × examples / batch, as
// train_total_steps counts them); -1 if none finished.
static long budget_steps(const Analysis *a, const TrialResult *x) {
    const TrialConfig *c = &x->config;
    if (c->steps > 0) return c->steps;
    if (is_ok(x)) return x->steps;
    for (int i = 0; i < a->n_ok; i++) {
        const TrialConfig *o = &a->ok[i]->config;
        if (o->steps == 0 && o->task == c->task && !strcmp(o->data_dir, c->data_dir) && o->seq_len == c->seq_len &&
            o->recall_pairs == c->recall_pairs && o->recall_vocab == c->recall_vocab && o->epochs == c->epochs &&
            o->batch == c->batch)
            return a->ok[i]->steps;
    }
    return -1;
}

static Table *asha(const Analysis *a) {
    const SweepSummary *s = a->s;
    Table *t = table_new("failures.asha", "Failures and pruning: steps saved by ASHA, Σ (budget − steps taken) over the pruned trials");
    t->single = 1;
    table_column(t, "pruned", "pruned trials", COL_INT, NULL);
    table_column(t, "steps_saved", "steps saved", COL_INT, NULL);
    table_column(t, "budget_steps", "full budget (steps)", COL_INT, NULL);
    table_column(t, "fraction_saved", "saved (fraction of the budget)", COL_REAL, "%.3f");
    long pruned = 0, saved = 0, budget = 0, unknown = 0;
    for (int i = 0; i < s->n_trials; i++) {
        const TrialResult *x = &s->trials[i];
        const long b = budget_steps(a, x);
        if (b < 0) {
            unknown++;
            continue;
        }
        budget += b;
        if (x->status == TRIAL_PRUNED) {
            pruned++;
            saved += b > x->steps ? b - x->steps : 0;
        }
    }
    table_note(t, "full budget: Σ over the trials of the steps each was to run (its steps parameter)");
    if (unknown)
        table_note(t, "%ld trials with a budget in epochs that no finished trial of the same size shows are left out",
                   unknown);
    table_row(t);
    table_number(t, (double)pruned);
    table_number(t, (double)saved);
    table_number(t, (double)budget);
    table_number(t, budget > 0 ? (double)saved / (double)budget : NAN);
    return t;
}

// ---------------------------------------------------------------- the verdict

// The verdict's tables (report/verdict.h) over the trials of the statistics: one per seed
// of each configuration, the configurations in table order.
static void verdict(const Analysis *a, Table **tau, Table **fit) {
    VerdictTrial *v = xcalloc((size_t)(a->n_ok ? a->n_ok : 1), sizeof *v);
    int n = 0;
    for (int i = 0; i < a->n_configs; i++) {
        const Config *c = &a->configs[a->order[i]];
        for (int k = 0; k < c->n; k++) v[n++] = (VerdictTrial){c->ok[k], i, variant_of(a, &c->ok[k]->config)};
    }
    verdict_tables(&(VerdictInput){a->s, a->o, n, v, a->n_variants, a->variants}, tau, fit);
    free(v);
}

// ---------------------------------------------------------------- the report

void report_build(const SweepSummary *s, const ReportOptions *o, Report *out) {
    gsl_set_error_handler_off();  // a results file's values never abort the report: GSL returns NaN instead
    Analysis a;
    analyse(s, o, &a);
    Ablations ab;
    ablations_analyse(&a, &ab);
    Table *verdict_tau, *verdict_fit;
    verdict(&a, &verdict_tau, &verdict_fit);
    out->volume = (ParetoVolume){0};
    Table *tables[] = {leaderboard(&a, o),    verdict_tau,           verdict_fit,
                       by_variant(&a),        by_configuration(&a),  pareto(&a, &out->volume),
                       ablation(&a, &ab, 0), ablation(&a, &ab, 1), ablation(&a, &ab, 2), dose_response(&a),
                       by_status(&a),         by_reason(&a),         asha(&a)};
    _Static_assert(COUNT(regularisers) == 3, "one ablation table per regulariser");
    out->n = (int)COUNT(tables);
    out->tables = xmalloc(sizeof tables);
    memcpy(out->tables, tables, sizeof tables);
    ablations_free(&ab);
    analysis_free(&a);
}

void report_free(Report *r) {
    for (int i = 0; i < r->n; i++) table_free(r->tables[i]);
    free(r->tables);
    r->n = 0;
}
