// html.c: the JSON report and the HTML page around it (html.h).
#include "report/html.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"
#include "report/importance.h"
#include "space/asha.h"
#include "trial/runner.h"

// The page's script and style, compiled in from src/report/js/ (cmake/embed_text.cmake).
extern const char report_page_js[], report_page_css[];

void report_print_json(FILE *f, const SweepSummary *s, const char *path, const ReportOptions *o, const Report *r,
                       JsonPut put) {
    cJSON *head = json_must(cJSON_CreateObject());
    json_must(cJSON_AddStringToObject(head, "file", path));
    json_must(cJSON_AddStringToObject(head, "sweep", s->sweep));
    json_must(cJSON_AddStringToObject(head, "metric", o->metric));
    json_must(cJSON_AddStringToObject(head, "goal", o->maximize ? "maximize" : "minimize"));
    json_must(cJSON_AddNumberToObject(head, "trials", s->n_trials));
    json_must(cJSON_AddBoolToObject(head, "being_written", s->being_written));
    char *text = cJSON_PrintUnformatted(head);
    cJSON_Delete(head);
    if (!text) die(EXIT_RUNTIME, "out of memory printing JSON");
    put(f, text, strlen(text) - 1);  // all but its closing brace
    cJSON_free(text);
    table_print_json_members((const Table *const *)r->tables, r->n, 0, f, put);
    if (r->volume.k) {  // {"value", "reference": {objective: its worst over the finished trials}}
        cJSON *v = json_must(cJSON_CreateObject());
        json_must(cJSON_AddNumberToObject(v, "value", r->volume.hypervolume));
        cJSON *ref = json_must(cJSON_AddObjectToObject(v, "reference"));
        for (int j = 0; j < r->volume.k; j++)
            json_must(cJSON_AddNumberToObject(ref, r->volume.name[j], r->volume.reference[j]));
        static const char key[] = ",\"pareto_hypervolume\":";
        put(f, key, strlen(key));
        if (!(text = cJSON_PrintUnformatted(v))) die(EXIT_RUNTIME, "out of memory printing JSON");
        put(f, text, strlen(text));
        cJSON_free(text);
        cJSON_Delete(v);
    }
    put(f, "}", 1);
}

// ---------------------------------------------------------------- what the charts need

// The distributions drawn on a log axis (scripts/analyze.py draws them so too).
static int log_distribution(Distribution d) {
    switch (d) {
    case DIST_LOG_UNIFORM_VALUES:
    case DIST_LOG_UNIFORM:
    case DIST_Q_LOG_UNIFORM:
    case DIST_Q_LOG_UNIFORM_VALUES:
    case DIST_INV_LOG_UNIFORM:
    case DIST_INV_LOG_UNIFORM_VALUES:
    case DIST_LOG_NORMAL:
    case DIST_Q_LOG_NORMAL: return 1;
    default: return 0;
    }
}

static cJSON *numbers(const double *x, int n) {
    cJSON *a = json_must(cJSON_CreateArray());
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, json_must(cJSON_CreateNumber(x[i])));  // NaN prints null
    return a;
}

// The page's parameters: those of sweep_params that vary over the trials, each {name,
// text: its values are words, log: drawn on a log axis, distribution}; their specs to
// params[0..*n_params).
static cJSON *parameters(const SweepSummary *s, const SweepSpec *spec, const SweepParams *cand, const ParamSpec **params,
                         int *n_params) {
    cJSON *out = json_must(cJSON_CreateArray());
    *n_params = 0;
    ConfigView *v = config_view_new(s);
    for (int k = 0; k < cand->n && s->n_trials; k++) {
        const ParamSpec *p = cand->p[k];
        char a[CONFIG_TEXT + 64], b[CONFIG_TEXT + 64];
        config_format(cand->first, p, a, sizeof a);
        int varies = 0;
        for (int t = 1; t < s->n_trials && !varies; t++) {
            config_format(config_view(v, &s->trials[t]), p, b, sizeof b);
            varies = strcmp(a, b) != 0;
        }
        if (!varies) continue;
        params[(*n_params)++] = p;
        const SpaceParam *sp = sweep_space_param(spec, p->name);
        cJSON *o = json_must(cJSON_CreateObject());
        json_must(cJSON_AddStringToObject(o, "name", p->name));
        json_must(cJSON_AddBoolToObject(o, "text", p->type != PT_INT && p->type != PT_REAL));
        json_must(cJSON_AddBoolToObject(o, "log", sp && log_distribution(sp->dist)));
        if (sp) json_must(cJSON_AddStringToObject(o, "distribution", space_distribution_name(sp->dist)));
        cJSON_AddItemToArray(out, o);
    }
    free(v);
    return out;
}

