// bytes.c: the byte buffer, its little-endian writers and the checked reader (bytes.h).
#include "common/bytes.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void bytes_free(Bytes *b) {
    free(b->data);
    *b = (Bytes){0};
}

unsigned char *bytes_extend(Bytes *b, size_t n) {
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    unsigned char *p = b->data + b->len;
    b->len += n;
    return p;
}

void store_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t load_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

// ---------------------------------------------------------------- writing

void bytes_put_le(Bytes *b, uint64_t v, int n) { store_le(bytes_extend(b, (size_t)n), v, n); }
void bytes_put_u8(Bytes *b, unsigned v) { bytes_put_le(b, v, 1); }
void bytes_put_u32(Bytes *b, uint32_t v) { bytes_put_le(b, v, 4); }
void bytes_put_i32(Bytes *b, int v) { bytes_put_le(b, (uint32_t)v, 4); }
void bytes_put_i64(Bytes *b, long v) { bytes_put_le(b, (uint64_t)v, 8); }

void bytes_put_f64(Bytes *b, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    bytes_put_le(b, u, 8);
}

void bytes_put_array(Bytes *b, const void *v, size_t n, size_t size) {
    unsigned char *p = bytes_extend(b, n * size);
    const unsigned char *src = v;
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        if (size == 4) {
            uint32_t w;
            memcpy(&w, src + 4 * i, 4);
            u = w;
        } else {
            memcpy(&u, src + 8 * i, 8);
        }
        store_le(p + size * i, u, (int)size);
    }
}

void bytes_put_text(Bytes *b, const char *s, size_t n) {
    if (n > UINT32_MAX) die(EXIT_RUNTIME, "internal error: packing a text of %zu bytes", n);
    bytes_put_u32(b, (uint32_t)n);
    memcpy(bytes_extend(b, n), s, n);
}

// ---------------------------------------------------------------- reading

ByteReader byte_reader(const unsigned char *data, size_t len, const char *what, char *err, size_t errlen) {
    return (ByteReader){.p = data, .left = len, .len = len, .what = what, .err = err, .errlen = errlen};
}

void br_fail(ByteReader *rd, const char *fmt, ...) {
    if (rd->failed) return;
    rd->failed = 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(rd->err, rd->errlen, "%s, byte %zu of %zu: %s", rd->what, rd->len - rd->left, rd->len, msg);
}

const unsigned char *br_take(ByteReader *rd, size_t n) {
    if (rd->failed) return NULL;
    if (n > rd->left) {
        br_fail(rd, "cut short (%zu more bytes needed, %zu left)", n, rd->left);
        return NULL;
    }
    const unsigned char *p = rd->p;
    rd->p += n;
    rd->left -= n;
    return p;
}

static uint64_t get_le(ByteReader *rd, int n) {
    const unsigned char *p = br_take(rd, (size_t)n);
    return p ? load_le(p, n) : 0;
}

unsigned br_u8(ByteReader *rd) { return (unsigned)get_le(rd, 1); }
uint32_t br_u32(ByteReader *rd) { return (uint32_t)get_le(rd, 4); }
int br_i32(ByteReader *rd) { return (int)(int32_t)br_u32(rd); }
long br_i64(ByteReader *rd) { return (long)(int64_t)get_le(rd, 8); }

double br_f64(ByteReader *rd) {
    uint64_t u = get_le(rd, 8);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

int br_count(ByteReader *rd, size_t item_bytes, const char *what) {
    uint32_t n = br_u32(rd);
    if (rd->failed) return 0;
    if (n > INT_MAX || n > rd->left / item_bytes) {
        br_fail(rd, "%s %u exceeds what the %zu bytes left can hold", what, n, rd->left);
        return 0;
    }
    return (int)n;
}

const unsigned char *br_take_array(ByteReader *rd, size_t n, size_t size) {
    if (!rd->failed && n > rd->left / size) {
        br_fail(rd, "%zu elements of %zu bytes do not fit in the %zu bytes left", n, size, rd->left);
        return NULL;
    }
    return br_take(rd, n * size);
}

// n elements of `size` bytes (4 or 8) from little-endian into out, in the host's order.
static void decode_array(void *out, const unsigned char *p, size_t n, size_t size) {
    unsigned char *dst = out;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = load_le(p + size * i, (int)size);
        if (size == 4) {
            uint32_t w = (uint32_t)u;
            memcpy(dst + 4 * i, &w, 4);
        } else {
            memcpy(dst + 8 * i, &u, 8);
        }
    }
}

void br_array(ByteReader *rd, void *out, size_t n, size_t size) {
    const unsigned char *p = br_take_array(rd, n, size);
    if (p) decode_array(out, p, n, size);
}

void *br_new_array(ByteReader *rd, size_t n, size_t size) {
    const unsigned char *p = br_take_array(rd, n, size);
    if (!p || n == 0) return NULL;
    void *v = xmalloc(n * size);
    decode_array(v, p, n, size);
    return v;
}

const unsigned char *br_blob(ByteReader *rd, size_t *n, const char *what) {
    *n = (size_t)br_count(rd, 1, what);
    return br_take(rd, *n);
}

const char *br_text(ByteReader *rd, size_t room, size_t *n, const char *what) {
    const char *s = (const char *)br_blob(rd, n, what);
    if (!s) return NULL;
    if (*n >= room) br_fail(rd, "%s of %zu bytes does not fit in %zu", what, *n, room - 1);
    else if (memchr(s, 0, *n)) br_fail(rd, "%s holds a NUL byte", what);
    return rd->failed ? NULL : s;
}
