// safetensors.c: validate a safetensors header completely, find the attention weights
// by name, read only those tensors and lay them out as W[h, d_k, d_model, 3] and the
// output projections as [d_model, width], with the tensors of what each layer reads through.
// See safetensors.h for the names, the layout and what is checked.
#define _POSIX_C_SOURCE 200809L
#include "io/safetensors.h"

#include "circuits/circuits.h"
#include "common/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum { SHAPE_KEPT = 8 };                 // dims kept per tensor (for messages and 2-D reads)
#define MAX_CONFIG_BYTES (16u << 20)     // config.json larger than this is not a config
#define MAX_JSON_INT 9007199254740992.0  // 2^53: larger JSON numbers are not exact
enum { MAX_JSON_VALUES = 4000000 };      // '[', '{', ',' and strings: ~12 per tensor entry

// ---- errors: one line "LABEL: message" in the caller's buffer

typedef struct {
    const char *label;
    char *err;
    size_t errlen;
} Ctx;

static int fail(const Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const Ctx *c, const char *fmt, ...) {
    if (!c->err || !c->errlen) return -1;
    int n = snprintf(c->err, c->errlen, "%s: ", c->label);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    for (char *p = c->err; *p; p++)  // the label is a user's path: keep the message one line
        if (*p == '\n' || *p == '\r') *p = ' ';
    return -1;
}

// A name from the file, quoted, with '"', '\\', control and non-ASCII bytes escaped,
// cut after 100 bytes. Used as quote(...).s inside one printf call (C11 temporaries).
typedef struct {
    char s[2 + 4 * 100 + 8];
} Quoted;

static Quoted quote_n(const char *name, size_t len) {
    Quoted q;
    size_t o = 0;
    q.s[o++] = '"';
    for (size_t i = 0; i < len && i < 100; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch == '"' || ch == '\\') {
            q.s[o++] = '\\';
            q.s[o++] = (char)ch;
        } else if (ch < 0x20 || ch >= 0x7f) {
            o += (size_t)snprintf(q.s + o, 5, "\\x%02x", ch);
        } else {
            q.s[o++] = (char)ch;
        }
    }
    if (len > 100) {
        memcpy(q.s + o, "...", 3);
        o += 3;
    }
    q.s[o++] = '"';
    q.s[o] = '\0';
    return q;
}

static Quoted quote(const char *name) { return quote_n(name, strlen(name)); }

// ---- where the bytes come from: a file (fseeko + fread) or a buffer in memory

// PATH for reading if it is a regular file (its size in *size), else NULL with errno set
// (EINVAL: not a regular file). The open itself never blocks (O_NONBLOCK): a trial program
// may leave a FIFO at a checkpoint's, config's or shard's name, whose plain open would
// hang the worker past the trial's time limit.
static FILE *open_regular(const char *path, uint64_t *size) {
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : EINVAL;
    FILE *f = e ? NULL : fdopen(fd, "rb");
    if (!f) {
        e = e ? e : errno;
        close(fd);
        errno = e;
        return NULL;
    }
    *size = (uint64_t)st.st_size;
    return f;
}

typedef struct {
    FILE *f;
    const unsigned char *mem;
    uint64_t size;
} Source;

static int source_read(const Source *s, uint64_t off, void *dst, size_t n) {
    if (off > s->size || n > s->size - off) return -1;
    if (n == 0) return 0;
    if (s->mem) {
        memcpy(dst, s->mem + off, n);
        return 0;
    }
    if (off > (uint64_t)INT64_MAX || fseeko(s->f, (off_t)off, SEEK_SET) != 0) return -1;
    return fread(dst, 1, n, s->f) == n ? 0 : -1;
}

// ---- dtypes (every dtype of the safetensors format, so other tensors validate too)

enum { KIND_OTHER, KIND_F32, KIND_F16, KIND_BF16, KIND_F64 };

static const struct {
    const char *name;
    unsigned bits;
    int kind;
} DTYPES[] = {
    {"F32", 32, KIND_F32},   {"F16", 16, KIND_F16},     {"BF16", 16, KIND_BF16},
    {"F64", 64, KIND_F64},   {"BOOL", 8, KIND_OTHER},   {"U8", 8, KIND_OTHER},
    {"I8", 8, KIND_OTHER},   {"F8_E5M2", 8, KIND_OTHER}, {"F8_E4M3", 8, KIND_OTHER},
    {"F8_E8M0", 8, KIND_OTHER}, {"I16", 16, KIND_OTHER}, {"U16", 16, KIND_OTHER},
    {"I32", 32, KIND_OTHER}, {"U32", 32, KIND_OTHER},   {"I64", 64, KIND_OTHER},
    {"U64", 64, KIND_OTHER}, {"C64", 64, KIND_OTHER},   {"F4", 4, KIND_OTHER},
    {"F6_E2M3", 6, KIND_OTHER}, {"F6_E3M2", 6, KIND_OTHER},
};
enum { N_DTYPES = sizeof DTYPES / sizeof DTYPES[0] };

float safetensors_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0 && man == 0) {
        bits = sign;  // ±0
    } else if (exp == 0) {  // subnormal: man·2^-24, normalised for float32
        uint32_t e = 0;
        while (!(man & 0x400u)) {
            man <<= 1;
            e++;
        }
        bits = sign | ((127u - 15u + 1u - e) << 23) | ((man & 0x3ffu) << 13);
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);  // Inf, or NaN with its payload
    } else {
        bits = sign | ((exp + 127u - 15u) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float safetensors_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

// ---- the header

typedef struct {
    const char *name;  // owned by the cJSON tree
    int dtype;         // index into DTYPES
    int ndim;
    uint64_t shape[SHAPE_KEPT];
    uint64_t begin, end;  // relative to the data buffer
    int file;             // the file (a shard of a sharded checkpoint) it is in
    uint64_t data_start;  //   and where that file's data buffer starts
} Tensor;

// The tensors of a file; of a sharded checkpoint, every shard's (each a part).
typedef struct Header {
    char *text;
    cJSON *root;
    Tensor *t;
    size_t n;
    uint64_t data_start, data_size;
    struct Header *parts;
    int n_parts;
} Header;

static void header_free(Header *h) {
    for (int k = 0; k < h->n_parts; k++) header_free(&h->parts[k]);
    free(h->parts);
    cJSON_Delete(h->root);
    free(h->text);
    free(h->t);
    memset(h, 0, sizeof *h);
}

// "[a, b, c]" (first SHAPE_KEPT dims, then "...").
typedef struct {
    char s[SHAPE_KEPT * 22 + 16];
} ShapeText;

static ShapeText shape_text(const Tensor *t) {
    ShapeText st;
    size_t o = 0;
    st.s[o++] = '[';
    for (int i = 0; i < t->ndim && i < SHAPE_KEPT; i++)
        o += (size_t)snprintf(st.s + o, sizeof st.s - o, "%s%llu", i ? ", " : "",
                              (unsigned long long)t->shape[i]);
    if (t->ndim > SHAPE_KEPT) o += (size_t)snprintf(st.s + o, sizeof st.s - o, ", ...");
    snprintf(st.s + o, sizeof st.s - o, "]");
    return st;
}

// Offset of the first byte that is not UTF-8 or is NUL; len if there is none.
static size_t utf8_bad(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c == 0) return i;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xbf;  // range of the second byte
        if (c >= 0xc2 && c <= 0xdf) need = 1;
        else if (c == 0xe0) need = 2, lo = 0xa0;
        else if (c >= 0xe1 && c <= 0xec) need = 2;
        else if (c == 0xed) need = 2, hi = 0x9f;  // no UTF-16 surrogates
        else if (c >= 0xee && c <= 0xef) need = 2;
        else if (c == 0xf0) need = 3, lo = 0x90;
        else if (c >= 0xf1 && c <= 0xf3) need = 3;
        else if (c == 0xf4) need = 3, hi = 0x8f;  // nothing above U+10FFFF
        else return i;
        if (need > len - i - 1) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xc0) != 0x80) return i;
        i += need + 1;
    }
    return len;
}

