// A rank's threads share the work of a step (src/model/threads.h): the results must not
// depend on timing, so two runs with the same thread count agree bit for bit, and a
// different thread count changes at most the order of sums over rows. Every kernel that
// is split among threads (the GEMM wrapper's blocks of rows or columns too) is run with
// 1 and with 2 threads (kernel_threads_set), then one whole training step of each
// attention variant, and a step over micro-batches that 2 threads run on two lanes; and
// OpenBLAS runs on one thread while the threads are the model's.
// modules: model
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gradcheck.h"
#include "model/adamw.h"
#include "model/attention.h"
#include "model/layers.h"
#include "model/matmul.h"
#include "model/model.h"
#include "model/threads.h"
#include "model/train.h"

static unsigned seed = 777;

static float *rnd(long n, double scale) {
    float *x = malloc((size_t)n * sizeof(float));
    gc_fill(x, n, scale, &seed);
    return x;
}

// Outputs of the kernels on fixed inputs, concatenated, for a given thread count.
typedef struct {
    float *v;
    long n;
} Outputs;

static void put(Outputs *o, const float *x, long n) {
    o->v = realloc(o->v, (size_t)(o->n + n) * sizeof(float));
    memcpy(o->v + o->n, x, (size_t)n * sizeof(float));
    o->n += n;
}

