// trial.c: a trial's result (trial.h).
#include "trial/trial.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"
#include "trial/metrics.h"

// Between a reason's cause and its program's stderr line (trial_reason_add_stderr).
static const char STDERR_MARK[] = "; stderr: ";

const char *const trial_status_names[TRIAL_STATUS_COUNT] = {"ok", "pruned", "failed", "interrupted"};

int trial_status_find(const char *name) {
    for (int s = 0; s < TRIAL_STATUS_COUNT; s++)
        if (!strcmp(name, trial_status_names[s])) return s;
    return -1;
}

int trial_status_measured(TrialStatus s) { return s == TRIAL_OK || s == TRIAL_PRUNED; }

void trial_set_terms(TrialResult *r, const RewardTerms *t) {
    r->rank_deviation = t->rank_deviation, r->correlation = t->correlation;
    r->correlation_chance = t->correlation_chance;
    r->rank_deviation_excess = t->rank_deviation_excess, r->correlation_excess = t->correlation_excess;
    r->correlation_z = t->correlation_z, r->eff_rank_z = t->eff_rank_z;
}

void trial_result_free(TrialResult *r) {
    free(r->curve);
    free(r->trace.step);
    free(r->trace.correlation);
    free(r->trace.eff_rank);
    free(r->trace.head_sv);
    free(r->trace.chance);
    if (r->scores)
        for (int l = 0; l < r->n_layers; l++) layer_score_free(&r->scores[l]);
    free(r->scores);
    for (int l = 0; l < r->n_layers; l++) {
        free(r->weights[l]);
        if (r->weights_out) free(r->weights_out[l]);
    }
    free(r->weights);
    free(r->weights_out);
    char **texts[] = {&r->run.dir, &r->run.stdout_path, &r->run.stderr_path, &r->run.metrics_path,
                      &r->run.command, &r->run.stderr_tail, &r->run.checkpoint};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) free(*texts[i]);
    free(r->params);
    free(r->param_layout);
    memset(r, 0, sizeof *r);
}

// The last line of text that is not blank: its start and length (0 when there is none).
// A carriage return ends a line too: a progress bar redraws its line with them.
static size_t last_line(const char *text, const char **start) {
    const char *end = text + strlen(text);
    while (end > text && isspace((unsigned char)end[-1])) end--;
    const char *from = end;
    while (from > text && from[-1] != '\n' && from[-1] != '\r') from--;
    *start = from;
    return (size_t)(end - from);
}

void trial_reason_add_stderr(TrialResult *r) {
    const char *from;
    const size_t n = r->run.stderr_tail ? last_line(r->run.stderr_tail, &from) : 0;
    if (!n) return;
    char line[TRIAL_STDERR_LINE + 1];
    text_one_line(line, sizeof line, from, n);
    if (!line[0]) return;  // control characters only
    // The cause keeps what room the line leaves it, cut between characters.
    size_t keep = sizeof r->reason - 1 - strlen(STDERR_MARK) - strlen(line);
    if (keep >= strlen(r->reason)) keep = strlen(r->reason);
    while (keep > 0 && ((unsigned char)r->reason[keep] & 0xC0) == 0x80) keep--;
    snprintf(r->reason + keep, sizeof r->reason - keep, "%s%s", STDERR_MARK, line);
}

// A number of a program's stderr line: a digit not inside a word, then digits, '.', and
// the letters of a hexadecimal one ("2.00", "0x7f3a", "79"; "cuda12" stays).
static size_t number_at(const char *s, const char *line) {
    if (!isdigit((unsigned char)*s) || (s > line && (isalnum((unsigned char)s[-1]) || s[-1] == '_'))) return 0;
    size_t n = 1;
    while (isxdigit((unsigned char)s[n]) || s[n] == '.' || s[n] == 'x' || s[n] == 'X') n++;
    return n;
}

void trial_reason_key(const char *reason, char *out, size_t len) {
    const char *at = strstr(reason, " at step"), *mark = strstr(reason, STDERR_MARK);
    const size_t cut = at ? (size_t)(at - reason) : strlen(reason);
    const char *line = mark && (size_t)(mark - reason) < cut ? mark + strlen(STDERR_MARK) : NULL;
    size_t o = 0;
    for (const char *s = reason; (size_t)(s - reason) < cut && o + 1 < len;) {
        const size_t k = line && s >= line ? number_at(s, line) : 0;
        if (k) out[o++] = 'N', s += k;
        else out[o++] = *s++;
    }
    if (len) out[o] = 0;
}

LayerWeights trial_weights(const TrialResult *r, const float *qkv, const float *out) {
    // Grassmann's tensor has one role (model.h); a program's checkpoint says so by its shape too.
    LayerWeights w = {.grassmann = r->dims[3] == 1, .qkv = qkv, .out = out};
    memcpy(w.dims, r->dims, sizeof w.dims);
    memcpy(w.out_dims, r->out_dims, sizeof w.out_dims);
    return w;
}

LayerWeights trial_layer_weights(const TrialResult *r, int l) {
    return trial_weights(r, r->weights[l], r->weights_out ? r->weights_out[l] : NULL);
}

cJSON *trial_result_to_json(const TrialResult *r) {
    cJSON *obj = json_must(cJSON_CreateObject());
    json_must(cJSON_AddNumberToObject(obj, "trial", r->id));
    json_must(cJSON_AddStringToObject(obj, "status", trial_status_names[r->status]));
    json_must(cJSON_AddStringToObject(obj, "reason", r->reason));
    cJSON_AddItemToObject(obj, "config", config_to_json(&r->config));
    for (int i = 0; i < n_metrics; i++)
        if (metric_applies(&metrics[i], r->config.task))
            json_must(cJSON_AddNumberToObject(obj, metrics[i].name, metric_value(r, &metrics[i])));
    json_must(cJSON_AddNumberToObject(obj, "steps", r->steps));
    json_must(cJSON_AddNumberToObject(obj, "n_params", (double)r->n_params));
    json_must(cJSON_AddNumberToObject(obj, "seconds", r->seconds));
    return obj;
}