static const char *json_kind(const cJSON *x) {
    if (cJSON_IsArray(x)) return "an array";
    if (cJSON_IsString(x)) return "a string";
    if (cJSON_IsNumber(x)) return "a number";
    if (cJSON_IsBool(x)) return "a boolean";
    if (cJSON_IsNull(x)) return "null";
    return "an object";
}

// A JSON number that is an integer in [0, 2^53] into *v; else why not.
static const char *json_uint(const cJSON *x, uint64_t *v) {
    if (!cJSON_IsNumber(x)) return "is not a number";
    double d = x->valuedouble;
    if (!(d >= 0)) return "is negative";
    if (d != floor(d)) return "is not an integer";
    if (d > MAX_JSON_INT) return "is too large";
    *v = (uint64_t)d;
    return NULL;
}

static int parse_entry(const Ctx *c, const cJSON *e, Tensor *t, uint64_t data_size) {
    Quoted q = quote(t->name);
    if (!cJSON_IsObject(e)) return fail(c, "tensor %s: entry is %s, not a JSON object", q.s, json_kind(e));

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!dt) return fail(c, "tensor %s: no \"dtype\"", q.s);
    if (!cJSON_IsString(dt) || !dt->valuestring)
        return fail(c, "tensor %s: \"dtype\" is %s, not a string", q.s, json_kind(dt));
    t->dtype = -1;
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(dt->valuestring, DTYPES[i].name) == 0) t->dtype = i;
    if (t->dtype < 0) return fail(c, "tensor %s: unknown dtype %s", q.s, quote(dt->valuestring).s);

    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!sh) return fail(c, "tensor %s: no \"shape\"", q.s);
    if (!cJSON_IsArray(sh)) return fail(c, "tensor %s: \"shape\" is %s, not an array", q.s, json_kind(sh));
    uint64_t n = 1;
    int zero = 0, overflow = 0;
    t->ndim = 0;
    for (const cJSON *d = sh->child; d; d = d->next) {
        uint64_t v = 0;
        const char *why = json_uint(d, &v);
        if (why && cJSON_IsNumber(d))
            return fail(c, "tensor %s: shape[%d] = %.15g %s", q.s, t->ndim, d->valuedouble, why);
        if (why) return fail(c, "tensor %s: shape[%d] %s", q.s, t->ndim, why);
        if (t->ndim < SHAPE_KEPT) t->shape[t->ndim] = v;
        if (t->ndim == INT_MAX) return fail(c, "tensor %s: shape has too many dimensions", q.s);
        t->ndim++;
        if (v == 0) zero = 1;
        else if (n > UINT64_MAX / v) overflow = 1;
        else n *= v;
    }
    unsigned bits = DTYPES[t->dtype].bits;
    if (zero) n = 0;
    else if (overflow || n > UINT64_MAX / bits)
        return fail(c, "tensor %s: shape %s is too large (its size overflows 64 bits)", q.s, shape_text(t).s);
    if (n * bits % 8)
        return fail(c, "tensor %s: shape %s of %s is not a whole number of bytes", q.s, shape_text(t).s,
                    DTYPES[t->dtype].name);
    uint64_t nbytes = n * bits / 8;

    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!off) return fail(c, "tensor %s: no \"data_offsets\"", q.s);
    if (!cJSON_IsArray(off))
        return fail(c, "tensor %s: \"data_offsets\" is %s, not an array [begin, end]", q.s, json_kind(off));
    int count = cJSON_GetArraySize(off);
    if (count != 2)
        return fail(c, "tensor %s: \"data_offsets\" must have 2 entries [begin, end] (it has %d)", q.s, count);
    uint64_t be[2] = {0, 0};
    int k = 0;
    for (const cJSON *d = off->child; d; d = d->next, k++) {
        const char *why = json_uint(d, &be[k]);
        if (why && cJSON_IsNumber(d))
            return fail(c, "tensor %s: data_offsets[%d] = %.15g %s", q.s, k, d->valuedouble, why);
        if (why) return fail(c, "tensor %s: data_offsets[%d] %s", q.s, k, why);
    }
    t->begin = be[0];
    t->end = be[1];
    if (t->end < t->begin)
        return fail(c, "tensor %s: data_offsets [%llu, %llu] end before they begin", q.s,
                    (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > data_size)
        return fail(c, "tensor %s: data_offsets [%llu, %llu] lie outside the data buffer of %llu bytes "
                    "(truncated file?)", q.s, (unsigned long long)t->begin, (unsigned long long)t->end,
                    (unsigned long long)data_size);
    if (t->end - t->begin != nbytes)
        return fail(c, "tensor %s: data_offsets [%llu, %llu] hold %llu bytes but shape %s of %s needs %llu",
                    q.s, (unsigned long long)t->begin, (unsigned long long)t->end,
                    (unsigned long long)(t->end - t->begin), shape_text(t).s, DTYPES[t->dtype].name,
                    (unsigned long long)nbytes);
    return 0;
}

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp((*(const Tensor *const *)a)->name, (*(const Tensor *const *)b)->name);
}

