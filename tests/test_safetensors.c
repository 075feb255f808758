// test_safetensors.c: the safetensors reader against files written by
// tests/make_safetensors.py (numpy): W values of BERT (F32, F16, BF16), GPT-2 (fused
// Conv1D), LLaMA (F64, twelve layers in shuffled order) and grouped-query LLaMA
// checkpoints match numpy's layout exactly, and so do their output projections
// [d_model, width] (GPT-2's transposed, the MLP's output.dense and mlp.c_proj left
// alone); files without output projections give out = NULL; heads come from the
// argument or config.json; every malformed file gives its one-line message.
// modules: io
#define _POSIX_C_SOURCE 200809L
#include "io/safetensors.h"

#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(len > 0 ? (size_t)len : 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

// NAME's checkpoint: model.safetensors, or the index of a sharded one.
static const char *model_path(const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s/model.safetensors.index.json", dir, name);
    if (access(path, F_OK) != 0) snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, name);
    return path;
}

// l's output projections against want [layers, d_model, width], entry by entry (a NaN
// never equals anything).
static void compare_out(const char *what, const AttentionLayers *l, const float *want) {
    size_t D = (size_t)l->out_dims[0], w = (size_t)l->out_dims[1], bad = 0, first = 0;
    for (size_t j = 0; j < (size_t)l->n_layers * D * w; j++)
        if (!(l->out[j / (D * w)][j % (D * w)] == want[j]) && !bad++) first = j;
    CHECK(bad == 0, "%s: %zu output projection entries differ, first layer %zu [%zu, %zu]: got %.9g want %.9g", what,
          bad, first / (D * w), first % (D * w) / w, first % w, (double)l->out[first / (D * w)][first % (D * w)],
          (double)want[first]);
}

// The output projections of a valid checkpoint: [d_model, width] as in expected_out.bin,
// or none (out NULL) when make_safetensors.py wrote no such file.
static void check_out(const char *name, const AttentionLayers *l) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s/expected_out.bin", dir, name);
    size_t nbytes = 0;
    float *want = slurp(path, &nbytes);
    if (!want) {
        CHECK(!l->out && l->out_dims[0] == 0 && l->out_dims[1] == 0, "%s: output projections from a file without any",
              name);
        return;
    }
    int D = l->dims[2], w = l->dims[3] == 1 ? l->dims[0] * (l->dims[0] - 1) / 2 : l->dims[0] * l->dims[1];
    CHECK(l->out && l->out_dims[0] == D && l->out_dims[1] == w, "%s: out %s, out_dims [%d, %d], want [%d, %d]", name,
          l->out ? "set" : "NULL", l->out_dims[0], l->out_dims[1], D, w);
    CHECK(nbytes == (size_t)l->n_layers * (size_t)D * (size_t)w * sizeof(float), "%s: expected_out.bin has %zu bytes",
          name, nbytes);
    if (l->out && l->out_dims[0] == D && l->out_dims[1] == w &&
        nbytes == (size_t)l->n_layers * (size_t)D * (size_t)w * sizeof(float))
        compare_out(name, l, want);
    free(want);
}

// In the F32 and F64 files every output projection holds O[i, j] = i + j/1024 exactly,
// however the file stores it (Conv1D transposed): row i is output feature i, column
// j = h·d_k + k reads feature k of query head h.
static void check_out_codes(const char *name) {
    AttentionLayers l;
    char err[512], what[64];
    int rc = safetensors_attention(model_path(name), 0, &l, err, sizeof err);
    CHECK(rc == 0 && l.out, "%s: returned %d (%s), out %s", name, rc, err, rc == 0 && l.out ? "set" : "NULL");
    if (rc == 0 && l.out) {
        size_t D = (size_t)l.out_dims[0], w = (size_t)l.out_dims[1], n = (size_t)l.n_layers * D * w;
        float *want = malloc(n * sizeof *want);
        for (size_t j = 0; j < n; j++) want[j] = (float)(j % (D * w) / w) + (float)(j % w) / 1024.0f;
        snprintf(what, sizeof what, "%s (O[i, j] = i + j/1024)", name);
        compare_out(what, &l, want);
        free(want);
    }
    attention_layers_free(&l);
}

