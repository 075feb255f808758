#include "model/model.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "circuits/circuits.h"
#include "common/util.h"
#include "model/attention.h"
#include "model/layers.h"
#include "model/matmul.h"
#include "model/threads.h"

// ---------------------------------------------------------------------------------
// Layout: one function per arena kind, run on every arena of that kind, so the
// parameter and gradient arenas (and the activation and activation-gradient arenas)
// have identical offsets.

static void layout_params(Arena *a, Params *p, const Model *m) {
    const int C = m->C, F = m->F, K = m->K, T = m->T;
    const long CC = (long)C * C;
    if (m->encoder) {
        arena_reserve(a, &p->patch_w, (size_t)C * PATCH_DIM, "patch_w", ARENA_DECAY);
        arena_reserve(a, &p->patch_b, C, "patch_b", 0);
        arena_reserve(a, &p->cls, C, "cls", 0);
    } else {
        arena_reserve(a, &p->wte, (size_t)m->V * C, "wte", ARENA_DECAY);
    }
    arena_reserve(a, &p->wpe, (size_t)T * C, "wpe", 0);
    for (int l = 0; l < m->L; l++) {
        BlockParams *b = &p->blocks[l];
        arena_reserve(a, &b->ln1_w, C, "ln1_w", 0);
        arena_reserve(a, &b->ln1_b, C, "ln1_b", 0);
        switch (m->cfg.attention) {
        case ATTN_GRASSMANN: {
            int r = m->r, M = grassmann_pairs(m->r);
            arena_reserve(a, &b->gm.red_w, (size_t)r * C, "red_w", ARENA_DECAY);
            arena_reserve(a, &b->gm.red_b, r, "red_b", 0);
            arena_reserve(a, &b->gm.plu_w, (size_t)C * M, "plu_w", ARENA_DECAY);
            arena_reserve(a, &b->gm.plu_b, C, "plu_b", 0);
            arena_reserve(a, &b->gm.gate_w, 2 * CC, "gate_w", ARENA_DECAY);
            arena_reserve(a, &b->gm.gate_b, C, "gate_b", 0);
            break;
        }
        case ATTN_TUCKER:
            arena_reserve(a, &b->core, (size_t)3 * m->R * m->hs * C, "core", ARENA_DECAY);
            arena_reserve(a, &b->factor, (size_t)m->NH * m->R, "factor", ARENA_DECAY);
            break;
        default:
            arena_reserve(a, &b->qkv_w, 3 * CC, "qkv_w", ARENA_DECAY);
        }
        if (m->cfg.attention != ATTN_GRASSMANN) {
            arena_reserve(a, &b->qkv_b, 3 * C, "qkv_b", 0);
            arena_reserve(a, &b->proj_w, CC, "proj_w", ARENA_DECAY);
            arena_reserve(a, &b->proj_b, C, "proj_b", 0);
        }
        arena_reserve(a, &b->ln2_w, C, "ln2_w", 0);
        arena_reserve(a, &b->ln2_b, C, "ln2_b", 0);
        arena_reserve(a, &b->fc_w, (size_t)F * C, "fc_w", ARENA_DECAY);
        arena_reserve(a, &b->fc_b, F, "fc_b", 0);
        arena_reserve(a, &b->fcproj_w, (size_t)C * F, "fcproj_w", ARENA_DECAY);
        arena_reserve(a, &b->fcproj_b, C, "fcproj_b", 0);
    }
    arena_reserve(a, &p->lnf_w, C, "lnf_w", 0);
    arena_reserve(a, &p->lnf_b, C, "lnf_b", 0);
    arena_reserve(a, &p->head_w, (size_t)K * C, "head_w", ARENA_DECAY);
    arena_reserve(a, &p->head_b, K, "head_b", 0);
}

