// arena.h: one allocation for many named float tensors (as in llm.c).
//
// A layout function reserves each tensor by the address of the pointer that will
// point into the arena; arena_commit makes the one allocation and sets every pointer.
// Running the same layout function on two arenas gives two arenas with the same
// offsets: parameters and their gradients (and the AdamW moments) line up, so the
// optimizer and gradient clipping are flat loops over the whole arena.
#ifndef ATTN_ARENA_H
#define ATTN_ARENA_H

#include <stddef.h>

enum { ARENA_DECAY = 1 };  // flag: AdamW weight decay applies (matrices, not biases/norms)

typedef struct {
    float **slot;      // where to store the tensor's address after commit
    size_t offset;     // in floats from the arena start (64-byte aligned)
    size_t count;      // number of floats
    const char *name;  // for messages and tests
    int flags;
} ArenaEntry;

typedef struct {
    ArenaEntry *entries;
    int n, cap;
    size_t total;  // floats, including alignment padding
    float *mem;
} Arena;

void arena_reserve(Arena *a, float **slot, size_t count, const char *name, int flags);
// Allocate (zeroed) and point every slot into the arena. Returns 0, or -1 when the
// memory is not there (the slots are left unset).
int arena_commit(Arena *a);
void arena_free(Arena *a);
// Number of floats that are real tensor entries (no padding).
size_t arena_used(const Arena *a);
// The tensors' entries one after the other, without the padding (arena_used floats, in
// reservation order), out of the arena into out, or from in into the arena: a model's
// parameters as one flat vector that an arena of the same layout takes back.
void arena_gather(const Arena *a, float *out);
void arena_scatter(Arena *a, const float *in);
// "name:count,name:count,..." of every tensor in reservation order (the caller frees it):
// what the flat vector of arena_gather holds.
char *arena_layout(const Arena *a);

#endif
