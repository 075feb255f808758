// attn_softmax_kernel.h: what attn_softmax.c (the core's scratch, its entry points) and
// attn_softmax_kernel.c (its passes over a head, compiled for several instruction sets:
// targets.h) share. The kernels have a file of their own so that an edit elsewhere, or
// to a header they do not include (common/util.h), does not recompile their variants.
#ifndef ATTN_SOFTMAX_KERNEL_H
#define ATTN_SOFTMAX_KERNEL_H

// Per-head scratch; each pass says which fields it uses.
typedef struct {
    void *block;
    float *qt, *gt, *q, *k, *v, *g, *dq, *dk, *dv, *s, *dp, *o, *m, *l, *alpha, *lse, *d;
    int T, Tp, hs, HP, tb;
} Head;

// attn_heads.h's AttnCore forward and backward on one head (work: a Head).
void attn_softmax_head_forward(void *work, float *out, float *lse, const float *qkv, int C, int causal);
void attn_softmax_head_backward(void *work, float *dqkv, const float *dout, const float *out, const float *lse,
                                const float *qkv, int C, int causal);

#endif