// The activation arena (grads = 0) holds what the forward pass computes and the backward
// pass reads. The activation-gradient arena (grads = 1) holds the gradients the backward
// pass computes and consumes, each written before it is read, so nothing in it is zeroed
// per step: x0 is the gradient of the residual stream, updated in place from the top
// block down to the embeddings, and the blocks' res1, res2 and fch_gelu have no gradient
// buffer of their own (fch's holds fch_gelu's gradient, then its own).
static void layout_acts(Arena *a, Acts *x, const Model *m, int grads) {
    const size_t B = m->B, T = m->T, C = m->C, BT = B * T, F = m->F;
    if (m->encoder) {
        if (!grads) arena_reserve(a, &x->patches, B * N_PATCHES * PATCH_DIM, "patches", 0);
        arena_reserve(a, &x->pemb, B * N_PATCHES * C, "pemb", 0);
        arena_reserve(a, &x->headin, B * C, "headin", 0);
    }
    arena_reserve(a, &x->x0, BT * C, "x0", 0);
    for (int l = 0; l < m->L; l++) {
        BlockActs *b = &x->blocks[l];
        arena_reserve(a, &b->ln1, BT * C, "ln1", 0);
        if (!grads) {
            arena_reserve(a, &b->ln1_mean, BT, "ln1_mean", 0);
            arena_reserve(a, &b->ln1_rstd, BT, "ln1_rstd", 0);
        }
        if (m->cfg.attention == ATTN_GRASSMANN) {
            size_t r = m->r, M = grassmann_pairs(m->r);
            arena_reserve(a, &b->gm.z, BT * r, "gm_z", 0);
            arena_reserve(a, &b->gm.pbar, BT * M, "gm_pbar", 0);
            arena_reserve(a, &b->gm.g, BT * C, "gm_g", 0);
            arena_reserve(a, &b->gm.alpha, BT * C, "gm_alpha", 0);
            arena_reserve(a, &b->gm.gate_in, BT * 2 * C, "gm_gate_in", 0);
        } else {
            if (m->cfg.attention == ATTN_TUCKER) arena_reserve(a, &b->wqkv, 3 * C * C, "wqkv", 0);
            arena_reserve(a, &b->qkv, BT * 3 * C, "qkv", 0);
            if (!grads) arena_reserve(a, &b->att, attn_saved_floats(m->B, m->T, m->NH), "att", 0);
            arena_reserve(a, &b->atty, BT * C, "atty", 0);
        }
        if (!grads) arena_reserve(a, &b->res1, BT * C, "res1", 0);
        arena_reserve(a, &b->ln2, BT * C, "ln2", 0);
        if (!grads) {
            arena_reserve(a, &b->ln2_mean, BT, "ln2_mean", 0);
            arena_reserve(a, &b->ln2_rstd, BT, "ln2_rstd", 0);
        }
        arena_reserve(a, &b->fch, BT * F, "fch", 0);
        if (!grads) {
            arena_reserve(a, &b->fch_gelu, BT * F, "fch_gelu", 0);
            arena_reserve(a, &b->res2, BT * C, "res2", 0);
        }
    }
    arena_reserve(a, &x->lnf, BT * C, "lnf", 0);
    arena_reserve(a, &x->logits, (size_t)m->NP * m->K, "logits", 0);
    if (!grads) {
        arena_reserve(a, &x->lnf_mean, BT, "lnf_mean", 0);
        arena_reserve(a, &x->lnf_rstd, BT, "lnf_rstd", 0);
        arena_reserve(a, &x->probs, (size_t)m->NP * m->K, "probs", 0);
    }
}

// ---------------------------------------------------------------------------------
// Initialisation

static void fill_uniform(float *w, size_t n, double bound, gsl_rng *rng) {
    for (size_t i = 0; i < n; i++) w[i] = (float)((2.0 * gsl_rng_uniform(rng) - 1.0) * bound);
}

static void fill_normal(float *w, size_t n, double std, gsl_rng *rng) {
    for (size_t i = 0; i < n; i++) w[i] = (float)gsl_ran_gaussian(rng, std);
}

static void fill_const(float *w, size_t n, float v) {
    for (size_t i = 0; i < n; i++) w[i] = v;
}

// A linear layer with fan_in inputs: weight and bias U(±1/√fan_in), as PyTorch does.
static void init_linear(float *w, size_t nw, float *b, size_t nb, int fan_in, gsl_rng *rng) {
    double bound = 1.0 / sqrt((double)fan_in);
    fill_uniform(w, nw, bound, rng);
    if (b) fill_uniform(b, nb, bound, rng);
}

static void init_params(Model *m, gsl_rng *rng) {
    Params *p = &m->params;
    const int C = m->C, F = m->F, K = m->K;
    const size_t CC = (size_t)C * C;
    if (m->encoder) {
        init_linear(p->patch_w, (size_t)C * PATCH_DIM, p->patch_b, C, PATCH_DIM, rng);
        fill_normal(p->cls, C, 0.02, rng);
    } else {
        fill_normal(p->wte, (size_t)m->V * C, 0.02, rng);
    }
    fill_normal(p->wpe, (size_t)m->T * C, 0.02, rng);
    for (int l = 0; l < m->L; l++) {
        BlockParams *b = &p->blocks[l];
        fill_const(b->ln1_w, C, 1.0f);
        switch (m->cfg.attention) {
        case ATTN_GRASSMANN: {
            int M = grassmann_pairs(m->r);
            init_linear(b->gm.red_w, (size_t)m->r * C, b->gm.red_b, m->r, C, rng);
            init_linear(b->gm.plu_w, (size_t)C * M, b->gm.plu_b, C, M, rng);
            init_linear(b->gm.gate_w, 2 * CC, b->gm.gate_b, C, 2 * C, rng);
            break;
        }
        case ATTN_TUCKER:
            // W = G ×₁ U has the variance of G when U ~ N(0, 1/R): same scale as mha.
            fill_uniform(b->core, (size_t)3 * m->R * m->hs * C, 1.0 / sqrt((double)C), rng);
            fill_normal(b->factor, (size_t)m->NH * m->R, 1.0 / sqrt((double)m->R), rng);
            fill_uniform(b->qkv_b, 3 * (size_t)C, 1.0 / sqrt((double)C), rng);
            break;
        default:
            init_linear(b->qkv_w, 3 * CC, b->qkv_b, 3 * (size_t)C, C, rng);
        }
        if (m->cfg.attention != ATTN_GRASSMANN) init_linear(b->proj_w, CC, b->proj_b, C, C, rng);
        fill_const(b->ln2_w, C, 1.0f);
        init_linear(b->fc_w, (size_t)F * C, b->fc_b, F, C, rng);
        init_linear(b->fcproj_w, (size_t)C * F, b->fcproj_b, C, F, rng);
    }
    fill_const(p->lnf_w, C, 1.0f);
    init_linear(p->head_w, (size_t)K * C, p->head_b, K, C, rng);
}

