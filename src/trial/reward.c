// reward.c: the reward specification and the reward (reward.h).
#include "trial/reward.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void layer_score_chance(double chance[4], const LayerScore *s) {
    chance[0] = s->correlation_chance, chance[1] = s->correlation_chance_sd;
    chance[2] = s->eff_rank_chance, chance[3] = s->eff_rank_chance_sd;
    if (s->mixing) chance[1] = chance[2] = chance[3] = NAN;  // no heads: no head terms
}

// A null that was computed (a Grassmann layer's is NaN: layer_score_chance).
static int has_null(double sd) { return isfinite(sd); }

// reward_terms with layer l's r_max of mode n at n_sv[l·stride + n].
static void terms_of(RewardTerms *t, const double *eff_rank, const double *correlation, const double *chance,
                     const int *n_sv, size_t stride, int n_layers, const RewardSpec *r) {
    double dev = 0.0, dev_excess = 0.0, corr = 0.0, corr_chance = 0.0, corr_excess = 0.0;
    double corr_diff = 0.0, corr_var = 0.0, rank_diff = 0.0, rank_var = 0.0;
    int count = 0, nulls = 0;
    for (int l = 0; l < n_layers; l++) {
        const double *e = eff_rank + (size_t)l * 4, *c = chance + (size_t)l * 4;
        const int *rmaxes = n_sv + (size_t)l * stride;
        const int corr_null = has_null(c[1]), rank_null = has_null(c[3]);
        for (int n = 0; n < 4; n++) {
            if (!r->use_mode[n]) continue;
            const double rmax = rmaxes[n];
            const double ideal = r->ideal_rank[n] < 0 ? rmax : fmin(r->ideal_rank[n], rmax);
            const double d = rmax > 0 ? fabs(e[n] - ideal) / rmax : 0.0;
            dev += d;
            if (n > 0)
                dev_excess += d;  // no null: as measured
            else if (rank_null)
                dev_excess += d - (rmax > 0 ? fabs(c[2] - ideal) / rmax : 0.0);
            count++;
        }
        corr += correlation[l];
        corr_chance += c[0];
        if (corr_null) corr_excess += correlation[l] - c[0];
        if (corr_null && rank_null) {
            nulls++;
            corr_diff += correlation[l] - c[0], corr_var += c[1] * c[1];
            rank_diff += e[0] - c[2], rank_var += c[3] * c[3];
        }
    }
    const double layers = n_layers > 0 ? n_layers : 1;
    *t = (RewardTerms){.rank_deviation = count ? dev / count : 0.0,
                       .rank_deviation_excess = count ? dev_excess / count : 0.0,
                       .correlation = corr / layers,
                       .correlation_chance = corr_chance / layers,
                       .correlation_excess = corr_excess / layers,
                       .correlation_z = nulls && corr_var > 0 ? corr_diff / sqrt(corr_var) : NAN,
                       .eff_rank_z = nulls && rank_var > 0 ? rank_diff / sqrt(rank_var) : NAN};
}

void reward_terms(RewardTerms *t, const double *eff_rank, const double *correlation, const double *chance,
                  int n_layers, const int dims[4], const RewardSpec *r) {
    int n_sv[4];
    for (int n = 0; n < 4; n++) {
        const long others = (long)dims[0] * dims[1] * dims[2] * dims[3] / dims[n];
        n_sv[n] = others < dims[n] ? (int)others : dims[n];
    }
    terms_of(t, eff_rank, correlation, chance, n_sv, 0, n_layers, r);
}

void reward_terms_of_scores(RewardTerms *t, const LayerScore *layers, int n_layers, const RewardSpec *r) {
    const size_t L = (size_t)n_layers + 1;  // never 0 bytes
    double *eff = xcalloc(L * 4, sizeof(double)), *chance = xcalloc(L * 4, sizeof(double));
    double *corr = xcalloc(L, sizeof(double));
    int *n_sv = xcalloc(L * 4, sizeof(int));
    for (int l = 0; l < n_layers; l++) {
        memcpy(eff + (size_t)l * 4, layers[l].eff_rank, sizeof layers[l].eff_rank);
        memcpy(n_sv + (size_t)l * 4, layers[l].n_sv, sizeof layers[l].n_sv);
        layer_score_chance(chance + (size_t)l * 4, &layers[l]);
        corr[l] = layers[l].correlation;
    }
    terms_of(t, eff, corr, chance, n_sv, 4, n_layers, r);
    free(n_sv);
    free(corr);
    free(chance);
    free(eff);
}

RewardTerms reward_terms_none(void) { return (RewardTerms){NAN, NAN, NAN, NAN, NAN, NAN, NAN}; }

double reward_value(double accuracy, const RewardTerms *t, const RewardSpec *r) {
    return accuracy - r->beta * t->rank_deviation_excess - r->gamma * t->correlation_excess;
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
