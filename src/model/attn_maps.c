// attn_maps.c: the attention probabilities of a forward pass, for the probes (model.h
// model_attention_map). Recomputed from the q and k the pass left in acts.blocks[l].qkv
// (row t of sequence b: q (C), k (C), v (C), head h at columns h·hs), so nothing here
// depends on how the attention kernels keep their own tiles.
#include <math.h>
#include <stdlib.h>

#include "model/model.h"

static float phi(float x) { return x > 0.0f ? x + 1.0f : expf(x); }

// Row t of head h: the scores s ↦ q_t·k_s (feature map applied for linear) into w[0..n).
static void scores(const Model *m, const float *qkv, int h, int t, int n, float *w) {
    const int C = m->C, hs = m->hs, lin = m->cfg.attention == ATTN_LINEAR;
    const float *q = qkv + (long)t * 3 * C + h * hs;
    for (int s = 0; s < n; s++) {
        const float *k = qkv + (long)s * 3 * C + C + h * hs;
        double dot = 0.0;
        for (int i = 0; i < hs; i++) dot += lin ? (double)phi(q[i]) * phi(k[i]) : (double)q[i] * k[i];
        w[s] = (float)dot;
    }
}

int model_attention_map(const Model *m, int l, int b, float *P) {
    if (m->cfg.attention == ATTN_GRASSMANN) return -1;
    const int T = m->T, lin = m->cfg.attention == ATTN_LINEAR;
    const float *qkv = m->acts.blocks[l].qkv + (long)b * T * 3 * m->C;
    const double scale = 1.0 / sqrt((double)m->hs);
    for (int h = 0; h < m->NH; h++)
        for (int t = 0; t < T; t++) {
            float *row = P + ((long)h * T + t) * T;
            const int n = m->causal ? t + 1 : T;
            scores(m, qkv, h, t, n, row);
            double sum = 0.0, top = -INFINITY;
            for (int s = 0; s < n; s++) top = fmax(top, row[s] * scale);
            for (int s = 0; s < n; s++) {
                double e = lin ? row[s] : exp(row[s] * scale - top);
                row[s] = (float)e;
                sum += e;
            }
            if (lin) sum += 1e-6;
            for (int s = 0; s < n; s++) row[s] = (float)(row[s] / sum);
            for (int s = n; s < T; s++) row[s] = 0.0f;
        }
    return 0;
}
