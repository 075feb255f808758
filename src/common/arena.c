#include "common/arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { ARENA_ALIGN = 16 };  // floats: 64 bytes, one cache line / one AVX-512 register

void arena_reserve(Arena *a, float **slot, size_t count, const char *name, int flags) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 32;
        a->entries = xrealloc(a->entries, (size_t)a->cap * sizeof *a->entries);
    }
    a->entries[a->n++] = (ArenaEntry){slot, a->total, count, name, flags};
    a->total += (count + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

int arena_commit(Arena *a) {
    size_t bytes = (a->total ? a->total : ARENA_ALIGN) * sizeof(float);
    a->mem = aligned_alloc(64, bytes);
    if (!a->mem) return -1;
    memset(a->mem, 0, bytes);
    for (int i = 0; i < a->n; i++) *a->entries[i].slot = a->mem + a->entries[i].offset;
    return 0;
}

void arena_free(Arena *a) {
    free(a->mem);
    free(a->entries);
    memset(a, 0, sizeof *a);
}

size_t arena_used(const Arena *a) {
    size_t n = 0;
    for (int i = 0; i < a->n; i++) n += a->entries[i].count;
    return n;
}

void arena_gather(const Arena *a, float *out) {
    for (int i = 0; i < a->n; i++) {
        memcpy(out, a->mem + a->entries[i].offset, a->entries[i].count * sizeof(float));
        out += a->entries[i].count;
    }
}

void arena_scatter(Arena *a, const float *in) {
    for (int i = 0; i < a->n; i++) {
        memcpy(a->mem + a->entries[i].offset, in, a->entries[i].count * sizeof(float));
        in += a->entries[i].count;
    }
}

char *arena_layout(const Arena *a) {
    size_t len = 1;
    for (int i = 0; i < a->n; i++) len += strlen(a->entries[i].name) + 24;
    char *s = xmalloc(len), *p = s;
    *s = 0;
    for (int i = 0; i < a->n; i++)
        p += sprintf(p, "%s%s:%zu", i ? "," : "", a->entries[i].name, a->entries[i].count);
    return s;
}
