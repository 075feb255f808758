#define _POSIX_C_SOURCE 200809L
#include "model/train.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "data/dataset.h"
#include "model/adamw.h"
#include "model/model.h"

long train_total_steps(const TrialConfig *c, long n_train) {
    if (c->steps > 0) return c->steps;
    long s = (long)ceil(c->epochs * (double)n_train / (double)c->batch);
    return s > 0 ? s : 1;
}

// The rank's place in its data-parallel group (0 of 1 when alone).
typedef struct {
    MPI_Comm comm;
    int rank, size;
} Group;

static Group group_of(const TrainHooks *hooks) {
    Group g = {.rank = 0, .size = 1};
    if (hooks && hooks->group) {
        g.comm = *hooks->group;
        MPI_Comm_rank(g.comm, &g.rank);
        MPI_Comm_size(g.comm, &g.size);
    }
    return g;
}

// Sum n doubles over the group in place.
static void group_sum(const Group *g, double *x, int n) {
    if (g->size > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, g->comm);
}

// Loss (nats per prediction) and accuracy on a held-out split, over at most max_batches
// batches, the batches dealt round-robin over the group.
static void evaluate(Model *m, const Dataset *d, EvalSplit split, Batch *b, int max_batches, const Group *g,
                     double *loss, double *accuracy) {
    double sums[3] = {0.0, 0.0, 0.0};  // loss, predictions, correct
    const DatasetInfo info = dataset_info(d);
    long nb = ((split == SPLIT_VAL ? info.n_val : info.n_test) + b->B - 1) / b->B;
    if (max_batches > 0 && max_batches < nb) nb = max_batches;
    for (long k = g->rank; k < nb; k += g->size) {
        long c, ok;
        dataset_eval_batch(d, split, b, k * b->B);
        sums[0] += model_forward(m, b, &c, &ok);
        sums[1] += (double)c;
        sums[2] += (double)ok;
    }
    group_sum(g, sums, 3);
    *loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    *accuracy = sums[1] > 0 ? sums[2] / sums[1] : 0.0;
}

// Bits per byte of a loss in nats: charlm only, NaN for the other tasks.
static double bits_per_byte(int task, double loss) { return task == TASK_CHARLM ? loss / log(2.0) : NAN; }

// t: the invariant trace, whose last point (if at this step) adds the heads' correlation.
static void print_progress(FILE *f, const CurvePoint *pt, const InvariantTrace *t, long total, double steps_per_s,
                           int task) {
    double eta = steps_per_s > 0 ? (double)(total - pt->step) / steps_per_s : 0.0;
    fprintf(f, "step %6d/%ld  train_loss %.4f  val_loss %.4f  val_accuracy %.4f", pt->step, total, pt->train_loss,
            pt->val_loss, pt->val_accuracy);
    if (task == TASK_CHARLM) fprintf(f, "  val_bits_per_byte %.3f", bits_per_byte(task, pt->val_loss));
    if (pt->penalty > 0) fprintf(f, "  penalty %.4g", pt->penalty);
    if (t->n > 0 && t->step[t->n - 1] == pt->step) {
        double c = 0.0;
        for (int l = 0; l < t->layers; l++) c += t->correlation[(size_t)(t->n - 1) * t->layers + l];
        fprintf(f, "  head corr %.3f", c / t->layers);
    }
    fprintf(f, "  %.1f steps/s  ETA %.0fs\n", steps_per_s, eta);
    fflush(f);
}

static void trace_init(InvariantTrace *t, int cap, int layers, int groups) {
    t->cap = cap, t->layers = layers, t->groups = groups;
    t->step = xmalloc((size_t)cap * sizeof(int));
    t->correlation = xmalloc((size_t)cap * layers * sizeof(double));
    t->eff_rank = xmalloc((size_t)cap * layers * 4 * sizeof(double));
    t->head_sv = xmalloc((size_t)cap * layers * groups * sizeof(double));
}

// Layer weights W (m->dims) and O (m->out_dims) as scoring reads them.
static LayerWeights layer_weights(const Model *m, const float *W, const float *O) {
    LayerWeights w = {.grassmann = m->cfg.attention == ATTN_GRASSMANN, .qkv = W, .out = O};
    memcpy(w.dims, m->dims, sizeof w.dims);
    memcpy(w.out_dims, m->out_dims, sizeof w.out_dims);
    return w;
}

