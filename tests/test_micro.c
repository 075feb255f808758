// A training step over micro-batches (model/train.c) is the step over the whole batch:
// the same loss and, up to the order of float sums, the same gradient. For every attention
// variant, the paper's Grassmann block and the image encoder, a model made for the whole
// batch takes model_backward on it, and a twin from the same seed made for a third of it
// takes model_zero_grads, three forward passes each with model_backward_add, and
// model_backward_finish with the mean's scale. The penalties are on (orthogonality,
// nuclear norm, stability), so the penalty's gradient is seen to be added once, not once
// per micro-batch, and tucker's generated weight to be scaled with the rest. The whole
// batch of the character LM has 600 rows, more than a slice of the per-token sublayers
// (SLICE_ROWS, 512, in model.c), its thirds fewer: the sliced pass against the unsliced.
// Then train_model_rows: the micro-batch sizes a step is cut into, with 1 and 2 threads.
// modules: model
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/threads.h"
#include "model/train.h"

enum { ROWS = 6, PARTS = 3, LM_T = 100 };

static Batch make_batch(const DatasetInfo *info, int B) {
    Batch b = batch_alloc(info, B);
    if (b.images) {
        for (long i = 0; i < (long)B * 784; i++) b.images[i] = (float)((i * 7919) % 257) / 257.0f - 0.5f;
        for (int r = 0; r < B; r++) b.targets[r] = (r * 3) % 10;
    } else {
        for (int i = 0; i < B * info->seq_len; i++)
            b.tokens[i] = (i * 37) % info->vocab, b.targets[i] = i % 5 == 0 ? -1 : (i * 11) % info->n_classes;
    }
    return b;
}

static void compare_step(const char *what, TrialConfig c, const DatasetInfo *info) {
    c.lambda_orth = 0.01, c.lambda_nuclear = 0.001, c.lambda_stability = 0.01;
    Model whole, part;
    CHECK(model_init(&whole, &c, info, ROWS) == 0 && model_init(&part, &c, info, ROWS / PARTS) == 0,
          "%s: model_init", what);
    Batch batch = make_batch(info, ROWS), micro = batch_alloc(info, ROWS / PARTS);

    long count, correct;
    const double loss = model_forward(&whole, &batch, &count, &correct);
    const double penalty = model_backward(&whole, &batch, (double)count);

    double sums[2] = {0.0, 0.0};
    model_zero_grads(&part);
    for (int k = 0; k < PARTS; k++) {
        long cnt, ok;
        batch_take_rows(&micro, &batch, k * (ROWS / PARTS), ROWS / PARTS, info);
        sums[0] += model_forward(&part, &micro, &cnt, &ok);
        sums[1] += (double)cnt;
        model_backward_add(&part, &micro);
    }
    const double penalty_micro = model_backward_finish(&part, (float)(1.0 / sums[1]));

    CHECK(sums[1] == (double)count, "%s: %g predictions over the micro-batches, %ld in the batch", what, sums[1],
          count);
    CHECK_CLOSE(sums[0], loss, 1e-9, 1e-5, "%s: summed loss", what);
    CHECK_CLOSE(penalty_micro, penalty, 1e-12, 1e-6, "%s: penalty", what);
    CHECK(penalty > 0.0, "%s: the penalties are on (%g)", what, penalty);
    const long n = (long)whole.grads_arena.total;
    double scale = 0.0;
    for (long i = 0; i < n; i++) scale = worst_diff(scale, whole.grads_arena.mem[i], 0.0);
    const double diff = CHECK_ALL_CLOSE(part.grads_arena.mem, whole.grads_arena.mem, n, 1e-6 * scale, 1e-4,
                                        "%s: gradient over %d micro-batches against the whole batch", what, PARTS);
    printf("  %-24s loss %.6f, %ld parameters: max gradient diff %.3g (max |g| %.3g)\n", what, loss / count, n, diff,
           scale);
    batch_free(&batch), batch_free(&micro);
    model_free(&whole), model_free(&part);
}

int main(void) {
    const DatasetInfo lm = {.kind = TASK_CHARLM, .seq_len = LM_T, .vocab = 256, .n_classes = 256};
    const DatasetInfo img = {.kind = TASK_FASHION_MNIST, .n_classes = 10};
    for (AttnKind k = 0; k < ATTN_COUNT; k++) {
        TrialConfig c;
        config_defaults(&c);
        c.task = TASK_CHARLM, c.attention = k, c.d_model = 32, c.heads = 2, c.layers = 2, c.core_rank = 2;
        compare_step(attention_names[k], c, &lm);
        if (k == ATTN_GRASSMANN) {
            c.grassmann_block = GRASSMANN_PAPER;
            compare_step("grassmann, paper block", c, &lm);
        }
    }
    TrialConfig c;
    config_defaults(&c);
    compare_step("mha, image encoder", c, &img);

    // The default ViT's 128 rows of 17 tokens: 5 micro-batches of 26 (about 512 tokens);
    // 64 sequences of 64 bytes: 8 of 8; sequences longer than 512 tokens: one at a time; a
    // share of 8 × 64 tokens: one pass.
    kernel_threads_set(1);
    config_defaults(&c);
    CHECK(train_model_rows(&c, &img, NULL) == 26, "ViT: %d rows a micro-batch (want 26)",
          train_model_rows(&c, &img, NULL));
    c.batch = 64;
    DatasetInfo seq = {.kind = TASK_CHARLM, .seq_len = 64, .vocab = 256, .n_classes = 256};
    CHECK(train_model_rows(&c, &seq, NULL) == 8, "64 × 64: %d rows (want 8)", train_model_rows(&c, &seq, NULL));
    seq.seq_len = 2048;
    CHECK(train_model_rows(&c, &seq, NULL) == 1, "64 × 2048: %d rows (want 1)", train_model_rows(&c, &seq, NULL));
    c.batch = 8, seq.seq_len = 64;
    CHECK(train_model_rows(&c, &seq, NULL) == 8, "8 × 64: %d rows (want 8)", train_model_rows(&c, &seq, NULL));
    c.batch = 100, seq.seq_len = 10;
    CHECK(train_model_rows(&c, &seq, NULL) == 50, "100 × 10: %d rows (want 2 of 50)",
          train_model_rows(&c, &seq, NULL));
    // With 2 threads, an even number of micro-batches, one lane a thread: the ViT's 128
    // rows in 6 of 22 (the last 18), 8 × 64 tokens in 2 of 4; a share of one row: one
    // micro-batch, one lane.
    kernel_threads_set(2);
    config_defaults(&c);
    CHECK(train_model_rows(&c, &img, NULL) == 22 && train_lanes(&c, &img, NULL) == 2,
          "ViT, 2 threads: %d rows a micro-batch (want 22), %d lanes (want 2)", train_model_rows(&c, &img, NULL),
          train_lanes(&c, &img, NULL));
    c.batch = 8;
    CHECK(train_model_rows(&c, &seq, NULL) == 4 && train_lanes(&c, &seq, NULL) == 2,
          "8 × 64, 2 threads: %d rows (want 4), %d lanes (want 2)", train_model_rows(&c, &seq, NULL),
          train_lanes(&c, &seq, NULL));
    c.batch = 1;
    CHECK(train_model_rows(&c, &seq, NULL) == 1 && train_lanes(&c, &seq, NULL) == 1,
          "1 × 64, 2 threads: %d rows (want 1), %d lanes (want 1)", train_model_rows(&c, &seq, NULL),
          train_lanes(&c, &seq, NULL));
    return check_report("test_micro");
}