static Outputs run_kernels(int threads) {
    kernel_threads_set(threads);
    Outputs o = {0};
    seed = 777;
    const int N = 301, C = 24, F = 40, K = 11, B = 3, T = 70, NH = 2, CA = 32;
    // The GEMM wrapper, split by rows (M >= N) and by columns, every transposition, beta 0 and 1.
    for (int shape = 0; shape < 2; shape++)
        for (int ta = 0; ta <= 1; ta++)
            for (int tb = 0; tb <= 1; tb++) {
                const int gm = shape ? 45 : 333, gn = shape ? 333 : 45, gk = 70;
                float *ga = rnd((long)gm * gk, 1.0), *gb = rnd((long)gk * gn, 1.0), *gc = rnd((long)gm * gn, 1.0);
                gemm(ta, tb, gm, gn, gk, 0.5f, ga, ta ? gm : gk, gb, tb ? gk : gn, (float)(ta ^ tb), gc, gn);
                put(&o, gc, (long)gm * gn);
                free(ga), free(gb), free(gc);
            }
    // The dense layer with its bias (written by each thread into its own block), the
    // weight's gradient (per-thread products over each thread's rows) and the bias's
    // (per-thread column sums), split by rows and by columns.
    for (int shape = 0; shape < 2; shape++) {
        const int dn = shape ? 45 : 1500, dc = 20, doc = shape ? 1500 : 50;
        float *x = rnd((long)dn * dc, 1.0), *dwt = rnd((long)doc * dc, 1.0), *dbs = rnd(doc, 1.0);
        float *y = calloc((size_t)dn * doc, sizeof(float)), *dy = rnd((long)dn * doc, 1.0);
        float *dgw = calloc((size_t)doc * dc, sizeof(float)), *dgb = calloc(doc, sizeof(float));
        matmul_forward(y, x, dwt, dbs, dn, dc, doc);
        matmul_backward(NULL, dgw, dgb, dy, x, dwt, dn, dc, doc);
        put(&o, y, (long)dn * doc), put(&o, dgw, (long)doc * dc), put(&o, dgb, doc);
        free(x), free(dwt), free(dbs), free(y), free(dy), free(dgw), free(dgb);
    }
    // LayerNorm with the fused residual, forward and backward.
    float *res = rnd((long)N * C, 2.0), *add = rnd((long)N * C, 1.0), *ab = rnd(C, 1.0), *w = rnd(C, 1.0);
    float *b = rnd(C, 1.0), *out = calloc((size_t)N * C, sizeof(float)), *mean = calloc(N, sizeof(float));
    float *rstd = calloc(N, sizeof(float)), *dout = rnd((long)N * C, 1.0), *dx = calloc((size_t)N * C, sizeof(float));
    float *dw = calloc(C, sizeof(float)), *db = calloc(C, sizeof(float));
    layernorm_forward(out, mean, rstd, res, add, ab, w, b, N, C);
    layernorm_backward(dx, dw, db, dout, res, w, mean, rstd, N, C);
    put(&o, out, (long)N * C), put(&o, res, (long)N * C), put(&o, dx, (long)N * C), put(&o, dw, C), put(&o, db, C);
    // GELU with its bias.
    float *pre = rnd((long)N * F, 3.0), *gb = rnd(F, 1.0), *gy = calloc((size_t)N * F, sizeof(float));
    float *gd = rnd((long)N * F, 1.0), *gdb = calloc(F, sizeof(float));
    gelu_forward(gy, pre, gb, N, F);
    gelu_backward(gd, gdb, pre, N, F);
    put(&o, gy, (long)N * F), put(&o, gd, (long)N * F), put(&o, gdb, F);
    // Cross-entropy, some rows without a target.
    float *logits = rnd((long)N * K, 3.0), *probs = calloc((size_t)N * K, sizeof(float));
    float *dl = calloc((size_t)N * K, sizeof(float));
    int *targets = malloc(N * sizeof(int));
    for (int n = 0; n < N; n++) targets[n] = n % 7 == 3 ? -1 : n % K;
    long count, correct;
    float loss = (float)crossentropy_forward(probs, logits, targets, N, K, &count, &correct);
    crossentropy_backward(dl, probs, targets, 1.0f / (float)count, N, K);
    float counts[2] = {(float)count, (float)correct};
    put(&o, &loss, 1), put(&o, counts, 2), put(&o, probs, (long)N * K), put(&o, dl, (long)N * K);
    // Gradient clipping (the norm too) and AdamW over an arena of odd-sized entries.
    Arena arena = {0};
    float *p1, *p2, *p3;
    arena_reserve(&arena, &p1, 1000, "a", ARENA_DECAY);
    arena_reserve(&arena, &p2, 37, "b", 0);
    arena_reserve(&arena, &p3, 501, "c", ARENA_DECAY);
    arena_commit(&arena);
    gc_fill(arena.mem, (long)arena.total, 1.0, &seed);
    float *g = rnd((long)arena.total, 3.0), *m = calloc(arena.total, sizeof(float)), *v = calloc(arena.total, sizeof(float));
    float norm = (float)clip_grad_norm(g, arena.total, 1.0);
    adamw_update(&arena, g, m, v, 1, 1e-2, 0.1);
    put(&o, &norm, 1), put(&o, g, (long)arena.total), put(&o, arena.mem, (long)arena.total);
    // The attention cores (heads are shared among threads whole).
    float *qkv = rnd((long)B * T * 3 * CA, 1.5), *ao = calloc((size_t)B * T * CA, sizeof(float));
    float *saved = calloc(attn_saved_floats(B, T, NH), sizeof(float)), *ad = rnd((long)B * T * CA, 1.0);
    float *dqkv = calloc((size_t)B * T * 3 * CA, sizeof(float));
    for (int linear = 0; linear <= 1; linear++)
        for (int causal = 0; causal <= 1; causal++) {
            if (linear) {
                attn_linear_forward(ao, saved, qkv, B, T, CA, NH, causal);
                attn_linear_backward(dqkv, ad, ao, saved, qkv, B, T, CA, NH, causal);
            } else {
                attn_softmax_forward(ao, saved, qkv, B, T, CA, NH, causal);
                attn_softmax_backward(dqkv, ad, ao, saved, qkv, B, T, CA, NH, causal);
            }
            put(&o, ao, (long)B * T * CA), put(&o, dqkv, (long)B * T * 3 * CA);
        }
    free(res), free(add), free(ab), free(w), free(b), free(out), free(mean), free(rstd), free(dout), free(dx);
    free(dw), free(db), free(pre), free(gb), free(gy), free(gd), free(gdb), free(logits), free(probs), free(dl);
    free(targets), free(g), free(m), free(v), arena_free(&arena), free(qkv), free(ao), free(saved), free(ad);
    free(dqkv);
    return o;
}

// One training step of a small causal decoder (every block kernel, 2 blocks): the
// gradient arena after model_backward (the loss is their sum's source).
static Outputs run_step(AttnKind att, int threads) {
    kernel_threads_set(threads);
    TrialConfig c;
    config_defaults(&c);
    c.task = TASK_CHARLM, c.attention = att, c.d_model = 32, c.heads = 2, c.layers = 2;
    DatasetInfo info = {.kind = TASK_CHARLM, .seq_len = 80, .vocab = 256, .n_classes = 256};
    const int B = 3;
    Model m;
    model_init(&m, &c, &info, B);
    Batch batch = {.B = B, .rows = B, .tokens = malloc(B * 80 * sizeof(int)), .targets = malloc(B * 80 * sizeof(int))};
    for (int i = 0; i < B * 80; i++) batch.tokens[i] = (i * 37) % 256, batch.targets[i] = (i * 11) % 256;
    long count, correct;
    model_forward(&m, &batch, &count, &correct);
    model_backward(&m, &batch, count);
    Outputs o = {0};
    put(&o, m.grads_arena.mem, (long)m.grads_arena.total);
    free(batch.tokens), free(batch.targets);
    model_free(&m);
    return o;
}

