#include "common/trial.h"

#include <stdlib.h>
#include <string.h>

void trial_result_free(TrialResult *r) {
    free(r->curve);
    free(r->trace.step);
    free(r->trace.correlation);
    free(r->trace.eff_rank);
    free(r->trace.head_sv);
    if (r->scores)
        for (int l = 0; l < r->n_layers; l++) layer_score_free(&r->scores[l]);
    free(r->scores);
    for (int l = 0; l < r->n_layers; l++) free(r->weights[l]);
    free(r->weights);
    memset(r, 0, sizeof *r);
}
