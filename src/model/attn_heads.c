#include "model/attn_heads.h"

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "model/threads.h"

float *tile_alloc(size_t n, void **block) {
    *block = xmalloc(n * sizeof(float) + 64);
    return (float *)(((uintptr_t)*block + 63) & ~(uintptr_t)63);
}

// One pass: the forward when dqkv is NULL, else the backward.
typedef struct {
    const AttnCore *core;
    float *out, *saved, *dqkv;
    const float *dout, *qkv;
    int B, T, C, NH, causal;
} Pass;

static void run(const Pass *p) {
    const int hs = p->C / p->NH, nt = split_threads();
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        void *work = p->core->alloc(p->T, hs);
#pragma omp for schedule(static)
        for (int bh = 0; bh < p->B * p->NH; bh++) {
            const int b = bh / p->NH, h = bh % p->NH;
            const long row = (long)b * p->T * p->C + h * hs, qkv_row = (long)b * p->T * 3 * p->C + h * hs;
            float *saved = p->saved + (long)bh * p->T;
            if (p->dqkv)
                p->core->backward(work, p->dqkv + qkv_row, p->dout + row, p->out + row, saved, p->qkv + qkv_row,
                                  p->C, p->causal);
            else
                p->core->forward(work, p->out + row, saved, p->qkv + qkv_row, p->C, p->causal);
        }
        p->core->release(work);
    }
}

void attn_heads_forward(const AttnCore *core, float *out, float *saved, const float *qkv, int B, int T, int C,
                        int NH, int causal) {
    run(&(Pass){.core = core, .out = out, .saved = saved, .qkv = qkv, .B = B, .T = T, .C = C, .NH = NH,
                .causal = causal});
}

// The backward pass only reads out and saved (Pass holds them as the forward writes them).
void attn_heads_backward(const AttnCore *core, float *dqkv, const float *dout, const float *out,
                         const float *saved, const float *qkv, int B, int T, int C, int NH, int causal) {
    run(&(Pass){.core = core, .out = (float *)out, .saved = (float *)saved, .dqkv = dqkv, .dout = dout,
                .qkv = qkv, .B = B, .T = T, .C = C, .NH = NH, .causal = causal});
}