// The shapes of a model of cfg for batches of B (nothing allocated).
static void set_shapes(Model *m, const TrialConfig *cfg, const DatasetInfo *info, int B) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->encoder = info->kind == TASK_FASHION_MNIST;
    m->causal = !m->encoder;
    m->B = B;
    m->T = m->encoder ? N_PATCHES + 1 : info->seq_len;
    m->C = cfg->d_model;
    m->NH = cfg->heads;
    m->hs = m->C / m->NH;
    m->L = cfg->layers;
    m->F = cfg->mlp_ratio * m->C;
    m->K = info->n_classes;
    m->V = info->vocab;
    m->R = cfg->core_rank;
    m->r = cfg->grassmann_rank;
    m->NP = m->encoder ? B : B * m->T;
    if (cfg->attention == ATTN_GRASSMANN) {
        m->dims[0] = m->r, m->dims[1] = 1, m->dims[2] = m->C, m->dims[3] = 1;
        m->out_dims[0] = m->C, m->out_dims[1] = grassmann_pairs(m->r);
    } else {
        m->dims[0] = m->NH, m->dims[1] = m->hs, m->dims[2] = m->C, m->dims[3] = 3;
        m->out_dims[0] = m->C, m->out_dims[1] = m->C;
    }
    memcpy(m->scored_dims, m->dims, sizeof m->dims);
    memcpy(m->scored_out_dims, m->out_dims, sizeof m->out_dims);
    if (cfg->attention != ATTN_GRASSMANN) m->scored_dims[2] = m->scored_out_dims[0] = m->C + 1;
}

size_t model_bytes(const TrialConfig *cfg, const DatasetInfo *info, int B, int lanes) {
    Model m;
    set_shapes(&m, cfg, info, B);
    BlockParams *pb = m.params.blocks = xcalloc(m.L, sizeof(BlockParams));
    BlockActs *ab = m.acts.blocks = xcalloc(m.L, sizeof(BlockActs));
    layout_params(&m.params_arena, &m.params, &m);  // the sizes only: nothing is committed
    layout_acts(&m.acts_arena, &m.acts, &m, 0);
    layout_acts(&m.dacts_arena, &m.acts, &m, 1);
    // parameters and AdamW's two moments; per lane, gradients, activations and theirs
    const size_t floats = 3 * m.params_arena.total +
                          (size_t)lanes * (m.params_arena.total + m.acts_arena.total + m.dacts_arena.total);
    arena_free(&m.params_arena);
    arena_free(&m.acts_arena);
    arena_free(&m.dacts_arena);
    free(pb);
    free(ab);
    return floats * sizeof(float);
}

// What a pass computes: the parameters' gradients, the activations and their gradients
// (their arenas, laid out for m's shapes). Returns 0, or -1 when the memory is not there.
static int passes_init(Model *m) {
    m->grads.blocks = xcalloc(m->L, sizeof(BlockParams));
    m->acts.blocks = xcalloc(m->L, sizeof(BlockActs));
    m->dacts.blocks = xcalloc(m->L, sizeof(BlockActs));
    layout_params(&m->grads_arena, &m->grads, m);
    layout_acts(&m->acts_arena, &m->acts, m, 0);
    layout_acts(&m->dacts_arena, &m->dacts, m, 1);
    return arena_commit(&m->grads_arena) || arena_commit(&m->acts_arena) || arena_commit(&m->dacts_arena) ? -1 : 0;
}

static void passes_free(Model *m) {
    arena_free(&m->grads_arena);
    arena_free(&m->acts_arena);
    arena_free(&m->dacts_arena);
    free(m->grads.blocks);
    free(m->acts.blocks);
    free(m->dacts.blocks);
}

int model_init(Model *m, const TrialConfig *cfg, const DatasetInfo *info, int B) {
    set_shapes(m, cfg, info, B);
    m->params.blocks = xcalloc(m->L, sizeof(BlockParams));
    layout_params(&m->params_arena, &m->params, m);
    m->adam_m = calloc(m->params_arena.total, sizeof(float));
    m->adam_v = calloc(m->params_arena.total, sizeof(float));
    if (arena_commit(&m->params_arena) || passes_init(m) || !m->adam_m || !m->adam_v) {
        model_free(m);
        return -1;
    }
    m->n_params = (long)arena_used(&m->params_arena);

    size_t n4 = (size_t)m->dims[0] * m->dims[1] * m->dims[2] * m->dims[3];
    m->w4 = xmalloc(n4 * sizeof(float));
    m->dw4 = xmalloc(n4 * sizeof(float));
    if (cfg->lambda_orth > 0 || cfg->lambda_stability > 0)
        function_heads_init(&m->heads, cfg->attention == ATTN_GRASSMANN, m->dims[0], m->dims[1], m->dims[2]);
    m->stability = xcalloc(m->L, sizeof(StabilityHistory));
    if (cfg->lambda_stability > 0)
        for (int l = 0; l < m->L; l++) stability_init(&m->stability[l], m->heads.G, cfg->stability_window);

    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)cfg->seed);
    init_params(m, rng);
    gsl_rng_free(rng);
    return 0;
}