// The invariants of every layer now (the cheap pass: no decompositions), appended to the trace.
static void record_invariants(Model *m, InvariantTrace *t, int step, TensorView view, const BlacsGrid *g) {
    ScoreOptions o;
    score_options_default(&o);
    o.decompose = 0;
    const int i = t->n++, L = t->layers, G = t->groups;
    t->step[i] = step;
    float *out = xmalloc((size_t)m->out_dims[0] * m->out_dims[1] * sizeof(float));
    for (int l = 0; l < L; l++) {
        LayerScore s;
        model_export_attention(m, l, m->w4);
        model_export_output(m, l, out);
        const LayerWeights w = layer_weights(m, m->w4, out);
        score_layer(&s, &w, view, &o, g);
        t->correlation[(size_t)i * L + l] = s.correlation;
        memcpy(t->eff_rank + ((size_t)i * L + l) * 4, s.eff_rank, 4 * sizeof(double));
        double *sv = t->head_sv + ((size_t)i * L + l) * G;
        for (int k = 0; k < G; k++) sv[k] = k < s.n_sv[0] ? s.sv[0][k] : 0.0;
        layer_score_free(&s);
    }
    free(out);
}

// Full scores of the final tensors and the reward.
static void score_final(TrialResult *out, const BlacsGrid *g, const ScoreOptions *o, const RewardSpec *spec) {
    out->scores = xcalloc((size_t)out->n_layers, sizeof(LayerScore));
    for (int l = 0; l < out->n_layers; l++) {
        const LayerWeights w = trial_layer_weights(out, l);
        score_layer(&out->scores[l], &w, spec->tensor, o, g);
    }
    out->reward_spec = *spec;
    out->rank_deviation = rank_deviation(out->scores, out->n_layers, spec);
    out->correlation = mean_correlation(out->scores, out->n_layers);
    out->correlation_chance = mean_correlation_chance(out->scores, out->n_layers);
    out->reward = reward_value(out->val_accuracy, out->rank_deviation, out->correlation, spec);
}

static void export_weights(Model *m, TrialResult *out) {
    size_t n4 = (size_t)m->dims[0] * m->dims[1] * m->dims[2] * m->dims[3];
    size_t n2 = (size_t)m->out_dims[0] * m->out_dims[1];
    out->n_layers = m->L;
    memcpy(out->dims, m->dims, sizeof out->dims);
    memcpy(out->out_dims, m->out_dims, sizeof out->out_dims);
    out->weights = xcalloc(m->L, sizeof(float *));
    out->weights_out = xcalloc(m->L, sizeof(float *));
    for (int l = 0; l < m->L; l++) {
        out->weights[l] = xmalloc(n4 * sizeof(float));
        model_export_attention(m, l, out->weights[l]);
        out->weights_out[l] = xmalloc(n2 * sizeof(float));
        model_export_output(m, l, out->weights_out[l]);
    }
}