static int cmp_tensor_begin(const void *a, const void *b) {
    const Tensor *x = *(const Tensor *const *)a, *y = *(const Tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

// No name twice; no two non-empty tensors sharing a byte.
static int check_names_and_overlaps(const Ctx *c, const Header *h) {
    if (h->n < 2) return 0;
    const Tensor **p = xmalloc(h->n * sizeof *p);
    int rc = 0;
    for (size_t i = 0; i < h->n; i++) p[i] = &h->t[i];
    qsort(p, h->n, sizeof *p, cmp_tensor_name);
    for (size_t i = 1; i < h->n && !rc; i++)
        if (strcmp(p[i - 1]->name, p[i]->name) == 0)
            rc = fail(c, "tensor name %s appears twice in the header", quote(p[i]->name).s);
    if (!rc) {
        qsort(p, h->n, sizeof *p, cmp_tensor_begin);
        const Tensor *last = NULL;  // the non-empty tensor reaching furthest so far
        for (size_t i = 0; i < h->n && !rc; i++) {
            if (p[i]->begin == p[i]->end) continue;
            if (last && p[i]->begin < last->end)
                rc = fail(c, "tensors %s [%llu, %llu] and %s [%llu, %llu] overlap in the data buffer",
                          quote(last->name).s, (unsigned long long)last->begin,
                          (unsigned long long)last->end, quote(p[i]->name).s,
                          (unsigned long long)p[i]->begin, (unsigned long long)p[i]->end);
            if (!last || p[i]->end > last->end) last = p[i];
        }
    }
    free(p);
    return rc;
}

// The header of the file (number `file` of the checkpoint) from s, into h.
static int read_header(const Ctx *c, const Source *s, int file, Header *h) {
    unsigned char b[8];
    if (s->size < 8)
        return fail(c, "%llu bytes is too short for a safetensors file (it starts with an 8-byte header length)",
                    (unsigned long long)s->size);
    if (source_read(s, 0, b, 8)) return fail(c, "cannot read the header length (%s)", strerror(errno));
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    if (n > SAFETENSORS_MAX_HEADER)
        return fail(c, "header length %llu bytes is absurd (at most %llu); not a safetensors file?",
                    (unsigned long long)n, SAFETENSORS_MAX_HEADER);
    if (n > s->size - 8)
        return fail(c, "header length %llu bytes runs past the end of the file (%llu bytes follow the length); "
                    "truncated or not a safetensors file", (unsigned long long)n, (unsigned long long)(s->size - 8));
    h->data_start = 8 + n;
    h->data_size = s->size - 8 - n;
    h->text = malloc((size_t)n + 1);
    if (!h->text) return fail(c, "out of memory reading the %llu-byte header", (unsigned long long)n);
    if (source_read(s, 8, h->text, (size_t)n))
        return fail(c, "cannot read the %llu-byte header (%s)", (unsigned long long)n, strerror(errno));
    h->text[n] = '\0';

    size_t bad = utf8_bad((const unsigned char *)h->text, (size_t)n);
    if (bad < n && h->text[bad] == '\0') return fail(c, "header has a NUL byte at offset %zu", bad);
    if (bad < n) return fail(c, "header is not valid UTF-8 (byte 0x%02x at offset %zu)", (unsigned char)h->text[bad], bad);

    // One pass over the text before cJSON sees it: refuse escaped NULs (cJSON would end
    // the string there, so "F32\u0000x" would read as "F32"), and headers with so many
    // values that cJSON's tree (about 64 bytes a value) would take gigabytes.
    size_t values = 0;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = h->text[i];
        if (in_string) {
            if (ch == '"') {
                in_string = 0;
            } else if (ch == '\\' && i + 1 < n) {
                if (h->text[i + 1] == 'u' && i + 6 <= n && memcmp(h->text + i + 2, "0000", 4) == 0)
                    return fail(c, "header has an escaped NUL (\\u0000) at offset %zu", i);
                i++;  // the escaped character (an escaped backslash before "u0000" is no NUL)
            }
        } else if (ch == '"') {
            in_string = 1;
            values++;
        } else if (ch == '[' || ch == '{' || ch == ',') {
            values++;
        }
    }
    if (values > MAX_JSON_VALUES)
        return fail(c, "header has more than %d JSON values; not a plausible safetensors header", MAX_JSON_VALUES);

    const char *end = h->text;
    h->root = cJSON_ParseWithLengthOpts(h->text, (size_t)n, &end, 0);
    if (!h->root) {
        size_t at = end >= h->text && end <= h->text + n ? (size_t)(end - h->text) : 0;
        return fail(c, "header is not valid JSON (at byte %zu of %llu)", at, (unsigned long long)n);
    }
    for (const char *p = end; p < h->text + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return fail(c, "header has bytes after its JSON object (at byte %zu of %llu)",
                        (size_t)(p - h->text), (unsigned long long)n);
    if (!cJSON_IsObject(h->root))
        return fail(c, "header is %s, not a JSON object of tensors", json_kind(h->root));

    size_t count = 0;
    for (const cJSON *e = h->root->child; e; e = e->next) count++;
    h->t = xcalloc(count ? count : 1, sizeof *h->t);
    for (const cJSON *e = h->root->child; e; e = e->next) {
        if (!e->string) return fail(c, "header has an entry without a name");
        if (strcmp(e->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(e)) return fail(c, "\"__metadata__\" is %s, not a JSON object", json_kind(e));
            continue;
        }
        Tensor *t = &h->t[h->n++];
        t->name = e->string;
        t->file = file;
        t->data_start = h->data_start;
        if (parse_entry(c, e, t, h->data_size)) return -1;
    }
    return check_names_and_overlaps(c, h);
}

// ---- finding the attention weights by name

// nanoGPT has GPT-2's names with nn.Linear weights: its c_attn is [3·width, d_model].
enum { FAM_BERT, FAM_GPT2, FAM_LLAMA, FAM_NANOGPT, FAM_TIMM, FAM_MHA, FAM_GRASSMANN, N_FAMILIES };
enum { ROLE_Q, ROLE_K, ROLE_V, ROLE_QKV, ROLE_O, N_ROLES };
static const char *const FAMILY[N_FAMILIES] = {"BERT",   "GPT-2", "LLaMA", "nanoGPT",
                                               "timm ViT", "nn.MultiheadAttention", "Grassmann"};
static const char *const ROLE_WORD[3][3] = {{"query", "key", "value"}, {"", "", ""}, {"q_proj", "k_proj", "v_proj"}};
// Q, K and V fused in one weight, rows (nn.Linear) or columns (GPT-2's Conv1D) Q | K | V.
static int fused(int family) { return family == FAM_GPT2 || family == FAM_NANOGPT || family == FAM_TIMM || family == FAM_MHA; }

static const struct {
    int family, role;
    const char *suffix;
} PATTERNS[] = {
    {FAM_BERT, ROLE_Q, ".attention.self.query.weight"}, {FAM_BERT, ROLE_K, ".attention.self.key.weight"},
    {FAM_BERT, ROLE_V, ".attention.self.value.weight"}, {FAM_GPT2, ROLE_QKV, ".attn.c_attn.weight"},
    {FAM_LLAMA, ROLE_Q, ".self_attn.q_proj.weight"},    {FAM_LLAMA, ROLE_K, ".self_attn.k_proj.weight"},
    {FAM_LLAMA, ROLE_V, ".self_attn.v_proj.weight"},    {FAM_BERT, ROLE_O, ".attention.output.dense.weight"},
    {FAM_GPT2, ROLE_O, ".attn.c_proj.weight"},          {FAM_LLAMA, ROLE_O, ".self_attn.o_proj.weight"},
    {FAM_TIMM, ROLE_QKV, ".attn.qkv.weight"},           {FAM_TIMM, ROLE_O, ".attn.proj.weight"},
    {FAM_MHA, ROLE_QKV, ".in_proj_weight"},             {FAM_MHA, ROLE_O, ".out_proj.weight"},
    {FAM_GRASSMANN, ROLE_Q, ".grassmann.w_red.weight"}, {FAM_GRASSMANN, ROLE_O, ".grassmann.w_plu.weight"},
};
enum { N_PATTERNS = sizeof PATTERNS / sizeof PATTERNS[0] };
#define PATTERN_LIST                                                                              \
    ".attention.self.{query,key,value}.weight (BERT), .attn.c_attn.weight (GPT-2, nanoGPT), "       \
    ".self_attn.{q,k,v}_proj.weight (LLaMA), .attn.qkv.weight (timm ViT), .in_proj_weight "         \
    "(nn.MultiheadAttention) or .grassmann.w_red.weight (attnsweep's Grassmann mixing)"

typedef struct {
    const char *name;
    size_t plen;  // the layer prefix is name[0, plen)
    int family, role;
    size_t tensor;
} Match;

typedef struct {
    const char *prefix;
    size_t plen;
    int family;
    long t[N_ROLES];  // tensor index per role, -1: absent
} Layer;

// Natural order: digit runs compare as numbers, so "layer.2" < "layer.10".
static int natcmp(const char *a, size_t na, const char *b, size_t nb) {
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[j];
        if (x >= '0' && x <= '9' && y >= '0' && y <= '9') {
            size_t ie = i, je = j;
            while (ie < na && a[ie] >= '0' && a[ie] <= '9') ie++;
            while (je < nb && b[je] >= '0' && b[je] <= '9') je++;
            while (i < ie && a[i] == '0') i++;
            while (j < je && b[j] == '0') j++;
            if (ie - i != je - j) return ie - i < je - j ? -1 : 1;
            int r = memcmp(a + i, b + j, ie - i);
            if (r) return r;
            i = ie;
            j = je;
        } else {
            if (x != y) return x < y ? -1 : 1;
            i++;
            j++;
        }
    }
    return (i < na) - (j < nb);
}

static int cmp_match(const void *pa, const void *pb) {
    const Match *a = pa, *b = pb;
    int r = natcmp(a->name, a->plen, b->name, b->plen);
    if (r) return r;
    size_t m = a->plen < b->plen ? a->plen : b->plen;
    r = memcmp(a->name, b->name, m);
    if (r) return r;
    if (a->plen != b->plen) return a->plen < b->plen ? -1 : 1;
    if (a->family != b->family) return a->family < b->family ? -1 : 1;
    return (a->role > b->role) - (a->role < b->role);
}

// The name a member of the layer has (prefix + suffix), for messages.
typedef struct {
    char s[sizeof(Quoted)];
} NameText;

static NameText member_name(const Layer *l, int role) {
    NameText nt;
    const char *suffix = NULL;
    const int family = l->family == FAM_NANOGPT ? FAM_GPT2 : l->family;  // the same names
    for (int i = 0; i < N_PATTERNS; i++)
        if (PATTERNS[i].family == family && PATTERNS[i].role == role) suffix = PATTERNS[i].suffix;
    if (!suffix) suffix = ".?";
    if (l->plen == 0) suffix++;  // a top-level name has no leading dot
    size_t sl = strlen(suffix), pl = l->plen < 200 ? l->plen : 200;
    char buf[256 + 64];
    memcpy(buf, l->prefix, pl);
    memcpy(buf + pl, suffix, sl + 1);
    Quoted q = quote_n(buf, strlen(buf) + (l->plen - pl));  // keep the "..." if the prefix was cut
    memcpy(nt.s, q.s, sizeof nt.s);
    return nt;
}

// The first role the layer has: its query weight when there is one.
static int first_role(const Layer *l) {
    int r = 0;
    while (r < N_ROLES - 1 && l->t[r] < 0) r++;
    return r;
}

static int find_layers(const Ctx *c, const Header *h, Layer **out, size_t *n_out) {
    Match *m = xmalloc((h->n ? h->n : 1) * sizeof *m);
    size_t nm = 0;
    for (size_t i = 0; i < h->n; i++) {
        const char *name = h->t[i].name;
        size_t len = strlen(name);
        for (int p = 0; p < N_PATTERNS; p++) {
            const char *suf = PATTERNS[p].suffix;
            size_t sl = strlen(suf);
            size_t plen;
            if (len >= sl && memcmp(name + len - sl, suf, sl) == 0) plen = len - sl;
            else if (len == sl - 1 && memcmp(name, suf + 1, sl - 1) == 0) plen = 0;
            else continue;
            m[nm++] = (Match){name, plen, PATTERNS[p].family, PATTERNS[p].role, i};
            break;
        }
    }
    if (nm == 0) {
        free(m);
        return fail(c, "no attention weights among its %zu tensors (looked for names ending in " PATTERN_LIST ")",
                    h->n);
    }
    qsort(m, nm, sizeof *m, cmp_match);
    Layer *l = xmalloc(nm * sizeof *l);
    size_t nl = 0;
    for (size_t i = 0; i < nm; i++) {
        if (i == 0 || m[i].family != m[i - 1].family || m[i].plen != m[i - 1].plen ||
            memcmp(m[i].name, m[i - 1].name, m[i].plen) != 0) {
            l[nl] = (Layer){m[i].name, m[i].plen, m[i].family, {-1, -1, -1, -1, -1}};
            nl++;
        }
        l[nl - 1].t[m[i].role] = (long)m[i].tensor;
    }
    // An out_proj without in_proj_weight is another model's (BART's self_attn.out_proj
    // beside its q_proj, k_proj, v_proj), not an nn.MultiheadAttention.
    size_t kept = 0;
    for (size_t i = 0; i < nl; i++)
        if (l[i].family != FAM_MHA || l[i].t[ROLE_QKV] >= 0) l[kept++] = l[i];
    nl = kept;
    if (nl == 0) {
        free(m);
        free(l);
        return fail(c, "no attention weights among its %zu tensors (looked for names ending in " PATTERN_LIST ")",
                    h->n);
    }
    int rc = 0;
    for (size_t i = 1; i < nl && !rc; i++)
        if (l[i].family != l[0].family)
            rc = fail(c, "attention weights of two kinds, %s (%s) and %s (%s); cannot tell which to score",
                      FAMILY[l[0].family], quote(h->t[l[0].t[first_role(&l[0])]].name).s, FAMILY[l[i].family],
                      quote(h->t[l[i].t[first_role(&l[i])]].name).s);
    free(m);
    if (rc) {
        free(l);
        return -1;
    }
    *out = l;
    *n_out = nl;
    return 0;
}

// ---- shapes of one layer: width (= h·d_k, rows of Q), d_model and the K/V width

typedef struct {
    uint64_t width, d_model, kv_width;
} LayerShape;

static int same_shape(const Tensor *a, const Tensor *b) {
    return a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1];
}

