// dataset.h: the three tasks behind one interface, each with fixed training, validation
// and test splits (the same for every seed):
//
//   fashion_mnist  28×28 images, 10 classes. Training: the first 55 000 of the 60 000
//                  images of train-images, in file order; validation: the last 5 000 of
//                  them; test: the 10 000 t10k images.
//   charlm         bytes of the fortune texts. Fortune i (counted over all databases in
//                  sorted name order) is validation when i % 20 == 9, test when
//                  i % 20 == 19, training otherwise (90 %).
//   recall         multi-query associative recall. Training sequences are generated from
//                  the trial's seed; validation and test are 2000 sequences each, from two
//                  fixed seeds of their own.
//
// Validation drives every decision (the evaluations during training, ASHA, the samplers,
// the reward); test is evaluated once, when a trial finishes, and only reported.
//
// A batch holds either images (encoder tasks) or token sequences (decoder tasks)
// and integer targets; a target of -1 means "no prediction here" (padding rows of a
// partial held-out batch, and the recall positions that are not query answers).
#ifndef ATTN_DATASET_H
#define ATTN_DATASET_H

#include <gsl/gsl_rng.h>

#include "common/bytes.h"
#include "params/config.h"

enum { IMG_SIDE = 28, IMG_PIXELS = 784, PATCH_PIXELS = 49 };  // a patch: 7 × 7 pixels

typedef enum { SPLIT_VAL, SPLIT_TEST } EvalSplit;  // the two held-out splits

typedef struct Dataset Dataset;  // opaque: each task keeps its own state

typedef struct {
    int kind;       // TaskKind
    int seq_len;    // T: tokens per sequence (decoder tasks); 0 for images
    int vocab;      // input vocabulary (decoder tasks); 0 for images
    int n_classes;  // classes per prediction: 10, 256, recall_vocab
    long n_train;   // training examples in one epoch (images, windows, sequences)
    long n_val;     // validation examples
    long n_test;    // test examples
} DatasetInfo;

typedef struct {
    int B;          // rows
    int rows;       // rows of data, the first ones; the rest are padding (batch_pad)
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

// Where the training stream is, beyond the caller's rng (fashion_mnist: this epoch's order
// and the position in it; charlm and recall draw everything from the rng): appended to b,
// and restored (0, or -1 with the reason in rd when the bytes do not fit this dataset).
void dataset_save_position(const Dataset *d, Bytes *b);
int dataset_restore_position(Dataset *d, ByteReader *rd);

// recall's baselines for P pairs of a V-token vocabulary: the accuracy of a value drawn at
// random (2/V) and of a model that knows which P values the sequence holds but not which
// key has which (1/P). Above the second, a model binds keys to values.
void recall_baselines(int pairs, int vocab, double *chance, double *values_only);

// Probes (`attnsweep probe`'s transformed training): from now on every image d hands out
// (training, validation and test rows) goes through a fixed linear map of its input
// features, x ↦ Q x, on all 784 pixels (dim 784, row-major order) or on each 7×7 patch's
// 49 pixels in the patch embedding's order (dim 49, the same Q for all 16 patches).
// Q: dim × dim, row-major, copied. fashion_mnist only (dies otherwise: internal error).
void dataset_set_input_transform(Dataset *d, const float *Q, int dim);

Batch batch_alloc(const DatasetInfo *info, int B);
void batch_free(Batch *b);

// The next training batch. fashion_mnist walks a fresh permutation each epoch,
// charlm draws random windows, recall generates new sequences; all from `rng`.
void dataset_train_batch(Dataset *d, Batch *b, gsl_rng *rng);
// Examples [start, start + B) of a held-out split; rows past its end get targets -1.
// Returns the number of real rows.
int dataset_eval_batch(const Dataset *d, EvalSplit split, Batch *b, long start);

// Rows [rows, B) of b become padding: zero inputs, nothing to predict.
void batch_pad(Batch *b, int rows, const DatasetInfo *info);
// Rows [start, start + n) of src into the first n rows of dst (n <= dst->B), the rest of
// dst padding: a data-parallel rank's share of a global batch.
void batch_take_rows(Batch *dst, const Batch *src, int start, int n, const DatasetInfo *info);

#endif