int model_lane_init(Model *lane, const Model *m) {
    *lane = *m;  // the configuration, the shapes and the parameters (read only)
    lane->params_arena = lane->grads_arena = lane->acts_arena = lane->dacts_arena = (Arena){0};
    lane->adam_m = lane->adam_v = lane->w4 = lane->dw4 = NULL;  // the step's own, m's alone
    lane->heads = (FunctionHeads){0};
    lane->stability = NULL;
    if (passes_init(lane)) {
        passes_free(lane);
        return -1;
    }
    return 0;
}

void model_lane_free(Model *lane) {
    passes_free(lane);
    memset(lane, 0, sizeof *lane);
}

// y += x (n floats).
static void accumulate(float *y, const float *x, long n) {
    for (long i = 0; i < n; i++) y[i] += x[i];
}

void model_lane_add_grads(Model *m, const Model *lane, int t, int nt) {
    long lo, hi;
    thread_span((long)m->grads_arena.total, t, nt, &lo, &hi);
    accumulate(m->grads_arena.mem + lo, lane->grads_arena.mem + lo, hi - lo);
    if (m->cfg.attention != ATTN_TUCKER) return;
    thread_span(3L * m->C * m->C, t, nt, &lo, &hi);
    for (int l = 0; l < m->L; l++) accumulate(m->dacts.blocks[l].wqkv + lo, lane->dacts.blocks[l].wqkv + lo, hi - lo);
}

void model_free(Model *m) {
    arena_free(&m->params_arena);
    passes_free(m);
    free(m->params.blocks);
    free(m->adam_m);
    free(m->adam_v);
    free(m->w4);
    free(m->dw4);
    function_heads_free(&m->heads);
    if (m->stability && m->cfg.lambda_stability > 0)
        for (int l = 0; l < m->L; l++) stability_free(&m->stability[l]);
    free(m->stability);
    memset(m, 0, sizeof *m);
}

// ---------------------------------------------------------------------------------
// Forward

// The QKV weight the block uses: the parameter itself, or tucker's generated one.
static const float *qkv_weight(const Model *m, int l) {
    return m->cfg.attention == ATTN_TUCKER ? m->acts.blocks[l].wqkv : m->params.blocks[l].qkv_w;
}

// The per-token sublayers (LayerNorms, dense layers, GELU) of a pass over more rows than
// this run over slices of SLICE_ROWS rows, each slice through all of a block's kernels
// before the next, so that a slice's tensors stay in the L2 from one kernel to the next
// (a micro-batch holds one whole sequence from L = 512 on: 1 MB per 64-wide tensor at
// L = 4096); the attention core and the Grassmann mixer take the whole sequence. The
// forward pass's numbers do not depend on the slicing (every row is computed as in one
// pass); the weights' gradients are summed slice by slice.
enum { SLICE_ROWS = 512 };

// The rows of the slice from row lo of N (lo a multiple of SLICE_ROWS).
static int slice_rows(int N, int lo) { return N - lo < SLICE_ROWS ? N - lo : SLICE_ROWS; }

// The attention sublayer's core over the whole sequence: atty from qkv, or the Grassmann
// mixer's output (without its bias) into res1 from ln1.
static void mixer_forward(Model *m, int l) {
    const BlockParams *p = &m->params.blocks[l];
    BlockActs *a = &m->acts.blocks[l];
    const int B = m->B, T = m->T, C = m->C;
    switch (m->cfg.attention) {
    case ATTN_GRASSMANN: {
        int n_off;
        const int *off = config_layer_offsets(&m->cfg, l, &n_off);
        grassmann_forward(a->res1, a->gm, a->ln1, p->gm, B, T, C, m->r, off, n_off, m->causal);
        break;
    }
    case ATTN_LINEAR: attn_linear_forward(a->atty, a->att, a->qkv, B, T, C, m->NH, m->causal); break;
    default: attn_softmax_forward(a->atty, a->att, a->qkv, B, T, C, m->NH, m->causal); break;
    }
}

// The bias of a block's sublayers, which the LayerNorm after each adds with the residual.
static const float *attention_bias(const Model *m, int l) {
    return m->cfg.attention == ATTN_GRASSMANN ? NULL : m->params.blocks[l].proj_b;
}

// x is the block's input, the residual stream, still to be completed by x += add + add_bias
// (the block before's MLP output and its bias; add = NULL for the first block). Leaves
// res2 = the MLP's output without its bias, which the next LayerNorm completes likewise.
static void block_forward(Model *m, int l, float *x, const float *add, const float *add_bias) {
    const BlockParams *p = &m->params.blocks[l];
    BlockActs *a = &m->acts.blocks[l];
    const int BT = m->B * m->T, C = m->C, F = m->F, grassmann = m->cfg.attention == ATTN_GRASSMANN;
    if (m->cfg.attention == ATTN_TUCKER) tucker_generate_forward(a->wqkv, p->core, p->factor, m->NH, m->R, m->hs, C);
    for (int lo = 0; lo < BT; lo += SLICE_ROWS) {
        const int n = slice_rows(BT, lo);
        const long o = (long)lo * C;
        layernorm_forward(a->ln1 + o, a->ln1_mean + lo, a->ln1_rstd + lo, x + o, add ? add + o : NULL, add_bias,
                          p->ln1_w, p->ln1_b, n, C);
        if (!grassmann) matmul_forward(a->qkv + 3 * o, a->ln1 + o, qkv_weight(m, l), p->qkv_b, n, C, 3 * C);
    }
    mixer_forward(m, l);
    for (int lo = 0; lo < BT; lo += SLICE_ROWS) {
        const int n = slice_rows(BT, lo);
        const long o = (long)lo * C, of = (long)lo * F;
        if (!grassmann) matmul_forward(a->res1 + o, a->atty + o, p->proj_w, NULL, n, C, C);
        layernorm_forward(a->ln2 + o, a->ln2_mean + lo, a->ln2_rstd + lo, a->res1 + o, x + o, attention_bias(m, l),
                          p->ln2_w, p->ln2_b, n, C);
        matmul_forward(a->fch + of, a->ln2 + o, p->fc_w, NULL, n, C, F);
        gelu_forward(a->fch_gelu + of, a->fch + of, p->fc_b, n, F);
        matmul_forward(a->res2 + o, a->fch_gelu + of, p->fcproj_w, NULL, n, F, C);
    }
}