// The Q | K | V biases equal to expected_bias.bin when it exists, else none; no
// normalisation in any of these files (tests/test_whole_network.sh reads ln_1,
// input_layernorm and folds them).
static void check_bias(const char *name, const AttentionLayers *l) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s/expected_bias.bin", dir, name);
    size_t nbytes = 0, per = 3 * (size_t)l->dims[0] * (size_t)l->dims[1];
    float *want = access(path, F_OK) == 0 ? slurp(path, &nbytes) : NULL;
    CHECK(!want || nbytes == (size_t)l->n_layers * per * sizeof(float), "%s: expected_bias.bin has %zu bytes", name,
          nbytes);
    for (int i = 0; i < l->n_layers; i++) {
        CHECK(!l->ln_w[i] && !l->ln_b[i], "%s: layer %d has a normalisation the file does not", name, i);
        if (!want) {
            CHECK(!l->bias_qkv[i], "%s: layer %d has biases the file does not", name, i);
        } else if (nbytes == (size_t)l->n_layers * per * sizeof(float)) {
            CHECK(l->bias_qkv[i] && memcmp(l->bias_qkv[i], want + i * per, per * sizeof(float)) == 0,
                  "%s: layer %d's Q | K | V biases differ from the file's", name, i);
        }
    }
    free(want);
}

// A valid checkpoint: dims, kv heads, family, names, W bit for bit equal to expected.bin,
// and the output projections (check_out).
static void check_model(const char *name, int heads, int n_layers, const int dims[4], int kv_heads,
                        const char *family, const char *names[], int n_names_checked) {
    AttentionLayers l;
    char err[512], path[256];
    int rc = safetensors_attention(model_path(name), heads, &l, err, sizeof err);
    CHECK(rc == 0, "%s: returned %d: %s", name, rc, err);
    if (rc) return;
    CHECK(l.n_layers == n_layers, "%s: %d layers, want %d", name, l.n_layers, n_layers);
    for (int i = 0; i < 4; i++) CHECK(l.dims[i] == dims[i], "%s: dims[%d] = %d, want %d", name, i, l.dims[i], dims[i]);
    CHECK(l.kv_heads == kv_heads, "%s: kv_heads %d, want %d", name, l.kv_heads, kv_heads);
    CHECK(l.family && strcmp(l.family, family) == 0, "%s: family %s, want %s", name, l.family, family);
    for (int i = 0; i < n_names_checked && i < l.n_layers; i++)
        if (names[i]) CHECK(strcmp(l.names[i], names[i]) == 0, "%s: layer %d is %s, want %s", name, i, l.names[i], names[i]);

    snprintf(path, sizeof path, "%s/%s/expected.bin", dir, name);
    size_t nbytes = 0;
    float *want = slurp(path, &nbytes);
    size_t per = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    CHECK(want && nbytes == (size_t)n_layers * per * sizeof(float), "%s: expected.bin has %zu bytes", name, nbytes);
    if (want && l.n_layers == n_layers && nbytes == (size_t)n_layers * per * sizeof(float)) {
        size_t bad = 0, first = 0;
        for (int i = 0; i < n_layers; i++)
            for (size_t j = 0; j < per; j++)
                if (memcmp(&l.weights[i][j], &want[i * per + j], sizeof(float)) != 0 && !bad++) first = i * per + j;
        CHECK(bad == 0, "%s: %zu values differ, first at flat index %zu: got %.9g want %.9g", name, bad, first,
              (double)l.weights[first / per][first % per], (double)want[first]);
    }
    free(want);
    check_out(name, &l);
    check_bias(name, &l);

    // The same bytes through the in-memory reader give the same result (one file).
    if (strstr(model_path(name), ".index.json")) {
        attention_layers_free(&l);
        return;
    }
    size_t n = 0;
    void *bytes = slurp(model_path(name), &n);
    AttentionLayers m;
    rc = safetensors_attention_mem(bytes, n, name, heads ? heads : dims[0], &m, err, sizeof err);
    CHECK(rc == 0 && m.n_layers == l.n_layers, "%s in memory: %d: %s", name, rc, err);
    size_t out_per = (size_t)l.out_dims[0] * (size_t)l.out_dims[1];
    if (rc == 0 && m.n_layers == l.n_layers)
        for (int i = 0; i < l.n_layers; i++)
            CHECK(memcmp(m.weights[i], l.weights[i], per * sizeof(float)) == 0 && strcmp(m.names[i], l.names[i]) == 0 &&
                      (l.out ? m.out && memcmp(m.out[i], l.out[i], out_per * sizeof(float)) == 0 : !m.out),
                  "%s in memory: layer %d differs", name, i);
    attention_layers_free(&m);
    free(bytes);
    attention_layers_free(&l);
    CHECK(l.n_layers == 0 && l.weights == NULL && l.names == NULL && l.out == NULL,
          "%s: free leaves the struct zeroed", name);
}

