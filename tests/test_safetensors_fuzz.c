// test_safetensors_fuzz.c: a deterministic fuzz smoke run of the safetensors reader that
// needs no clang. Valid files (BERT F32 with extra tensors and metadata, GPT-2 fused F16,
// LLaMA grouped-query with mixed F32/BF16/F64, each with output projections, BERT and
// GPT-2 also with the MLP's look-alikes) are built here and mutated: bit flips,
// truncations, lying header lengths, header bytes replaced by JSON punctuation and
// invalid UTF-8, every dtype x shape x data_offsets variant from a list of bad ones,
// duplicated and odd names, deep JSON, many tensors, random bytes, several head counts.
// Every case must return -1 with one line "fuzz: ..." or 0 with a consistent, finite
// result (safetensors_result.h). Each case lives in a malloc'd block of exactly its
// size, so under ASan (as scripts/test.sh runs it) any read past the end is caught. A
// sample also goes through the file reader, which must agree with the in-memory reader
// message for message.
// modules: io
#define _POSIX_C_SOURCE 200809L
#include "io/safetensors.h"

#include "check.h"
#include "splitmix.h"
#include "safetensors_result.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long n_cases, n_ok, n_err;

// One line per mutation family: cases run and seconds taken since the last line.
static void phase(const char *what) {
    static long last_cases;
    static struct timespec last;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (last.tv_sec || last.tv_nsec)
        printf("  %-28s %6ld cases %6.2f s\n", what, n_cases - last_cases,
               (double)(now.tv_sec - last.tv_sec) + 1e-9 * (double)(now.tv_nsec - last.tv_nsec));
    last = now;
    last_cases = n_cases;
}

// ---- deterministic randomness

static uint64_t rng_state = 0x5eed5afe7e450123ull;
static uint64_t rnd(void) { return splitmix64(&rng_state); }
static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

// ---- a growable byte buffer

typedef struct {
    unsigned char *p;
    size_t n, cap;
} Buf;

static void buf_add(Buf *b, const void *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(Buf *b, const char *fmt, ...) {
    char tmp[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) abort();
    buf_add(b, tmp, (size_t)n);
}

// ---- building valid files

typedef struct {
    char name[96];
    const char *dtype;
    int ndim;
    uint64_t shape[4];
} Spec;

static size_t dtype_size(const char *dt) {
    if (!strcmp(dt, "F64") || !strcmp(dt, "I64")) return 8;
    if (!strcmp(dt, "F32") || !strcmp(dt, "I32")) return 4;
    if (!strcmp(dt, "F16") || !strcmp(dt, "BF16")) return 2;
    return 1;
}

static uint16_t f16_exact(float f) {  // for the multiples of 1/8 in [-1, 1] used below
    if (f == 0) return 0;
    uint16_t sign = f < 0 ? 0x8000 : 0;
    int e;
    float m = frexpf(fabsf(f), &e);  // f = m·2^e, m in [0.5, 1)
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((2 * m - 1) * 1024));
}

static void put_value(Buf *b, const char *dt, size_t i) {
    float v = (float)((int)((i * 7919) % 17) - 8) / 8.0f;
    unsigned char out[8] = {0};
    size_t sz = dtype_size(dt);
    if (!strcmp(dt, "F32")) {
        uint32_t u;
        memcpy(&u, &v, 4);
        for (int k = 0; k < 4; k++) out[k] = (unsigned char)(u >> (8 * k));
    } else if (!strcmp(dt, "F64")) {
        double d = v;
        uint64_t u;
        memcpy(&u, &d, 8);
        for (int k = 0; k < 8; k++) out[k] = (unsigned char)(u >> (8 * k));
    } else if (!strcmp(dt, "F16") || !strcmp(dt, "BF16")) {
        uint32_t u;
        memcpy(&u, &v, 4);
        uint16_t h = !strcmp(dt, "F16") ? f16_exact(v) : (uint16_t)(u >> 16);
        out[0] = (unsigned char)h;
        out[1] = (unsigned char)(h >> 8);
    } else {
        out[0] = (unsigned char)i;
    }
    buf_add(b, out, sz);
}

static uint64_t numel(const Spec *s) {
    uint64_t n = 1;
    for (int d = 0; d < s->ndim; d++) n *= s->shape[d];
    return n;
}

