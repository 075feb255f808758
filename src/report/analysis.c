// analysis.c: the sweep's structure every section of the report reads (analysis.h): its
// parameters, variants, finished trials and configurations with their repeats, and the
// columns and cells the tables of trials share.
#include "report/analysis.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

// A real parameter (a λ) of a configuration, by name.
double *lambda_at(TrialConfig *c, const char *name) { return (double *)((char *)c + config_find(name)->offset); }
double lambda_of(const TrialConfig *c, const char *name) {
    return *(const double *)((const char *)c + config_find(name)->offset);
}

// ---------------------------------------------------------------- the sweep's structure

// The key of c's configuration, exactly as long as it is (one is held per configuration):
// the parameters that vary over the sweep's trials (the others are the same in every key)
// and every λ, which the ablations' and the dose-response's look-ups change (find_config).
// Two keys compare as the keys of every parameter would: they first differ in the same
// parameter, each value ending in '\n'.
static char *config_key(const Analysis *a, const TrialConfig *c) {
    size_t cap = 256, len = 0;
    char *key = xmalloc(cap);
    key[0] = 0;
    for (int i = 0; i < a->n_params; i++) {
        const ParamSpec *p = a->params[i];
        if (!strcmp(p->name, "seed") || !(a->swept[i] || !strncmp(p->name, "lambda_", strlen("lambda_")))) continue;
        char value[CONFIG_TEXT + 64];
        config_format(c, p, value, sizeof value);
        const size_t need = strlen(p->name) + strlen(value) + 3;
        if (len + need > cap) key = xrealloc(key, cap = 2 * (len + need));
        len += (size_t)snprintf(key + len, cap - len, "%s=%s\n", p->name, value);
    }
    return xrealloc(key, len + 1);
}

// For qsort and bsearch of Config and of the Keyed trials below: both begin with the key.
static int by_key(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

const Config *find_config(const Analysis *a, const TrialConfig *c) {
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
const char *variant_text(const TrialConfig *c) {
    if (c->n_program == 0) return attention_names[c->attention];
    const ProgramValue *v = config_program_find(c, "attention");
    return v && v->type == PT_TEXT && v->set ? v->text : NULL;
}

// Index of c's variant in a->variants (-1: none).
int variant_of(const Analysis *a, const TrialConfig *c) {
    const char *v = variant_text(c);
    for (int k = 0; v && k < a->n_variants; k++)
        if (!strcmp(a->variants[k], v)) return k;
    return -1;
}

// The parameters (see Analysis) and the variants: the attention variants in their order,
// or a program's (copies of its texts) in the order of their first trials.
static void parameters(const SweepSummary *s, Analysis *a, ConfigView *v) {
    const TrialConfig *first = a->first = s->n_trials ? summary_config(s, &s->trials[0]) : NULL;
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
    for (int t = 0; t < s->n_trials; t++) {
        const TrialConfig *c = config_view(v, &s->trials[t]);
        if (variant_text(c) && variant_of(a, c) < 0) a->variants[a->n_variants++] = xstrdup(variant_text(c));
    }
}

void analyse(const SweepSummary *s, const ReportOptions *o, Analysis *a) {
    memset(a, 0, sizeof *a);
    a->s = s;
    a->o = o;
    const Metric *m = summary_metric(s, o->metric), *twin = metric_test_twin(m);
    if (!m->shown) a->extra[a->n_extra++] = m;
    if (twin && !twin->shown) a->extra[a->n_extra++] = twin;
    const int n = s->n_trials;
    ConfigView *v = config_view_new(s);
    parameters(s, a, v);
    a->swept = xcalloc((size_t)a->n_params, sizeof *a->swept);
    for (int i = 0; i < a->n_params && n > 0; i++) {
        const ParamSpec *p = a->params[i];
        char first[CONFIG_TEXT + 64], other[CONFIG_TEXT + 64];
        config_format(a->first, p, first, sizeof first);
        for (int t = 1; t < n && !a->swept[i]; t++) {
            config_format(config_view(v, &s->trials[t]), p, other, sizeof other);
            a->swept[i] = strcmp(first, other) != 0;
        }
    }
    a->ok = xcalloc((size_t)n, sizeof *a->ok);
    for (int t = 0; t < n; t++)
        if (is_ok(&s->trials[t])) a->ok[a->n_ok++] = &s->trials[t];

    // Trials by configuration key: each run of equal keys is one configuration.
    typedef struct {
        char *key;
        const SummaryRow *t;
    } Keyed;
    Keyed *all = xcalloc((size_t)n, sizeof *all);
    for (int t = 0; t < n; t++) all[t] = (Keyed){config_key(a, config_view(v, &s->trials[t])), &s->trials[t]};
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
            for (int j = t; j < k && !seen; j++) seen = all[j].t->seed == all[k].t->seed;
            c->seeds += !seen;
            if (k > t) free(all[k].key);
        }
        a->has_repeats |= c->seeds > 1;
        t = end;
    }
    free(all);
    for (int i = 0; i < a->n_ok; i++) {  // in id order, so each ok[] is by id and keeps a seed's first
        Config *c = (Config *)find_config(a, config_view(v, a->ok[i]));
        int seen = 0;
        for (int j = 0; j < c->n && !seen; j++) seen = c->ok[j]->seed == a->ok[i]->seed;
        if (seen)
            a->duplicates++;
        else
            c->ok[c->n++] = a->ok[i];
    }
    ConfigPlace *place = xcalloc((size_t)(a->n_configs ? a->n_configs : 1), sizeof *place);
    for (int i = 0; i < a->n_configs; i++)
        place[i] = (ConfigPlace){variant_of(a, config_view(v, a->configs[i].first)), a->configs[i].first->id, i};
    qsort(place, (size_t)a->n_configs, sizeof *place, by_place);
    a->order = xcalloc((size_t)(a->n_configs ? a->n_configs : 1), sizeof *a->order);
    for (int i = 0; i < a->n_configs; i++) a->order[i] = place[i].index;
    free(place);
    free(v);
}

