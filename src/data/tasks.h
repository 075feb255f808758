// tasks.h: the per-task functions behind dataset.h (private to src/data and its tests).
//
// Each task keeps its own state behind an opaque pointer. `open` loads or generates
// the data and fills every DatasetInfo field but `kind`; `train_batch` fills all
// b->B rows; `eval_rows` fills rows [0, rows) with examples [start, start + rows) of the
// held-out split, the caller having checked start + rows <= n_val or n_test.
#ifndef ATTN_DATA_TASKS_H
#define ATTN_DATA_TASKS_H

#include "data/dataset.h"

typedef struct FashionMnist FashionMnist;
FashionMnist *fashion_mnist_open(const TrialConfig *c, DatasetInfo *info);
void fashion_mnist_free(FashionMnist *f);
void fashion_mnist_restart(FashionMnist *f);
void fashion_mnist_train_batch(FashionMnist *f, Batch *b, gsl_rng *rng);
void fashion_mnist_eval_rows(const FashionMnist *f, EvalSplit split, Batch *b, long start, int rows);
void fashion_mnist_save_position(const FashionMnist *f, Bytes *b);
int fashion_mnist_restore_position(FashionMnist *f, ByteReader *rd);

typedef struct CharLM CharLM;
CharLM *charlm_open(const TrialConfig *c, DatasetInfo *info);
void charlm_free(CharLM *lm);
void charlm_train_batch(const CharLM *lm, Batch *b, gsl_rng *rng);
void charlm_eval_rows(const CharLM *lm, EvalSplit split, Batch *b, long start, int rows);

typedef struct Recall Recall;
Recall *recall_open(const TrialConfig *c, DatasetInfo *info);
void recall_free(Recall *r);
void recall_train_batch(Recall *r, Batch *b, gsl_rng *rng);
void recall_eval_rows(const Recall *r, EvalSplit split, Batch *b, long start, int rows);

#endif
