// builtin.c: the built-in trial runner (runner.h): the task's data, the model and its
// training loop (model/train.h). At each evaluation it traces the invariants of every
// layer (the cheap pass of invariants/score.h, no decompositions) and prints progress
// before the scheduler is asked.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "data/dataset.h"
#include "model/model.h"
#include "model/train.h"
#include "trial/metrics.h"
#include "trial/runner.h"

typedef struct {
    TrialRunner runner;
    Dataset *data;  // kept across trials of the same data
} Builtin;

// What the training loop's hooks see of the trial.
typedef struct {
    const TrialHooks *hooks;
    TrialResult *r;
} Run;

// Room for one more point.
static void trace_grow(InvariantTrace *t) {
    if (t->n < t->cap) return;
    const int L = t->layers, G = t->groups;
    t->cap = t->cap ? 2 * t->cap : 16;
    t->step = xrealloc(t->step, (size_t)t->cap * sizeof(int));
    t->correlation = xrealloc(t->correlation, (size_t)t->cap * L * sizeof(double));
    t->eff_rank = xrealloc(t->eff_rank, (size_t)t->cap * L * 4 * sizeof(double));
    t->head_sv = xrealloc(t->head_sv, (size_t)t->cap * L * G * sizeof(double));
}

// The invariants of every layer now (the cheap pass: no decompositions), appended to the trace.
static void record_invariants(Model *m, TrialResult *r, int step, TensorView view, const BlacsGrid *g) {
    InvariantTrace *t = &r->trace;
    ScoreOptions o;
    score_options_default(&o);
    o.decompose = 0;
    trace_grow(t);
    const int i = t->n++, L = t->layers, G = t->groups;
    t->step[i] = step;
    float *out = xmalloc((size_t)m->out_dims[0] * m->out_dims[1] * sizeof(float));
    for (int l = 0; l < L; l++) {
        LayerScore s;
        model_export_attention(m, l, m->w4);
        model_export_output(m, l, out);
        const LayerWeights w = trial_weights(r, m->w4, out);
        score_layer(&s, &w, view, &o, g);
        t->correlation[(size_t)i * L + l] = s.correlation;
        memcpy(t->eff_rank + ((size_t)i * L + l) * 4, s.eff_rank, 4 * sizeof(double));
        double *sv = t->head_sv + ((size_t)i * L + l) * G;
        for (int k = 0; k < G; k++) sv[k] = k < s.n_sv[0] ? s.sv[0][k] : 0.0;
        layer_score_free(&s);
    }
    free(out);
}

// t: the invariant trace, whose last point (if at this step) adds the heads' correlation.
static void print_progress(FILE *f, const CurvePoint *pt, const InvariantTrace *t, long total, double steps_per_s,
                           int task) {
    double eta = steps_per_s > 0 ? (double)(total - pt->step) / steps_per_s : 0.0;
    fprintf(f, "step %6d/%ld  train_loss %.4f  val_loss %.4f  val_accuracy %.4f", pt->step, total, pt->train_loss,
            pt->val_loss, pt->val_accuracy);
    if (task == TASK_CHARLM) fprintf(f, "  val_bits_per_byte %.3f", metric_bits_per_byte(task, pt->val_loss));
    if (pt->penalty > 0) fprintf(f, "  penalty %.4g", pt->penalty);
    if (t->n > 0 && t->step[t->n - 1] == pt->step) {
        double c = 0.0;
        for (int l = 0; l < t->layers; l++) c += t->correlation[(size_t)(t->n - 1) * t->layers + l];
        fprintf(f, "  head corr %.3f", c / t->layers);
    }
    fprintf(f, "  %.1f steps/s  ETA %.0fs\n", steps_per_s, eta);
    fflush(f);
}

static int at_eval(void *ctx, Model *m, const CurvePoint *pt, long total_steps, double train_seconds) {
    const Run *run = ctx;
    const TrialHooks *h = run->hooks;
    if (h->grid) record_invariants(m, run->r, pt->step, h->reward->tensor, h->grid);
    if (h->progress)
        print_progress(h->progress, pt, &run->r->trace, total_steps, (double)pt->step / train_seconds,
                       run->r->config.task);
    return h->on_eval && h->on_eval(h->ctx, pt, total_steps);
}

