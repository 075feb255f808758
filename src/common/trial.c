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
    for (int l = 0; l < r->n_layers; l++) {
        free(r->weights[l]);
        if (r->weights_out) free(r->weights_out[l]);
    }
    free(r->weights);
    free(r->weights_out);
    memset(r, 0, sizeof *r);
}

LayerWeights trial_layer_weights(const TrialResult *r, int l) {
    LayerWeights w = {.grassmann = r->config.attention == ATTN_GRASSMANN, .qkv = r->weights[l],
                      .out = r->weights_out ? r->weights_out[l] : NULL};
    memcpy(w.dims, r->dims, sizeof w.dims);
    memcpy(w.out_dims, r->out_dims, sizeof w.out_dims);
    return w;
}