// One trial as the page shows it: trial_result_to_json's object, with "value" (the report's
// metric), "params" (the page's parameters: a number, a text, or null where one does not
// apply), seed, host, rank, times, the curve, the invariant trace and a program's run.
static cJSON *page_trial(const TrialResult *t, const Metric *m, const ParamSpec *const *params, int n_params) {
    cJSON *o = trial_result_to_json(t);
    json_must(cJSON_AddNumberToObject(o, "value", metric_value(t, m)));
    cJSON *p = json_must(cJSON_AddObjectToObject(o, "params"));
    for (int i = 0; i < n_params; i++) {
        char text[CONFIG_TEXT + 64];
        if (!config_relevant(&t->config, params[i]))
            json_must(cJSON_AddNullToObject(p, params[i]->name));
        else if (params[i]->type == PT_INT || params[i]->type == PT_REAL)
            json_must(cJSON_AddNumberToObject(p, params[i]->name, config_number(&t->config, params[i])));
        else
            config_format(&t->config, params[i], text, sizeof text), json_must(cJSON_AddStringToObject(p, params[i]->name, text));
    }
    json_must(cJSON_AddNumberToObject(o, "seed", t->config.seed));
    json_must(cJSON_AddStringToObject(o, "host", t->host));
    json_must(cJSON_AddNumberToObject(o, "rank", t->rank));
    json_must(cJSON_AddNumberToObject(o, "start_time", t->start_time));
    json_must(cJSON_AddNumberToObject(o, "end_time", t->end_time));
    const int n = t->n_curve;
    double *col = xmalloc((size_t)(n ? n : 1) * 6 * sizeof *col);
    double *step = col, *acc = col + n, *loss = col + 2 * n, *train = col + 3 * n, *corr_z = col + 4 * n,
           *rank_z = col + 5 * n;
    int traced = 0;
    for (int i = 0; i < n; i++) {
        const CurvePoint *pt = &t->curve[i];
        step[i] = pt->step, acc[i] = pt->val_accuracy, loss[i] = pt->val_loss, train[i] = pt->train_loss;
        const EvalPoint e = trial_eval_point(t, pt, &t->reward_spec);
        corr_z[i] = e.terms.correlation_z, rank_z[i] = e.terms.eff_rank_z;
        traced |= !isnan(e.terms.correlation_z);
    }
    cJSON *c = json_must(cJSON_AddObjectToObject(o, "curve"));
    cJSON_AddItemToObject(c, "step", numbers(step, n));
    cJSON_AddItemToObject(c, "val_accuracy", numbers(acc, n));
    cJSON_AddItemToObject(c, "val_loss", numbers(loss, n));
    cJSON_AddItemToObject(c, "train_loss", numbers(train, n));
    if (traced) {
        cJSON_AddItemToObject(c, "correlation_z", numbers(corr_z, n));
        cJSON_AddItemToObject(c, "eff_rank_z", numbers(rank_z, n));
    }
    free(col);
    if (t->run.command) json_must(cJSON_AddStringToObject(o, "command", t->run.command));
    if (t->run.stderr_tail) json_must(cJSON_AddStringToObject(o, "stderr_tail", t->run.stderr_tail));
    return o;
}

// The page's object but its trials: "trials" is its last member, an empty array (put_data
// prints each trial into it); params[0..*n_params): the page's parameters, of cand (room
// for cand->n).
static cJSON *page_json(const SweepSummary *s, const SweepSpec *spec, const SweepParams *cand, const ParamSpec **params,
                        int *n_params) {
    cJSON *page = json_must(cJSON_CreateObject());
    json_must(cJSON_AddStringToObject(page, "yaml", s->yaml ? s->yaml : ""));
    json_must(cJSON_AddBoolToObject(page, "program", cand->first && cand->first->n_program > 0));
    json_must(cJSON_AddBoolToObject(page, "space_loaded", spec != NULL));
    cJSON_AddItemToObject(page, "params", parameters(s, spec, cand, params, n_params));
    int rungs[64], n_rungs = spec && spec->asha ? asha_rungs(spec, rungs, 64) : 0;
    double r[64];
    for (int i = 0; i < n_rungs; i++) r[i] = rungs[i];
    cJSON_AddItemToObject(page, "rungs", numbers(r, n_rungs));
    const ParetoObjectives po = pareto_objectives(s);
    cJSON *objectives = json_must(cJSON_AddArrayToObject(page, "objectives"));
    for (int j = 0; s->n_objectives && j < po.k; j++) {
        cJSON *x = json_must(cJSON_CreateObject());
        json_must(cJSON_AddStringToObject(x, "name", po.metric[j]->name));
        json_must(cJSON_AddBoolToObject(x, "maximize", po.maximize[j]));
        cJSON_AddItemToArray(objectives, x);
    }
    json_must(cJSON_AddArrayToObject(page, "trials"));
    return page;
}

