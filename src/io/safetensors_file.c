// safetensors_file.c: the safetensors container (safetensors_file.h): validate a header
// completely, read the shards of a sharded checkpoint through its index, and read one
// tensor as float32. What is checked is listed in safetensors.h.
#define _POSIX_C_SOURCE 200809L
#include "io/safetensors_file.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/util.h"
#include "io/safetensors.h"

#define MAX_JSON_INT 9007199254740992.0  // 2^53: larger JSON numbers are not exact
enum { MAX_JSON_VALUES = 4000000 };      // '[', '{', ',' and strings: ~12 per tensor entry

// ---- errors: one line "LABEL: message" in the caller's buffer

int st_fail(const Ctx *c, const char *fmt, ...) {
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

Quoted st_quote_n(const char *name, size_t len) {
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

Quoted st_quote(const char *name) { return st_quote_n(name, strlen(name)); }

// ---- where the bytes come from: a file (fseeko + fread) or a buffer in memory

FILE *st_open_regular(const char *path, uint64_t *size) {
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

const char *st_dtype_name(const Tensor *t) { return DTYPES[t->dtype].name; }

int st_float_dtype(const Tensor *t) { return DTYPES[t->dtype].kind != KIND_OTHER; }

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

void st_header_free(Header *h) {
    for (int k = 0; k < h->n_parts; k++) st_header_free(&h->parts[k]);
    free(h->parts);
    cJSON_Delete(h->root);
    free(h->text);
    free(h->t);
    memset(h, 0, sizeof *h);
}

ShapeText st_shape_text(const Tensor *t) {
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

const char *st_json_uint(const cJSON *x, uint64_t *v) {
    if (!cJSON_IsNumber(x)) return "is not a number";
    double d = x->valuedouble;
    if (!(d >= 0)) return "is negative";
    if (d != floor(d)) return "is not an integer";
    if (d > MAX_JSON_INT) return "is too large";
    *v = (uint64_t)d;
    return NULL;
}

static int parse_entry(const Ctx *c, const cJSON *e, Tensor *t, uint64_t data_size) {
    Quoted q = st_quote(t->name);
    if (!cJSON_IsObject(e)) return st_fail(c, "tensor %s: entry is %s, not a JSON object", q.s, json_kind(e));

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!dt) return st_fail(c, "tensor %s: no \"dtype\"", q.s);
    if (!cJSON_IsString(dt) || !dt->valuestring)
        return st_fail(c, "tensor %s: \"dtype\" is %s, not a string", q.s, json_kind(dt));
    t->dtype = -1;
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(dt->valuestring, DTYPES[i].name) == 0) t->dtype = i;
    if (t->dtype < 0) return st_fail(c, "tensor %s: unknown dtype %s", q.s, st_quote(dt->valuestring).s);

    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!sh) return st_fail(c, "tensor %s: no \"shape\"", q.s);
    if (!cJSON_IsArray(sh)) return st_fail(c, "tensor %s: \"shape\" is %s, not an array", q.s, json_kind(sh));
    uint64_t n = 1;
    int zero = 0, overflow = 0;
    t->ndim = 0;
    for (const cJSON *d = sh->child; d; d = d->next) {
        uint64_t v = 0;
        const char *why = st_json_uint(d, &v);
        if (why && cJSON_IsNumber(d))
            return st_fail(c, "tensor %s: shape[%d] = %.15g %s", q.s, t->ndim, d->valuedouble, why);
        if (why) return st_fail(c, "tensor %s: shape[%d] %s", q.s, t->ndim, why);
        if (t->ndim < SHAPE_KEPT) t->shape[t->ndim] = v;
        if (t->ndim == INT_MAX) return st_fail(c, "tensor %s: shape has too many dimensions", q.s);
        t->ndim++;
        if (v == 0) zero = 1;
        else if (n > UINT64_MAX / v) overflow = 1;
        else n *= v;
    }
    unsigned bits = DTYPES[t->dtype].bits;
    if (zero) n = 0;
    else if (overflow || n > UINT64_MAX / bits)
        return st_fail(c, "tensor %s: shape %s is too large (its size overflows 64 bits)", q.s, st_shape_text(t).s);
    if (n * bits % 8)
        return st_fail(c, "tensor %s: shape %s of %s is not a whole number of bytes", q.s, st_shape_text(t).s,
                       DTYPES[t->dtype].name);
    uint64_t nbytes = n * bits / 8;

    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!off) return st_fail(c, "tensor %s: no \"data_offsets\"", q.s);
    if (!cJSON_IsArray(off))
        return st_fail(c, "tensor %s: \"data_offsets\" is %s, not an array [begin, end]", q.s, json_kind(off));
    int count = cJSON_GetArraySize(off);
    if (count != 2)
        return st_fail(c, "tensor %s: \"data_offsets\" must have 2 entries [begin, end] (it has %d)", q.s, count);
    uint64_t be[2] = {0, 0};
    int k = 0;
    for (const cJSON *d = off->child; d; d = d->next, k++) {
        const char *why = st_json_uint(d, &be[k]);
        if (why && cJSON_IsNumber(d))
            return st_fail(c, "tensor %s: data_offsets[%d] = %.15g %s", q.s, k, d->valuedouble, why);
        if (why) return st_fail(c, "tensor %s: data_offsets[%d] %s", q.s, k, why);
    }
    t->begin = be[0];
    t->end = be[1];
    if (t->end < t->begin)
        return st_fail(c, "tensor %s: data_offsets [%llu, %llu] end before they begin", q.s,
                       (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > data_size)
        return st_fail(c, "tensor %s: data_offsets [%llu, %llu] lie outside the data buffer of %llu bytes "
                       "(truncated file?)", q.s, (unsigned long long)t->begin, (unsigned long long)t->end,
                       (unsigned long long)data_size);
    if (t->end - t->begin != nbytes)
        return st_fail(c, "tensor %s: data_offsets [%llu, %llu] hold %llu bytes but shape %s of %s needs %llu",
                       q.s, (unsigned long long)t->begin, (unsigned long long)t->end,
                       (unsigned long long)(t->end - t->begin), st_shape_text(t).s, DTYPES[t->dtype].name,
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
            rc = st_fail(c, "tensor name %s appears twice in the header", st_quote(p[i]->name).s);
    if (!rc) {
        qsort(p, h->n, sizeof *p, cmp_tensor_begin);
        const Tensor *last = NULL;  // the non-empty tensor reaching furthest so far
        for (size_t i = 0; i < h->n && !rc; i++) {
            if (p[i]->begin == p[i]->end) continue;
            if (last && p[i]->begin < last->end)
                rc = st_fail(c, "tensors %s [%llu, %llu] and %s [%llu, %llu] overlap in the data buffer",
                             st_quote(last->name).s, (unsigned long long)last->begin,
                             (unsigned long long)last->end, st_quote(p[i]->name).s,
                             (unsigned long long)p[i]->begin, (unsigned long long)p[i]->end);
            if (!last || p[i]->end > last->end) last = p[i];
        }
    }
    free(p);
    return rc;
}

int st_read_header(const Ctx *c, const Source *s, int file, Header *h) {
    unsigned char b[8];
    if (s->size < 8)
        return st_fail(c, "%llu bytes is too short for a safetensors file (it starts with an 8-byte header length)",
                       (unsigned long long)s->size);
    if (source_read(s, 0, b, 8)) return st_fail(c, "cannot read the header length (%s)", strerror(errno));
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    if (n > SAFETENSORS_MAX_HEADER)
        return st_fail(c, "header length %llu bytes is absurd (at most %llu); not a safetensors file?",
                       (unsigned long long)n, SAFETENSORS_MAX_HEADER);
    if (n > s->size - 8)
        return st_fail(c, "header length %llu bytes runs past the end of the file (%llu bytes follow the length); "
                       "truncated or not a safetensors file", (unsigned long long)n, (unsigned long long)(s->size - 8));
    h->data_start = 8 + n;
    h->data_size = s->size - 8 - n;
    h->text = malloc((size_t)n + 1);
    if (!h->text) return st_fail(c, "out of memory reading the %llu-byte header", (unsigned long long)n);
    if (source_read(s, 8, h->text, (size_t)n))
        return st_fail(c, "cannot read the %llu-byte header (%s)", (unsigned long long)n, strerror(errno));
    h->text[n] = '\0';

    size_t bad = utf8_bad((const unsigned char *)h->text, (size_t)n);
    if (bad < n && h->text[bad] == '\0') return st_fail(c, "header has a NUL byte at offset %zu", bad);
    if (bad < n) return st_fail(c, "header is not valid UTF-8 (byte 0x%02x at offset %zu)", (unsigned char)h->text[bad], bad);

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
                    return st_fail(c, "header has an escaped NUL (\\u0000) at offset %zu", i);
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
        return st_fail(c, "header has more than %d JSON values; not a plausible safetensors header", MAX_JSON_VALUES);

    const char *end = h->text;
    h->root = cJSON_ParseWithLengthOpts(h->text, (size_t)n, &end, 0);
    if (!h->root) {
        size_t at = end >= h->text && end <= h->text + n ? (size_t)(end - h->text) : 0;
        return st_fail(c, "header is not valid JSON (at byte %zu of %llu)", at, (unsigned long long)n);
    }
    for (const char *p = end; p < h->text + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return st_fail(c, "header has bytes after its JSON object (at byte %zu of %llu)",
                           (size_t)(p - h->text), (unsigned long long)n);
    if (!cJSON_IsObject(h->root))
        return st_fail(c, "header is %s, not a JSON object of tensors", json_kind(h->root));

    size_t count = 0;
    for (const cJSON *e = h->root->child; e; e = e->next) count++;
    h->t = xcalloc(count ? count : 1, sizeof *h->t);
    for (const cJSON *e = h->root->child; e; e = e->next) {
        if (!e->string) return st_fail(c, "header has an entry without a name");
        if (strcmp(e->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(e)) return st_fail(c, "\"__metadata__\" is %s, not a JSON object", json_kind(e));
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

// ---- reading and converting one tensor

static int grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    void *q = realloc(*p, need);
    if (!q) return -1;
    *p = q;
    *cap = need;
    return 0;
}

int st_load_tensor(const Ctx *c, const Source *srcs, const Tensor *t, Scratch *sc) {
    const uint64_t cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
    size_t n = (size_t)(t->ndim == 2 ? t->shape[0] * cols : cols), nbytes = (size_t)(t->end - t->begin);
    Quoted q = st_quote(t->name);
    if (grow((void **)&sc->raw, &sc->raw_cap, nbytes) || grow((void **)&sc->val, &sc->val_cap, n * sizeof(float)))
        return st_fail(c, "out of memory reading tensor %s (%zu bytes)", q.s, nbytes);
    if (source_read(&srcs[t->file], t->data_start + t->begin, sc->raw, nbytes))
        return st_fail(c, "cannot read tensor %s (read error, or the file shrank while being read)", q.s);
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
            if (big != 0) return st_fail(c, "tensor %s has %s (%.6g) at %s", q.s, bad, big, at);
            return st_fail(c, "tensor %s has %s at %s", q.s, bad, at);
        }
    }
    return 0;
}

// ---- a sharded checkpoint: its index and the shards beside it

char *st_beside(const char *path, const char *name) {
    const char *slash = strrchr(path, '/');
    const size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    char *p = xmalloc(dl + strlen(name) + 1);
    memcpy(p, path, dl);
    strcpy(p + dl, name);
    return p;
}

int st_open_source(const Ctx *c, const char *path, Source *s) {
    uint64_t size = 0;
    FILE *f = st_open_regular(path, &size);
    if (!f) return st_fail(c, "%s", errno == EINVAL ? "not a regular file" : strerror(errno));
    *s = (Source){f, NULL, size};
    return 0;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

int st_read_sharded(const Ctx *c, const char *index, Source **srcs, int *n_src, Header *h) {
    Source is = {0};
    if (st_open_source(c, index, &is)) return -1;
    int rc = -1;
    char *text = NULL, **shards = NULL;
    cJSON *root = NULL;
    size_t n_shards = 0;
    if (is.size > MAX_CONFIG_BYTES) {
        st_fail(c, "an index of %llu bytes is not a checkpoint's index (at most %u)", (unsigned long long)is.size,
                MAX_CONFIG_BYTES);
        goto done;
    }
    text = xmalloc((size_t)is.size + 1);
    if (source_read(&is, 0, text, (size_t)is.size)) {
        st_fail(c, "cannot read the index (%s)", strerror(errno));
        goto done;
    }
    text[is.size] = 0;
    root = cJSON_ParseWithLength(text, (size_t)is.size);
    const cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(map)) {
        st_fail(c, "%s", root ? "the index has no \"weight_map\" object of tensor names and their shards"
                           : "neither safetensors nor a sharded checkpoint's index (JSON)");
        goto done;
    }
    size_t n_map = 0;
    for (const cJSON *e = map->child; e; e = e->next) n_map++;
    shards = xcalloc(n_map ? n_map : 1, sizeof *shards);
    for (const cJSON *e = map->child; e; e = e->next) {
        const char *f = cJSON_IsString(e) ? e->valuestring : NULL;
        if (!f || !f[0] || f[0] == '/' || strstr(f, "..") || strchr(f, '\\')) {
            st_fail(c, "weight_map: tensor %s names %s, not a shard file beside the index", st_quote(e->string).s,
                    f ? st_quote(f).s : "no file");
            goto done;
        }
        shards[n_shards++] = (char *)f;
    }
    qsort(shards, n_shards, sizeof *shards, cmp_name);
    size_t distinct = 0;
    for (size_t k = 0; k < n_shards; k++)
        if (!distinct || strcmp(shards[k], shards[distinct - 1])) shards[distinct++] = shards[k];
    if (distinct == 0 || distinct > 100000) {
        st_fail(c, "weight_map names %zu shards", distinct);
        goto done;
    }
    *srcs = xcalloc(distinct, sizeof **srcs);
    h->parts = xcalloc(distinct, sizeof *h->parts);
    size_t total = 0;
    for (size_t k = 0; k < distinct; k++) {
        char *path = st_beside(index, shards[k]);
        Ctx pc = {path, c->err, c->errlen};
        const int bad = st_open_source(&pc, path, &(*srcs)[k]) || ((*n_src)++, h->n_parts++, 0) ||
                        st_read_header(&pc, &(*srcs)[k], (int)k, &h->parts[k]);
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
            bad = st_fail(c, "tensor %s is in two shards", st_quote(by_name[i]->name).s);
    for (const cJSON *e = map->child; e && !bad; e = e->next) {
        const Tensor probe = {.name = e->string}, *key = &probe;
        const Tensor *const *found = bsearch(&key, by_name, h->n, sizeof *by_name, cmp_tensor_name);
        if (!found || strcmp(shards[(*found)->file], e->valuestring))
            bad = st_fail(c, "weight_map puts tensor %s in %s, but %s", st_quote(e->string).s, st_quote(e->valuestring).s,
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
