#include "model/adamw.h"

#include <math.h>
#include <omp.h>

#include "model/targets.h"
#include "model/threads.h"

// The arena's floats [lo, hi): entry by entry, the part of each that falls in the range.
KERNEL_TARGETS
static void update_span(const Arena *params, const float *restrict grads, float *restrict m, float *restrict v,
                        float c1, float c2, float flr, double lr, double weight_decay, size_t lo, size_t hi) {
    const float b1 = (float)ADAM_BETA1, b2 = (float)ADAM_BETA2, eps = (float)ADAM_EPS;
    for (int e = 0; e < params->n; e++) {
        const ArenaEntry *en = &params->entries[e];
        const size_t a = en->offset > lo ? en->offset : lo, b = en->offset + en->count < hi ? en->offset + en->count : hi;
        if (a >= b) continue;
        const float decay = (en->flags & ARENA_DECAY) ? (float)(lr * weight_decay) : 0.0f;
        float *restrict p = params->mem;
        for (size_t i = a; i < b; i++) {
            m[i] = b1 * m[i] + (1.0f - b1) * grads[i];
            v[i] = b2 * v[i] + (1.0f - b2) * grads[i] * grads[i];
            float mhat = m[i] * c1, vhat = v[i] * c2;
            p[i] -= flr * mhat / (sqrtf(vhat) + eps) + decay * p[i];
        }
    }
}

void adamw_update(const Arena *params, const float *grads, float *m, float *v, long t, double lr,
                  double weight_decay) {
    const float c1 = (float)(1.0 / (1.0 - pow(ADAM_BETA1, (double)t)));
    const float c2 = (float)(1.0 / (1.0 - pow(ADAM_BETA2, (double)t)));
    const int nt = split_threads();
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        long lo, hi;
        thread_span((long)params->total, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        update_span(params, grads, m, v, c1, c2, (float)lr, lr, weight_decay, (size_t)lo, (size_t)hi);
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
static double sum_squares(const float *restrict g, size_t lo, size_t hi) {
    double ss = 0.0;
#pragma omp simd reduction(+ : ss)
    for (size_t i = lo; i < hi; i++) ss += (double)g[i] * g[i];
    return ss;
}

KERNEL_TARGETS
static void scale_span(float *restrict g, float s, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) g[i] *= s;
}

double clip_grad_norm(float *g, size_t n, double max_norm) {
    const int nt = split_threads();
    double part[MAX_KERNEL_THREADS] = {0};  // per thread, added in thread order
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int t = omp_get_thread_num();
        long lo, hi;
        thread_span((long)n, t, omp_get_num_threads(), &lo, &hi);
        part[t] = sum_squares(g, (size_t)lo, (size_t)hi);
    }
    double ss = 0.0;
    for (int t = 0; t < nt; t++) ss += part[t];
    const double norm = sqrt(ss);
    if (max_norm > 0 && norm > max_norm) {
        const float s = (float)(max_norm / norm);
#pragma omp parallel num_threads(nt) if (nt > 1)
        {
            long lo, hi;
            thread_span((long)n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
            scale_span(g, s, (size_t)lo, (size_t)hi);
        }
    }
    return norm;
}
