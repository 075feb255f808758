// train.c: the training loop (train.h): AdamW steps on the task's batches, evaluations, the test split once.
#include "model/train.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/adamw.h"
#include "model/layers.h"
#include "model/threads.h"

long train_total_steps(const TrialConfig *c, long n_train) {
    if (c->steps > 0) return c->steps;
    long s = (long)ceil(c->epochs * (double)n_train / (double)c->batch);
    return s > 0 ? s : 1;
}

// The rank's place in its data-parallel group (0 of 1 when alone) and its share of every
// batch of B rows: rows [off, off + share), off = rank·B/G (the shares differ by at most one).
typedef struct {
    MPI_Comm comm;
    int rank, size;
    int B, off, share;
} Group;

static Group group_of(const TrainHooks *hooks, int B) {
    Group g = {.rank = 0, .size = 1};
    if (hooks && hooks->group) {
        g.comm = *hooks->group;
        MPI_Comm_rank(g.comm, &g.rank);
        MPI_Comm_size(g.comm, &g.size);
    }
    g.B = B;
    g.off = (int)((long)g.rank * B / g.size);
    g.share = (int)((long)(g.rank + 1) * B / g.size) - g.off;
    return g;
}

int train_rank_rows(const TrialConfig *c, const MPI_Comm *group) {
    int G = 1;
    if (group) MPI_Comm_size(*group, &G);
    return (c->batch + G - 1) / G;
}

// A step runs its forward and backward passes over micro-batches of whole sequences, about
// MICRO_TOKENS tokens each, and sums their gradients: one layer's activations of a
// micro-batch (a few hundred KB) stay in the core's L2 cache from one kernel to the next,
// where those of a whole batch (the default ViT's 128 × 17 tokens: 0.6–2.2 MB a tensor)
// stream from L3 between them. With several threads, each runs whole micro-batches on a
// lane of its own (model_lane_init), as many of them as the others where the rows allow.
enum { MICRO_TOKENS = 512 };

int train_model_rows(const TrialConfig *c, const DatasetInfo *info, const MPI_Comm *group) {
    const int share = train_rank_rows(c, group), nt = kernel_threads();
    const int T = info->seq_len > 0 ? info->seq_len : N_PATCHES + 1;
    const int per = MICRO_TOKENS / T > 1 ? MICRO_TOKENS / T : 1;
    int n = (share + per - 1) / per;
    if (share >= nt) n = (n + nt - 1) / nt * nt;  // the same number for every thread
    return (share + n - 1) / n;  // n micro-batches as even as whole rows allow
}

// The lanes for batches of `rows` rows in micro-batches of B: one a thread, at most one a
// micro-batch.
static int lanes_for(int rows, int B) {
    const int n = (rows + B - 1) / B, nt = kernel_threads();
    return n < nt ? n : nt;
}

int train_lanes(const TrialConfig *c, const DatasetInfo *info, const MPI_Comm *group) {
    return lanes_for(train_rank_rows(c, group), train_model_rows(c, info, group));
}

// Sum n doubles over the group in place.
static void group_sum(const Group *g, double *x, int n) {
    if (g->size > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, g->comm);
}

MicroBatches micro_batches(const DatasetInfo *info, const Model *m, int batch_rows) {
    MicroBatches u = {.info = *info, .lanes = 1};
    if (m->B == batch_rows) return u;
    const int want = lanes_for(batch_rows, m->B);
    u.lane = xcalloc((size_t)want, sizeof(Model));
    u.micro = xcalloc((size_t)want, sizeof(Batch));
    u.micro[0] = batch_alloc(info, m->B);
    // A lane the memory is not there for is one thread fewer.
    while (u.lanes < want && model_lane_init(&u.lane[u.lanes], m) == 0) u.micro[u.lanes++] = batch_alloc(info, m->B);
    return u;
}

void micro_batches_free(MicroBatches *u) {
    for (int k = 0; u->micro && k < u->lanes; k++) {
        batch_free(&u->micro[k]);
        if (k > 0) model_lane_free(&u->lane[k]);
    }
    free(u->micro);
    free(u->lane);
    memset(u, 0, sizeof *u);
}

// Micro-batches [k0, k1) of the first `rows` rows of b on lane m (which copies them into
// its own micro; b itself when it has m->B rows), their sums added to sums[0..2].
static void lane_passes(Model *m, Batch *micro, const MicroBatches *u, const Batch *b, int rows, int k0, int k1,
                        int backward, double sums[3]) {
    for (int k = k0; k < k1; k++) {
        const int lo = k * m->B;
        const Batch *mb = b;
        if (b->B != m->B) {
            batch_take_rows(micro, b, lo, rows - lo < m->B ? rows - lo : m->B, &u->info);
            mb = micro;
        }
        long count, correct;
        sums[0] += model_forward_perturbed(m, mb, u->perturb, u->ctx, &count, &correct);
        sums[1] += (double)count;
        sums[2] += (double)correct;
        if (backward) model_backward_add(m, mb);
    }
}