// The shape a weight of this role is stored in (nn.Linear is [out, in], Conv1D [in, out]).
static const char *stored_shape(int family, int role) {
    if (family == FAM_GRASSMANN) return role == ROLE_O ? "[d_model, r*(r-1)/2]" : "[r, d_model]";
    if (role == ROLE_QKV) return family == FAM_GPT2 ? "[d_model, 3*width]" : "[3*width, d_model]";
    if (role == ROLE_O && family != FAM_GPT2) return "[d_model, width]";
    return "[width, d_model]";
}

// The output projection, when the layer has one, must be [d_model, width] (Linear) or
// [width, d_model] (GPT-2's Conv1D) for the width and d_model of its Q/K/V weights.
static int out_shape(const Ctx *c, const Header *h, const Layer *l, const LayerShape *s) {
    if (l->t[ROLE_O] < 0) return 0;
    const Tensor *o = &h->t[l->t[ROLE_O]];
    int conv1d = l->family == FAM_GPT2;
    uint64_t rows = conv1d ? s->width : s->d_model, cols = conv1d ? s->d_model : s->width;
    if (l->family == FAM_GRASSMANN) cols = s->width * (s->width - 1) / 2;  // W_plu reads the pairs of z
    if (o->shape[0] == rows && o->shape[1] == cols) return 0;
    return fail(c, "tensor %s has shape %s; expected %s = [%llu, %llu]", quote(o->name).s, shape_text(o).s,
                stored_shape(l->family, ROLE_O), (unsigned long long)rows, (unsigned long long)cols);
}

// A GPT-2 layer whose c_attn is [3·width, d_model] is nanoGPT's: l->family says so after.
static int layer_shape(const Ctx *c, const Header *h, Layer *l, LayerShape *s) {
    Quoted lq = quote_n(l->prefix, l->plen);
    for (int r = 0; r < ROLE_O; r++) {  // the Q/K/V weights of the family
        int needed = fused(l->family) ? r == ROLE_QKV : l->family == FAM_GRASSMANN ? r == ROLE_Q : r != ROLE_QKV;
        if (needed && l->t[r] < 0)
            return fail(c, "layer %s has %s but no %s", lq.s, member_name(l, first_role(l)).s, member_name(l, r).s);
    }
    for (int r = 0; r < N_ROLES; r++) {
        if (l->t[r] < 0) continue;
        const Tensor *t = &h->t[l->t[r]];
        Quoted q = quote(t->name);
        if (DTYPES[t->dtype].kind == KIND_OTHER)
            return fail(c, "tensor %s has dtype %s; attention weights must be F32, F16, BF16 or F64", q.s,
                        DTYPES[t->dtype].name);
        if (t->ndim != 2)
            return fail(c, "tensor %s has shape %s; expected a 2-D weight %s", q.s, shape_text(t).s,
                        stored_shape(l->family, r));
        if (t->shape[0] == 0 || t->shape[1] == 0)
            return fail(c, "tensor %s has shape %s; an attention weight cannot be empty", q.s, shape_text(t).s);
        if (t->shape[0] > INT_MAX || t->shape[1] > INT_MAX)
            return fail(c, "tensor %s: shape %s is too large", q.s, shape_text(t).s);
    }
    if (l->family == FAM_GRASSMANN) {  // W_red [r, d_model]: r rows play the heads
        const Tensor *t = &h->t[l->t[ROLE_Q]];
        if (t->shape[0] < 2)
            return fail(c, "tensor %s has shape %s; Grassmann mixing needs r >= 2", quote(t->name).s, shape_text(t).s);
        s->width = s->kv_width = t->shape[0];
        s->d_model = t->shape[1];
        return out_shape(c, h, l, s);
    }
    if (fused(l->family)) {
        const Tensor *t = &h->t[l->t[ROLE_QKV]];
        if (l->family == FAM_GPT2 && t->shape[0] == 3 * t->shape[1]) l->family = FAM_NANOGPT;
        const int conv1d = l->family == FAM_GPT2;
        if (t->shape[conv1d] % 3)
            return fail(c, "tensor %s has shape %s; a fused Q, K, V weight %s needs a %s count divisible by 3",
                        quote(t->name).s, shape_text(t).s, stored_shape(l->family, ROLE_QKV), conv1d ? "column" : "row");
        s->d_model = t->shape[!conv1d];
        s->width = s->kv_width = t->shape[conv1d] / 3;
        return out_shape(c, h, l, s);
    }
    const Tensor *q = &h->t[l->t[ROLE_Q]], *k = &h->t[l->t[ROLE_K]], *v = &h->t[l->t[ROLE_V]];
    const char *const *w = ROLE_WORD[l->family];
    if (l->family == FAM_BERT ? !same_shape(q, k) || !same_shape(q, v)
                              : !same_shape(k, v) || k->shape[1] != q->shape[1])
        return fail(c, "layer %s: %s %s, %s %s and %s %s weights do not fit together (%s)", lq.s, w[0],
                    shape_text(q).s, w[1], shape_text(k).s, w[2], shape_text(v).s,
                    l->family == FAM_BERT ? "all three must be [width, d_model]"
                                          : "k_proj and v_proj must have the same shape and all three the same "
                                            "input size d_model");
    s->width = q->shape[0];
    s->d_model = q->shape[1];
    s->kv_width = k->shape[0];
    return out_shape(c, h, l, s);
}

