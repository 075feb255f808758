// dataset.c: dispatch from the one Dataset interface to the three tasks (tasks.h),
// plus what they share: batch buffers and the padding of a partial held-out batch.
#include "data/dataset.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "data/tasks.h"

struct Dataset {
    DatasetInfo info;
    TrialConfig opened;  // the configuration it was opened for (dataset_serves)
    union {
        FashionMnist *fm;
        CharLM *lm;
        Recall *rc;
    } task;  // the member named by info.kind
};

Dataset *dataset_open(const TrialConfig *c) {
    Dataset *d = xcalloc(1, sizeof *d);
    d->info.kind = c->task;
    d->opened = *c;
    switch (c->task) {
    case TASK_FASHION_MNIST: d->task.fm = fashion_mnist_open(c, &d->info); break;
    case TASK_CHARLM: d->task.lm = charlm_open(c, &d->info); break;
    case TASK_RECALL: d->task.rc = recall_open(c, &d->info); break;
    default: die(EXIT_BADINPUT, "unknown task %d", c->task);
    }
    return d;
}

void dataset_free(Dataset *d) {
    if (!d) return;
    switch (d->info.kind) {
    case TASK_FASHION_MNIST: fashion_mnist_free(d->task.fm); break;
    case TASK_CHARLM: charlm_free(d->task.lm); break;
    case TASK_RECALL: recall_free(d->task.rc); break;
    }
    free(d);
}

DatasetInfo dataset_info(const Dataset *d) { return d->info; }

int dataset_serves(const Dataset *d, const TrialConfig *c) {
    const TrialConfig *o = &d->opened;
    if (o->task != c->task || strcmp(o->data_dir, c->data_dir) != 0) return 0;
    switch (c->task) {
    case TASK_CHARLM: return o->seq_len == c->seq_len;
    case TASK_RECALL: return o->recall_pairs == c->recall_pairs && o->recall_vocab == c->recall_vocab;
    default: return 1;
    }
}

void dataset_restart(Dataset *d) {
    if (d->info.kind == TASK_FASHION_MNIST) fashion_mnist_restart(d->task.fm);
    // charlm and recall draw every batch from the caller's rng: nothing to reset.
}

void dataset_save_position(const Dataset *d, Bytes *b) {
    if (d->info.kind == TASK_FASHION_MNIST) fashion_mnist_save_position(d->task.fm, b);
}

int dataset_restore_position(Dataset *d, ByteReader *rd) {
    return d->info.kind == TASK_FASHION_MNIST ? fashion_mnist_restore_position(d->task.fm, rd) : 0;
}

Batch batch_alloc(const DatasetInfo *info, int B) {
    Batch b = {.B = B};
    if (info->kind == TASK_FASHION_MNIST) {
        b.images = xcalloc((size_t)B * IMG_PIXELS, sizeof(float));
        b.targets = xcalloc((size_t)B, sizeof(int));
    } else {
        b.tokens = xcalloc((size_t)B * info->seq_len, sizeof(int));
        b.targets = xcalloc((size_t)B * info->seq_len, sizeof(int));
    }
    return b;
}

void batch_free(Batch *b) {
    free(b->images);
    free(b->tokens);
    free(b->targets);
    *b = (Batch){0};
}

void dataset_train_batch(Dataset *d, Batch *b, gsl_rng *rng) {
    switch (d->info.kind) {
    case TASK_FASHION_MNIST: fashion_mnist_train_batch(d->task.fm, b, rng); break;
    case TASK_CHARLM: charlm_train_batch(d->task.lm, b, rng); break;
    case TASK_RECALL: recall_train_batch(d->task.rc, b, rng); break;
    }
}

int dataset_eval_batch(const Dataset *d, EvalSplit split, Batch *b, long start) {
    long left = start < 0 ? 0 : (split == SPLIT_VAL ? d->info.n_val : d->info.n_test) - start;
    int rows = left <= 0 ? 0 : left < b->B ? (int)left : b->B;
    if (rows > 0) {
        switch (d->info.kind) {
        case TASK_FASHION_MNIST: fashion_mnist_eval_rows(d->task.fm, split, b, start, rows); break;
        case TASK_CHARLM: charlm_eval_rows(d->task.lm, split, b, start, rows); break;
        case TASK_RECALL: recall_eval_rows(d->task.rc, split, b, start, rows); break;
        }
    }

    // rows [rows, B) are padding: zero inputs, nothing to predict
    size_t pad = (size_t)(b->B - rows);
    if (b->images) memset(b->images + (size_t)rows * IMG_PIXELS, 0, pad * IMG_PIXELS * sizeof(float));
    size_t T = b->tokens ? (size_t)d->info.seq_len : 1;  // targets per row
    if (b->tokens) memset(b->tokens + (size_t)rows * T, 0, pad * T * sizeof(int));
    for (size_t i = (size_t)rows * T; i < (size_t)b->B * T; i++) b->targets[i] = -1;
    return rows;
}
