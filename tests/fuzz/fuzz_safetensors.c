// fuzz_safetensors.c: libFuzzer entry point for the safetensors reader (clang only;
// built with -DATTNSWEEP_FUZZ=ON, see the end of CMakeLists.txt for how to run it).
// Every input must give -1 with one line "fuzz: ..." or 0 with a consistent, finite
// result; anything else aborts so libFuzzer keeps the input. Each input is read with
// two head counts: 1 (always divides, so the data path runs) and 4 (the seed files'
// count, which also exercises grouped-query attention and the divisibility checks).
#include "invariants/safetensors.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, int heads) {
    AttentionLayers l;
    char err[512];
    int rc = safetensors_attention_mem(data, size, "fuzz", heads, &l, err, sizeof err);
    if (rc == -1) {
        if (strncmp(err, "fuzz: ", 6) != 0 || strlen(err) <= 6 || strchr(err, '\n') || l.n_layers || l.weights)
            abort();
        return;
    }
    if (rc != 0 || l.n_layers <= 0 || l.dims[0] <= 0 || l.dims[1] <= 0 || l.dims[2] <= 0 || l.dims[3] != 3 ||
        l.kv_heads <= 0 || l.dims[0] % l.kv_heads || !l.family || !l.weights || !l.names)
        abort();
    size_t per = (size_t)l.dims[0] * (size_t)l.dims[1] * (size_t)l.dims[2] * 3;
    for (int i = 0; i < l.n_layers; i++) {
        if (!l.weights[i] || !l.names[i]) abort();
        for (size_t j = 0; j < per; j++)
            if (!isfinite(l.weights[i][j])) abort();
    }
    attention_layers_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size, 1);
    one(data, size, 4);
    return 0;
}