// With lanes, thread t runs the t-th of as many runs of consecutive micro-batches on lane t
// (lane 0: m), the lanes' gradients are added into m's and the sums added, in lane order:
// the results depend on the thread count, not on timing. A perturbation draws its noise
// in micro-batch order, so it runs on m alone.
void micro_passes(Model *m, MicroBatches *u, const Batch *b, int rows, int backward, double sums[3]) {
    const int n = (rows + m->B - 1) / m->B, lanes = u->perturb ? 1 : n < u->lanes ? n : u->lanes;
    if (lanes <= 1) {
        lane_passes(m, u->micro, u, b, rows, 0, n, backward, sums);
        return;
    }
    double part[MAX_KERNEL_THREADS][3] = {{0.0}};
#pragma omp parallel num_threads(lanes)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        Model *own = t ? &u->lane[t] : m;
        long k0, k1;
        thread_span(n, t, nt, &k0, &k1);
        if (backward && t) model_zero_grads(own);
        lane_passes(own, &u->micro[t], u, b, rows, (int)k0, (int)k1, backward, part[t]);
        if (backward) {
#pragma omp barrier
            for (int k = 1; k < nt; k++) model_lane_add_grads(m, &u->lane[k], t, nt);
        }
    }
    for (int t = 0; t < lanes; t++)
        for (int j = 0; j < 3; j++) sums[j] += part[t][j];
}

// Loss (nats per prediction) and accuracy on a held-out split, over at most max_batches
// batches of g->B examples, each rank taking its share of every batch (b: its rows).
static void evaluate(Model *m, const Dataset *d, EvalSplit split, Batch *b, MicroBatches *u, int max_batches,
                     const Group *g, double *loss, double *accuracy) {
    double sums[3] = {0.0, 0.0, 0.0};  // loss, predictions, correct
    const DatasetInfo info = dataset_info(d);
    long nb = ((split == SPLIT_VAL ? info.n_val : info.n_test) + g->B - 1) / g->B;
    if (max_batches > 0 && max_batches < nb) nb = max_batches;
    for (long k = 0; k < nb; k++) {
        const int rows = dataset_eval_batch(d, split, b, k * g->B + g->off), mine = rows < g->share ? rows : g->share;
        batch_pad(b, mine, &info);
        micro_passes(m, u, b, mine, 0, sums);
    }
    group_sum(g, sums, 3);
    *loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    *accuracy = sums[1] > 0 ? sums[2] / sums[1] : 0.0;
}

// Evaluations every this many steps (0 in the configuration: ten per run).
static long eval_interval(const TrialConfig *c, long total) {
    return c->eval_every > 0 ? c->eval_every : (total >= 10 ? total / 10 : 1);
}

void train_state_init(TrainState *st, const TrialConfig *c, long total_steps) {
    memset(st, 0, sizeof *st);
    st->cap = (int)(total_steps / eval_interval(c, total_steps)) + 2;
    st->curve = xcalloc((size_t)st->cap, sizeof(CurvePoint));
    st->rng = gsl_rng_alloc(gsl_rng_mt19937);
    // A stream apart from initialisation's, the same on every rank of a data-parallel
    // group (each draws the global batch and trains on its share).
    gsl_rng_set(st->rng, (unsigned long)c->seed * 2654435761UL + 1);
}

void train_state_free(TrainState *st) {
    free(st->curve);
    if (st->rng) gsl_rng_free(st->rng);
    memset(st, 0, sizeof *st);
}

// Whether a checkpoint is due after the step just taken (or the evaluation just made).
static int checkpoint_due(const TrainHooks *h, long step, long total, int evaluated) {
    if (!h || !h->checkpoint || step >= total) return 0;
    return h->checkpoint_every > 0 ? step % h->checkpoint_every == 0 : h->checkpoint_every < 0 && evaluated;
}