// ---------------------------------------------------------------- the page

// text as HTML character data (the file's bytes are untrusted)
static void put_escaped(FILE *f, const char *text) {
    for (const char *c = text; *c; c++) {
        const char *e = *c == '<' ? "&lt;" : *c == '>' ? "&gt;" : *c == '&' ? "&amp;" : *c == '"' ? "&quot;" : NULL;
        if (e)
            fputs(e, f);
        else
            fputc(*c, f);
    }
}

// JSON text inside the page's script element, where only "</" could end it early: every
// '<' (in its strings only) is written as the escape \u003c, which JSON.parse reads back.
static void put_json(FILE *f, const char *json, size_t len) {
    for (const char *c = json, *from = json, *end = json + len;; c++) {
        if (c == end || *c == '<') {
            fwrite(from, 1, (size_t)(c - from), f);
            if (c == end) break;
            fputs("\\u003c", f);
            from = c + 1;
        }
    }
}

// The page's data, {"report": ..., "page": {..., "trials": [...]}}, as cJSON would print
// the whole object, one table row and one trial at a time: every row's and trial's object
// is printed and freed before the next is made, so the page holds no tree of every
// trial's values or of a whole table; each trial's group is read again for it (summary.h
// summary_groups_read: its host, times, curve and trace are not in its row).
static void put_data(FILE *f, const SweepSummary *s, const char *path, const ReportOptions *o, const Report *r,
                     const SweepSpec *spec) {
    SweepParams cand;  // a program's parameters' specs live here: freed after the trials
    sweep_params(s, &cand);
    const ParamSpec **params = xcalloc((size_t)cand.n + 1, sizeof *params);
    int n_params;
    fputs("{\"report\":", f);
    report_print_json(f, s, path, o, r, put_json);
    cJSON *page = page_json(s, spec, &cand, params, &n_params);  // "trials" last, empty
    char *head = cJSON_PrintUnformatted(page);
    cJSON_Delete(page);
    static const char tail[] = "]}";  // the end of the empty "trials" and of "page"
    if (!head) die(EXIT_RUNTIME, "out of memory printing the page's JSON");
    const size_t len = strlen(head);
    if (len < strlen(tail) || strcmp(head + len - strlen(tail), tail))
        die(EXIT_RUNTIME, "the page's JSON does not end with its (empty) list of trials");
    fputs(",\"page\":", f);
    put_json(f, head, len - strlen(tail));
    cJSON_free(head);
    const Metric *m = summary_metric(s, o->metric);
    SummaryGroups groups;
    char err[1024];
    if (summary_groups_open(&groups, path, err, sizeof err) != 0) die(EXIT_BADINPUT, "report: %s", err);
    for (int i = 0; i < s->n_trials; i++) {
        TrialResult trial;
        if (summary_groups_read(&groups, s, &s->trials[i], &trial) != 0) die(EXIT_BADINPUT, "report: %s", err);
        cJSON *t = page_trial(&trial, m, params, n_params);
        trial_result_free(&trial);
        char *text = cJSON_PrintUnformatted(t);
        cJSON_Delete(t);
        if (!text) die(EXIT_RUNTIME, "out of memory printing the page's JSON");
        if (i) fputc(',', f);
        put_json(f, text, strlen(text));
        cJSON_free(text);
    }
    summary_groups_close(&groups);
    fputs("]}}", f);  // the trials, the page, the data
    free(params);
    sweep_params_free(&cand);
}

void report_html(FILE *f, const SweepSummary *s, const char *path, const ReportOptions *o, const Report *r,
                 const SweepSpec *spec) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>attnsweep: ", f);
    put_escaped(f, s->sweep ? s->sweep : "");
    fputs("</title>\n<style>\n", f);
    fputs(report_page_css, f);
    fputs("</style>\n</head>\n<body>\n<div id=\"app\"></div>\n<script type=\"application/json\" id=\"data\">", f);
    put_data(f, s, path, o, r, spec);
    fputs("</script>\n<script>\n", f);
    fputs(report_page_js, f);
    fputs("</script>\n</body>\n</html>\n", f);
}
