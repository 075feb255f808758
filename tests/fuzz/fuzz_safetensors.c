// fuzz_safetensors.c: libFuzzer entry point for the safetensors reader (clang only;
// built with -DATTNSWEEP_FUZZ=ON, see the end of CMakeLists.txt for how to run it).
// Every input must give -1 with one line "fuzz: ..." or 0 with a consistent, finite
// result (tests/safetensors_result.h); anything else aborts so libFuzzer keeps the
// input. Each input is read with two head counts: 1 (always divides, so the data path
// runs) and 4 (the seed files' count, which also exercises grouped-query attention and
// the divisibility checks).
#include "io/safetensors.h"
#include "safetensors_result.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, int heads) {
    AttentionLayers l;
    char err[512];
    int rc = safetensors_attention_mem(data, size, "fuzz", heads, &l, err, sizeof err);
    if (rc == -1) {
        if (strncmp(err, "fuzz: ", 6) != 0 || strlen(err) <= 6 || strchr(err, '\n') || !attention_layers_empty(&l))
            abort();
        return;
    }
    if (rc != 0 || attention_layers_problem(&l)) abort();
    attention_layers_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size, 1);
    one(data, size, 4);
    return 0;
}