// The file for `specs`; the tensor `over` (-1: none) gets the raw JSON texts given
// (NULL: the true one) for dtype, shape and data_offsets. meta: raw __metadata__ JSON.
static void build(Buf *out, const Spec *specs, int n, const char *meta, int over, const char *dtype_txt,
                  const char *shape_txt, const char *off_txt) {
    Buf h = {0}, data = {0};
    buf_add(&h, "{", 1);
    for (int i = 0; i < n; i++) {
        const Spec *s = &specs[i];
        size_t begin = data.n;
        for (uint64_t k = 0; k < numel(s); k++) put_value(&data, s->dtype, (size_t)k);
        buf_printf(&h, "%s\"%s\":{\"dtype\":", i ? "," : "", s->name);
        if (i == over && dtype_txt) buf_printf(&h, "%s", dtype_txt);
        else buf_printf(&h, "\"%s\"", s->dtype);
        buf_printf(&h, ",\"shape\":");
        if (i == over && shape_txt) {
            buf_printf(&h, "%s", shape_txt);
        } else {
            buf_printf(&h, "[");
            for (int d = 0; d < s->ndim; d++) buf_printf(&h, "%s%llu", d ? "," : "", (unsigned long long)s->shape[d]);
            buf_printf(&h, "]");
        }
        buf_printf(&h, ",\"data_offsets\":");
        if (i == over && off_txt) buf_printf(&h, "%s", off_txt);
        else buf_printf(&h, "[%zu,%zu]", begin, data.n);
        buf_printf(&h, "}");
    }
    if (meta) {
        buf_printf(&h, "%s\"__metadata__\":", n ? "," : "");
        buf_add(&h, meta, strlen(meta));
    }
    buf_add(&h, "}", 1);
    while (h.n % 8) buf_add(&h, " ", 1);
    out->n = 0;
    unsigned char len[8];
    for (int k = 0; k < 8; k++) len[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
    buf_add(out, len, 8);
    buf_add(out, h.p, h.n);
    if (data.n) buf_add(out, data.p, data.n);
    free(h.p);
    free(data.p);
}

static int spec(Spec *s, const char *dtype, int ndim, uint64_t d0, uint64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int spec(Spec *s, const char *dtype, int ndim, uint64_t d0, uint64_t d1, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    s->dtype = dtype;
    s->ndim = ndim;
    s->shape[0] = d0;
    s->shape[1] = d1;
    s->shape[2] = s->shape[3] = 1;
    return 1;
}

typedef struct {
    const char *what;
    Spec s[16];
    int n;
    int heads;
    const char *meta;
} Base;

static void make_bases(Base b[3]) {
    memset(b, 0, 3 * sizeof *b);
    Base *x = &b[0];
    x->what = "BERT F32";
    x->heads = 4;
    x->meta = "{\"format\":\"pt\"}";
    x->n += spec(&x->s[x->n], "F32", 2, 4, 8, "emb.weight");
    x->n += spec(&x->s[x->n], "I64", 2, 1, 4, "emb.position_ids");
    for (int l = 0; l < 2; l++) {
        x->n += spec(&x->s[x->n], "F32", 2, 8, 8, "enc.layer.%d.attention.self.query.weight", l);
        x->n += spec(&x->s[x->n], "F32", 1, 8, 1, "enc.layer.%d.attention.self.query.bias", l);
        x->n += spec(&x->s[x->n], "F32", 2, 8, 8, "enc.layer.%d.attention.self.key.weight", l);
        x->n += spec(&x->s[x->n], "F32", 2, 8, 8, "enc.layer.%d.attention.self.value.weight", l);
        x->n += spec(&x->s[x->n], "F32", 2, 8, 8, "enc.layer.%d.attention.output.dense.weight", l);
        x->n += spec(&x->s[x->n], "F32", 2, 8, 32, "enc.layer.%d.output.dense.weight", l);  // the MLP's
    }
    x = &b[1];
    x->what = "GPT-2 F16";
    x->heads = 4;
    x->n += spec(&x->s[x->n], "F16", 2, 8, 24, "h.0.attn.c_attn.weight");
    x->n += spec(&x->s[x->n], "F16", 2, 8, 24, "h.1.attn.c_attn.weight");
    x->n += spec(&x->s[x->n], "F16", 2, 8, 8, "h.0.attn.c_proj.weight");
    x->n += spec(&x->s[x->n], "BF16", 2, 8, 8, "h.1.attn.c_proj.weight");
    x->n += spec(&x->s[x->n], "F16", 2, 32, 8, "h.0.mlp.c_proj.weight");  // the MLP's
    x->n += spec(&x->s[x->n], "BOOL", 2, 4, 4, "h.0.attn.bias");
    x->n += spec(&x->s[x->n], "BF16", 2, 3, 8, "wte.weight");
    x = &b[2];
    x->what = "LLaMA GQA mixed dtypes";
    x->heads = 4;
    x->meta = "{}";
    for (int l = 0; l < 2; l++) {
        x->n += spec(&x->s[x->n], "F32", 2, 8, 8, "model.layers.%d.self_attn.q_proj.weight", l);
        x->n += spec(&x->s[x->n], "BF16", 2, 4, 8, "model.layers.%d.self_attn.k_proj.weight", l);
        x->n += spec(&x->s[x->n], "F64", 2, 4, 8, "model.layers.%d.self_attn.v_proj.weight", l);
        x->n += spec(&x->s[x->n], "F32", 2, 8, 8, "model.layers.%d.self_attn.o_proj.weight", l);
    }
}

// ---- running one case

static char tmp_path[64];

// Run the reader on a private copy of exactly `len` bytes; check the outcome's shape.
// Returns the reader's return code; the message goes to err_out when given.
static int run(const unsigned char *data, size_t len, int heads, char *err_out, size_t err_len) {
    unsigned char *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, data, len);
    AttentionLayers l;
    char err[512];
    int rc = safetensors_attention_mem(copy, len, "fuzz", heads, &l, err, sizeof err);
    n_cases++;
    if (rc == 0) {
        n_ok++;
        const char *why = attention_layers_problem(&l);
        CHECK(!why, "case %ld: accepted with %s (layers %d, dims %d %d %d %d, kv %d, out dims %d %d)", n_cases, why,
              l.n_layers, l.dims[0], l.dims[1], l.dims[2], l.dims[3], l.kv_heads, l.out_dims[0], l.out_dims[1]);
        attention_layers_free(&l);
    } else {
        n_err++;
        CHECK(rc == -1, "case %ld: returned %d", n_cases, rc);
        CHECK(strncmp(err, "fuzz: ", 6) == 0 && strlen(err) > 6 && !strchr(err, '\n'),
              "case %ld: message is not one line \"fuzz: ...\": %s", n_cases, err);
        CHECK(attention_layers_empty(&l), "case %ld: out not left empty after an error", n_cases);
    }
    if (err_out) snprintf(err_out, err_len, "%s", rc ? err : "");
    free(copy);
    return rc;
}

// The file reader on the same bytes must give the same answer (message after the label).
static void run_file_too(const unsigned char *data, size_t len, int heads) {
    char mem_err[512], file_err[512];
    int rc_mem = run(data, len, heads, mem_err, sizeof mem_err);
    FILE *f = fopen(tmp_path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        CHECK(0, "cannot write %s", tmp_path);
        return;
    }
    AttentionLayers l;
    int rc_file = safetensors_attention(tmp_path, heads, &l, file_err, sizeof file_err);
    size_t pl = strlen(tmp_path);
    const char *fm = rc_file ? file_err + pl : "", *mm = rc_mem ? mem_err + strlen("fuzz") : "";
    CHECK(rc_file == rc_mem && (rc_file == 0 || (strncmp(file_err, tmp_path, pl) == 0 && strcmp(fm, mm) == 0)),
          "file and memory readers disagree on %zu bytes:\n  file %d %s\n  mem  %d %s", len, rc_file, file_err,
          rc_mem, mem_err);
    if (rc_file == 0) attention_layers_free(&l);
}

// ---- the mutation families

static void bit_flips(const Buf *b, int heads, int count) {
    unsigned char *m = malloc(b->n);
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; k--) hlen = hlen << 8 | b->p[k];
    for (int c = 0; c < count; c++) {
        memcpy(m, b->p, b->n);
        int flips = 1 + (int)rnd_below(4);
        for (int f = 0; f < flips; f++) {
            // mostly in the header, where the structure is
            size_t pos = rnd_below(4) ? 8 + rnd_below((size_t)hlen) : rnd_below(b->n);
            m[pos] ^= (unsigned char)(1u << rnd_below(8));
        }
        if (c < 100) run_file_too(m, b->n, heads);
        else run(m, b->n, heads, NULL, 0);
    }
    free(m);
}

