// schema.c: the results file's vocabulary (schema.h).
#include "store/schema.h"

#include <stdlib.h>

#include "common/util.h"
#include "model/train.h"
#include "params/config.h"
#include "trial/trial.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define CURVE(f) offsetof(CurvePoint, f)

const SchemaColumn schema_curve_columns[] = {
    {"step", COLUMN_INT32, "", CURVE(step), "", "optimiser steps taken at this evaluation"},
    {"lr", COLUMN_FLOAT64, "", CURVE(lr), "", "the learning rate of the last step"},
    {"train_loss", COLUMN_FLOAT64, "nats", CURVE(train_loss), "", "mean training loss since the previous evaluation"},
    {"val_loss", COLUMN_FLOAT64, "nats", CURVE(val_loss), "", "validation loss"},
    {"val_accuracy", COLUMN_FLOAT64, "", CURVE(val_accuracy), "", "validation accuracy"},
    {"penalty", COLUMN_FLOAT64, "", CURVE(penalty), "", "sum of the regularisers' lambda-weighted penalties"},
    {"seconds", COLUMN_FLOAT64, "s", CURVE(seconds), "", "wall time since the start of training"},
};
const int n_schema_curve_columns = COUNT(schema_curve_columns);

const SchemaColumn schema_trace_columns[] = {
    {"step", COLUMN_INT32, "", 0, "", "optimiser steps taken at this evaluation"},
    {"correlation", COLUMN_FLOAT64, "", 0, "layers", "Correlation of each layer's heads"},
    {"eff_rank", COLUMN_FLOAT64, "", 0, "layers, 4", "effective rank of each mode of each layer's tensor"},
    {"head_sv", COLUMN_FLOAT64, "", 0, "layers, heads", "singular values of each layer's head unfolding"},
    {"chance", COLUMN_FLOAT64, "", 0, "layers, 4",
     "the rotation nulls: Correlation's mean and sd, the heads' effective rank's mean and sd"},
};
const int n_schema_trace_columns = COUNT(schema_trace_columns);

const SchemaAttribute schema_root_attributes[] = {
    {"format_version", "int32", "this layout's version (readers refuse others)"},
    {"schema", "string", "this vocabulary as JSON (attnsweep schema --json)"},
    {"version", "string", "the attnsweep that wrote the file"},
    {"reward_terms", "string", "\"beyond chance\": the reward charges each term less its chance"},
    {"sweep", "string", "the sweep's name"},
    {"yaml", "string", "the search space as written (attnsweep train: its configuration)"},
    {"metric", "string", "what the sweep is ranked by: a metric below or the program's own"},
    {"goal", "string", "maximize or minimize"},
    {"objectives", "string", "motpe's objectives as JSON [{name, goal}], [] for one metric"},
    {"until_stopped", "int32", "1: a sampled sweep without a number of trials, run until stopped"},
    {"seed", "int32", "the sweep's seed"},
    {"start_time", "float64", "Unix time the sweep started"},
    {"end_time", "float64", "Unix time it ended (absent while it runs)"},
    {"journal_end", "int64", "the journal's length when a run closed the file, every trial recorded before it in the "
                             "file (absent while a run writes it): a resume keeps such a file"},
};
const int n_schema_root_attributes = COUNT(schema_root_attributes);

static const char *const column_types[] = {[COLUMN_INT32] = "int32", [COLUMN_INT64] = "int64",
                                           [COLUMN_FLOAT64] = "float64", [COLUMN_TEXT] = "string"};
static const char *const metric_uses[] = {[METRIC_DECIDES] = "decides", [METRIC_RANKS] = "ranks",
                                          [METRIC_SHOWN] = "shown"};

static cJSON *column_json(const char *name, ColumnType type, const char *unit, const char *shape, const char *about) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", name);
    cJSON_AddStringToObject(c, "type", column_types[type]);
    cJSON_AddStringToObject(c, "unit", unit);
    if (shape && shape[0]) cJSON_AddStringToObject(c, "shape", shape);
    cJSON_AddStringToObject(c, "about", about);
    return c;
}

static cJSON *trial_columns_json(const TrialColumn *cols, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, column_json(cols[i].name, cols[i].type, cols[i].unit, "", cols[i].about));
    return a;
}

