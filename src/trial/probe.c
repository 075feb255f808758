// probe.c: the probes of a trained trial (probe.h).
#include "trial/probe.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/train.h"
#include "trial/runner.h"

const char *const transform_names[4] = {"none", "patch", "pixels", NULL};

void probe_options_default(ProbeOptions *o) {
    static const double sigma[] = {0.0, 0.1, 0.25, 0.5, 1.0};
    memset(o, 0, sizeof *o);
    o->cka_examples = 1000;
    o->n_sigma = (int)(sizeof sigma / sizeof sigma[0]);
    memcpy(o->sigma, sigma, sizeof sigma);
    o->noise_seed = 1;
    o->maps = 4;
    o->transform = TRANSFORM_PATCH;
    o->transform_seed = 1;
    o->tolerance = 0.1;
}

int probe_rebuild(Model *m, const TrialResult *r, const DatasetInfo *info, char *err, size_t errlen) {
    if (!r->params) {
        snprintf(err, errlen, "trial %d has no stored parameters (written before attnsweep stored them; train it "
                 "again to probe it)", r->id);
        return -1;
    }
    if (model_init(m, &r->config, info, train_model_rows(&r->config, info, NULL)) != 0) {
        snprintf(err, errlen, "out of memory rebuilding trial %d's model", r->id);
        return -1;
    }
    char *layout = arena_layout(&m->params_arena);
    const int same = m->n_params == r->n_params && r->param_layout && !strcmp(layout, r->param_layout);
    free(layout);
    if (!same) {
        snprintf(err, errlen, "trial %d's stored parameters do not fit its configuration (%ld stored, %ld expected)",
                 r->id, r->n_params, m->n_params);
        model_free(m);
        return -1;
    }
    arena_scatter(&m->params_arena, r->params);
    return 0;
}

// ---------------------------------------------------------------- noise

typedef struct {
    gsl_rng *rng;
    double sigma;
} Noise;

// x0 += σ·rms(x0)·N(0, 1) on the real rows.
static void embed_noise(void *ctx, float *x0, long n) {
    const Noise *z = ctx;
    double ss = 0.0;
    for (long i = 0; i < n; i++) ss += (double)x0[i] * x0[i];
    const double scale = z->sigma * sqrt(ss / (double)(n ? n : 1));
    for (long i = 0; i < n; i++) x0[i] += (float)gsl_ran_gaussian_ziggurat(z->rng, scale);
}

void probe_eval(Model *m, const Dataset *d, double sigma, int seed, double *accuracy, double *loss) {
    const DatasetInfo info = dataset_info(d);
    Batch b = batch_alloc(&info, m->cfg.batch);
    MicroBatches u = micro_batches(&info, m, b.B);
    long nb = (info.n_val + b.B - 1) / b.B;
    if (m->cfg.eval_batches > 0 && m->cfg.eval_batches < nb) nb = m->cfg.eval_batches;
    Noise z = {.rng = gsl_rng_alloc(gsl_rng_mt19937), .sigma = sigma};
    gsl_rng_set(z.rng, (unsigned long)seed);
    if (sigma > 0 && !b.images) u.perturb = embed_noise, u.ctx = &z;
    double sums[3] = {0.0, 0.0, 0.0};
    for (long k = 0; k < nb; k++) {
        const int rows = dataset_eval_batch(d, SPLIT_VAL, &b, k * b.B);
        if (sigma > 0 && b.images)
            for (long i = 0; i < (long)rows * IMG_PIXELS; i++) b.images[i] += (float)gsl_ran_gaussian_ziggurat(z.rng, sigma);
        micro_passes(m, &u, &b, rows, 0, sums);
    }
    gsl_rng_free(z.rng);
    micro_batches_free(&u);
    batch_free(&b);
    *loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    *accuracy = sums[1] > 0 ? sums[2] / sums[1] : 0.0;
}

// ---------------------------------------------------------------- maps

