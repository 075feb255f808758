// One block of mha and of linear attention (as encoder and as causal decoder), and
// Grassmann mixing in the paper's post-LN block (two causal layers with their own
// offsets; an encoder) and in the pre-LN block, against PyTorch: same weights and
// inputs, forward outputs and every parameter gradient must agree to 1e-4 relative
// (max |ours − torch| / max |torch| per tensor).
// The reference tensors come from scripts/torch_reference.py (committed, so torch is
// not needed to run this test).
// modules: model
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/model.h"

#define REL_TOL 1e-4

typedef struct {
    cJSON *meta;
    float *data;
} Reference;

static char *read_all(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)*len + 1);
    if (fread(buf, 1, (size_t)*len, f) != (size_t)*len) *len = -1;
    buf[*len > 0 ? *len : 0] = 0;
    fclose(f);
    return buf;
}

// The k-th tensor of that name (layers repeat the parameter names, in arena order).
static const float *tensor_at(const Reference *r, const char *name, int k, long *count) {
    cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(r->meta, "tensors")) {
        if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring, name) == 0 && k-- == 0) {
            *count = (long)cJSON_GetObjectItem(t, "count")->valuedouble;
            return r->data + (long)cJSON_GetObjectItem(t, "offset")->valuedouble;
        }
    }
    fprintf(stderr, "reference has no tensor %s\n", name);
    exit(1);
}

static const float *tensor(const Reference *r, const char *name, long *count) { return tensor_at(r, name, 0, count); }

// How many entries before e in the arena have e's name: its layer, for the block's.
static int occurrence(const Arena *a, int e) {
    int k = 0;
    for (int i = 0; i < e; i++) k += strcmp(a->entries[i].name, a->entries[e].name) == 0;
    return k;
}

// The reference's optional text parameter (grassmann's) into c.
static void set_from_meta(TrialConfig *c, const cJSON *meta, const char *name) {
    const cJSON *v = cJSON_GetObjectItem(meta, name);
    char text[64], err[256];
    if (!v) return;
    if (cJSON_IsNumber(v))
        snprintf(text, sizeof text, "%d", v->valueint);
    else
        snprintf(text, sizeof text, "%s", v->valuestring);
    CHECK(config_set(c, config_find(name), text, err, sizeof err) == 0, "%s: %s", name, err);
}

// Every |ours − torch| <= REL_TOL · max |torch| (REL_TOL itself if torch is all zero).
static void compare(const char *what, const float *ours, const float *ref, long n) {
    double scale = 0.0;  // max |torch|, the tolerance's scale: fmax skips a NaN, which the check then fails
    for (long i = 0; i < n; i++) scale = fmax(scale, fabs((double)ref[i]));
    const double unit = scale > 0 ? scale : 1.0;
    const double diff = CHECK_ALL_CLOSE(ours, ref, n, REL_TOL * unit, 0.0, "%s", what);
    printf("  %-16s n=%-6ld max|torch|=%-10.4g max diff=%-10.3g rel=%.2g\n", what, n, scale, diff, diff / unit);
}

