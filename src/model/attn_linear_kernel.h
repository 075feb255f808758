// attn_linear_kernel.h: what attn_linear.c (the core's scratch, its entry points) and
// attn_linear_kernel.c (its passes over a head, compiled for several instruction sets:
// targets.h) share. The kernels have a file of their own so that an edit elsewhere, or
// to a header they do not include (common/util.h), does not recompile their variants.
#ifndef ATTN_LINEAR_KERNEL_H
#define ATTN_LINEAR_KERNEL_H

#include <stddef.h>

#include "model/attn_tiles.h"

// Tokens per chunk: a chunk's own products cost ∝ CH a token, the state's ∝ the head's
// width, so CH about the width; one vector, so that a tile's row over the chunk's
// queries is one register.
enum { CH = TILE_VL };

// A chunk's tiles: rows (CH × HP) φq, φk, v and dn; Gᵀ (CH × CH, keys s × queries t,
// masked); dd (CH). The backward pass keeps one such slot per chunk, the forward one.
typedef struct {
    float *fq, *fk, *v, *dn, *g, *dd;
} Chunk;

// Per-head scratch: the chunks' slots; the chunk's result o (CH × HP); transposes
// (HP × CH): φqᵀ, dnᵀ; the masked tile Aᵀ (CH × CH); the states (hs × HP): S or U, R,
// R'; z, r (HP); the chunk's denominators (CH).
typedef struct {
    void *block;
    float *slots, *o, *fqt, *dnt, *a, *u, *rq, *rk, *z, *r, *den;
    int T, hs, HP;
    size_t slot;  // floats a slot
} Head;

// attn_heads.h's AttnCore forward and backward on one head (work: a Head).
void attn_linear_head_forward(void *work, float *out, float *den, const float *qkv, int C, int causal);
void attn_linear_head_backward(void *work, float *dqkv, const float *dout, const float *out, const float *den,
                               const float *qkv, int C, int causal);

#endif