// The error of `path`: one line "PATH: want" (want starting with '~': the line contains the rest).
static void check_error_at(const char *path, int heads, const char *want) {
    AttentionLayers l;
    char err[1024], full[1400];
    memset(&l, 0x5a, sizeof l);
    int rc = safetensors_attention(path, heads, &l, err, sizeof err);
    CHECK(rc == -1, "%s: returned %d, want -1 (%s)", path, rc, want);
    CHECK(l.n_layers == 0 && l.weights == NULL && l.names == NULL && l.out == NULL, "%s: out not left empty", path);
    CHECK(strchr(err, '\n') == NULL, "%s: message has a newline: %s", path, err);
    if (want[0] == '~') {
        CHECK(strncmp(err, path, strlen(path)) == 0 && strstr(err, want + 1) != NULL, "%s:\n  got  %s\n  want ...%s...",
              path, err, want + 1);
    } else {
        snprintf(full, sizeof full, "%s: %s", path, want);
        CHECK(strcmp(err, full) == 0, "%s:\n  got  %s\n  want %s", path, err, full);
    }
    if (rc == 0) attention_layers_free(&l);
}

static void check_error(const char *bad_name, int heads, const char *want) {
    char path[256];
    snprintf(path, sizeof path, "%s/bad/%s.safetensors", dir, bad_name);
    check_error_at(path, heads, want);
}