int train_trial(const TrialConfig *c, const TrainHooks *hooks, TrialResult *out) {
    memset(out, 0, sizeof *out);
    out->config = *c;
    out->val_accuracy = out->val_loss = out->val_bits_per_byte = NAN;
    out->test_accuracy = out->test_loss = out->test_bits_per_byte = NAN;
    out->start_time = unix_seconds();
    gethostname(out->host, sizeof out->host - 1);
    out->status = TRIAL_OK;

    const Group grp = group_of(hooks);
    const double t0 = now_seconds();
    const int own_data = !(hooks && hooks->dataset);
    Dataset *data = own_data ? dataset_open(c) : hooks->dataset;
    if (!own_data) dataset_restart(data);
    DatasetInfo info = dataset_info(data);
    Model m;
    if (model_init(&m, c, &info, c->batch) != 0) {
        out->status = TRIAL_FAILED;
        snprintf(out->reason, sizeof out->reason, "out of memory allocating the model and its activations");
        out->rank_deviation = out->correlation = out->reward = NAN;
        out->end_time = unix_seconds();
        if (own_data) dataset_free(data);
        return 1;
    }
    Batch batch = batch_alloc(&info, c->batch);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    // A stream apart from initialisation's, and one per rank of a data-parallel group
    // (rank 0's is the one a lone run uses).
    gsl_rng_set(rng, (unsigned long)c->seed * 2654435761UL + 1 + (unsigned long)grp.rank * 0x9E3779B9UL);

    const long total = train_total_steps(c, info.n_train);
    const long eval_every = c->eval_every > 0 ? c->eval_every : (total >= 10 ? total / 10 : 1);
    int cap = (int)(total / eval_every) + 2;
    out->curve = xcalloc(cap, sizeof(CurvePoint));
    const BlacsGrid *grid = hooks ? hooks->grid : NULL;
    RewardSpec default_spec;
    reward_spec_default(&default_spec);
    const RewardSpec *spec = hooks && hooks->reward ? hooks->reward : &default_spec;
    if (grid) {
        const LayerWeights lw = layer_weights(&m, NULL, NULL);
        int sdims[4];
        scored_dims(sdims, &lw, spec->tensor);
        trace_init(&out->trace, cap, m.L, sdims[0]);
    }
    out->n_params = m.n_params;
    out->flops_per_step = model_flops_per_step(&m);

    if (hooks && hooks->progress) {
        fprintf(hooks->progress, "training %s on %s: d_model %d, %d heads, %d layers, %ld parameters, %ld steps of %d, seed %d\n",
                attention_names[c->attention], task_names[c->task], c->d_model, c->heads, c->layers, m.n_params,
                total, c->batch, c->seed);
        fflush(hooks->progress);
    }
    double train_time = 0.0, loss_sum = 0.0, penalty = 0.0;
    long loss_n = 0, step = 0;
    while (step < total) {
        double ts = now_seconds();
        dataset_train_batch(data, &batch, rng);
        long count, correct;
        // One collective per step decides for the whole group: the mean loss, and
        // whether anyone was asked to stop or ran out of time.
        double state[3] = {model_forward(&m, &batch, &count, &correct) / (double)(count ? count : 1),
                           hooks && hooks->should_stop && hooks->should_stop(hooks->ctx),
                           hooks && hooks->time_limit > 0 && now_seconds() - t0 > hooks->time_limit};
        group_sum(&grp, state, 3);
        const double loss = state[0] / grp.size;
        if (state[1] > 0) {
            out->status = TRIAL_INTERRUPTED;
            snprintf(out->reason, sizeof out->reason, "stopped at step %ld", step);
            break;
        }
        if (state[2] > 0) {
            out->status = TRIAL_FAILED;
            snprintf(out->reason, sizeof out->reason, "time limit of %g s exceeded at step %ld", hooks->time_limit, step);
            break;
        }
        if (!isfinite(loss)) {
            out->status = TRIAL_FAILED;
            snprintf(out->reason, sizeof out->reason, "diverged: non-finite training loss at step %ld", step);
            break;
        }
        penalty = model_backward(&m, &batch, count);
        if (grp.size > 1) {  // average the group's gradients (the penalty's are identical)
            MPI_Allreduce(MPI_IN_PLACE, m.grads_arena.mem, (int)m.grads_arena.total, MPI_FLOAT, MPI_SUM, grp.comm);
            const float inv = 1.0f / (float)grp.size;
            for (size_t i = 0; i < m.grads_arena.total; i++) m.grads_arena.mem[i] *= inv;
        }
        clip_grad_norm(m.grads_arena.mem, m.grads_arena.total, c->clip);
        double lr = lr_at(c, step, total);
        adamw_update(&m.params_arena, m.grads_arena.mem, m.adam_m, m.adam_v, step + 1, lr, c->weight_decay);
        step++;
        loss_sum += loss;
        loss_n++;
        train_time += now_seconds() - ts;

        if (step % eval_every == 0 || step == total) {
            CurvePoint *pt = &out->curve[out->n_curve++];
            pt->step = (int)step;
            pt->lr = lr;
            pt->train_loss = loss_sum / (double)loss_n;
            pt->penalty = penalty;
            evaluate(&m, data, SPLIT_VAL, &batch, c->eval_batches, &grp, &pt->val_loss, &pt->val_accuracy);
            pt->seconds = now_seconds() - t0;
            loss_sum = 0.0;
            loss_n = 0;
            if (!isfinite(pt->val_loss)) {
                out->status = TRIAL_FAILED;
                snprintf(out->reason, sizeof out->reason, "diverged: non-finite validation loss at step %ld", step);
                break;
            }
            if (grid) record_invariants(&m, &out->trace, (int)step, spec->tensor, grid);
            if (hooks && hooks->progress)
                print_progress(hooks->progress, pt, &out->trace, total, (double)step / train_time, c->task);
            if (hooks && hooks->on_eval && hooks->on_eval(hooks->ctx, pt, total) && step < total) {
                out->status = TRIAL_PRUNED;
                snprintf(out->reason, sizeof out->reason, "stopped by the scheduler at step %ld", step);
                break;
            }
        }
    }
    if (out->n_curve > 0) {
        const CurvePoint *last = &out->curve[out->n_curve - 1];
        out->val_accuracy = last->val_accuracy;
        out->val_loss = last->val_loss;
        out->val_bits_per_byte = bits_per_byte(c->task, last->val_loss);
    }
    // The test split, once, on the final model of a trial recorded with metrics (the status
    // is the group's: every rank takes part). Nothing decides by it.
    const int measured = trial_status_measured(out->status);
    if (measured) {
        evaluate(&m, data, SPLIT_TEST, &batch, c->eval_batches, &grp, &out->test_loss, &out->test_accuracy);
        out->test_bits_per_byte = bits_per_byte(c->task, out->test_loss);
    }
    out->steps = (int)step;
    out->seconds = now_seconds() - t0;
    out->train_seconds = train_time;
    out->end_time = unix_seconds();
    export_weights(&m, out);
    // A failed trial's tensors hold no invariants worth the name (and may hold NaN);
    // an interrupted one is not recorded.
    out->rank_deviation = out->correlation = out->reward = NAN;
    if (grid && measured) {
        ScoreOptions o;
        score_options_default(&o);
        score_final(out, grid, hooks->score ? hooks->score : &o, spec);
    }

    gsl_rng_free(rng);
    batch_free(&batch);
    model_free(&m);
    if (own_data) dataset_free(data);
    return out->status == TRIAL_OK ? 0 : 1;
}
