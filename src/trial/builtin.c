// builtin.c: the built-in trial runner (runner.h): the task's data, the model and its
// training loop (model/train.h). At each evaluation it traces the invariants of every
// layer (the cheap pass of invariants/score.h, no decompositions) and prints progress
// before the scheduler is asked. With a trial directory it writes the run's checkpoints
// there and continues from one it finds.
//
// Checkpoint file (checkpoint.bin in the trial's directory), little-endian:
//   u32 0x54504B43 ("CKPT"), u32 version 1; text the configuration (config_to_json);
//   u32 group size G; text trial_pack of the trial so far (configuration and invariant
//   trace); text the shared state, then G texts, rank by rank, the state of each rank
//   (model/checkpoint.h); u32 crc32 of every byte before it.
// A checkpoint of another configuration or group size, or a damaged one, is ignored with a
// warning: the trial starts from step 0.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/outfile.h"
#include "common/util.h"
#include "data/dataset.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "model/threads.h"
#include "model/train.h"
#include "params/config_json.h"
#include "trial/metrics.h"
#include "trial/pack.h"
#include "trial/runner.h"
#include "trial/trialdir.h"

enum { CHECKPOINT_MAGIC = 0x54504B43, CHECKPOINT_VERSION = 1 };

typedef struct {
    TrialRunner runner;
    Dataset *data;  // kept across trials of the same data
    float *Q;       // the input transform (trial_builtin_runner_transformed), or NULL
    int q_dim;
} Builtin;

// What the training loop's hooks see of the trial.
typedef struct {
    const TrialHooks *hooks;
    TrialResult *r;
    int rank, size;           // in the group
    int checkpoint_failed;    // a checkpoint could not be written (said once per trial)
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
    t->chance = xrealloc(t->chance, (size_t)t->cap * L * 4 * sizeof(double));
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
    float *W = xmalloc(product_of(m->scored_dims, 4) * sizeof(float));
    float *out = xmalloc(product_of(m->scored_out_dims, 2) * sizeof(float));
    for (int l = 0; l < L; l++) {
        LayerScore s;
        model_export_scored(m, l, W, out);
        const LayerWeights w = trial_weights(r, W, out);
        score_layer(&s, &w, view, &o, g);
        t->correlation[(size_t)i * L + l] = s.correlation;
        memcpy(t->eff_rank + ((size_t)i * L + l) * 4, s.eff_rank, 4 * sizeof(double));
        layer_score_chance(t->chance + ((size_t)i * L + l) * 4, &s);
        double *sv = t->head_sv + ((size_t)i * L + l) * G;
        for (int k = 0; k < G; k++) sv[k] = k < s.n_sv[0] ? s.sv[0][k] : 0.0;
        layer_score_free(&s);
    }
    free(out);
    free(W);
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
    if (!h->on_eval) return 0;
    const EvalPoint e = trial_eval_point(run->r, pt, h->reward);
    return h->on_eval(h->ctx, &e, total_steps);
}

static int should_stop(void *ctx) {
    const TrialHooks *h = ((const Run *)ctx)->hooks;
    return h->should_stop && h->should_stop(h->ctx);
}

// The final attention weights of every layer, as scoring and the store read them, and
// the whole parameter arena (what `attnsweep probe` rebuilds the model from).
static void export_weights(Model *m, TrialResult *out) {
    out->weights = xcalloc(m->L, sizeof(float *));
    out->weights_out = xcalloc(m->L, sizeof(float *));
    for (int l = 0; l < m->L; l++) {
        out->weights[l] = xmalloc(product_of(m->scored_dims, 4) * sizeof(float));
        out->weights_out[l] = xmalloc(product_of(m->scored_out_dims, 2) * sizeof(float));
        model_export_scored(m, l, out->weights[l], out->weights_out[l]);
    }
    out->params = xmalloc((size_t)m->n_params * sizeof(float));
    arena_gather(&m->params_arena, out->params);
    out->param_layout = arena_layout(&m->params_arena);
}

static const TrialStatus status_of[] = {[TRAIN_DONE] = TRIAL_OK, [TRAIN_STOPPED] = TRIAL_PRUNED,
                                        [TRAIN_INTERRUPTED] = TRIAL_INTERRUPTED, [TRAIN_FAILED] = TRIAL_FAILED};

// ---------------------------------------------------------------- checkpoints

