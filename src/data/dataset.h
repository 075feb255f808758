// dataset.h: the three tasks behind one interface, with fixed held-out splits.
//
//   fashion_mnist  28×28 images, 10 classes; train 60 000, held out: the 10 000 test images.
//   charlm         bytes of the fortune texts; every 10th fortune is held out.
//   recall         multi-query associative recall, generated from the seed.
//
// A batch holds either images (encoder tasks) or token sequences (decoder tasks)
// and integer targets; a target of -1 means "no prediction here" (padding rows of a
// partial held-out batch, and the recall positions that are not query answers).
#ifndef ATTN_DATASET_H
#define ATTN_DATASET_H

#include <gsl/gsl_rng.h>

#include "common/config.h"

enum { IMG_SIDE = 28, IMG_PIXELS = 784 };

typedef struct Dataset Dataset;  // opaque: each task keeps its own state

typedef struct {
    int kind;       // TaskKind
    int seq_len;    // T: tokens per sequence (decoder tasks); 0 for images
    int vocab;      // input vocabulary (decoder tasks); 0 for images
    int n_classes;  // classes per prediction: 10, 256, recall_vocab
    long n_train;   // training examples in one epoch (images, windows, sequences)
    long n_eval;    // held-out examples
} DatasetInfo;

typedef struct {
    int B;          // rows
    float *images;  // (B, 784) normalised pixels, fashion_mnist only, else NULL
    int *tokens;    // (B, T) input tokens, decoder tasks only, else NULL
    int *targets;   // (B) for images, (B, T) for decoder tasks; -1 = ignore
} Batch;

// Opens (loads or generates) the task's data. Missing or malformed data files end
// the program with one line naming the file and exit code 2.
Dataset *dataset_open(const TrialConfig *c);
void dataset_free(Dataset *d);
DatasetInfo dataset_info(const Dataset *d);

// Whether d holds the data c asks for (same task, data directory and the task's shape
// parameters), so a sweep worker can keep it across trials instead of reloading.
int dataset_serves(const Dataset *d, const TrialConfig *c);
// Back to the state dataset_open leaves (the next training batch starts a fresh epoch
// from the identity order), so a reused dataset gives a trial the same batches as a
// freshly opened one.
void dataset_restart(Dataset *d);

Batch batch_alloc(const DatasetInfo *info, int B);
void batch_free(Batch *b);

// The next training batch. fashion_mnist walks a fresh permutation each epoch,
// charlm draws random windows, recall generates new sequences; all from `rng`.
void dataset_train_batch(Dataset *d, Batch *b, gsl_rng *rng);
// Held-out examples [start, start + B); rows past the end get targets -1.
// Returns the number of real rows. The held-out set is the same for every seed.
int dataset_eval_batch(const Dataset *d, Batch *b, long start);

#endif