// ---- the number of heads

static int config_int(const cJSON *cfg, const char *key, const cJSON **found) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!x) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
        if (cJSON_IsObject(text)) x = cJSON_GetObjectItemCaseSensitive(text, key);
    }
    *found = x;
    uint64_t v;
    if (!x || json_uint(x, &v) || v == 0 || v > INT_MAX) return 0;
    return (int)v;
}

static int heads_from_config(const Ctx *c, const char *path, int *heads) {
    if (!path) return fail(c, "number of heads unknown; pass --heads N");
    uint64_t size = 0;
    FILE *f = open_regular(path, &size);
    if (!f && errno != EINVAL)
        return fail(c, "number of heads unknown: cannot open %s (%s); pass --heads N", path, strerror(errno));
    char *text = NULL;
    int rc = -1;
    if (!f || size > MAX_CONFIG_BYTES) {
        rc = fail(c, "number of heads unknown: %s is not a regular file of at most %u bytes; pass --heads N", path,
                  MAX_CONFIG_BYTES);
    } else {
        size_t n = (size_t)size;
        text = xmalloc(n + 1);
        if (n && fread(text, 1, n, f) != n) {
            rc = fail(c, "number of heads unknown: cannot read %s; pass --heads N", path);
        } else {
            text[n] = '\0';
            cJSON *cfg = cJSON_ParseWithLength(text, n);
            const cJSON *x1 = NULL, *x2 = NULL;
            int h1 = cJSON_IsObject(cfg) ? config_int(cfg, "num_attention_heads", &x1) : 0;
            int h2 = cJSON_IsObject(cfg) ? config_int(cfg, "n_head", &x2) : 0;
            if (!h2 && !x2 && cJSON_IsObject(cfg)) h2 = config_int(cfg, "num_heads", &x2);  // timm, nanoGPT's own
            if (!h2 && !x2 && cJSON_IsObject(cfg)) h2 = config_int(cfg, "n_heads", &x2);
            if (!cJSON_IsObject(cfg)) {
                rc = fail(c, "number of heads unknown: %s is %s; pass --heads N", path,
                          cfg ? "not a JSON object" : "not valid JSON");
            } else if (h1 || h2) {
                *heads = h1 ? h1 : h2;
                rc = 0;
            } else if (x1 || x2) {
                rc = fail(c, "number of heads unknown: %s in %s is not a positive integer; pass --heads N",
                          x1 ? "num_attention_heads" : x2->string, path);
            } else {
                rc = fail(c, "number of heads unknown: %s has none of num_attention_heads, n_head, num_heads, "
                             "n_heads; pass --heads N", path);
            }
            cJSON_Delete(cfg);
        }
    }
    free(text);
    if (f) fclose(f);
    return rc;
}

// ---- reading and converting one tensor

typedef struct {
    unsigned char *raw;
    size_t raw_cap;
    float *val;
    size_t val_cap;
} Scratch;

static int grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    void *q = realloc(*p, need);
    if (!q) return -1;
    *p = q;
    *cap = need;
    return 0;
}