// The group's ranks' byte strings gathered on its leader as texts in rank order, each its
// length then its bytes (nothing elsewhere).
static Bytes gather(const Run *run, const Bytes *mine) {
    Bytes framed = {0}, all = {0};
    if (run->size == 1) {
        bytes_put_text(&framed, (const char *)mine->data, mine->len);
        return framed;
    }
    int n = (int)mine->len, *counts = NULL, *offsets = NULL;
    if (run->rank == 0) counts = xmalloc((size_t)run->size * sizeof(int)), offsets = xmalloc((size_t)run->size * sizeof(int));
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, *run->hooks->group);
    if (run->rank == 0) {
        long total = 0;
        for (int k = 0; k < run->size; k++) offsets[k] = (int)total, total += counts[k];
        bytes_extend(&all, (size_t)total);
    }
    MPI_Gatherv(mine->data, n, MPI_BYTE, all.data, counts, offsets, MPI_BYTE, 0, *run->hooks->group);
    for (int k = 0; run->rank == 0 && k < run->size; k++)
        bytes_put_text(&framed, (const char *)all.data + offsets[k], (size_t)counts[k]);
    bytes_free(&all);
    free(counts);
    free(offsets);
    return framed;
}

// TrainHooks.checkpoint: every rank's state to the leader, which writes the file whole.
static void save_checkpoint(void *ctx, const Model *m, const Dataset *d, const TrainState *st) {
    Run *run = ctx;
    Bytes mine = {0};
    checkpoint_save_rank(&mine, d, st);
    Bytes ranks = gather(run, &mine);
    bytes_free(&mine);
    if (run->rank != 0) return;
    Bytes b = {0}, part = {0}, shared = {0};
    bytes_put_u32(&b, CHECKPOINT_MAGIC);
    bytes_put_u32(&b, CHECKPOINT_VERSION);
    char *config = config_to_json_text(&run->r->config);
    bytes_put_text(&b, config, strlen(config));
    cJSON_free(config);
    bytes_put_u32(&b, (uint32_t)run->size);
    TrialResult sofar = {.config = run->r->config, .trace = run->r->trace};
    trial_pack(&part, &sofar);
    bytes_put_text(&b, (const char *)part.data, part.len);
    checkpoint_save_shared(&shared, m, st);
    bytes_put_text(&b, (const char *)shared.data, shared.len);
    memcpy(bytes_extend(&b, ranks.len), ranks.data, ranks.len);
    bytes_put_u32(&b, (uint32_t)crc32(0L, b.data, (uInt)b.len));
    char path[4096], tmp[4096 + OUTFILE_SUFFIX + 1];
    const char *dir = run->hooks->trial_dir;
    int fd = -1;
    if (trial_dir_checkpoint(path, sizeof path, dir) != 0 || trial_dir_make(dir) != 0 ||
        (fd = outfile_create(path, tmp, sizeof tmp)) < 0 || outfile_write(fd, b.data, b.len) != 0 ||
        outfile_commit(fd, tmp, path) != 0) {
        // A trial goes on without its checkpoint (it would only restart from an earlier one).
        if (!run->checkpoint_failed++)
            warnf("%s: cannot write the checkpoint at step %ld: %s (the trial goes on; said once)", dir, st->step,
                  strerror(errno));
        if (fd >= 0) outfile_discard(tmp);
    }
    if (fd >= 0) close(fd);
    bytes_free(&b);
    bytes_free(&part);
    bytes_free(&shared);
    bytes_free(&ranks);
}

// The checkpoint file on the leader, broadcast to the group: its bytes, or empty.
static Bytes read_checkpoint(const Run *run) {
    Bytes b = {0};
    long n = 0;
    if (run->rank == 0) {
        char path[4096];
        struct stat st;
        FILE *f = trial_dir_checkpoint(path, sizeof path, run->hooks->trial_dir) == 0 && lstat(path, &st) == 0 &&
                          S_ISREG(st.st_mode)
                      ? fopen(path, "rb")
                      : NULL;
        if (f) {
            n = (long)st.st_size;
            if (fread(bytes_extend(&b, (size_t)n), 1, (size_t)n, f) != (size_t)n) n = 0;
            fclose(f);
        }
    }
    if (run->size > 1) {
        MPI_Bcast(&n, 1, MPI_LONG, 0, *run->hooks->group);
        if (run->rank != 0) bytes_extend(&b, (size_t)n);
        MPI_Bcast(b.data, (int)n, MPI_BYTE, 0, *run->hooks->group);
    }
    b.len = (size_t)n;
    return b;
}

