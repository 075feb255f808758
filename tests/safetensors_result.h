// safetensors_result.h: what every answer of the safetensors reader must look like, for
// the mutation fuzz test and the libFuzzer target: after an error *out is left empty;
// after success the shapes agree with each other and every value is finite.
#ifndef ATTN_TEST_SAFETENSORS_RESULT_H
#define ATTN_TEST_SAFETENSORS_RESULT_H

#include "io/safetensors.h"

#include <math.h>
#include <stddef.h>

static inline int attention_layers_empty(const AttentionLayers *l) {
    return !l->n_layers && !l->weights && !l->names && !l->out && !l->out_dims[0] && !l->out_dims[1];
}

static inline int all_finite(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

// NULL when l is a consistent result with finite values; else what is wrong with it.
// Grassmann's layers are [r, 1, d_model, 1] with outputs [d_model, r(r-1)/2].
static inline const char *attention_layers_problem(const AttentionLayers *l) {
    const int grassmann = l->dims[3] == 1 && l->dims[1] == 1;
    if (l->n_layers <= 0 || l->dims[0] <= 0 || l->dims[1] <= 0 || l->dims[2] <= 0 || (l->dims[3] != 3 && !grassmann) ||
        l->kv_heads <= 0 || l->dims[0] % l->kv_heads || !l->family || !l->weights || !l->names)
        return "inconsistent layers, dims, kv heads or family";
    const int width = grassmann ? l->dims[0] * (l->dims[0] - 1) / 2 : l->dims[0] * l->dims[1];
    if (l->out ? l->out_dims[0] != l->dims[2] || l->out_dims[1] != width : l->out_dims[0] || l->out_dims[1])
        return "output projection dims that are not [d_model, heads*d_k] (or [0, 0] without them)";
    size_t per = (size_t)l->dims[0] * (size_t)l->dims[1] * (size_t)l->dims[2] * (size_t)l->dims[3];
    size_t out_per = (size_t)l->out_dims[0] * (size_t)l->out_dims[1];
    for (int i = 0; i < l->n_layers; i++) {
        if (!l->weights[i] || !l->names[i] || (l->out && !l->out[i])) return "a layer without weights or name";
        if (!all_finite(l->weights[i], per) || (l->out && !all_finite(l->out[i], out_per)))
            return "a non-finite value";
    }
    return NULL;
}

#endif
