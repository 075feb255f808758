// checkpoint.h: a training run's whole state as bytes (common/bytes.h), so that a trial
// stopped or killed mid-way continues from its last checkpoint and ends with exactly the
// numbers an uninterrupted run gives, bit for bit.
//
// The part every rank of a data-parallel group shares: the parameter arena, AdamW's two
// moments (float32, as they are), the stability penalty's history of each layer, and the
// loop's state (step, the loss summed since the last evaluation, the last penalty, the
// seconds so far, the curve). The part of each rank: its batch stream (the GSL generator's
// raw state) and the data position (dataset_save_position). Nothing here knows files: the
// trial runner (trial/builtin.c) writes the bytes into the trial's directory.
#ifndef ATTN_CHECKPOINT_H
#define ATTN_CHECKPOINT_H

#include "common/bytes.h"
#include "data/dataset.h"
#include "model/model.h"
#include "model/train.h"

void checkpoint_save_shared(Bytes *b, const Model *m, const TrainState *st);
// Into m (from model_init for the same configuration and batch) and st (from
// train_state_init: its curve is replaced, its rng kept). 0, or -1 with the reason in rd
// when the bytes are not a state of this model.
int checkpoint_load_shared(ByteReader *rd, Model *m, TrainState *st);
void checkpoint_save_rank(Bytes *b, const Dataset *d, const TrainState *st);
int checkpoint_load_rank(ByteReader *rd, Dataset *d, TrainState *st);

#endif