static int should_stop(void *ctx) {
    const TrialHooks *h = ((const Run *)ctx)->hooks;
    return h->should_stop && h->should_stop(h->ctx);
}

// The final attention weights of every layer, as scoring and the store read them.
static void export_weights(Model *m, TrialResult *out) {
    size_t n4 = (size_t)m->dims[0] * m->dims[1] * m->dims[2] * m->dims[3];
    size_t n2 = (size_t)m->out_dims[0] * m->out_dims[1];
    out->weights = xcalloc(m->L, sizeof(float *));
    out->weights_out = xcalloc(m->L, sizeof(float *));
    for (int l = 0; l < m->L; l++) {
        out->weights[l] = xmalloc(n4 * sizeof(float));
        model_export_attention(m, l, out->weights[l]);
        out->weights_out[l] = xmalloc(n2 * sizeof(float));
        model_export_output(m, l, out->weights_out[l]);
    }
}

static const TrialStatus status_of[] = {[TRAIN_DONE] = TRIAL_OK, [TRAIN_STOPPED] = TRIAL_PRUNED,
                                        [TRAIN_INTERRUPTED] = TRIAL_INTERRUPTED, [TRAIN_FAILED] = TRIAL_FAILED};

static void builtin_run(TrialRunner *self, const TrialConfig *c, const TrialHooks *hooks, TrialResult *r) {
    Builtin *b = (Builtin *)self;
    if (b->data && !dataset_serves(b->data, c)) {
        dataset_free(b->data);
        b->data = NULL;
    }
    if (b->data)
        dataset_restart(b->data);
    else
        b->data = dataset_open(c);
    const DatasetInfo info = dataset_info(b->data);
    Model m;
    if (model_init(&m, c, &info, c->batch) != 0) {
        r->status = TRIAL_FAILED;
        snprintf(r->reason, sizeof r->reason, "out of memory allocating the model and its activations");
        return;
    }
    r->n_layers = m.L;
    memcpy(r->dims, m.dims, sizeof r->dims);
    memcpy(r->out_dims, m.out_dims, sizeof r->out_dims);
    r->n_params = m.n_params;
    r->flops_per_step = model_flops_per_step(&m);
    if (hooks->grid) {
        const LayerWeights lw = trial_weights(r, NULL, NULL);
        int sdims[4];
        scored_dims(sdims, &lw, hooks->reward->tensor);
        r->trace.layers = m.L, r->trace.groups = sdims[0];
    }
    if (hooks->progress) {
        fprintf(hooks->progress, "training %s on %s: d_model %d, %d heads, %d layers, %ld parameters, %ld steps of %d, seed %d\n",
                attention_names[c->attention], task_names[c->task], c->d_model, c->heads, c->layers, m.n_params,
                train_total_steps(c, info.n_train), c->batch, c->seed);
        fflush(hooks->progress);
    }

    Run run = {.hooks = hooks, .r = r};
    const TrainHooks th = {.on_eval = at_eval, .should_stop = should_stop, .ctx = &run,
                           .time_limit = hooks->time_limit, .group = hooks->group};
    Training t;
    train_model(&m, b->data, c, &th, &t);
    r->status = status_of[t.end];
    snprintf(r->reason, sizeof r->reason, "%s", t.reason);
    r->steps = t.steps;
    r->seconds = t.seconds;
    r->train_seconds = t.train_seconds;
    r->n_curve = t.n_curve;
    r->curve = t.curve;
    r->test_loss = t.test_loss;
    r->test_accuracy = t.test_accuracy;
    export_weights(&m, r);
    model_free(&m);
}

static void builtin_free(TrialRunner *self) {
    Builtin *b = (Builtin *)self;
    dataset_free(b->data);
    free(b);
}

TrialRunner *trial_builtin_runner(void) {
    Builtin *b = xcalloc(1, sizeof *b);
    b->runner = (TrialRunner){.run = builtin_run, .free = builtin_free};
    return &b->runner;
}