// The paper's block (grassmann_block: paper), post-LN with the mixer's gate as the only
// path around the mixer: res1 = mix(x), ln1 = u = LN₁(res1), res2 = u + FFN(u) (the
// MLP's output completed in place by LN₂), ln2 = y = LN₂(res2), the block's output. x is
// complete (the embeddings or the block before's ln2).
static void paper_block_forward(Model *m, int l, const float *x) {
    const BlockParams *p = &m->params.blocks[l];
    BlockActs *a = &m->acts.blocks[l];
    const int B = m->B, T = m->T, BT = B * T, C = m->C, F = m->F;
    int n_off;
    const int *off = config_layer_offsets(&m->cfg, l, &n_off);
    grassmann_forward(a->res1, a->gm, x, p->gm, B, T, C, m->r, off, n_off, m->causal);
    layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, a->res1, NULL, NULL, p->ln1_w, p->ln1_b, BT, C);
    matmul_forward(a->fch, a->ln1, p->fc_w, NULL, BT, C, F);
    gelu_forward(a->fch_gelu, a->fch, p->fc_b, BT, F);
    matmul_forward(a->res2, a->fch_gelu, p->fcproj_w, NULL, BT, F, C);
    layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, a->ln1, p->fcproj_b, p->ln2_w, p->ln2_b, BT, C);
}

static int paper_block(const Model *m) {
    return m->cfg.attention == ATTN_GRASSMANN && m->cfg.grassmann_block == GRASSMANN_PAPER;
}

// Block l's output as the next layer reads it: complete (the paper's block: its ln2), or
// x += add + add_bias still to be done by the next LayerNorm (pre-LN: res2, res1, the
// MLP's bias). Block −1 is the embeddings.
static float *block_output(const Model *m, int l, const float **add, const float **add_bias) {
    *add = *add_bias = NULL;
    if (l < 0) return m->acts.x0;
    if (paper_block(m)) return m->acts.blocks[l].ln2;
    *add = m->acts.blocks[l].res1, *add_bias = m->params.blocks[l].fcproj_b;
    return m->acts.blocks[l].res2;
}

// The rows the head reads: every position (decoder) or the [CLS] rows (encoder).
static const float *head_input(Model *m) {
    if (!m->encoder) return m->acts.lnf;
    for (int b = 0; b < m->B; b++)
        memcpy(m->acts.headin + (long)b * m->C, m->acts.lnf + (long)b * m->T * m->C, m->C * sizeof(float));
    return m->acts.headin;
}

double model_forward(Model *m, const Batch *batch, long *count, long *correct) {
    return model_forward_perturbed(m, batch, NULL, NULL, count, correct);
}

double model_forward_perturbed(Model *m, const Batch *batch, EmbedPerturb perturb, void *ctx, long *count,
                               long *correct) {
    const Params *p = &m->params;
    Acts *a = &m->acts;
    const int B = m->B, T = m->T, C = m->C;
    if (m->encoder)
        patch_embed_forward(a->x0, a->patches, a->pemb, batch->images, p->patch_w, p->patch_b, p->cls,
                            p->wpe, B, C);
    else
        token_embed_forward(a->x0, batch->tokens, p->wte, p->wpe, B, T, C);
    if (perturb) perturb(ctx, a->x0, (long)batch->rows * T * C);
    const float *add, *add_bias;
    float *x = block_output(m, -1, &add, &add_bias);
    for (int l = 0; l < m->L; l++) {
        if (paper_block(m))
            paper_block_forward(m, l, x);
        else
            block_forward(m, l, x, add, add_bias);
        x = block_output(m, l, &add, &add_bias);
    }
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, x, add, add_bias, p->lnf_w, p->lnf_b, B * T, C);
    matmul_forward(a->logits, head_input(m), p->head_w, p->head_b, m->NP, C, m->K);
    return crossentropy_forward(a->probs, a->logits, batch->targets, m->NP, m->K, count, correct);
}

// ---------------------------------------------------------------------------------
// Backward

// A dense layer's backward pass that writes its input's gradient (dinp = dout · W, so the
// activation gradients need no zeroing) and adds the weight's and the bias's.
static void dense_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                           const float *weight, int N, int C, int OC) {
    gemm(0, 0, N, C, OC, 1.0f, dout, OC, weight, C, 0.0f, dinp, C);
    matmul_backward(NULL, dweight, dbias, dout, inp, weight, N, C, OC);
}

