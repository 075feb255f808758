// adamw.h: AdamW over a parameter arena, the learning-rate schedule, gradient clipping.
#ifndef ATTN_ADAMW_H
#define ATTN_ADAMW_H

#include <stddef.h>

#include "common/arena.h"
#include "params/config.h"

#define ADAM_BETA1 0.9
#define ADAM_BETA2 0.999
#define ADAM_EPS 1e-8

// One AdamW step (t counts from 1): m, v and grads are laid out like params. Weight
// decay (decoupled, lr·wd·θ) applies to entries flagged ARENA_DECAY only.
void adamw_update(const Arena *params, const float *grads, float *m, float *v, long t, double lr,
                  double weight_decay);

// Linear warm-up over warmup_frac of the steps, then cosine decay from lr to
// lr·min_lr_ratio at the last step. step counts from 0.
double lr_at(const TrialConfig *c, long step, long total_steps);

// The global L2 norm of g (n floats); if it exceeds max_norm > 0, g is scaled down
// to max_norm. Returns the norm before clipping.
double clip_grad_norm(float *g, size_t n, double max_norm);

#endif
