// dataset.c: dispatch from the one Dataset interface to the three tasks (tasks.h),
// plus what they share: batch buffers and the padding of a partial held-out batch.
#include "data/dataset.h"

#include <cblas.h>
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
    float *Q;  // the input transform (dataset_set_input_transform), or NULL
    int q_dim;
};

static void images_transform(float *images, long n, const float *Q, int dim);

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
    free(d->Q);
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
    Batch b = {.B = B, .rows = B};
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
    if (d->Q) images_transform(b->images, b->B, d->Q, d->q_dim);
    b->rows = b->B;
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
        if (d->Q) images_transform(b->images, rows, d->Q, d->q_dim);
    }

    batch_pad(b, rows, &d->info);
    return rows;
}

void dataset_set_input_transform(Dataset *d, const float *Q, int dim) {
    if (d->info.kind != TASK_FASHION_MNIST || (dim != IMG_PIXELS && dim != PATCH_PIXELS))
        die(EXIT_RUNTIME, "internal error: an input transform of dimension %d on task %d", dim, d->info.kind);
    free(d->Q);
    d->Q = xmalloc((size_t)dim * dim * sizeof(float));
    memcpy(d->Q, Q, (size_t)dim * dim * sizeof(float));
    d->q_dim = dim;
}

// Pixel i·7 + j of patch p = 4·pr + pc is image pixel (7·pr + i)·28 + 7·pc + j, the order
// of the patch embedding (model/embed.c).
static long patch_pixel(int p, int k) {
    const int pr = p / 4, pc = p % 4, i = k / 7, j = k % 7;
    return (long)(7 * pr + i) * IMG_SIDE + 7 * pc + j;
}

// x ↦ Q x on n images (n × 784), as dataset_set_input_transform describes.
static void images_transform(float *images, long n, const float *Q, int dim) {
    if (n <= 0) return;
    if (dim == IMG_PIXELS) {  // X ← X Qᵀ, one image a row
        float *y = xmalloc((size_t)n * IMG_PIXELS * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, IMG_PIXELS, IMG_PIXELS, 1.0f, images,
                    IMG_PIXELS, Q, IMG_PIXELS, 0.0f, y, IMG_PIXELS);
        memcpy(images, y, (size_t)n * IMG_PIXELS * sizeof(float));
        free(y);
        return;
    }
    float x[PATCH_PIXELS];
    for (long b = 0; b < n; b++) {
        float *img = images + b * IMG_PIXELS;
        for (int p = 0; p < 16; p++) {
            for (int k = 0; k < PATCH_PIXELS; k++) x[k] = img[patch_pixel(p, k)];
            for (int r = 0; r < PATCH_PIXELS; r++) {
                float acc = 0.0f;
                for (int k = 0; k < PATCH_PIXELS; k++) acc += Q[r * PATCH_PIXELS + k] * x[k];
                img[patch_pixel(p, r)] = acc;
            }
        }
    }
}

void batch_pad(Batch *b, int rows, const DatasetInfo *info) {
    const size_t pad = (size_t)(b->B - rows);
    b->rows = rows;
    const size_t T = b->tokens ? (size_t)info->seq_len : 1;  // targets per row
    if (b->images) memset(b->images + (size_t)rows * IMG_PIXELS, 0, pad * IMG_PIXELS * sizeof(float));
    if (b->tokens) memset(b->tokens + (size_t)rows * T, 0, pad * T * sizeof(int));
    for (size_t i = (size_t)rows * T; i < (size_t)b->B * T; i++) b->targets[i] = -1;
}

void batch_take_rows(Batch *dst, const Batch *src, int start, int n, const DatasetInfo *info) {
    const size_t T = src->tokens ? (size_t)info->seq_len : 1;
    if (src->images)
        memcpy(dst->images, src->images + (size_t)start * IMG_PIXELS, (size_t)n * IMG_PIXELS * sizeof(float));
    if (src->tokens) memcpy(dst->tokens, src->tokens + (size_t)start * T, (size_t)n * T * sizeof(int));
    memcpy(dst->targets, src->targets + (size_t)start * T, (size_t)n * T * sizeof(int));
    batch_pad(dst, n, info);
}