static void test_valid(void) {
    const char *bert_names[] = {"bert.encoder.layer.0", "bert.encoder.layer.1"};
    int bert_dims[4] = {4, 8, 32, 3};
    check_model("bert_f32", 0, 2, bert_dims, 4, "BERT", bert_names, 2);  // heads from config.json
    check_model("bert_f32", 4, 2, bert_dims, 4, "BERT", bert_names, 2);
    check_model("bert_f16", 4, 2, bert_dims, 4, "BERT", bert_names, 2);
    check_model("bert_bf16", 0, 2, bert_dims, 4, "BERT", bert_names, 2);
    // Row-major W[h, d_k, ...] has the same memory for any split of the 32 rows into heads.
    int one_head[4] = {1, 32, 32, 3}, eight[4] = {8, 4, 32, 3};
    check_model("bert_f32", 1, 2, one_head, 1, "BERT", bert_names, 2);
    check_model("bert_f32", 8, 2, eight, 8, "BERT", bert_names, 2);

    const char *gpt2_names[] = {"h.0", "h.1"};
    check_model("gpt2", 0, 2, bert_dims, 4, "GPT-2", gpt2_names, 2);  // n_head from config.json

    const char *llama_names[] = {"model.layers.0", "model.layers.1", "model.layers.2", NULL, NULL, NULL,
                                 NULL, NULL, NULL, NULL, "model.layers.10", "model.layers.11"};
    int llama_dims[4] = {4, 4, 16, 3};
    check_model("llama", 0, 12, llama_dims, 4, "LLaMA", llama_names, 12);  // F64
    check_model("llama_gqa", 0, 2, llama_dims, 2, "LLaMA", llama_names, 2);  // text_config, 2 K/V heads

    int special_dims[4] = {2, 4, 8, 3};
    const char *special_names[] = {"enc.layer.0"};
    check_model("f16_special", 2, 1, special_dims, 2, "BERT", special_names, 1);  // no output projections

    // Only the MLP's output.dense / mlp.c_proj: no output projections, out NULL.
    check_model("bert_no_out", 0, 2, bert_dims, 4, "BERT", bert_names, 2);
    check_model("gpt2_no_out", 0, 2, bert_dims, 4, "GPT-2", gpt2_names, 2);
    // Attention width other than d_model: 4 of 8 (GPT-2), 16 of 8 (LLaMA, K/V width 8).
    int narrow_dims[4] = {2, 2, 8, 3}, wide_dims[4] = {4, 4, 8, 3}, small_dims[4] = {2, 4, 8, 3};
    check_model("gpt2_narrow", 0, 2, narrow_dims, 2, "GPT-2", gpt2_names, 2);
    check_model("llama_gqa_wide", 0, 2, wide_dims, 2, "LLaMA", llama_names, 2);
    check_model("bert_small", 0, 2, small_dims, 2, "BERT", bert_names, 2);
    // Q, K and V fused in one nn.Linear [3·d_model, d_model]; the Grassmann mixing; a BART-like
    // out_proj that is no nn.MultiheadAttention's; BERT sharded over three files.
    const char *nanogpt_names[] = {"transformer.h.0", "transformer.h.1"}, *timm_names[] = {"blocks.0", "blocks.1"},
               *mha_names[] = {"encoder.layers.0.self_attn", "encoder.layers.1.self_attn"},
               *bert3_names[] = {"bert.encoder.layer.0", "bert.encoder.layer.1", "bert.encoder.layer.2"};
    check_model("nanogpt", 0, 2, bert_dims, 4, "nanoGPT", nanogpt_names, 2);    // n_head from config.json
    check_model("timm", 4, 2, bert_dims, 4, "timm ViT", timm_names, 2);
    check_model("mha", 0, 2, bert_dims, 4, "nn.MultiheadAttention", mha_names, 2);  // num_heads
    int grassmann_dims[4] = {4, 1, 16, 1};
    check_model("grassmann", 0, 2, grassmann_dims, 4, "Grassmann", timm_names, 2);  // r from W_red, no heads
    check_model("bart_like", 0, 2, llama_dims, 4, "LLaMA", llama_names, 2);
    check_model("bert_sharded", 0, 3, bert_dims, 4, "BERT", bert3_names, 3);
    const char *exact[] = {"bert_f32", "gpt2", "llama", "llama_gqa", "gpt2_narrow", "llama_gqa_wide", "bert_small",
                           "nanogpt", "timm", "mha", "grassmann", "bert_sharded"};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) check_out_codes(exact[i]);
}

static void test_half_conversion(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/f16_table.bin", dir);
    size_t n = 0;
    uint32_t *table = slurp(path, &n);
    CHECK(table && n == 65536 * 4, "f16_table.bin has %zu bytes", n);
    if (!table || n != 65536 * 4) {
        free(table);
        return;
    }
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = safetensors_f16_to_f32((uint16_t)h), w;
        uint32_t want = table[h], got;
        memcpy(&got, &f, 4);
        memcpy(&w, &want, 4);
        int ok = got == want || (isnan(f) && isnan(w));
        if (!ok && bad++ < 5) CHECK(0, "f16 0x%04x: got 0x%08x want 0x%08x (numpy)", h, got, want);
    }
    CHECK(bad == 0, "%d of 65536 binary16 patterns convert differently from numpy", bad);
    free(table);

    CHECK(safetensors_bf16_to_f32(0x3f80) == 1.0f, "bf16 1.0");
    CHECK(safetensors_bf16_to_f32(0xc000) == -2.0f, "bf16 -2.0");
    CHECK(safetensors_bf16_to_f32(0x0001) == 0x1p-133f, "bf16 smallest subnormal");
    CHECK(isinf(safetensors_bf16_to_f32(0x7f80)) && isnan(safetensors_bf16_to_f32(0x7fc1)), "bf16 inf/nan");
    CHECK(safetensors_f16_to_f32(0x0001) == 0x1p-24f && safetensors_f16_to_f32(0x7bff) == 65504.0f,
          "f16 smallest subnormal and largest normal");
}