static void run_case(const char *name) {
    char path[256];
    long len;
    snprintf(path, sizeof path, "tests/reference/%s.json", name);
    char *json = read_all(path, &len);
    CHECK(json != NULL, "cannot read %s", path);
    if (!json) return;
    Reference r = {.meta = cJSON_Parse(json)};
    free(json);
    snprintf(path, sizeof path, "tests/reference/%s.bin", name);
    r.data = (float *)read_all(path, &len);
    CHECK(r.data != NULL && len > 0, "cannot read %s", path);
    if (!r.data) return;
    printf("%s (PyTorch %s)\n", name, cJSON_GetObjectItem(r.meta, "torch_version")->valuestring);

    TrialConfig c;
    config_defaults(&c);
    char err[256];
    config_set(&c, config_find("attention"), cJSON_GetObjectItem(r.meta, "attention")->valuestring, err, sizeof err);
    config_set(&c, config_find("task"), cJSON_GetObjectItem(r.meta, "task")->valuestring, err, sizeof err);
    c.d_model = cJSON_GetObjectItem(r.meta, "d_model")->valueint;
    c.heads = cJSON_GetObjectItem(r.meta, "heads")->valueint;
    c.layers = cJSON_GetObjectItem(r.meta, "layers")->valueint;
    c.mlp_ratio = cJSON_GetObjectItem(r.meta, "mlp_ratio")->valueint;
    set_from_meta(&c, r.meta, "grassmann_rank");
    set_from_meta(&c, r.meta, "grassmann_block");
    set_from_meta(&c, r.meta, "grassmann_offsets");
    const int B = cJSON_GetObjectItem(r.meta, "batch")->valueint;
    const int encoder = c.task == TASK_FASHION_MNIST;
    DatasetInfo info = {.kind = c.task,
                        .seq_len = encoder ? 0 : cJSON_GetObjectItem(r.meta, "seq_len")->valueint,
                        .vocab = cJSON_GetObjectItem(r.meta, "vocab")->valueint,
                        .n_classes = cJSON_GetObjectItem(r.meta, "n_classes")->valueint};
    Model m;
    model_init(&m, &c, &info, B);

    for (int e = 0; e < m.params_arena.n; e++) {
        const ArenaEntry *en = &m.params_arena.entries[e];
        char tname[64];
        long n;
        snprintf(tname, sizeof tname, "param:%s", en->name);
        const float *src = tensor_at(&r, tname, occurrence(&m.params_arena, e), &n);
        CHECK(n == (long)en->count, "%s: %ld values in the reference, the model has %zu", tname, n, en->count);
        if (n == (long)en->count) memcpy(m.params_arena.mem + en->offset, src, (size_t)n * sizeof(float));
    }
    long nin, nt;
    const float *in = tensor(&r, "input", &nin), *tg = tensor(&r, "targets", &nt);
    Batch b = {.B = B, .rows = B, .targets = malloc((size_t)nt * sizeof(int))};
    for (long i = 0; i < nt; i++) b.targets[i] = (int)tg[i];
    if (encoder) {
        b.images = malloc((size_t)nin * sizeof(float));
        memcpy(b.images, in, (size_t)nin * sizeof(float));
    } else {
        b.tokens = malloc((size_t)nin * sizeof(int));
        for (long i = 0; i < nin; i++) b.tokens[i] = (int)in[i];
    }

    long count, correct, n;
    float loss = (float)(model_forward(&m, &b, &count, &correct) / (double)count);
    compare("loss", &loss, tensor(&r, "loss", &n), 1);
    const float *ref = tensor(&r, "logits", &n);
    compare("logits", m.acts.logits, ref, n);
    ref = tensor(&r, "block_out", &n);
    const BlockActs *last = &m.acts.blocks[c.layers - 1];  // the paper's block ends in its LayerNorm
    const int paper = c.attention == ATTN_GRASSMANN && c.grassmann_block == GRASSMANN_PAPER;
    compare("block output", paper ? last->ln2 : last->res2, ref, n);
    model_backward(&m, &b, count);
    for (int e = 0; e < m.grads_arena.n; e++) {
        const ArenaEntry *en = &m.grads_arena.entries[e];
        char tname[64];
        snprintf(tname, sizeof tname, "grad:%s", en->name);
        ref = tensor_at(&r, tname, occurrence(&m.grads_arena, e), &n);
        compare(tname, m.grads_arena.mem + en->offset, ref, n);
    }
    free(b.images), free(b.tokens), free(b.targets);
    model_free(&m);
    free(r.data);
    cJSON_Delete(r.meta);
}

int main(void) {
    run_case("mha_encoder");
    run_case("mha_decoder");
    run_case("linear_encoder");
    run_case("linear_decoder");
    run_case("grassmann_paper_decoder");
    run_case("grassmann_paper_encoder");
    run_case("grassmann_preln_decoder");
    return check_report("test_torch_reference");
}