static void measure_maps(Probe *p, Model *m, const Dataset *d, Batch *batch, int n_maps) {
    const long T = m->T, per = (long)m->NH * T * T;
    long count, correct;
    p->T = m->T;
    if (m->cfg.attention == ATTN_GRASSMANN || n_maps == 0) return;
    dataset_eval_batch(d, SPLIT_VAL, batch, 0);
    model_forward(m, batch, &count, &correct);
    p->n_maps = n_maps;
    p->maps = xmalloc((size_t)n_maps * m->L * per * sizeof(float));
    for (int e = 0; e < n_maps; e++)
        for (int l = 0; l < m->L; l++) model_attention_map(m, l, e, p->maps + ((long)e * m->L + l) * per);
}

void probe_measure(Probe *p, Model *m, const Dataset *d, const ProbeOptions *o) {
    const DatasetInfo info = dataset_info(d);
    Batch batch = batch_alloc(&info, m->B);
    p->layers = m->L;
    p->heads = m->cfg.attention == ATTN_GRASSMANN ? 0 : m->NH;
    p->n_examples = o->cka_examples > 0 && o->cka_examples < info.n_val ? o->cka_examples : (int)info.n_val;
    probe_cka(p, m, d, &batch, p->n_examples);
    p->n_sigma = o->n_sigma;
    for (int i = 0; i < o->n_sigma; i++) {
        p->sigma[i] = o->sigma[i];
        probe_eval(m, d, o->sigma[i], o->noise_seed + 1000 * i, &p->noise_accuracy[i], &p->noise_loss[i]);
    }
    int n_maps = o->maps < m->B ? o->maps : m->B;
    if (n_maps > info.n_val) n_maps = (int)info.n_val;
    measure_maps(p, m, d, &batch, n_maps);
    batch_free(&batch);
}

// ---------------------------------------------------------------- transformation

void random_orthogonal(float *Q, int n, int seed) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)seed);
    double *A = xmalloc((size_t)n * n * sizeof(double)), *tau = xmalloc((size_t)n * sizeof(double));
    for (long i = 0; i < (long)n * n; i++) A[i] = gsl_ran_gaussian_ziggurat(rng, 1.0);
    gsl_rng_free(rng);
    if (LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, n, n, A, n, tau) != 0) die(EXIT_RUNTIME, "internal error: dgeqrf failed");
    double *sign = xmalloc((size_t)n * sizeof(double));
    for (int j = 0; j < n; j++) sign[j] = A[(long)j * n + j] < 0 ? -1.0 : 1.0;
    if (LAPACKE_dorgqr(LAPACK_ROW_MAJOR, n, n, n, A, n, tau) != 0) die(EXIT_RUNTIME, "internal error: dorgqr failed");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) Q[(long)i * n + j] = (float)(A[(long)i * n + j] * sign[j]);
    free(A);
    free(tau);
    free(sign);
}