// The tensor (1-D or 2-D) as float32 in sc->val (its values, row-major), from its file's source.
static int load_tensor(const Ctx *c, const Source *srcs, const Tensor *t, Scratch *sc) {
    const uint64_t cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
    size_t n = (size_t)(t->ndim == 2 ? t->shape[0] * cols : cols), nbytes = (size_t)(t->end - t->begin);
    Quoted q = quote(t->name);
    if (grow((void **)&sc->raw, &sc->raw_cap, nbytes) || grow((void **)&sc->val, &sc->val_cap, n * sizeof(float)))
        return fail(c, "out of memory reading tensor %s (%zu bytes)", q.s, nbytes);
    if (source_read(&srcs[t->file], t->data_start + t->begin, sc->raw, nbytes))
        return fail(c, "cannot read tensor %s (read error, or the file shrank while being read)", q.s);
    const unsigned char *b = sc->raw;
    float *v = sc->val;
    int kind = DTYPES[t->dtype].kind;
    for (size_t i = 0; i < n; i++) {
        const char *bad = NULL;
        double big = 0;
        if (kind == KIND_F32) {
            uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                         (uint32_t)b[4 * i + 3] << 24;
            memcpy(&v[i], &u, 4);
        } else if (kind == KIND_F16) {
            v[i] = safetensors_f16_to_f32((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
        } else if (kind == KIND_BF16) {
            v[i] = safetensors_bf16_to_f32((uint16_t)(b[2 * i] | b[2 * i + 1] << 8));
        } else {
            uint64_t u = 0;
            for (int k = 7; k >= 0; k--) u = u << 8 | b[8 * i + (size_t)k];
            double d;
            memcpy(&d, &u, 8);
            if (isfinite(d) && fabs(d) > FLT_MAX) bad = "a value beyond the float32 range", big = d;
            else v[i] = (float)d;
        }
        if (!bad && isnan(v[i])) bad = "NaN";
        else if (!bad && isinf(v[i])) bad = v[i] > 0 ? "+Inf" : "-Inf";
        if (bad) {
            unsigned long long r = (unsigned long long)(i / cols), col = (unsigned long long)(i % cols);
            char at[48];
            if (t->ndim == 2) snprintf(at, sizeof at, "[%llu, %llu]", r, col);
            else snprintf(at, sizeof at, "[%llu]", col);
            if (big != 0) return fail(c, "tensor %s has %s (%.6g) at %s", q.s, bad, big, at);
            return fail(c, "tensor %s has %s at %s", q.s, bad, at);
        }
    }
    return 0;
}

// W[((h·dk + k)·D + m)·3 + role] = src[base + row·rs + m·cs], row = (h / rep)·dk + k.
static void scatter(float *W, const float *src, int role, int heads, int dk, int D, int rep, size_t base,
                    size_t rs, size_t cs) {
    for (int hh = 0; hh < heads; hh++)
        for (int k = 0; k < dk; k++) {
            size_t row = (size_t)(hh / rep) * (size_t)dk + (size_t)k;
            float *dst = W + ((size_t)hh * (size_t)dk + (size_t)k) * (size_t)D * 3 + (size_t)role;
            const float *sp = src + base + row * rs;
            for (int m = 0; m < D; m++) dst[(size_t)m * 3] = sp[(size_t)m * cs];
        }
}

// O[i·width + j] = src[i·rs + j·cs]: output feature i reads input j = h·d_k + k.
static void gather_out(float *O, const float *src, size_t D, size_t width, size_t rs, size_t cs) {
    for (size_t i = 0; i < D; i++)
        for (size_t j = 0; j < width; j++) O[i * width + j] = src[i * rs + j * cs];
}

// n floats for layer l, or NULL with the message in c.
static float *layer_floats(const Ctx *c, const Layer *l, size_t n) {
    float *p = malloc(n * sizeof *p);
    if (!p) fail(c, "out of memory for layer %s (%zu bytes)", quote_n(l->prefix, l->plen).s, n * sizeof *p);
    return p;
}

// ---- what the layer reads through and its biases (circuits/circuits.h LayerForm)
//
// Optional tensors beside a layer's weights, by family (PREFIX as above); an absent one
// counts as none (gain 1, bias 0):
//   GPT-2, nanoGPT  PREFIX.ln_1.{weight,bias} (pre-LN), PREFIX.attn.c_attn.bias [3·width]
//   timm ViT        PREFIX.norm1.{weight,bias} (pre-LN), PREFIX.attn.qkv.bias [3·width]
//   LLaMA           PREFIX.input_layernorm.weight (RMSNorm: a gain, no mean taken),
//                   PREFIX.self_attn.{q,k,v}_proj.bias (Qwen-style; [width], k/v [kv width])
//   BERT            PREFIX.attention.self.{query,key,value}.bias; post-LN: the layer reads
//                   the residual stream itself, so nothing is folded or centred on its side
//   nn.MultiheadAttention  PREFIX.in_proj_bias [3·width]; what it reads is unknown
// Writes are centred for the LayerNorm families (GPT-2, nanoGPT, timm ViT, BERT: every
// reader of the residual stream subtracts its mean), not for LLaMA (RMSNorm keeps the
// mean) nor nn.MultiheadAttention (unknown readers).
typedef struct {
    NormKind norm;
    const char *gain, *bias;      // suffixes of the norm's tensors (NULL: none)
    const char *qkv_bias[3];      // fused: [0] the Q | K | V bias; else one per role
    int centre_writes;
    const char *text;             // what was done, for AttentionLayers.form
} FamilyForm;

static const FamilyForm FORMS[N_FAMILIES] = {
    [FAM_BERT] = {NORM_NONE, NULL, NULL,
                  {".attention.self.query.bias", ".attention.self.key.bias", ".attention.self.value.bias"}, 1,
                  "post-LN: query bias in the QK form, writes centred"},
    [FAM_GPT2] = {NORM_LAYER, ".ln_1.weight", ".ln_1.bias", {".attn.c_attn.bias"}, 1,
                  "pre-LN: ln_1 folded and reads centred (where the file has ln_1), writes centred, query bias in the QK form"},
    [FAM_LLAMA] = {NORM_RMS, ".input_layernorm.weight", NULL,
                   {".self_attn.q_proj.bias", ".self_attn.k_proj.bias", ".self_attn.v_proj.bias"}, 0,
                   "RMSNorm gain folded (where the file has it), query bias in the QK form; writes not centred (RMSNorm keeps the mean)"},
    [FAM_NANOGPT] = {NORM_LAYER, ".ln_1.weight", ".ln_1.bias", {".attn.c_attn.bias"}, 1,
                     "pre-LN: ln_1 folded and reads centred (where the file has ln_1), writes centred, query bias in the QK form"},
    [FAM_TIMM] = {NORM_LAYER, ".norm1.weight", ".norm1.bias", {".attn.qkv.bias"}, 1,
                  "pre-LN: norm1 folded and reads centred (where the file has norm1), writes centred, query bias in the QK form"},
    [FAM_MHA] = {NORM_NONE, NULL, NULL, {".in_proj_bias"}, 0, "query bias in the QK form"},
};

// The tensor named prefix + suffix, or NULL.
static const Tensor *find_member(const Header *h, const Layer *l, const char *suffix) {
    const size_t sl = strlen(suffix) - (l->plen == 0);  // a top-level name has no leading dot
    if (l->plen == 0) suffix++;
    for (size_t i = 0; i < h->n; i++) {
        const char *name = h->t[i].name;
        if (strlen(name) == l->plen + sl && !memcmp(name, l->prefix, l->plen) && !memcmp(name + l->plen, suffix, sl))
            return &h->t[i];
    }
    return NULL;
}

// The 1-D tensor prefix + suffix of n values into dst (n floats), or dst filled with
// `absent` when the file has no such tensor.
static int load_vector(const Ctx *c, const Source *srcs, const Header *h, const Layer *l, const char *suffix,
                       size_t n, float *dst, float absent, Scratch *sc) {
    const Tensor *t = find_member(h, l, suffix);
    if (!t) {
        for (size_t i = 0; i < n; i++) dst[i] = absent;
        return 0;
    }
    if (DTYPES[t->dtype].kind == KIND_OTHER || t->ndim != 1 || t->shape[0] != n)
        return fail(c, "tensor %s has %s %s; expected a float vector [%zu]", quote(t->name).s,
                    DTYPES[t->dtype].name, shape_text(t).s, n);
    if (load_tensor(c, srcs, t, sc)) return -1;
    memcpy(dst, sc->val, n * sizeof *dst);
    return 0;
}

// Layer l's normalisation gain and bias (NULL: none in the file or the family) and its
// Q | K | V bias (3·width, K and V repeated for the query heads sharing them under
// grouped-query attention; NULL: none of the three in the file) into out's arrays of layer i.
static int read_form(const Ctx *c, const Source *srcs, const Header *h, const Layer *l, int heads, int dk, int D,
                     int kv_heads, AttentionLayers *out, size_t i, Scratch *sc) {
    const FamilyForm *ff = &FORMS[l->family];
    const size_t width = (size_t)heads * (size_t)dk, kvw = (size_t)kv_heads * (size_t)dk;
    if (ff->gain && find_member(h, l, ff->gain)) {
        if (!(out->ln_w[i] = layer_floats(c, l, (size_t)D)) ||
            load_vector(c, srcs, h, l, ff->gain, (size_t)D, out->ln_w[i], 1.0f, sc))
            return -1;
        if (ff->bias && (!(out->ln_b[i] = layer_floats(c, l, (size_t)D)) ||
                         load_vector(c, srcs, h, l, ff->bias, (size_t)D, out->ln_b[i], 0.0f, sc)))
            return -1;
    }
    int any = 0;
    for (int r = 0; r < 3 && ff->qkv_bias[r]; r++) any |= find_member(h, l, ff->qkv_bias[r]) != NULL;
    if (!any) return 0;
    float *bq = out->bias_qkv[i] = layer_floats(c, l, 3 * width), *raw = layer_floats(c, l, 3 * width);
    int rc = -1;
    if (!bq || !raw) goto done;
    if (!ff->qkv_bias[1]) {  // fused Q | K | V
        rc = load_vector(c, srcs, h, l, ff->qkv_bias[0], 3 * width, bq, 0.0f, sc);
        goto done;
    }
    const size_t rep = (size_t)(heads / kv_heads);
    for (int r = 0; r < 3; r++) {
        if (load_vector(c, srcs, h, l, ff->qkv_bias[r], r ? kvw : width, raw, 0.0f, sc)) goto done;
        for (size_t j = 0; j < width; j++)
            bq[(size_t)r * width + j] = r ? raw[(j / (size_t)dk / rep) * (size_t)dk + j % (size_t)dk] : raw[j];
    }
    rc = 0;
done:
    free(raw);
    return rc;
}

void attention_layers_whole_network(AttentionLayers *l) {
    if (l->n_layers == 0 || l->dims[3] != 3) return;  // Grassmann: as stored
    const int H = l->dims[0], dk = l->dims[1], D = l->dims[2];
    const size_t width = (size_t)H * (size_t)dk;
    for (int i = 0; i < l->n_layers; i++) {
        const LayerForm form = {.norm = l->ln_w[i] ? l->norm : NORM_NONE, .ln_w = l->ln_w[i], .ln_b = l->ln_b[i],
                                .bias_qkv = l->bias_qkv[i], .centre_writes = l->centre_writes};
        float *W = xmalloc(width * (size_t)(D + 1) * 3 * sizeof(float));
        float *O = l->out ? xmalloc(width * (size_t)(D + 1) * sizeof(float)) : NULL;
        circuits_whole_network(W, O, l->weights[i], l->out ? l->out[i] : NULL, &form, H, dk, D);
        free(l->weights[i]);
        l->weights[i] = W;
        if (O) free(l->out[i]), l->out[i] = O;
    }
    l->dims[2] = D + 1;
    if (l->out) l->out_dims[0] = D + 1;
}

// ---- the whole reader

// The layers of header h (already read, from srcs; freed here) as out.
static int attention_from(const Ctx *c, const Source *srcs, Header *h, int heads, const char *config_path,
                          AttentionLayers *out) {
    Layer *layers = NULL;
    size_t nl = 0;
    Scratch sc = {0};
    int rc = -1;
    LayerShape s0 = {0};

    if (find_layers(c, h, &layers, &nl)) goto done;
    for (size_t i = 0; i < nl; i++) {
        LayerShape si = {0};
        if (layer_shape(c, h, &layers[i], &si)) goto done;
        if (i == 0) {
            s0 = si;
        } else if (layers[i].family != layers[0].family) {  // GPT-2 and nanoGPT differ by shape only
            fail(c, "attention weights of two kinds, %s (layer %s) and %s (layer %s); cannot tell which to score",
                 FAMILY[layers[0].family], quote_n(layers[0].prefix, layers[0].plen).s, FAMILY[layers[i].family],
                 quote_n(layers[i].prefix, layers[i].plen).s);
            goto done;
        } else if (si.width != s0.width || si.d_model != s0.d_model || si.kv_width != s0.kv_width) {
            fail(c, "layer %s: width %llu, d_model %llu, key/value width %llu differ from layer %s (%llu, %llu, %llu); "
                 "all layers must agree", quote_n(layers[i].prefix, layers[i].plen).s,
                 (unsigned long long)si.width, (unsigned long long)si.d_model, (unsigned long long)si.kv_width,
                 quote_n(layers[0].prefix, layers[0].plen).s, (unsigned long long)s0.width,
                 (unsigned long long)s0.d_model, (unsigned long long)s0.kv_width);
            goto done;
        } else if ((layers[i].t[ROLE_O] < 0) != (layers[0].t[ROLE_O] < 0)) {
            const Layer *lacks = layers[i].t[ROLE_O] < 0 ? &layers[i] : &layers[0];
            const Layer *has = lacks == &layers[0] ? &layers[i] : &layers[0];
            fail(c, "layer %s has no output projection %s but layer %s has one; all layers or none must have it",
                 quote_n(lacks->prefix, lacks->plen).s, member_name(lacks, ROLE_O).s,
                 quote_n(has->prefix, has->plen).s);
            goto done;
        }
    }

    const Layer *l0 = &layers[0];
    const int grassmann = l0->family == FAM_GRASSMANN;
    if (heads < 0) {
        fail(c, "number of heads must be positive (got %d)", heads);
        goto done;
    }
    if (grassmann) heads = (int)s0.width;  // the r rows of W_red, each its own "head" of one feature
    if (heads == 0 && heads_from_config(c, config_path, &heads)) goto done;
    const char *wname = h->t[l0->t[fused(l0->family) ? ROLE_QKV : ROLE_Q]].name;
    if ((uint64_t)heads > s0.width || s0.width % (uint64_t)heads) {
        fail(c, "%d heads do not divide the attention width %llu (of %s); pass --heads N with N dividing %llu", heads,
             (unsigned long long)s0.width, quote(wname).s, (unsigned long long)s0.width);
        goto done;
    }
    int dk = (int)(s0.width / (uint64_t)heads), D = (int)s0.d_model, kv_heads = heads;
    if (s0.kv_width != s0.width) {  // grouped-query attention (LLaMA names only)
        if (s0.kv_width % (uint64_t)dk || heads % (int)(s0.kv_width / (uint64_t)dk)) {
            fail(c, "layer %s: k_proj/v_proj have %llu rows, not a whole number of key/value heads of size "
                 "d_k = %d that divides %d heads (grouped-query attention)", quote_n(l0->prefix, l0->plen).s,
                 (unsigned long long)s0.kv_width, dk, heads);
            goto done;
        }
        kv_heads = (int)(s0.kv_width / (uint64_t)dk);
    }
    if (s0.width > SIZE_MAX / 3 / sizeof(float) / s0.d_model) {
        fail(c, "attention tensors of %llu x %llu x 3 floats do not fit in memory", (unsigned long long)s0.width,
             (unsigned long long)s0.d_model);
        goto done;
    }
    const int roles = grassmann ? 1 : 3;
    size_t width = (size_t)s0.width, wsize = width * (size_t)D * (size_t)roles;
    size_t out_width = grassmann ? width * (width - 1) / 2 : width;

    out->dims[0] = heads;
    out->dims[1] = dk;
    out->dims[2] = D;
    out->dims[3] = roles;
    out->kv_heads = kv_heads;
    out->family = FAMILY[l0->family];
    out->form = grassmann ? "as stored" : FORMS[l0->family].text;
    out->norm = grassmann ? NORM_NONE : FORMS[l0->family].norm;
    out->centre_writes = !grassmann && FORMS[l0->family].centre_writes;
    out->weights = xcalloc(nl, sizeof *out->weights);
    out->names = xcalloc(nl, sizeof *out->names);
    out->ln_w = xcalloc(nl, sizeof *out->ln_w);
    out->ln_b = xcalloc(nl, sizeof *out->ln_b);
    out->bias_qkv = xcalloc(nl, sizeof *out->bias_qkv);
    if (l0->t[ROLE_O] >= 0) {  // then every layer has one
        out->out_dims[0] = D;
        out->out_dims[1] = (int)out_width;
        out->out = xcalloc(nl, sizeof *out->out);
    }
    for (size_t i = 0; i < nl; i++) {
        const Layer *l = &layers[i];
        out->n_layers = (int)i + 1;
        out->names[i] = xmalloc(l->plen + 1);
        memcpy(out->names[i], l->prefix, l->plen);
        out->names[i][l->plen] = '\0';
        float *W = out->weights[i] = layer_floats(c, l, wsize);
        if (!W) goto done;
        if (grassmann) {  // W_red [r, d_model] is W[r, 1, d_model, 1]
            if (load_tensor(c, srcs, &h->t[l->t[ROLE_Q]], &sc)) goto done;
            memcpy(W, sc.val, wsize * sizeof *W);
        } else if (l->family == FAM_GPT2) {  // Conv1D [d_model, 3·width]: columns Q | K | V
            if (load_tensor(c, srcs, &h->t[l->t[ROLE_QKV]], &sc)) goto done;
            for (int r = 0; r < 3; r++) scatter(W, sc.val, r, heads, dk, D, 1, (size_t)r * width, 1, 3 * width);
        } else if (fused(l->family)) {  // nn.Linear [3·width, d_model]: rows Q | K | V
            if (load_tensor(c, srcs, &h->t[l->t[ROLE_QKV]], &sc)) goto done;
            for (int r = 0; r < 3; r++) scatter(W, sc.val, r, heads, dk, D, 1, (size_t)r * width * (size_t)D, (size_t)D, 1);
        } else {
            for (int r = 0; r < 3; r++) {
                if (load_tensor(c, srcs, &h->t[l->t[r]], &sc)) goto done;
                scatter(W, sc.val, r, heads, dk, D, r == ROLE_Q ? 1 : heads / kv_heads, 0, (size_t)D, 1);
            }
        }
        if (out->out) {
            float *O = out->out[i] = layer_floats(c, l, out_width * (size_t)D);
            if (!O || load_tensor(c, srcs, &h->t[l->t[ROLE_O]], &sc)) goto done;
            if (l->family == FAM_GPT2) gather_out(O, sc.val, (size_t)D, width, 1, (size_t)D);  // Conv1D [width, D]
            else gather_out(O, sc.val, (size_t)D, out_width, out_width, 1);                      // Linear [D, width]
        }
        if (!grassmann && read_form(c, srcs, h, l, heads, dk, D, kv_heads, out, i, &sc)) goto done;
    }
    rc = 0;
done:
    if (rc) attention_layers_free(out);
    free(sc.raw);
    free(sc.val);
    free(layers);
    header_free(h);
    return rc;
}

int safetensors_attention_mem(const void *data, size_t size, const char *label, int heads, AttentionLayers *out,
                              char *err, size_t errlen) {
    Ctx c = {label ? label : "(memory)", err, errlen};
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = '\0';
    Source s = {NULL, data, data ? (uint64_t)size : 0};
    if (!data) s.mem = (const unsigned char *)"";
    Header h = {0};
    if (read_header(&c, &s, 0, &h)) {
        header_free(&h);
        return -1;
    }
    return attention_from(&c, &s, &h, heads, NULL, out);
}

// PATH's directory + name ("config.json" beside the checkpoint).
static char *beside(const char *path, const char *name) {
    const char *slash = strrchr(path, '/');
    const size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    char *p = xmalloc(dl + strlen(name) + 1);
    memcpy(p, path, dl);
    strcpy(p + dl, name);
    return p;
}

// A regular file opened for reading as a Source; -1 with the reason in c.
static int open_source(const Ctx *c, const char *path, Source *s) {
    uint64_t size = 0;
    FILE *f = open_regular(path, &size);
    if (!f) return fail(c, "%s", errno == EINVAL ? "not a regular file" : strerror(errno));
    *s = (Source){f, NULL, size};
    return 0;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

// A sharded checkpoint's index (model.safetensors.index.json: {"weight_map": {TENSOR:
// SHARD, ...}}, the shards beside it): every shard's header, read into a part of h, and
// their tensors together in h. The shards are opened into *srcs (*n_src of them).
static int read_sharded(const Ctx *c, const char *index, Source **srcs, int *n_src, Header *h) {
    Source is = {0};
    if (open_source(c, index, &is)) return -1;
    int rc = -1;
    char *text = NULL, **shards = NULL;
    cJSON *root = NULL;
    size_t n_shards = 0;
    if (is.size > MAX_CONFIG_BYTES) {
        fail(c, "an index of %llu bytes is not a checkpoint's index (at most %u)", (unsigned long long)is.size,
             MAX_CONFIG_BYTES);
        goto done;
    }
    text = xmalloc((size_t)is.size + 1);
    if (source_read(&is, 0, text, (size_t)is.size)) {
        fail(c, "cannot read the index (%s)", strerror(errno));
        goto done;
    }
    text[is.size] = 0;
    root = cJSON_ParseWithLength(text, (size_t)is.size);
    const cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(map)) {
        fail(c, "%s", root ? "the index has no \"weight_map\" object of tensor names and their shards"
                           : "neither safetensors nor a sharded checkpoint's index (JSON)");
        goto done;
    }
    size_t n_map = 0;
    for (const cJSON *e = map->child; e; e = e->next) n_map++;
    shards = xcalloc(n_map ? n_map : 1, sizeof *shards);
    for (const cJSON *e = map->child; e; e = e->next) {
        const char *f = cJSON_IsString(e) ? e->valuestring : NULL;
        if (!f || !f[0] || f[0] == '/' || strstr(f, "..") || strchr(f, '\\')) {
            fail(c, "weight_map: tensor %s names %s, not a shard file beside the index", quote(e->string).s,
                 f ? quote(f).s : "no file");
            goto done;
        }
        shards[n_shards++] = (char *)f;
    }
    qsort(shards, n_shards, sizeof *shards, cmp_name);
    size_t distinct = 0;
    for (size_t k = 0; k < n_shards; k++)
        if (!distinct || strcmp(shards[k], shards[distinct - 1])) shards[distinct++] = shards[k];
    if (distinct == 0 || distinct > 100000) {
        fail(c, "weight_map names %zu shards", distinct);
        goto done;
    }
    *srcs = xcalloc(distinct, sizeof **srcs);
    h->parts = xcalloc(distinct, sizeof *h->parts);
    size_t total = 0;
    for (size_t k = 0; k < distinct; k++) {
        char *path = beside(index, shards[k]);
        Ctx pc = {path, c->err, c->errlen};
        const int bad = open_source(&pc, path, &(*srcs)[k]) || ((*n_src)++, h->n_parts++, 0) ||
                        read_header(&pc, &(*srcs)[k], (int)k, &h->parts[k]);
        free(path);
        if (bad) goto done;
        total += h->parts[k].n;
    }
    h->t = xcalloc(total ? total : 1, sizeof *h->t);
    for (int k = 0; k < h->n_parts; k++)
        for (size_t i = 0; i < h->parts[k].n; i++) h->t[h->n++] = h->parts[k].t[i];
    // No name in two shards, and each tensor of the map in the shard it names.
    const Tensor **by_name = xmalloc((h->n ? h->n : 1) * sizeof *by_name);
    for (size_t i = 0; i < h->n; i++) by_name[i] = &h->t[i];
    qsort(by_name, h->n, sizeof *by_name, cmp_tensor_name);
    int bad = 0;
    for (size_t i = 1; i < h->n && !bad; i++)
        if (!strcmp(by_name[i - 1]->name, by_name[i]->name))
            bad = fail(c, "tensor %s is in two shards", quote(by_name[i]->name).s);
    for (const cJSON *e = map->child; e && !bad; e = e->next) {
        const Tensor probe = {.name = e->string}, *key = &probe;
        const Tensor *const *found = bsearch(&key, by_name, h->n, sizeof *by_name, cmp_tensor_name);
        if (!found || strcmp(shards[(*found)->file], e->valuestring))
            bad = fail(c, "weight_map puts tensor %s in %s, but %s", quote(e->string).s, quote(e->valuestring).s,
                       found ? "it is in another shard" : "no shard has it");
    }
    free(by_name);
    if (bad) goto done;
    rc = 0;
done:
    cJSON_Delete(root);
    free(text);
    free(shards);
    fclose(is.f);
    return rc;
}

static int ends_with(const char *s, const char *end) {
    const size_t n = strlen(s), m = strlen(end);
    return n >= m && !strcmp(s + n - m, end);
}

int safetensors_attention(const char *path, int heads, AttentionLayers *out, char *err, size_t errlen) {
    Ctx c = {path ? path : "(null)", err, errlen};
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = '\0';
    if (!path) return fail(&c, "no file name");
    Source *srcs = NULL, one;
    int n_src = 0, rc = -1;
    Header h = {0};
    if (ends_with(path, ".json")) {  // model.safetensors.index.json
        if (read_sharded(&c, path, &srcs, &n_src, &h) == 0) rc = 0;
    } else if (open_source(&c, path, &one) == 0) {
        srcs = &one, n_src = 1;
        rc = read_header(&c, &one, 0, &h);
    }
    char *config = heads == 0 ? beside(path, "config.json") : NULL;
    if (rc == 0)
        rc = attention_from(&c, srcs, &h, heads, config, out);
    else
        header_free(&h);
    free(config);
    for (int k = 0; k < n_src; k++) fclose(srcs[k].f);
    if (srcs != &one) free(srcs);
    return rc;
}

void attention_layers_free(AttentionLayers *l) {
    if (!l) return;
    for (int i = 0; i < l->n_layers; i++) {
        if (l->weights) free(l->weights[i]);
        if (l->names) free(l->names[i]);
        if (l->out) free(l->out[i]);
        if (l->ln_w) free(l->ln_w[i]);
        if (l->ln_b) free(l->ln_b[i]);
        if (l->bias_qkv) free(l->bias_qkv[i]);
    }
    free(l->weights);
    free(l->names);
    free(l->out);
    free(l->ln_w);
    free(l->ln_b);
    free(l->bias_qkv);
    memset(l, 0, sizeof *l);
}