// Every length through the header and a little beyond, then every 5th byte of the data.
static void truncations(const Buf *b, int heads) {
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; k--) hlen = hlen << 8 | b->p[k];
    for (size_t len = 0; len <= b->n; len += len < 8 + hlen + 16 ? 1 : 5) {
        if (len % 37 == 0) run_file_too(b->p, len, heads);
        else run(b->p, len, heads, NULL, 0);
    }
    run(b->p, b->n - 1, heads, NULL, 0);
}

static void header_length_lies(const Buf *b, int heads) {
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = n << 8 | b->p[k];
    const uint64_t lies[] = {0, 1, 2, 7, n - 1, n + 1, n + 7, n + 8, b->n - 9, b->n - 8, b->n - 7, b->n,
                             SAFETENSORS_MAX_HEADER, SAFETENSORS_MAX_HEADER + 1, 1ull << 32, (1ull << 32) + n,
                             1ull << 63, UINT64_MAX, UINT64_MAX - 7, (uint64_t)INT64_MAX, (uint64_t)SIZE_MAX};
    unsigned char *m = malloc(b->n);
    for (size_t i = 0; i < sizeof lies / sizeof lies[0] + 40; i++) {
        uint64_t v = i < sizeof lies / sizeof lies[0] ? lies[i] : (i % 2 ? rnd() : rnd_below(b->n + 16));
        memcpy(m, b->p, b->n);
        for (int k = 0; k < 8; k++) m[k] = (unsigned char)(v >> (8 * k));
        run(m, b->n, heads, NULL, 0);
    }
    free(m);
}

