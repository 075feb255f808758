// reward.c: the reward specification and the reward (reward.h).
#include "trial/reward.h"

#include <cjson/cJSON.h>
#include <math.h>

#include "common/util.h"

void reward_spec_default(RewardSpec *r) {
    r->tensor = TENSOR_FUNCTION;
    r->beta = 0.1;
    r->gamma = 0.1;
    for (int n = 0; n < 4; n++) {
        r->use_mode[n] = n == 0;
        r->ideal_rank[n] = -1.0;
    }
}

// One layer's Σ over the used modes of |eff_rank − r_ideal| / r_max, r_max = n_sv[n];
// *count grows by the modes used.
static double layer_deviation(const double eff_rank[4], const int n_sv[4], const RewardSpec *r, int *count) {
    double sum = 0.0;
    for (int n = 0; n < 4; n++) {
        if (!r->use_mode[n]) continue;
        const double rmax = n_sv[n];
        const double ideal = r->ideal_rank[n] < 0 ? rmax : fmin(r->ideal_rank[n], rmax);
        sum += rmax > 0 ? fabs(eff_rank[n] - ideal) / rmax : 0.0;
        (*count)++;
    }
    return sum;
}

double rank_deviation(const LayerScore *layers, int n_layers, const RewardSpec *r) {
    double sum = 0.0;
    int count = 0;
    for (int l = 0; l < n_layers; l++) sum += layer_deviation(layers[l].eff_rank, layers[l].n_sv, r, &count);
    return count ? sum / count : 0.0;
}

double ranks_deviation(const double *eff_rank, int n_layers, const int dims[4], const RewardSpec *r) {
    int n_sv[4];
    for (int n = 0; n < 4; n++) {
        const long others = (long)dims[0] * dims[1] * dims[2] * dims[3] / dims[n];
        n_sv[n] = others < dims[n] ? (int)others : dims[n];
    }
    double sum = 0.0;
    int count = 0;
    for (int l = 0; l < n_layers; l++) sum += layer_deviation(eff_rank + (size_t)l * 4, n_sv, r, &count);
    return count ? sum / count : 0.0;
}

double reward_value(double accuracy, double rank_dev, double correlation, const RewardSpec *r) {
    return accuracy - r->beta * rank_dev - r->gamma * correlation;
}

char *reward_spec_to_json(const RewardSpec *r) {
    const char *const *reward_modes = tensor_mode_names[r->tensor];
    cJSON *o = cJSON_CreateObject(), *modes = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tensor", tensor_view_names[r->tensor]);
    cJSON_AddNumberToObject(o, "beta", r->beta);
    cJSON_AddNumberToObject(o, "gamma", r->gamma);
    for (int n = 0; n < 4; n++)
        if (r->use_mode[n])
            cJSON_AddItemToObject(modes, reward_modes[n],
                                  r->ideal_rank[n] < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(r->ideal_rank[n]));
    cJSON_AddItemToObject(o, "modes", modes);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) die(EXIT_RUNTIME, "out of memory printing JSON");
    return text;
}

int reward_spec_from_json(RewardSpec *r, const char *text) {
    cJSON *o = cJSON_Parse(text);
    const cJSON *beta = cJSON_GetObjectItem(o, "beta"), *gamma = cJSON_GetObjectItem(o, "gamma");
    const cJSON *modes = cJSON_GetObjectItem(o, "modes"), *tensor = cJSON_GetObjectItem(o, "tensor");
    const char *view = cJSON_GetStringValue(tensor);
    const int view_index = view ? tensor_view_find(view) : -1;
    const int ok = cJSON_IsNumber(beta) && cJSON_IsNumber(gamma) && cJSON_IsObject(modes) && view_index >= 0;
    if (ok) {
        r->tensor = view_index;
        const char *const *reward_modes = tensor_mode_names[r->tensor];
        r->beta = beta->valuedouble, r->gamma = gamma->valuedouble;
        for (int n = 0; n < 4; n++) {
            const cJSON *m = cJSON_GetObjectItem(modes, reward_modes[n]);
            r->use_mode[n] = m != NULL;
            r->ideal_rank[n] = cJSON_IsNumber(m) ? m->valuedouble : -1.0;
        }
    }
    cJSON_Delete(o);
    return ok ? 0 : -1;
}
