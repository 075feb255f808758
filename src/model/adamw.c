#include "model/adamw.h"

#include <math.h>

#include "model/targets.h"

KERNEL_TARGETS
void adamw_update(const Arena *params, const float *grads, float *m, float *v, long t, double lr,
                  double weight_decay) {
    const float b1 = (float)ADAM_BETA1, b2 = (float)ADAM_BETA2, eps = (float)ADAM_EPS;
    const float c1 = (float)(1.0 / (1.0 - pow(ADAM_BETA1, (double)t)));
    const float c2 = (float)(1.0 / (1.0 - pow(ADAM_BETA2, (double)t)));
    const float flr = (float)lr;
    for (int e = 0; e < params->n; e++) {
        const ArenaEntry *en = &params->entries[e];
        const float decay = (en->flags & ARENA_DECAY) ? (float)(lr * weight_decay) : 0.0f;
        float *p = params->mem + en->offset;
        const float *g = grads + en->offset;
        float *mm = m + en->offset, *vv = v + en->offset;
        for (size_t i = 0; i < en->count; i++) {
            mm[i] = b1 * mm[i] + (1.0f - b1) * g[i];
            vv[i] = b2 * vv[i] + (1.0f - b2) * g[i] * g[i];
            float mhat = mm[i] * c1, vhat = vv[i] * c2;
            p[i] -= flr * mhat / (sqrtf(vhat) + eps) + decay * p[i];
        }
    }
}

double lr_at(const TrialConfig *c, long step, long total_steps) {
    long warmup = (long)(c->warmup_frac * (double)total_steps + 0.5);
    if (step < warmup) return c->lr * (double)(step + 1) / (double)warmup;
    long span = total_steps - warmup;
    double progress = span > 1 ? (double)(step - warmup) / (double)(span - 1) : 1.0;
    double min_lr = c->lr * c->min_lr_ratio;
    return min_lr + 0.5 * (c->lr - min_lr) * (1.0 + cos(3.14159265358979323846 * progress));
}

KERNEL_TARGETS
double clip_grad_norm(float *g, size_t n, double max_norm) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)g[i] * g[i];
    double norm = sqrt(ss);
    if (max_norm > 0 && norm > max_norm) {
        float s = (float)(max_norm / norm);
        for (size_t i = 0; i < n; i++) g[i] *= s;
    }
    return norm;
}