static void byte_replacements(const Buf *b, int heads, int count) {
    static const unsigned char subst[] = {'{', '}', '[', ']', '"', ':', ',', '0', '9', '-', '.', 'e', 'E', ' ',
                                          '\\', 'n', 't', 0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xc3, 0xed, 0xf4, 0xf5, 0xff};
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; k--) hlen = hlen << 8 | b->p[k];
    unsigned char *m = malloc(b->n);
    for (int c = 0; c < count; c++) {
        memcpy(m, b->p, b->n);
        size_t pos = 8 + rnd_below((size_t)hlen);
        m[pos] = subst[rnd_below(sizeof subst)];
        if (rnd_below(4) == 0) {  // sometimes delete a header byte (and say the header is shorter)
            memmove(m + pos, m + pos + 1, b->n - pos - 1);
            uint64_t h = hlen - 1;
            for (int k = 0; k < 8; k++) m[k] = (unsigned char)(h >> (8 * k));
            run(m, b->n - 1, heads, NULL, 0);
        } else {
            run(m, b->n, heads, NULL, 0);
        }
    }
    free(m);
}

// Bad and good dtype, shape and data_offsets texts for one attention tensor: every
// combination (all = 1) or one field at a time.
static void field_variants(const Base *base, int target, int all) {
    static const char *dtypes[] = {NULL,    "\"F16\"", "\"BF16\"", "\"F64\"", "\"I32\"", "\"BOOL\"", "\"F4\"",
                                   "\"F8\"", "\"\"",    "\"f32\"",  "5",       "null",    "[]",       "{}",
                                   "\"F32\\u0000\"", "\"\\u00ff\""};
    static const char *shapes[] = {NULL, "[8,8]", "[64]", "[8,8,1]", "[]", "[0,8]", "[8,0]", "[-1,8]", "[1e30,8]",
                                   "[4294967296,4294967296]", "[9007199254740993,1]", "[8.5,8]", "[\"8\",8]",
                                   "[8,8,8,8,8,8,8,8,8,8,8,8]", "null", "{}", "[[8],8]", "[2,32]", "[16,4]",
                                   "[8,1e400]"};
    static const char *offsets[] = {NULL, "[0,256]", "[0,255]", "[1,257]", "[256,0]", "[0]", "[0,1,2]", "[-1,255]",
                                    "[0,1e20]", "[0,18446744073709551616]", "[\"0\",256]", "null", "[0,100000]",
                                    "[256,512]", "[0,128]", "[0,512]", "[1e-300,256]", "[0,2048]", "[2000,2048]",
                                    "{}"};
    Buf b = {0};
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        for (size_t j = 0; j < sizeof shapes / sizeof *shapes; j++)
            for (size_t k = 0; k < sizeof offsets / sizeof *offsets; k++) {
                if (!all && (i != 0) + (j != 0) + (k != 0) > 1) continue;
                build(&b, base->s, base->n, base->meta, target, dtypes[i], shapes[j], offsets[k]);
                run(b.p, b.n, base->heads, NULL, 0);
            }
    free(b.p);
}

