// attn_heads.h: the passes of an attention core (attn_softmax.c, attn_linear.c) over the
// B·NH (sequence, head) pairs of a batch, shared by whole heads among a rank's threads
// (threads.h), each thread with scratch of its own. Arrays in attention.h's layouts.
#ifndef ATTN_HEADS_H
#define ATTN_HEADS_H

#include <stddef.h>

// A core's work on one head of one sequence: out rows (T, hs wide, stride C), its T
// saved floats, q, k, v rows of qkv and dq, dk, dv rows of dqkv (stride 3C); the scratch
// that alloc makes for sequences of T tokens and heads hs wide, and release frees.
typedef struct {
    void *(*alloc)(int T, int hs);
    void (*release)(void *work);
    void (*forward)(void *work, float *out, float *saved, const float *qkv, int C, int causal);
    void (*backward)(void *work, float *dqkv, const float *dout, const float *out, const float *saved,
                     const float *qkv, int C, int causal);
} AttnCore;

// A core's scratch: n floats, 64-byte aligned (attn_tiles.h's tiles), inside a block from
// xmalloc that *block keeps (to free).
float *tile_alloc(size_t n, void **block);

// core->forward, then core->backward, on every head of every sequence.
void attn_heads_forward(const AttnCore *core, float *out, float *saved, const float *qkv, int B, int T, int C,
                        int NH, int causal);
void attn_heads_backward(const AttnCore *core, float *dqkv, const float *dout, const float *out,
                         const float *saved, const float *qkv, int B, int T, int C, int NH, int causal);

#endif
