// Finite-difference gradient check of the whole model: every attention variant, as
// encoder (non-causal, images) and as decoder (causal, tokens), and with the
// regularisers switched on. Objective: mean loss + Σ λ·penalty. Every parameter
// tensor gets a directional check over all its entries and an elementwise check on
// a sample of entries.
// modules: model
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "common/util.h"
#include "model/model.h"

typedef struct {
    Model m;
    Batch b;
} Ctx;

static double objective(void *p) {
    Ctx *c = p;
    long count, correct;
    double loss = model_forward(&c->m, &c->b, &count, &correct) / (double)count;
    // model_backward returns the penalty; its gradients are not used here.
    return loss + model_backward(&c->m, &c->b, count);
}

static void check_model(const char *label, TrialConfig cfg, int encoder) {
    printf("%s\n", label);
    DatasetInfo info;
    if (encoder)
        info = (DatasetInfo){.kind = TASK_FASHION_MNIST, .n_classes = 10};
    else
        info = (DatasetInfo){.kind = TASK_CHARLM, .seq_len = 6, .vocab = 11, .n_classes = 11};
    Ctx c;
    const int B = 2;
    model_init(&c.m, &cfg, &info, B);
    unsigned s = 99;
    c.b = (Batch){.B = B, .rows = B};
    if (encoder) {
        c.b.images = malloc(B * 784 * sizeof(float));
        gc_fill(c.b.images, B * 784, 1.5, &s);
        c.b.targets = malloc(B * sizeof(int));
        c.b.targets[0] = 3, c.b.targets[1] = 7;
    } else {
        int T = info.seq_len;
        c.b.tokens = malloc((size_t)B * T * sizeof(int));
        c.b.targets = malloc((size_t)B * T * sizeof(int));
        for (int i = 0; i < B * T; i++) {
            c.b.tokens[i] = (int)(gc_uniform(&s) * 11);
            c.b.targets[i] = i % 5 == 4 ? -1 : (int)(gc_uniform(&s) * 11);
        }
    }
    // Parameters away from their initial symmetric values (LayerNorm weights exactly 1,
    // biases 0) so that every path carries gradient.
    for (size_t i = 0; i < c.m.params_arena.total; i++) c.m.params_arena.mem[i] += (float)(0.05 * (gc_uniform(&s) - 0.5));

    objective(&c);
    size_t n = c.m.grads_arena.total;
    float *g = malloc(n * sizeof(float));
    memcpy(g, c.m.grads_arena.mem, n * sizeof(float));
    for (int e = 0; e < c.m.params_arena.n; e++) {
        const ArenaEntry *en = &c.m.params_arena.entries[e];
        char what[64];
        snprintf(what, sizeof what, "%s#%d", en->name, e);
        float *x = c.m.params_arena.mem + en->offset;
        // Step relative to the tensor's scale (embeddings are ~0.02, and LayerNorm of
        // such small inputs is strongly curved), within float32's useful range.
        double ss = 0.0;
        for (size_t i = 0; i < en->count; i++) ss += (double)x[i] * x[i];
        float h = (float)fmin(1e-2, fmax(1e-3, 0.02 * sqrt(ss / (double)en->count)));
        gradcheck_directional(what, x, g + en->offset, (long)en->count, objective, &c, h, 2e-2, 7u + e);
        gradcheck_elementwise(what, x, g + en->offset, (long)en->count, objective, &c, h, 5e-2, 5e-3, 6);
    }
    free(g);
    free(c.b.images), free(c.b.tokens), free(c.b.targets);
    model_free(&c.m);
}

int main(void) {
    TrialConfig cfg;
    config_defaults(&cfg);
    cfg.d_model = 8, cfg.heads = 2, cfg.layers = 2, cfg.mlp_ratio = 2;
    cfg.core_rank = 1, cfg.grassmann_rank = 4;
    char err[256];
    if (config_set(&cfg, config_find("grassmann_offsets"), "1,2,4", err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    for (int a = 0; a < ATTN_COUNT; a++)
        for (int encoder = 1; encoder >= 0; encoder--) {
            TrialConfig c = cfg;
            c.attention = a;
            char label[96];
            snprintf(label, sizeof label, "== %s %s", attention_names[a], encoder ? "encoder" : "decoder (causal)");
            check_model(label, c, encoder);
        }
    // grassmann above is the paper's block (the default); the pre-LN block, and the
    // paper's with a per-layer schedule (each layer mixes with its own offsets).
    for (int encoder = 1; encoder >= 0; encoder--) {
        TrialConfig c = cfg;
        c.attention = ATTN_GRASSMANN, c.grassmann_block = GRASSMANN_PRELN;
        check_model(encoder ? "== grassmann preln encoder" : "== grassmann preln decoder (causal)", c, encoder);
    }
    {
        TrialConfig c = cfg;
        c.attention = ATTN_GRASSMANN;
        if (config_set(&c, config_find("grassmann_offsets"), "1,3;2", err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        check_model("== grassmann paper decoder (causal), offsets 1,3 then 2", c, 0);
    }
    // Regularisers on: their gradients join the network's (through the Tucker generator too).
    for (int a = 0; a < ATTN_COUNT; a++) {
        TrialConfig c = cfg;
        c.attention = a;
        c.lambda_orth = 0.1, c.lambda_nuclear = 0.01, c.lambda_l2 = 0.01;
        char label[96];
        snprintf(label, sizeof label, "== %s decoder with orth, nuclear and l2 penalties", attention_names[a]);
        check_model(label, c, 0);
    }
    return check_report("test_model_gradcheck");
}