static cJSON *schema_columns_json(const SchemaColumn *cols, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, column_json(cols[i].name, cols[i].type, cols[i].unit, cols[i].shape, cols[i].about));
    return a;
}

static cJSON *metrics_json(const Metric *ms, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        const Metric *m = &ms[i];
        cJSON *o = column_json(m->name, m->integer ? COLUMN_INT64 : COLUMN_FLOAT64, m->unit, "", m->label);
        cJSON_AddStringToObject(o, "goal", m->maximize ? "maximize" : "minimize");
        cJSON_AddStringToObject(o, "use", metric_uses[m->use]);
        cJSON_AddBoolToObject(o, "charlm_only", m->charlm_only);
        cJSON_AddBoolToObject(o, "shown", m->shown);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

// The engine's parameters as /summary holds them (text parameters are in each trial's
// config attribute only).
static cJSON *parameters_json(void) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < config_nparams; i++) {
        const ParamSpec *p = &config_params[i];
        if (p->type == PT_TEXT) continue;
        const ColumnType t = p->type == PT_INT ? COLUMN_INT32 : p->type == PT_REAL ? COLUMN_FLOAT64 : COLUMN_TEXT;
        cJSON_AddItemToArray(a, column_json(config_column(p), t, "", "", p->help));
    }
    return a;
}

cJSON *schema_json(void) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "format_version", SCHEMA_FORMAT_VERSION);
    cJSON *statuses = cJSON_AddArrayToObject(j, "statuses");
    for (int s = 0; s < TRIAL_STATUS_COUNT; s++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", trial_status_names[s]);
        cJSON_AddBoolToObject(o, "measured", trial_status_measured((TrialStatus)s));
        cJSON_AddBoolToObject(o, "recorded", s != TRIAL_INTERRUPTED);
        cJSON_AddItemToArray(statuses, o);
    }
    cJSON_AddItemToObject(j, "metrics", metrics_json(metrics, n_metrics));
    cJSON_AddItemToObject(j, "costs", metrics_json(cost_metrics, n_cost_metrics));
    cJSON *tables = cJSON_AddObjectToObject(j, "tables");
    cJSON *summary = cJSON_AddObjectToObject(tables, "summary");
    cJSON_AddStringToObject(summary, "path", "/summary");
    cJSON_AddStringToObject(summary, "order",
                            "lead, parameters, metrics, the program's own metric (its name), trail");
    cJSON_AddItemToObject(summary, "lead", trial_columns_json(trial_lead_columns, n_trial_lead_columns));
    cJSON_AddItemToObject(summary, "trail", trial_columns_json(trial_trail_columns, n_trial_trail_columns));
    cJSON_AddItemToObject(summary, "parameters", parameters_json());
    cJSON_AddStringToObject(summary, "program_parameters",
                            "a program's sweep: its own parameters in their order instead, config_NAME where NAME "
                            "is a column above");
    cJSON_AddNumberToObject(summary, "status_bytes", STATUS_COLUMN_LEN);
    cJSON *curves = cJSON_AddObjectToObject(tables, "curves");
    cJSON_AddStringToObject(curves, "path", "/trials/NNNNNN/curves");
    cJSON_AddItemToObject(curves, "columns", schema_columns_json(schema_curve_columns, n_schema_curve_columns));
    cJSON *trace = cJSON_AddObjectToObject(tables, "invariants");
    cJSON_AddStringToObject(trace, "path", "/trials/NNNNNN/invariants");
    cJSON_AddItemToObject(trace, "columns", schema_columns_json(schema_trace_columns, n_schema_trace_columns));
    cJSON *root = cJSON_AddArrayToObject(j, "root_attributes");
    for (int i = 0; i < n_schema_root_attributes; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", schema_root_attributes[i].name);
        cJSON_AddStringToObject(o, "type", schema_root_attributes[i].type);
        cJSON_AddStringToObject(o, "about", schema_root_attributes[i].about);
        cJSON_AddItemToArray(root, o);
    }
    return j;
}

char *schema_json_text(void) {
    cJSON *j = schema_json();
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text) die(EXIT_RUNTIME, "out of memory writing the schema");
    return text;
}
