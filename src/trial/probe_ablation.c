// probe_ablation.c: per-head ablation of a trained trial beside the invariants' view of its
// heads (probe.h).
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "circuits/circuits.h"
#include "common/util.h"
#include "trial/probe.h"

// Columns [c0, c1) of every row of W_O (C × C, row i = output feature i, column h·d_k + k
// reads feature k of head h) into saved, and zeroed.
static void zero_columns(float *proj_w, float *saved, int C, int c0, int c1) {
    for (int i = 0; i < C; i++) {
        memcpy(saved + (long)i * (c1 - c0), proj_w + (long)i * C + c0, (size_t)(c1 - c0) * sizeof(float));
        memset(proj_w + (long)i * C + c0, 0, (size_t)(c1 - c0) * sizeof(float));
    }
}

static void restore_columns(float *proj_w, const float *saved, int C, int c0, int c1) {
    for (int i = 0; i < C; i++)
        memcpy(proj_w + (long)i * C + c0, saved + (long)i * (c1 - c0), (size_t)(c1 - c0) * sizeof(float));
}

// The validation split as the clean noise pass (σ = 0) reads it, with columns [c0, c1) of
// layer l's W_O zeroed; W_O as it was after.
static void ablated_eval(Model *m, const Dataset *d, int l, int c0, int c1, float *saved, double *acc, double *loss) {
    float *proj_w = m->params.blocks[l].proj_w;
    zero_columns(proj_w, saved, m->C, c0, c1);
    probe_eval(m, d, 0.0, 0, acc, loss);
    restore_columns(proj_w, saved, m->C, c0, c1);
}

void probe_ablate_heads(Probe *p, Model *m, const Dataset *d) {
    if (m->cfg.attention == ATTN_GRASSMANN) return;
    const int L = m->L, H = m->NH, hs = m->hs;
    probe_eval(m, d, 0.0, 0, &p->clean_accuracy, &p->clean_loss);
    p->ablation_loss = xmalloc((size_t)L * H * sizeof(double));
    p->ablation_accuracy = xmalloc((size_t)L * H * sizeof(double));
    p->layer_loss = xmalloc((size_t)L * sizeof(double));
    p->layer_accuracy = xmalloc((size_t)L * sizeof(double));
    float *saved = xmalloc((size_t)m->C * H * hs * sizeof(float));
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++)
            ablated_eval(m, d, l, h * hs, (h + 1) * hs, saved, &p->ablation_accuracy[l * H + h],
                         &p->ablation_loss[l * H + h]);
        ablated_eval(m, d, l, 0, H * hs, saved, &p->layer_accuracy[l], &p->layer_loss[l]);
    }
    free(saved);
}

double probe_spearman(const double *x, const double *y, int n) {
    if (n < 2) return NAN;
    double *work = xmalloc((size_t)2 * n * sizeof(double));  // GSL ranks copies there, ties at their mean rank
    const double rho = gsl_stats_spearman(x, 1, y, 1, (size_t)n, work);
    free(work);
    return rho;
}

// Head h's redundancy from the head Gram G (H × H): max over g ≠ h of |G_gh| / √(G_gg G_hh),
// read from the upper triangle so that two heads nearest each other tie exactly; a head
// with a zero row (it computes nothing) is like none.
static double redundancy(const double *G, int H, int h) {
    double best = 0.0;
    for (int g = 0; g < H; g++) {
        const int i = g < h ? g : h, j = g < h ? h : g;
        const double norm = sqrt(G[i * H + i] * G[j * H + j]), cos = norm > 0 ? fabs(G[i * H + j]) / norm : 0.0;
        if (g != h && cos > best) best = cos;
    }
    return best;
}

void probe_redundancy(Probe *p, const TrialResult *r) {
    if (!p->ablation_loss) return;
    const int L = p->layers, H = p->heads;
    p->redundancy = xmalloc((size_t)L * H * sizeof(double));
    p->spearman = xmalloc((size_t)(L + 1) * sizeof(double));
    double *G = xmalloc((size_t)H * H * sizeof(double)), *delta = xmalloc((size_t)L * H * sizeof(double));
    if (r->dims[0] != H || r->dims[3] != 3)
        die(EXIT_BADINPUT, "probe: trial %d's stored weights have %d heads of %d roles (its model has %d of 3)", r->id,
            r->dims[0], r->dims[3], H);
    for (int l = 0; l < L; l++) {
        const LayerWeights w = trial_layer_weights(r, l);
        Circuits c;
        circuits_init(&c, w.qkv, w.out, w.dims[0], w.dims[1], w.dims[2]);
        circuits_weight_by_writes(&c, NULL);  // the scorer's head Gram (score_circuits), heads kept apart: each is removed alone
        circuits_head_gram(G, &c);
        circuits_free(&c);
        for (int h = 0; h < H; h++) {
            p->redundancy[l * H + h] = redundancy(G, H, h);
            delta[l * H + h] = p->ablation_loss[l * H + h] - p->clean_loss;
        }
        p->spearman[l] = probe_spearman(p->redundancy + l * H, delta + l * H, H);
    }
    p->spearman[L] = probe_spearman(p->redundancy, delta, L * H);
    free(G);
    free(delta);
}