// The attention sublayer's core over the whole sequence, backward: d->qkv from d->atty,
// or the Grassmann mixer's input gradient d->ln1 from dout (the sublayer's output
// gradient, the residual stream's).
static void mixer_backward(Model *m, int l, const float *dout) {
    const BlockParams *p = &m->params.blocks[l];
    BlockParams *g = &m->grads.blocks[l];
    const BlockActs *a = &m->acts.blocks[l];
    BlockActs *d = &m->dacts.blocks[l];
    const int B = m->B, T = m->T, C = m->C, BT = B * T;
    switch (m->cfg.attention) {
    case ATTN_GRASSMANN: {
        int n_off;
        const int *off = config_layer_offsets(&m->cfg, l, &n_off);
        memset(d->ln1, 0, (size_t)BT * C * sizeof(float));  // grassmann_backward adds into it
        grassmann_backward(d->ln1, g->gm, d->gm, dout, a->ln1, a->gm, p->gm, B, T, C, m->r, off, n_off, m->causal);
        break;
    }
    case ATTN_LINEAR:
        attn_linear_backward(d->qkv, d->atty, a->atty, a->att, a->qkv, B, T, C, m->NH, m->causal);
        break;
    default: attn_softmax_backward(d->qkv, d->atty, a->atty, a->att, a->qkv, B, T, C, m->NH, m->causal); break;
    }
}

// x is the block's input; the stream's gradient m->dacts.x0 holds that of the block's
// output on entry and that of x on exit. Sliced as the forward pass (SLICE_ROWS).
static void block_backward(Model *m, int l, const float *x) {
    const BlockParams *p = &m->params.blocks[l];
    BlockParams *g = &m->grads.blocks[l];
    const BlockActs *a = &m->acts.blocks[l];
    BlockActs *d = &m->dacts.blocks[l];
    const int BT = m->B * m->T, C = m->C, F = m->F, grassmann = m->cfg.attention == ATTN_GRASSMANN;
    float *ds = m->dacts.x0;
    for (int lo = 0; lo < BT; lo += SLICE_ROWS) {
        const int n = slice_rows(BT, lo);
        const long o = (long)lo * C, of = (long)lo * F;
        // res2 = res1 + fcproj(gelu(fc(ln2))): ds is fcproj's output gradient as it stands.
        dense_backward(d->fch + of, g->fcproj_w, g->fcproj_b, ds + o, a->fch_gelu + of, p->fcproj_w, n, F, C);
        gelu_backward(d->fch + of, g->fc_b, a->fch + of, n, F);
        dense_backward(d->ln2 + o, g->fc_w, NULL, d->fch + of, a->ln2 + o, p->fc_w, n, C, F);
        layernorm_backward(ds + o, g->ln2_w, g->ln2_b, d->ln2 + o, a->res1 + o, p->ln2_w, a->ln2_mean + lo,
                           a->ln2_rstd + lo, n, C);
        // res1 = x + attention(ln1): ds is now res1's gradient, the attention output's too.
        if (!grassmann) dense_backward(d->atty + o, g->proj_w, g->proj_b, ds + o, a->atty + o, p->proj_w, n, C, C);
    }
    mixer_backward(m, l, ds);
    // tucker: the weight gradient goes to the generated weight (zeroed with the gradients;
    // the regularisers add theirs to it and the generator's backward runs once a step, in
    // model_backward_finish).
    float *dw = m->cfg.attention == ATTN_TUCKER ? d->wqkv : g->qkv_w;
    for (int lo = 0; lo < BT; lo += SLICE_ROWS) {
        const int n = slice_rows(BT, lo);
        const long o = (long)lo * C;
        if (!grassmann) dense_backward(d->ln1 + o, dw, g->qkv_b, d->qkv + 3 * o, a->ln1 + o, qkv_weight(m, l), n, C, 3 * C);
        layernorm_backward(ds + o, g->ln1_w, g->ln1_b, d->ln1 + o, x + o, p->ln1_w, a->ln1_mean + lo, a->ln1_rstd + lo,
                           n, C);
    }
}

// The paper's block backward: x is its input; the stream's gradient m->dacts.x0 holds
// that of the block's output y on entry and that of x on exit (x reaches y through the
// mixer only). d->ln2 holds res2's gradient, then res1's; d->ln1 u's.
static void paper_block_backward(Model *m, int l, const float *x) {
    const BlockParams *p = &m->params.blocks[l];
    BlockParams *g = &m->grads.blocks[l];
    const BlockActs *a = &m->acts.blocks[l];
    BlockActs *d = &m->dacts.blocks[l];
    const int B = m->B, T = m->T, BT = B * T, C = m->C, F = m->F;
    const size_t n = (size_t)BT * C;
    float *ds = m->dacts.x0;
    memset(d->ln2, 0, n * sizeof(float));  // layernorm_backward adds into it
    layernorm_backward(d->ln2, g->ln2_w, g->ln2_b, ds, a->res2, p->ln2_w, a->ln2_mean, a->ln2_rstd, BT, C);
    // res2 = u + fcproj(gelu(fc(u))) + its bias
    dense_backward(d->fch, g->fcproj_w, g->fcproj_b, d->ln2, a->fch_gelu, p->fcproj_w, BT, F, C);
    gelu_backward(d->fch, g->fc_b, a->fch, BT, F);
    dense_backward(d->ln1, g->fc_w, NULL, d->fch, a->ln1, p->fc_w, BT, C, F);
    accumulate(d->ln1, d->ln2, (long)n);
    memset(d->ln2, 0, n * sizeof(float));
    layernorm_backward(d->ln2, g->ln1_w, g->ln1_b, d->ln1, a->res1, p->ln1_w, a->ln1_mean, a->ln1_rstd, BT, C);
    int n_off;
    const int *off = config_layer_offsets(&m->cfg, l, &n_off);
    memset(ds, 0, n * sizeof(float));  // grassmann_backward adds into it
    grassmann_backward(ds, g->gm, d->gm, d->ln2, x, a->gm, p->gm, B, T, C, m->r, off, n_off, m->causal);
}

