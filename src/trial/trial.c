// trial.c: a trial's result (trial.h).
#include "trial/trial.h"

#include <stdlib.h>
#include <string.h>

#include "common/config_json.h"
#include "trial/metrics.h"

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