// A step over micro-batches (model/train.c: micro_passes), which with 2 threads runs
// them on two lanes at once and adds the second lane's gradients to the model's: the
// gradient arena after model_backward_finish, the mean loss and the accuracy. 7 rows in micro-batches of 2: lane 0 takes two, lane 1 two (the last
// one row).
static Outputs run_lanes(AttnKind att, int threads) {
    kernel_threads_set(threads);
    TrialConfig c;
    config_defaults(&c);
    c.task = TASK_CHARLM, c.attention = att, c.d_model = 32, c.heads = 2, c.layers = 2, c.core_rank = 2;
    const DatasetInfo info = {.kind = TASK_CHARLM, .seq_len = 40, .vocab = 256, .n_classes = 256};
    const int rows = 7;
    Model m;
    model_init(&m, &c, &info, 2);
    Batch batch = batch_alloc(&info, rows);
    for (int i = 0; i < rows * 40; i++) batch.tokens[i] = (i * 37) % 256, batch.targets[i] = (i * 13) % 256;
    MicroBatches u = micro_batches(&info, &m, rows);
    CHECK(u.lanes == threads, "%s: %d lanes with %d threads", attention_names[att], u.lanes, threads);
    double sums[3] = {0.0, 0.0, 0.0};
    model_zero_grads(&m);
    micro_passes(&m, &u, &batch, rows, 1, sums);
    model_backward_finish(&m, (float)(1.0 / sums[1]));
    Outputs o = {0};
    put(&o, m.grads_arena.mem, (long)m.grads_arena.total);
    CHECK(sums[1] == rows * 40, "%s, %d threads: %g predictions (want %d)", attention_names[att], threads, sums[1],
          rows * 40);
    const float f[2] = {(float)(sums[0] / sums[1]), (float)(sums[2] / sums[1])};  // mean loss, accuracy
    put(&o, f, 2);
    micro_batches_free(&u);
    batch_free(&batch);
    model_free(&m);
    return o;
}

static void compare(const char *what, Outputs one, Outputs two, Outputs two_again) {
    CHECK(one.n == two.n && two.n == two_again.n, "%s: output sizes differ", what);
    CHECK_ALL_CLOSE(two_again.v, two.v, two.n, 0.0, 0.0, "%s: two runs with 2 threads", what);
    double scale = 0.0;
    for (long i = 0; i < one.n; i++) scale = worst_diff(scale, one.v[i], 0.0);
    const double diff = CHECK_ALL_CLOSE(two.v, one.v, one.n, 1e-6 * scale, 1e-5, "%s: 2 threads against 1", what);
    printf("  %-28s n=%-7ld 2 threads twice: identical; against 1 thread: max diff %.3g (max |x| %.3g)\n", what, one.n,
           diff, scale);
    free(one.v), free(two.v), free(two_again.v);
}

int main(void) {
    compare("kernels", run_kernels(1), run_kernels(2), run_kernels(2));
    kernel_threads_set(2);
    openblas_set_num_threads(2);
    CHECK(kernel_threads() == 2 && openblas_get_num_threads() == 1,
          "while the model's threads run, OpenBLAS has %d threads (want 1)", openblas_get_num_threads());
    kernel_threads_release();
    CHECK(openblas_get_num_threads() == 2, "kernel_threads_release left OpenBLAS %d threads (want 2)",
          openblas_get_num_threads());
    for (AttnKind k = 0; k < ATTN_COUNT; k++) {
        char what[64];
        snprintf(what, sizeof what, "training step, %s", attention_names[k]);
        compare(what, run_step(k, 1), run_step(k, 2), run_step(k, 2));
        snprintf(what, sizeof what, "micro-batches on lanes, %s", attention_names[k]);
        compare(what, run_lanes(k, 1), run_lanes(k, 2), run_lanes(k, 2));
    }
    return check_report("test_threads");
}