// Where layer l's attention-tensor gradient goes: the QKV weight gradient (mha, linear),
// the generated weight's gradient (tucker), or the reduction's gradient (grassmann).
static void attention_add_grad(Model *m, int l, const float *dW) {
    const int C = m->C;
    if (m->cfg.attention == ATTN_GRASSMANN) {
        accumulate(m->grads.blocks[l].gm.red_w, dW, (long)m->r * C);
        return;
    }
    float *dw = m->cfg.attention == ATTN_TUCKER ? m->dacts.blocks[l].wqkv : m->grads.blocks[l].qkv_w;
    for (int rho = 0; rho < 3; rho++)
        for (int i = 0; i < C; i++)  // i = h·hs + k
            for (int j = 0; j < C; j++) dw[((long)rho * C + i) * C + j] += dW[((long)i * C + j) * 3 + rho];
}

void model_export_attention(Model *m, int l, float *W) {
    const int C = m->C;
    if (m->cfg.attention == ATTN_GRASSMANN) {
        memcpy(W, m->params.blocks[l].gm.red_w, (size_t)m->r * C * sizeof(float));
        return;
    }
    if (m->cfg.attention == ATTN_TUCKER) {
        const BlockParams *p = &m->params.blocks[l];
        tucker_generate_forward(m->acts.blocks[l].wqkv, p->core, p->factor, m->NH, m->R, m->hs, C);
    }
    const float *w = qkv_weight(m, l);
    for (int rho = 0; rho < 3; rho++)
        for (int i = 0; i < C; i++)
            for (int j = 0; j < C; j++) W[((long)i * C + j) * 3 + rho] = w[((long)rho * C + i) * C + j];
}

// Layer l's output side in p (the parameters or their gradients): W_O, or W_plu for grassmann.
static float *output_weight(const Model *m, const Params *p, int l) {
    BlockParams *b = &p->blocks[l];
    return m->cfg.attention == ATTN_GRASSMANN ? b->gm.plu_w : b->proj_w;
}

void model_export_output(const Model *m, int l, float *O) {
    memcpy(O, output_weight(m, &m->params, l), (size_t)m->out_dims[0] * m->out_dims[1] * sizeof(float));
}

void model_export_scored(Model *m, int l, float *W, float *O) {
    if (m->cfg.attention == ATTN_GRASSMANN) {
        model_export_attention(m, l, W);
        model_export_output(m, l, O);
        return;
    }
    // every block is pre-LN and every reader of the residual stream a LayerNorm (LN1, LN2
    // of each block, the final one)
    const BlockParams *p = &m->params.blocks[l];
    const LayerForm form = {.norm = NORM_LAYER, .ln_w = p->ln1_w, .ln_b = p->ln1_b, .bias_qkv = p->qkv_b,
                            .centre_writes = 1, .key_bias = m->cfg.attention == ATTN_LINEAR};
    model_export_attention(m, l, m->w4);
    circuits_whole_network(W, O, m->w4, output_weight(m, &m->params, l), &form, m->NH, m->hs, m->C);
}

// Adds λ·∇penalty for every regulariser with λ > 0 into the attention gradients: nuclear
// and l2 on the parameter tensor, orth and stability on the function-level heads (whose
// gradient also reaches the output side).
static double regularise(Model *m) {
    const TrialConfig *c = &m->cfg;
    if (c->lambda_orth == 0 && c->lambda_nuclear == 0 && c->lambda_stability == 0 && c->lambda_l2 == 0)
        return 0.0;
    const int G = m->dims[0], Dg = m->dims[1], Dm = m->dims[2], R = m->dims[3];
    const size_t n4 = (size_t)G * Dg * Dm * R;
    FunctionHeads *f = &m->heads;
    double penalty = 0.0;
    for (int l = 0; l < m->L; l++) {
        model_export_attention(m, l, m->w4);
        memset(m->dw4, 0, n4 * sizeof(float));
        if (c->lambda_nuclear > 0) penalty += reg_nuclear(m->dw4, m->w4, G, Dg, Dm, R, c->lambda_nuclear);
        if (c->lambda_l2 > 0) penalty += reg_l2(m->dw4, m->w4, G, Dg, Dm, R, c->lambda_l2);
        if (c->lambda_orth > 0 || c->lambda_stability > 0) {
            function_heads_gram(f, m->w4, output_weight(m, &m->params, l));
            if (c->lambda_orth > 0) penalty += reg_orth(f->coef, f->K, f->G, c->lambda_orth);
            if (c->lambda_stability > 0) {
                double s[f->G];
                const double *ref = stability_reference(&m->stability[l]);
                penalty += reg_stability(f->coef, s, f->K, ref, f->G, f->rank, c->lambda_stability);
                stability_push(&m->stability[l], s);
            }
            function_heads_backward(m->dw4, output_weight(m, &m->grads, l), f);
        }
        attention_add_grad(m, l, m->dw4);
    }
    return penalty;
}