void train_model(Model *m, Dataset *data, const TrialConfig *c, const TrainHooks *hooks, Training *out) {
    memset(out, 0, sizeof *out);
    out->end = TRAIN_DONE;
    out->test_loss = out->test_accuracy = NAN;
    const Group grp = group_of(hooks, c->batch);
    const DatasetInfo info = dataset_info(data);
    // Every rank draws the same global batch of c->batch rows from the same stream (apart
    // from initialisation's) and trains on its share, so a trial's numbers do not depend
    // on the group's size beyond the order of floating-point sums.
    Batch global = batch_alloc(&info, c->batch);
    Batch batch = grp.size > 1 ? batch_alloc(&info, train_rank_rows(c, hooks->group)) : global;
    MicroBatches micro = micro_batches(&info, m, batch.B);
    const long total = train_total_steps(c, info.n_train), eval_every = eval_interval(c, total);
    TrainState fresh, *st = hooks && hooks->resume ? hooks->resume : &fresh;
    if (st == &fresh) train_state_init(&fresh, c, total);
    const double t0 = now_seconds() - st->seconds;  // a continued run counts its earlier time

    // A stop asked during a step ends the run before the next one: the state is then whole.
    int stop = 0;
    while (st->step < total) {
        if (stop) {
            if (hooks->checkpoint) {
                st->seconds = now_seconds() - t0;
                hooks->checkpoint(hooks->ctx, m, data, st);
            }
            out->end = TRAIN_INTERRUPTED;
            snprintf(out->reason, sizeof out->reason, "stopped at step %ld", st->step);
            break;
        }
        double ts = now_seconds();
        dataset_train_batch(data, &global, st->rng);
        if (grp.size > 1) batch_take_rows(&batch, &global, grp.off, grp.share, &info);
        double sums[3] = {0.0, 0.0, 0.0};
        model_zero_grads(m);
        micro_passes(m, &micro, &batch, grp.share, 1, sums);
        // One collective per step decides for the whole group: the loss summed over the
        // global batch, its predictions, and whether anyone was asked to stop or ran out
        // of time.
        double state[4] = {sums[0], sums[1], hooks && hooks->should_stop && hooks->should_stop(hooks->ctx),
                           hooks && hooks->time_limit > 0 && now_seconds() - t0 > hooks->time_limit};
        group_sum(&grp, state, 4);
        const double loss = state[1] > 0 ? state[0] / state[1] : 0.0;
        stop = state[2] > 0;
        if (state[3] > 0) {
            out->end = TRAIN_FAILED;
            snprintf(out->reason, sizeof out->reason, "time limit of %g s exceeded at step %ld", hooks->time_limit,
                     st->step);
            break;
        }
        if (!isfinite(loss)) {
            out->end = TRAIN_FAILED;
            snprintf(out->reason, sizeof out->reason, "diverged: non-finite training loss at step %ld", st->step);
            break;
        }
        // Each rank's gradient is G × its share of the global mean loss, plus the
        // penalty's (the same on every rank), so the group's average is the gradient of
        // the global batch's mean loss plus the penalty's.
        st->penalty = model_backward_finish(m, state[1] > 0 ? (float)(grp.size / state[1]) : 0.0f);
        if (grp.size > 1) {
            MPI_Allreduce(MPI_IN_PLACE, m->grads_arena.mem, (int)m->grads_arena.total, MPI_FLOAT, MPI_SUM, grp.comm);
            const float inv = 1.0f / (float)grp.size;
            for (size_t i = 0; i < m->grads_arena.total; i++) m->grads_arena.mem[i] *= inv;
        }
        clip_grad_norm(m->grads_arena.mem, m->grads_arena.total, c->clip);
        double lr = lr_at(c, st->step, total);
        adamw_update(&m->params_arena, m->grads_arena.mem, m->adam_m, m->adam_v, st->step + 1, lr, c->weight_decay);
        const long step = ++st->step;
        st->loss_sum += loss;
        st->loss_n++;
        st->train_seconds += now_seconds() - ts;

        const int evaluated = step % eval_every == 0 || step == total;
        if (evaluated) {
            if (st->n_curve == st->cap)
                st->curve = xrealloc(st->curve, (size_t)(st->cap *= 2) * sizeof(CurvePoint));
            CurvePoint *pt = &st->curve[st->n_curve++];
            memset(pt, 0, sizeof *pt);
            pt->step = (int)step;
            pt->lr = lr;
            pt->train_loss = st->loss_sum / (double)st->loss_n;
            pt->penalty = st->penalty;
            evaluate(m, data, SPLIT_VAL, &batch, &micro, c->eval_batches, &grp, &pt->val_loss, &pt->val_accuracy);
            pt->seconds = now_seconds() - t0;
            st->loss_sum = 0.0;
            st->loss_n = 0;
            if (!isfinite(pt->val_loss)) {
                out->end = TRAIN_FAILED;
                snprintf(out->reason, sizeof out->reason, "diverged: non-finite validation loss at step %ld", step);
                break;
            }
            if (hooks && hooks->on_eval && hooks->on_eval(hooks->ctx, m, pt, total, st->train_seconds) && step < total) {
                out->end = TRAIN_STOPPED;
                snprintf(out->reason, sizeof out->reason, "stopped by the scheduler at step %ld", step);
                break;
            }
        }
        if (!stop && checkpoint_due(hooks, step, total, evaluated)) {
            st->seconds = now_seconds() - t0;
            hooks->checkpoint(hooks->ctx, m, data, st);
        }
    }
    // The test split, once, on the final model of a run that ended with metrics (the end
    // is the group's: every rank takes part). Nothing decides by it.
    if (out->end == TRAIN_DONE || out->end == TRAIN_STOPPED)
        evaluate(m, data, SPLIT_TEST, &batch, &micro, c->eval_batches, &grp, &out->test_loss, &out->test_accuracy);
    out->steps = (int)st->step;
    out->seconds = now_seconds() - t0;
    out->train_seconds = st->train_seconds;
    out->n_curve = st->n_curve;
    out->curve = st->curve;  // the caller's now
    st->curve = NULL;
    st->n_curve = st->cap = 0;
    if (st == &fresh) train_state_free(&fresh);
    micro_batches_free(&micro);
    if (grp.size > 1) batch_free(&batch);
    batch_free(&global);
}