// The state a checkpoint holds, into m, data, st and the trial's trace. 0; 1 when there is
// none; -1 with the reason in err when it is not this trial's (m, st, the trace and the
// data position are then to be made afresh).
static int load_checkpoint(const Run *run, Model *m, Dataset *data, TrainState *st, char *err, size_t errlen) {
    Bytes b = read_checkpoint(run);
    if (!b.len) {
        bytes_free(&b);
        return 1;
    }
    ByteReader rd = byte_reader(b.data, b.len - (b.len >= 4 ? 4 : b.len), "checkpoint", err, errlen);
    if (b.len < 4 || load_le(b.data + b.len - 4, 4) != (uint32_t)crc32(0L, b.data, (uInt)(b.len - 4)))
        br_fail(&rd, "damaged (its CRC does not match)");
    if (br_u32(&rd) != CHECKPOINT_MAGIC || br_u32(&rd) != CHECKPOINT_VERSION) br_fail(&rd, "not a checkpoint of this attnsweep");
    size_t n;
    const char *config = br_text(&rd, SIZE_MAX, &n, "configuration");
    char *want = config_to_json_text(&run->r->config);
    if (config && (n != strlen(want) || memcmp(config, want, n))) br_fail(&rd, "of another configuration");
    cJSON_free(want);
    const uint32_t size = br_u32(&rd);
    if (!rd.failed && size != (uint32_t)run->size) br_fail(&rd, "of a group of %u ranks, this one has %d", size, run->size);
    const unsigned char *part = br_blob(&rd, &n, "trial");
    TrialResult sofar;
    char why[256];
    if (part && trial_unpack(&sofar, part, n, why, sizeof why) != 0) br_fail(&rd, "%s", why);
    else if (part) {
        InvariantTrace *t = &run->r->trace;
        if (sofar.trace.n && (sofar.trace.layers != t->layers || sofar.trace.groups != t->groups))
            br_fail(&rd, "an invariant trace of another shape");
        else
            sofar.trace.layers = t->layers, sofar.trace.groups = t->groups, *t = sofar.trace, sofar.trace = (InvariantTrace){0};
        trial_result_free(&sofar);
    }
    const unsigned char *shared = br_blob(&rd, &n, "shared state");
    ByteReader sub = byte_reader(shared, shared ? n : 0, "checkpoint's shared state", why, sizeof why);
    if (shared && checkpoint_load_shared(&sub, m, st) != 0) br_fail(&rd, "%s", why);
    for (int k = 0; k < run->size && !rd.failed; k++) {
        const unsigned char *mine = br_blob(&rd, &n, "rank state");
        if (k != run->rank || !mine) continue;
        sub = byte_reader(mine, n, "checkpoint's rank state", why, sizeof why);
        if (checkpoint_load_rank(&sub, data, st) != 0) br_fail(&rd, "%s", why);
    }
    if (!rd.failed && rd.left) br_fail(&rd, "%zu bytes after its end", rd.left);
    bytes_free(&b);
    return rd.failed ? -1 : 0;
}

// A checkpoint in the trial's directory: the run continues from it; a damaged or foreign
// one is ignored, and the trial starts again from step 0.
static void continue_checkpoint(Run *run, Model *m, Dataset *data, TrainState *st, long total) {
    char err[512];
    const int rc = load_checkpoint(run, m, data, st, err, sizeof err);
    const TrialHooks *h = run->hooks;
    if (rc > 0) return;
    if (rc < 0) {
        if (run->rank == 0) warnf("%s: %s; the trial starts from step 0", h->trial_dir, err);
        const TrialConfig c = m->cfg;
        const DatasetInfo info = dataset_info(data);
        const int B = m->B;
        model_free(m);
        if (model_init(m, &c, &info, B) != 0) die(EXIT_RUNTIME, "out of memory making the model again");
        train_state_free(st);
        train_state_init(st, &c, total);
        dataset_restart(data);
        InvariantTrace *t = &run->r->trace;
        const int layers = t->layers, groups = t->groups;
        free(t->step), free(t->correlation), free(t->eff_rank), free(t->head_sv);
        *t = (InvariantTrace){.layers = layers, .groups = groups};
        return;
    }
    if (h->progress) fprintf(h->progress, "continuing from the checkpoint at step %ld\n", st->step);
    if (!h->on_resume) return;
    EvalPoint *evals = xmalloc(((size_t)st->n_curve + 1) * sizeof *evals);
    for (int i = 0; i < st->n_curve; i++) evals[i] = trial_eval_point(run->r, &st->curve[i], h->reward);
    h->on_resume(h->ctx, st->step, evals, st->n_curve, total);
    free(evals);
}

