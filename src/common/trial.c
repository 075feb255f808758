#include "common/trial.h"

#include <stdlib.h>
#include <string.h>

void trial_result_free(TrialResult *r) {
    free(r->curve);
    for (int l = 0; l < r->n_layers; l++) free(r->weights[l]);
    free(r->weights);
    memset(r, 0, sizeof *r);
}