static void test_errors(void) {
    check_error("short", 4, "5 bytes is too short for a safetensors file (it starts with an 8-byte header length)");
    check_error("header_past_eof", 4, "~runs past the end of the file");
    check_error("header_absurd", 4, "header length 1099511627776 bytes is absurd (at most 100000000); not a safetensors file?");
    check_error("truncated", 4,
                "tensor \"enc.layer.0.attention.self.value.weight\": data_offsets [512, 768] lie outside the data "
                "buffer of 758 bytes (truncated file?)");
    check_error("not_object", 4, "header is an array, not a JSON object of tensors");
    check_error("bad_json", 4, "~: header is not valid JSON (at byte ");
    check_error("trailing", 4, "header has bytes after its JSON object (at byte 3 of 4)");
    check_error("not_utf8", 4, "header is not valid UTF-8 (byte 0xff at offset 3)");
    check_error("overlong_utf8", 4, "header is not valid UTF-8 (byte 0xc0 at offset 3)");
    check_error("nul", 4, "header has a NUL byte at offset 3");
    check_error("escaped_nul", 4, "header has an escaped NUL (\\u0000) at offset 3");
    check_error("escaped_backslash", 4, "tensor \"x\\\\u0000y\": entry is a number, not a JSON object");
    char long_want[256];
    snprintf(long_want, sizeof long_want, "tensor \"%.100s...\": entry is a number, not a JSON object",
             "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn");
    check_error("long_name", 4, long_want);
    check_error("entry_not_object", 4, "tensor \"x\": entry is a number, not a JSON object");
    check_error("metadata_not_object", 4, "\"__metadata__\" is an array, not a JSON object");
    check_error("no_dtype", 4, "tensor \"x\": no \"dtype\"");
    check_error("dtype_not_string", 4, "tensor \"x\": \"dtype\" is a number, not a string");
    check_error("unknown_dtype", 4, "tensor \"x\": unknown dtype \"F8\"");
    check_error("no_shape", 4, "tensor \"x\": no \"shape\"");
    check_error("shape_not_array", 4, "tensor \"x\": \"shape\" is a string, not an array");
    check_error("shape_negative", 4, "tensor \"x\": shape[0] = -1 is negative");
    check_error("shape_fraction", 4, "tensor \"x\": shape[0] = 1.5 is not an integer");
    check_error("shape_huge", 4, "tensor \"x\": shape[0] = 1e+30 is too large");
    check_error("shape_string", 4, "tensor \"x\": shape[1] is not a number");
    check_error("shape_overflow", 4, "tensor \"x\": shape [4294967296, 4294967296] is too large (its size overflows 64 bits)");
    check_error("shape_bytes_overflow", 4,
                "tensor \"x\": shape [4294967296, 1073741824] is too large (its size overflows 64 bits)");
    check_error("no_offsets", 4, "tensor \"x\": no \"data_offsets\"");
    check_error("offsets_count", 4, "tensor \"x\": \"data_offsets\" must have 2 entries [begin, end] (it has 1)");
    check_error("offsets_reversed", 4, "tensor \"x\": data_offsets [8, 4] end before they begin");
    check_error("offsets_outside", 4,
                "tensor \"x\": data_offsets [4, 8] lie outside the data buffer of 4 bytes (truncated file?)");
    check_error("offsets_negative", 4, "tensor \"x\": data_offsets[0] = -4 is negative");
    check_error("size_mismatch", 4, "tensor \"x\": data_offsets [0, 12] hold 12 bytes but shape [2, 2] of F32 needs 16");
    check_error("overlap", 4, "tensors \"a\" [0, 8] and \"b\" [4, 12] overlap in the data buffer");
    check_error("duplicate", 4, "tensor name \"a\" appears twice in the header");
    check_error("deep_json", 4, "~: header is not valid JSON (at byte ");
    check_error("deep_array", 4, "\"__metadata__\" is an array, not a JSON object");
    check_error("no_attention", 4,
                "no attention weights among its 2 tensors (looked for names ending in "
                ".attention.self.{query,key,value}.weight (BERT), .attn.c_attn.weight (GPT-2, nanoGPT), "
                ".self_attn.{q,k,v}_proj.weight (LLaMA), .attn.qkv.weight (timm ViT), .in_proj_weight "
                "(nn.MultiheadAttention) or .grassmann.w_red.weight (attnsweep's Grassmann mixing))");
    check_error("attention_int", 4,
                "tensor \"enc.layer.0.attention.self.query.weight\" has dtype I32; attention weights must be "
                "F32, F16, BF16 or F64");
    check_error("q_without_k", 4,
                "layer \"enc.layer.0\" has \"enc.layer.0.attention.self.query.weight\" but no "
                "\"enc.layer.0.attention.self.key.weight\"");
    check_error("qkv_shapes", 4,
                "layer \"enc.layer.0\": query [8, 8], key [4, 8] and value [8, 8] weights do not fit together "
                "(all three must be [width, d_model])");
    check_error("three_d", 4,
                "tensor \"enc.layer.0.attention.self.query.weight\" has shape [2, 4, 8]; expected a 2-D weight "
                "[width, d_model]");
    check_error("empty_weight", 4,
                "tensor \"enc.layer.0.attention.self.query.weight\" has shape [0, 8]; an attention weight cannot be empty");
    check_error("layers_differ", 4,
                "layer \"enc.layer.1\": width 16, d_model 16, key/value width 16 differ from layer \"enc.layer.0\" "
                "(8, 8, 8); all layers must agree");
    check_error("two_kinds", 4,
                "attention weights of two kinds, BERT (\"enc.layer.0.attention.self.query.weight\") and LLaMA "
                "(\"model.layers.0.self_attn.q_proj.weight\"); cannot tell which to score");
    check_error("nan", 4, "tensor \"enc.layer.0.attention.self.query.weight\" has NaN at [2, 3]");
    check_error("inf_f16", 4, "tensor \"enc.layer.0.attention.self.key.weight\" has +Inf at [0, 1]");
    check_error("f64_range", 4,
                "tensor \"enc.layer.0.attention.self.value.weight\" has a value beyond the float32 range (-1e+300) "
                "at [7, 7]");
    check_error("gpt2_columns", 4,
                "tensor \"h.0.attn.c_attn.weight\" has shape [8, 25]; a fused Q, K, V weight [d_model, 3*width] "
                "needs a column count divisible by 3");
    check_error("gqa_rows", 2,
                "layer \"model.layers.0\": k_proj/v_proj have 6 rows, not a whole number of key/value heads of "
                "size d_k = 4 that divides 2 heads (grouped-query attention)");
    check_error("llama_kv_differ", 2,
                "layer \"model.layers.0\": q_proj [8, 8], k_proj [4, 8] and v_proj [8, 8] weights do not fit "
                "together (k_proj and v_proj must have the same shape and all three the same input size d_model)");
    check_error("out_missing", 4,
                "layer \"enc.layer.1\" has no output projection \"enc.layer.1.attention.output.dense.weight\" but "
                "layer \"enc.layer.0\" has one; all layers or none must have it");
    check_error("out_missing_first", 4,
                "layer \"enc.layer.0\" has no output projection \"enc.layer.0.attention.output.dense.weight\" but "
                "layer \"enc.layer.1\" has one; all layers or none must have it");
    check_error("out_linear_shape", 2,
                "tensor \"model.layers.0.self_attn.o_proj.weight\" has shape [8, 4]; expected [d_model, width] = "
                "[8, 8]");
    check_error("out_conv1d_shape", 1,
                "tensor \"h.0.attn.c_proj.weight\" has shape [8, 4]; expected [width, d_model] = [4, 8]");
    check_error("out_3d", 4,
                "tensor \"enc.layer.0.attention.output.dense.weight\" has shape [2, 4, 8]; expected a 2-D weight "
                "[d_model, width]");
    check_error("out_int", 4,
                "tensor \"enc.layer.0.attention.output.dense.weight\" has dtype I32; attention weights must be F32, "
                "F16, BF16 or F64");
    check_error("out_nan_bf16", 4, "tensor \"enc.layer.0.attention.output.dense.weight\" has NaN at [1, 5]");
    check_error("out_alone", 4, "layer \"h.0\" has \"h.0.attn.c_proj.weight\" but no \"h.0.attn.c_attn.weight\"");
    check_error("fused_rows", 4,
                "tensor \"blocks.0.attn.qkv.weight\" has shape [25, 8]; a fused Q, K, V weight [3*width, d_model] "
                "needs a row count divisible by 3");
    check_error("bias_short", 4, "tensor \"h.0.attn.c_attn.bias\" has F32 [23]; expected a float vector [24]");
    check_error("ln_int", 4, "tensor \"h.0.ln_1.weight\" has I32 [8]; expected a float vector [8]");
    check_error("bias_nan", 4, "tensor \"h.0.attn.c_attn.bias\" has NaN at [5]");
    check_error("grassmann_plu", 0,
                "tensor \"b.0.grassmann.w_plu.weight\" has shape [8, 5]; expected [d_model, r*(r-1)/2] = [8, 6]");
    // sharded checkpoints: messages name the index, or the shard at fault
    char index[256], want_shard[512];
    const struct {
        const char *name, *want;
    } shards[] = {
        {"shard_wrong", "weight_map puts tensor \"enc.layer.0.attention.self.query.weight\" in \"b.safetensors\", "
                        "but it is in another shard"},
        {"shard_escape", "weight_map: tensor \"x\" names \"../a.safetensors\", not a shard file beside the index"},
        {"shard_no_map", "the index has no \"weight_map\" object of tensor names and their shards"},
        {"shard_twice", "tensor \"enc.layer.0.attention.self.key.weight\" is in two shards"},
    };
    for (size_t i = 0; i < sizeof shards / sizeof shards[0]; i++) {
        snprintf(index, sizeof index, "%s/%s/model.safetensors.index.json", dir, shards[i].name);
        check_error_at(index, 4, shards[i].want);
    }
    snprintf(index, sizeof index, "%s/shard_missing/model.safetensors.index.json", dir);
    snprintf(want_shard, sizeof want_shard, "%s/shard_missing/gone.safetensors: No such file or directory", dir);
    AttentionLayers none;
    char shard_err[1024];
    CHECK(safetensors_attention(index, 4, &none, shard_err, sizeof shard_err) == -1 && !strcmp(shard_err, want_shard),
          "a missing shard: got '%s', want '%s'", shard_err, want_shard);

    // heads: wrong, negative, missing, and broken config.json files
    char want[512];
    check_error_at(model_path("bert_f32"), 3,
                   "3 heads do not divide the attention width 32 (of "
                   "\"bert.encoder.layer.0.attention.self.query.weight\"); pass --heads N with N dividing 32");
    check_error_at(model_path("bert_f32"), -2, "number of heads must be positive (got -2)");
    snprintf(want, sizeof want,
             "number of heads unknown: cannot open %s/bert_f16/config.json (No such file or directory); pass --heads N",
             dir);
    check_error_at(model_path("bert_f16"), 0, want);
    snprintf(want, sizeof want,
             "number of heads unknown: %s/cfg_no_key/config.json has none of num_attention_heads, n_head, "
             "num_heads, n_heads; pass --heads N", dir);
    check_error_at(model_path("cfg_no_key"), 0, want);
    snprintf(want, sizeof want,
             "number of heads unknown: num_attention_heads in %s/cfg_bad_value/config.json is not a positive "
             "integer; pass --heads N", dir);
    check_error_at(model_path("cfg_bad_value"), 0, want);
    snprintf(want, sizeof want, "number of heads unknown: %s/cfg_invalid/config.json is not valid JSON; pass --heads N",
             dir);
    check_error_at(model_path("cfg_invalid"), 0, want);
    snprintf(want, sizeof want,
             "number of heads unknown: n_head in %s/cfg_zero/config.json is not a positive integer; pass --heads N", dir);
    check_error_at(model_path("cfg_zero"), 0, want);
    AttentionLayers l;
    char err[256];
    CHECK(safetensors_attention(model_path("cfg_zero"), 2, &l, err, sizeof err) == 0, "--heads overrides config: %s",
          err);
    attention_layers_free(&l);

    // files that are not there or not files
    snprintf(want, sizeof want, "%s/nonexistent.safetensors", dir);
    check_error_at(want, 4, "No such file or directory");
    check_error_at(dir, 4, "not a regular file");

    // the in-memory reader: no directory to find config.json in; NULL data is an empty file
    size_t n = 0;
    void *bytes = slurp(model_path("bert_f32"), &n);
    CHECK(safetensors_attention_mem(bytes, n, "mem", 0, &l, err, sizeof err) == -1 &&
              strcmp(err, "mem: number of heads unknown; pass --heads N") == 0,
          "in memory without heads: %s", err);
    CHECK(safetensors_attention_mem(NULL, 0, "mem", 4, &l, err, sizeof err) == -1 &&
              strcmp(err, "mem: 0 bytes is too short for a safetensors file (it starts with an 8-byte header length)") == 0,
          "NULL data: %s", err);
    // a short error buffer is cut and terminated; none at all is fine too
    char tiny[12];
    memset(tiny, 'x', sizeof tiny);
    CHECK(safetensors_attention_mem(bytes, 9, "mem", 4, &l, tiny, sizeof tiny) == -1 &&
              strlen(tiny) == sizeof tiny - 1 && strncmp(tiny, "mem: header", 11) == 0,
          "short error buffer: \"%.12s\"", tiny);
    CHECK(safetensors_attention_mem(bytes, 9, "mem", 4, &l, NULL, 0) == -1, "no error buffer");
    free(bytes);

    // a header too big for cJSON's tree: refused before parsing
    const char *head = "{\"__metadata__\":{\"a\":[", *tail = "0]}}";
    size_t hn = strlen(head) + 2 * 4000000 + strlen(tail);
    unsigned char *big = malloc(8 + hn);
    for (int k = 0; k < 8; k++) big[k] = (unsigned char)((uint64_t)hn >> (8 * k));
    char *t = (char *)big + 8;
    memcpy(t, head, strlen(head));
    t += strlen(head);
    for (int k = 0; k < 4000000; k++, t += 2) memcpy(t, "0,", 2);
    memcpy(t, tail, strlen(tail));
    CHECK(safetensors_attention_mem(big, 8 + hn, "mem", 4, &l, err, sizeof err) == -1 &&
              strcmp(err, "mem: header has more than 4000000 JSON values; not a plausible safetensors header") == 0,
          "4 million values: %s", err);
    free(big);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_safetensors.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/make_safetensors.py %s", dir);
    int rc = system(cmd);
    CHECK(rc == 0, "%s exited with %d (run from the repository root)", cmd, rc);
    if (rc == 0) {
        test_valid();
        test_half_conversion();
        test_errors();
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_report("test_safetensors");
}