// Hand-written headers: duplicates, odd names, deep nesting.
static void odd_headers(void) {
    Buf b = {0}, h = {0};
    const char *texts[] = {
        "{}",
        "{\"__metadata__\":{}}",
        "{\"__metadata__\":{\"a\":1,\"b\":[1,2],\"c\":{\"d\":null}}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"x.attention.self.query.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
        "\"x.attention.self.query.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]}}",
        "{\"attention.self.query.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
        "\"attention.self.key.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]},"
        "\"attention.self.value.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[8,12]}}",
        "{\".attention.self.query.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
        "\".attention.self.key.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]},"
        "\".attention.self.value.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[8,12]}}",
        "{\"l.99999999999999999999999.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[0,12]},"
        "\"l.0099999999999999999999999.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[12,24]}}",
        "{\"\\u0000.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[0,12]},"
        "\"\\u0000.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[12,24]}}",
        "{\"\\ud800.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[0,12]}}",
        "{\"\xe2\x82\xac\\n\\\".attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[0,12]}}",
        "{\"q\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
        "{\"q\xf4\x90\x80\x80\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
        "{\"q\xe0\x80\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
        "{\"h.0.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[0,12]},"
        "\"h.0.attn.c_attn.weight\":5}",
        "{\"h.0.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[0,12],"
        "\"dtype\":\"I8\",\"extra\":[1,2,3]}}",
        "  {\"h.0.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[0,12]}}  \n\t",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
        "\"string\"", "5", "null", "[]", "{", "}", "", " ", "{\"a\":}", "{\"a\" {}}",
    };
    unsigned char data[24] = {0};
    for (int i = 0; i < 24; i += 4) data[i + 3] = 0x3f;  // 0.5f
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++)
        for (int heads = 1; heads <= 3; heads++) {
            b.n = 0;
            size_t n = strlen(texts[t]);
            unsigned char len[8];
            for (int k = 0; k < 8; k++) len[k] = (unsigned char)((uint64_t)n >> (8 * k));
            buf_add(&b, len, 8);
            buf_add(&b, texts[t], n);
            buf_add(&b, data, sizeof data);
            run(b.p, b.n, heads, NULL, 0);
        }

    // a layer prefix of 300 bytes with its query weight only (the message names the missing key)
    h.n = 0;
    buf_printf(&h, "{\"");
    for (int k = 0; k < 300; k++) buf_add(&h, k % 10 ? "p" : ".", 1);
    buf_printf(&h, ".attention.self.query.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]}}");
    b.n = 0;
    unsigned char hl[8];
    for (int k = 0; k < 8; k++) hl[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
    buf_add(&b, hl, 8);
    buf_add(&b, h.p, h.n);
    buf_add(&b, data, sizeof data);
    char err[512];
    CHECK(run(b.p, b.n, 1, err, sizeof err) == -1 && strstr(err, "...\" but no \"") != NULL, "long prefix: %s", err);

    // deep nesting of arrays and objects in __metadata__ and in a shape
    const int depths[] = {1, 10, 100, 500, 999, 1000, 1001, 5000, 100000};
    for (size_t d = 0; d < sizeof depths / sizeof *depths; d++)
        for (int kind = 0; kind < 3; kind++) {
            h.n = 0;
            if (kind == 2) buf_printf(&h, "{\"x\":{\"dtype\":\"F32\",\"shape\":");
            else buf_printf(&h, "{\"__metadata__\":");
            for (int k = 0; k < depths[d]; k++) buf_add(&h, kind == 1 ? "{\"a\":" : "[", kind == 1 ? 5 : 1);
            buf_add(&h, kind == 1 ? "1" : "4", 1);
            for (int k = 0; k < depths[d]; k++) buf_add(&h, kind == 1 ? "}" : "]", 1);
            buf_printf(&h, kind == 2 ? ",\"data_offsets\":[0,4]}}" : "}");
            b.n = 0;
            unsigned char len[8];
            for (int k = 0; k < 8; k++) len[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
            buf_add(&b, len, 8);
            buf_add(&b, h.p, h.n);
            buf_add(&b, data, sizeof data);
            run(b.p, b.n, 1, NULL, 0);
            if (depths[d] == 100000) {  // unbalanced: only openings
                run(b.p, 8 + h.n / 2, 1, NULL, 0);
            }
        }
    free(b.p);
    free(h.p);
}

// Thousands of tensors: 1000 one-by-one BERT layers (valid with 1 head), plus the same
// with every name twice and with every tensor overlapping the next.
static void many_tensors(void) {
    enum { L = 1000 };
    Spec *s = calloc(3 * L, sizeof *s);
    const char *role[] = {"query", "key", "value"};
    for (int l = 0; l < L; l++)
        for (int r = 0; r < 3; r++) spec(&s[3 * l + r], "F32", 2, 1, 1, "e.%d.attention.self.%s.weight", L - 1 - l, role[r]);
    Buf b = {0};
    build(&b, s, 3 * L, NULL, -1, NULL, NULL, NULL);
    AttentionLayers l;
    char err[512];
    int rc = safetensors_attention_mem(b.p, b.n, "fuzz", 1, &l, err, sizeof err);
    CHECK(rc == 0 && l.n_layers == L && strcmp(l.names[0], "e.0") == 0 && strcmp(l.names[L - 1], "e.999") == 0,
          "1000 layers: %d %s", rc, err);
    attention_layers_free(&l);
    run(b.p, b.n, 2, NULL, 0);
    build(&b, s, 3 * L, NULL, 5, NULL, NULL, "[0,4]");  // overlaps the first tensor
    run(b.p, b.n, 1, NULL, 0);
    for (int i = 0; i + 1 < 3 * L; i += 2) memcpy(s[i].name, s[i + 1].name, sizeof s[i].name);
    build(&b, s, 3 * L, NULL, -1, NULL, NULL, NULL);  // duplicate names
    run(b.p, b.n, 1, NULL, 0);
    free(b.p);
    free(s);
}

static void random_bytes(int count) {
    unsigned char buf[600];
    for (int c = 0; c < count; c++) {
        size_t len = rnd_below(sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)rnd();
        if (len >= 8 && c % 2) {  // a plausible header length and a '{'
            uint64_t h = rnd_below(len - 8 + 1);
            for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(h >> (8 * k));
            if (len > 8) buf[8] = '{';
        }
        run(buf, len, 1 + (int)rnd_below(4), NULL, 0);
    }
}

int main(void) {
    snprintf(tmp_path, sizeof tmp_path, "/tmp/test_safetensors_fuzz.XXXXXX");
    int fd = mkstemp(tmp_path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);

    Base bases[3];
    make_bases(bases);
    phase("start");
    for (int i = 0; i < 3; i++) {
        Base *base = &bases[i];
        Buf b = {0};
        build(&b, base->s, base->n, base->meta, -1, NULL, NULL, NULL);
        char err[512];
        CHECK(run(b.p, b.n, base->heads, err, sizeof err) == 0, "base %s is not accepted: %s", base->what, err);
        AttentionLayers l;
        CHECK(safetensors_attention_mem(b.p, b.n, "fuzz", base->heads, &l, err, sizeof err) == 0 && l.out &&
                  l.n_layers == 2,
              "base %s: want 2 layers with output projections", base->what);
        attention_layers_free(&l);
        const int heads[] = {0, -1, 1, 2, 3, 8, 16, INT_MAX};
        for (size_t h = 0; h < sizeof heads / sizeof *heads; h++) run(b.p, b.n, heads[h], NULL, 0);
        phase(base->what);
        bit_flips(&b, base->heads, 1200);
        phase("  bit flips");
        truncations(&b, base->heads);
        phase("  truncations");
        header_length_lies(&b, base->heads);
        phase("  header length lies");
        byte_replacements(&b, base->heads, 1200);
        phase("  header bytes replaced");
        free(b.p);
    }
    field_variants(&bases[0], 2, 1);  // the layer-0 query weight of the BERT file
    field_variants(&bases[2], 1, 0);  // a BF16 k_proj of the grouped-query file
    field_variants(&bases[1], 2, 0);  // an F16 c_proj (the output projection) of the GPT-2 file
    phase("dtype x shape x offsets");
    odd_headers();
    phase("odd and deep headers");
    many_tensors();
    phase("3000 tensors");
    random_bytes(2000);
    phase("random bytes");

    unlink(tmp_path);
    printf("test_safetensors_fuzz: %ld cases, %ld accepted, %ld rejected with a message\n", n_cases, n_ok, n_err);
    return check_report("test_safetensors_fuzz");
}
