// bytes.c: the byte buffer (bytes.h).
#include "common/bytes.h"

#include <stdlib.h>

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