// ---------------------------------------------------------------- memory

// Refuse a trial whose estimated peak over the group exceeds the limit: what each rank
// holds now (the data included) plus what its model will allocate.
static int over_memory(const TrialHooks *h, const TrialConfig *c, const DatasetInfo *info, TrialResult *r) {
    if (h->mem_limit <= 0) return 0;
    const size_t model = model_bytes(c, info, train_model_rows(c, info, h->group), train_lanes(c, info, h->group));
    double need[2] = {(double)current_rss_bytes() + (double)model, 1};
    if (h->group) MPI_Allreduce(MPI_IN_PLACE, need, 2, MPI_DOUBLE, MPI_SUM, *h->group);
    if (need[0] <= h->mem_limit) return 0;
    r->status = TRIAL_FAILED;
    snprintf(r->reason, sizeof r->reason,
             "needs an estimated %.0f MB (its model, optimizer and activations and what its %.0f rank%s hold%s), more "
             "than resources.mem %.0f MB",
             need[0] / (1 << 20), need[1], need[1] == 1 ? "" : "s", need[1] == 1 ? "s" : "", h->mem_limit / (1 << 20));
    return 1;
}

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
    if (b->Q) dataset_set_input_transform(b->data, b->Q, b->q_dim);
    const DatasetInfo info = dataset_info(b->data);
    if (over_memory(hooks, c, &info, r)) return;
    Model m;
    if (model_init(&m, c, &info, train_model_rows(c, &info, hooks->group)) != 0) {
        r->status = TRIAL_FAILED;
        snprintf(r->reason, sizeof r->reason, "out of memory allocating the model and its activations");
        return;
    }
    r->n_layers = m.L;
    memcpy(r->dims, m.scored_dims, sizeof r->dims);
    memcpy(r->out_dims, m.scored_out_dims, sizeof r->out_dims);
    r->n_params = m.n_params;
    r->flops_per_step = model_flops_per_step(&m, train_rank_rows(c, hooks->group));
    if (hooks->grid) {
        const LayerWeights lw = trial_weights(r, NULL, NULL);
        int sdims[4];
        scored_dims(sdims, &lw, hooks->reward->tensor);
        r->trace.layers = m.L, r->trace.groups = sdims[0];
    }
    if (hooks->progress) {
        const int threads = kernel_threads();
        fprintf(hooks->progress,
                "training %s on %s: d_model %d, %d heads, %d layers, %ld parameters, %ld steps of %d, seed %d, %d "
                "thread%s\n",
                attention_names[c->attention], task_names[c->task], c->d_model, c->heads, c->layers, m.n_params,
                train_total_steps(c, info.n_train), c->batch, c->seed, threads, threads == 1 ? "" : "s");
        fflush(hooks->progress);
    }

    Run run = {.hooks = hooks, .r = r, .rank = 0, .size = 1};
    if (hooks->group) MPI_Comm_rank(*hooks->group, &run.rank), MPI_Comm_size(*hooks->group, &run.size);
    const long total = train_total_steps(c, info.n_train);
    TrainState st;
    train_state_init(&st, c, total);
    if (hooks->trial_dir) continue_checkpoint(&run, &m, b->data, &st, total);
    const TrainHooks th = {.on_eval = at_eval, .should_stop = should_stop, .ctx = &run,
                           .time_limit = hooks->time_limit, .group = hooks->group,
                           .checkpoint = hooks->trial_dir ? save_checkpoint : NULL,
                           .checkpoint_every = hooks->checkpoint_every, .resume = &st};
    Training t;
    train_model(&m, b->data, c, &th, &t);
    train_state_free(&st);
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
    free(b->Q);
    free(b);
}

TrialRunner *trial_builtin_runner(void) {
    Builtin *b = xcalloc(1, sizeof *b);
    b->runner = (TrialRunner){.run = builtin_run, .free = builtin_free};
    return &b->runner;
}

TrialRunner *trial_builtin_runner_transformed(const float *Q, int dim) {
    Builtin *b = (Builtin *)trial_builtin_runner();
    b->Q = xmalloc((size_t)dim * dim * sizeof(float));
    memcpy(b->Q, Q, (size_t)dim * dim * sizeof(float));
    b->q_dim = dim;
    return &b->runner;
}