void analysis_free(Analysis *a) {
    for (int i = 0; i < a->n_configs; i++) free(a->configs[i].key), free(a->configs[i].ok);
    free(a->configs);
    free(a->order);
    free(a->ok);
    free(a->swept);
    free(a->params);
    for (int k = 0; a->program && k < a->n_variants; k++) free((char *)a->variants[k]);
    free(a->program);
    free(a->columns);
    free(a->variants);
    free(a->first);
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

void param_columns(Table *t, const Analysis *a, int with_seed, const char *skip) {
    if (a->n_variants) table_column(t, "attention", "variant", COL_TEXT, NULL);
    for (int i = 0; i < a->n_params; i++) {
        if (!param_shown(a, i, with_seed, skip)) continue;
        const ParamSpec *p = a->params[i];
        const ColumnKind kind = p->type == PT_INT ? COL_INT : p->type == PT_REAL ? COL_REAL : COL_TEXT;
        table_column(t, config_column(p), p->name, kind, "%g");
    }
}

// A parameter that does not apply to the configuration (core_rank of mha) is empty.
void param_cells(Table *t, const Analysis *a, const TrialConfig *c, int with_seed, const char *skip) {
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
void metric_column(Table *t, const Metric *m, ColumnKind kind) {
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

void shown_columns(Table *t, const Analysis *a, ColumnKind kind) {
    const Metric *m[METRIC_NAMES];
    const int n = table_metrics(a, m);
    for (int i = 0; i < n; i++) metric_column(t, m[i], kind);
}

void shown_cells(Table *t, const Analysis *a, const SummaryRow *x) {
    const Metric *m[METRIC_NAMES];
    const int n = table_metrics(a, m);
    for (int i = 0; i < n; i++) table_number(t, summary_value(x, m[i]));
}

SampleStats stats_of(const SummaryRow *const *t, int n, const Metric *m) {
    double *x = xmalloc((size_t)(n ? n : 1) * sizeof *x);
    for (int i = 0; i < n; i++) x[i] = summary_value(t[i], m);
    SampleStats s = sample_stats(x, n);
    free(x);
    return s;
}

// n, then mean ± sd of the shown metrics (and the report's).
void stats_cells(Table *t, const Analysis *a, const SummaryRow *const *trials, int n) {
    const Metric *m[METRIC_NAMES];
    const int k = table_metrics(a, m);
    table_number(t, n);
    for (int i = 0; i < k; i++) {
        const SampleStats s = stats_of(trials, n, m[i]);
        table_mean_sd(t, s.mean, s.sd);
    }
}

// "the sweep's metric val_loss (lower is better)", a note for the tables of statistics.
void metric_note(Table *t, const Analysis *a) {
    table_note(t, "the sweep's metric: %s (%s is better), beside val_accuracy and reward", a->o->metric,
               a->o->maximize ? "higher" : "lower");
}

// The note of the tables of statistics when a configuration ran twice with one seed.
void duplicates_note(Table *t, const Analysis *a) {
    if (a->duplicates)
        table_note(t, "%d finished trial%s repeated a configuration with the same seed (the same run) and count once",
                   a->duplicates, a->duplicates == 1 ? "" : "s");
}