static void add_row(Probe *p, const char *name, int layer, double orig, double trans, double tol) {
    ProbeRow *w = &p->table[p->n_table++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->layer = layer;
    w->original = orig;
    w->transformed = trans;
    w->change = orig != 0 ? (trans - orig) / fabs(orig) : trans == orig ? 0.0 : INFINITY;
    w->stays = fabs(w->change) <= tol;
    w->control = w->control_change = NAN;
}

// The invariants of one trial, in the table's order: the model's, then each layer's.
static int invariant_values(const TrialResult *r, double *v) {
    int k = 0;
    v[k++] = r->val_accuracy, v[k++] = r->rank_deviation, v[k++] = r->correlation, v[k++] = r->reward;
    for (int l = 0; l < r->n_layers; l++) {
        const LayerScore *s = &r->scores[l];
        v[k++] = s->correlation;
        for (int n = 0; n < 4; n++) v[k++] = s->eff_rank[n];
        for (int n = 0; n < 4; n++) v[k++] = s->num_rank[n];
        v[k++] = s->tucker_fit, v[k++] = s->cp_fit, v[k++] = s->cp_rank;
    }
    return k;
}

enum { MODEL_ROWS = 4, LAYER_ROWS = 12 };

static void build_table(Probe *p, const TrialResult *a, const TrialResult *b, const TrialResult *ctl, double tol) {
    const int n = MODEL_ROWS + LAYER_ROWS * a->n_layers;
    double *va = xmalloc((size_t)n * sizeof(double)), *vb = xmalloc((size_t)n * sizeof(double));
    double *vc = xmalloc((size_t)n * sizeof(double));
    invariant_values(a, va);
    invariant_values(b, vb);
    if (ctl) invariant_values(ctl, vc);
    static const char *const model_names[MODEL_ROWS] = {"val_accuracy", "rank_deviation", "correlation", "reward"};
    const char *const *modes = tensor_mode_names[a->reward_spec.tensor];
    p->table = xcalloc((size_t)n, sizeof(ProbeRow));
    for (int k = 0; k < n; k++) {
        char name[32];
        const int l = k < MODEL_ROWS ? -1 : (k - MODEL_ROWS) / LAYER_ROWS, j = (k - MODEL_ROWS) % LAYER_ROWS;
        if (l < 0)
            snprintf(name, sizeof name, "%s", model_names[k]);
        else if (j == 0)
            snprintf(name, sizeof name, "correlation");
        else if (j <= 4)
            snprintf(name, sizeof name, "eff_rank_%s", modes[j - 1]);
        else if (j <= 8)
            snprintf(name, sizeof name, "num_rank_%s", modes[j - 5]);
        else
            snprintf(name, sizeof name, "%s", j == 9 ? "tucker_fit" : j == 10 ? "cp_fit" : "cp_rank");
        add_row(p, name, l, va[k], vb[k], tol);
        if (ctl) {
            ProbeRow *w = &p->table[k];
            w->control = vc[k];
            w->control_change = va[k] != 0 ? (vc[k] - va[k]) / fabs(va[k]) : vc[k] == va[k] ? 0.0 : INFINITY;
        }
    }
    free(va);
    free(vb);
    free(vc);
}

void probe_transform(Probe *p, TrialResult *r, const ProbeOptions *o, const BlacsGrid *g, FILE *progress) {
    ScoreOptions so;
    score_options_default(&so);
    p->transform = o->transform;
    p->transform_seed = o->transform_seed;
    p->tolerance = o->tolerance;
    p->q_dim = o->transform == TRANSFORM_PIXELS ? IMG_PIXELS : PATCH_PIXELS;
    p->Q = xmalloc((size_t)p->q_dim * p->q_dim * sizeof(float));
    random_orthogonal(p->Q, p->q_dim, o->transform_seed);

    trial_score(r, g, &so, &r->reward_spec);
    const TrialHooks hooks = {.grid = g, .reward = &r->reward_spec, .score = &so, .progress = progress};
    TrialRunner *runner = trial_builtin_runner_transformed(p->Q, p->q_dim);
    trial_run(runner, &r->config, &hooks, &p->transformed);
    trial_runner_free(runner);
    if (!p->transformed.scores)
        die(EXIT_RUNTIME, "probe: the transformed training ended %s: %s", trial_status_names[p->transformed.status],
            p->transformed.reason);
    if (o->seed_control) {
        TrialConfig c = r->config;
        c.seed++;
        runner = trial_builtin_runner();
        trial_run(runner, &c, &hooks, &p->control);
        trial_runner_free(runner);
        if (!p->control.scores)
            die(EXIT_RUNTIME, "probe: the seed control ended %s: %s", trial_status_names[p->control.status],
                p->control.reason);
        p->has_control = 1;
    }
    build_table(p, r, &p->transformed, p->has_control ? &p->control : NULL, o->tolerance);
}

void probe_free(Probe *p) {
    free(p->cka_heads);
    free(p->cka_layers);
    free(p->maps);
    free(p->ablation_loss);
    free(p->ablation_accuracy);
    free(p->layer_loss);
    free(p->layer_accuracy);
    free(p->redundancy);
    free(p->spearman);
    free(p->Q);
    trial_result_free(&p->transformed);
    trial_result_free(&p->control);
    free(p->table);
    memset(p, 0, sizeof *p);
}