void model_zero_grads(Model *m) {
    memset(m->grads_arena.mem, 0, m->grads_arena.total * sizeof(float));
    if (m->cfg.attention == ATTN_TUCKER)
        for (int l = 0; l < m->L; l++) memset(m->dacts.blocks[l].wqkv, 0, 3 * (size_t)m->C * m->C * sizeof(float));
}

void model_backward_add(Model *m, const Batch *batch) {
    const Params *p = &m->params;
    Params *g = &m->grads;
    const Acts *a = &m->acts;
    Acts *d = &m->dacts;
    const int B = m->B, T = m->T, C = m->C, L = m->L;

    crossentropy_backward(d->logits, a->probs, batch->targets, 1.0f, m->NP, m->K);
    const float *hin = m->encoder ? a->headin : a->lnf;
    float *dhin = m->encoder ? d->headin : d->lnf;
    dense_backward(dhin, g->head_w, g->head_b, d->logits, hin, p->head_w, m->NP, C, m->K);
    if (m->encoder) {  // the head reads the [CLS] rows only
        memset(d->lnf, 0, (size_t)B * T * C * sizeof(float));
        for (int b = 0; b < B; b++) memcpy(d->lnf + (long)b * T * C, d->headin + (long)b * C, C * sizeof(float));
    }

    const float *add, *add_bias;
    const float *xl = block_output(m, L - 1, &add, &add_bias);
    memset(d->x0, 0, (size_t)B * T * C * sizeof(float));
    layernorm_backward(d->x0, g->lnf_w, g->lnf_b, d->lnf, xl, p->lnf_w, a->lnf_mean, a->lnf_rstd, B * T, C);
    for (int l = L - 1; l >= 0; l--) {
        const float *x = block_output(m, l - 1, &add, &add_bias);
        if (paper_block(m))
            paper_block_backward(m, l, x);
        else
            block_backward(m, l, x);
    }
    if (m->encoder)
        patch_embed_backward(g->patch_w, g->patch_b, g->cls, g->wpe, d->pemb, d->x0, a->patches, B, C);
    else
        token_embed_backward(g->wte, g->wpe, d->x0, batch->tokens, B, T, C);
}

double model_backward_finish(Model *m, float scale) {
    const Params *p = &m->params;
    Params *g = &m->grads;
    for (size_t i = 0; i < m->grads_arena.total; i++) m->grads_arena.mem[i] *= scale;
    if (m->cfg.attention == ATTN_TUCKER)
        for (int l = 0; l < m->L; l++) {
            float *dw = m->dacts.blocks[l].wqkv;
            for (size_t i = 0; i < 3 * (size_t)m->C * m->C; i++) dw[i] *= scale;
        }
    const double penalty = regularise(m);
    if (m->cfg.attention == ATTN_TUCKER)
        for (int l = 0; l < m->L; l++)
            tucker_generate_backward(g->blocks[l].core, g->blocks[l].factor, m->dacts.blocks[l].wqkv,
                                     p->blocks[l].core, p->blocks[l].factor, m->NH, m->R, m->hs, m->C);
    return penalty;
}

double model_backward(Model *m, const Batch *batch, double count) {
    model_zero_grads(m);
    model_backward_add(m, batch);
    return model_backward_finish(m, count > 0 ? (float)(1.0 / count) : 0.0f);
}

double model_flops_per_step(const Model *m, int rows) {
    const double B = rows, T = m->T, C = m->C, BT = B * T, F = m->F, hs = m->hs, NH = m->NH;
    double fwd = 2.0 * (m->encoder ? B : BT) * C * m->K;               // head
    if (m->encoder) fwd += 2.0 * B * N_PATCHES * PATCH_DIM * C;        // patch embedding
    const double pairs = m->causal ? T * (T + 1) / 2 : T * T;          // (t, s) pairs attended
    for (int l = 0; l < m->L; l++) {
        fwd += 2.0 * BT * C * F * 2;                                    // MLP
        switch (m->cfg.attention) {
        case ATTN_GRASSMANN: {
            const double r = m->r, M = grassmann_pairs(m->r);
            int n_off;
            config_layer_offsets(&m->cfg, l, &n_off);
            fwd += 2.0 * BT * C * r + 2.0 * BT * M * C + 2.0 * BT * 2 * C * C;  // reduce, expand, gate
            fwd += 2.0 * BT * n_off * (m->causal ? 1 : 2) * r + 3.0 * BT * M;     // Plücker
            break;
        }
        case ATTN_LINEAR:
            fwd += 2.0 * BT * C * 3 * C + 2.0 * BT * C * C + 4.0 * BT * NH * hs * hs;
            break;
        case ATTN_TUCKER:
            fwd += 2.0 * 3 * NH * m->R * hs * C;                            // W = G ×₁ U
            /* fall through */
        default:
            fwd += 2.0 * BT * C * 3 * C + 2.0 * BT * C * C + 4.0 * B * NH * pairs * hs;
        }
    }
    return 3.0 * fwd;
}
