// pack.h: the byte form of a trial. A trial travels as bytes twice: in the MPI message
// from the worker that ran it to the coordinator, and in the journal the coordinator
// appends it to (store/journal.h). The format (versioned, little-endian) is described at
// the top of pack.c.
#ifndef ATTN_PACK_H
#define ATTN_PACK_H

#include <stddef.h>

#include "common/bytes.h"
#include "trial/trial.h"

// Every field of r, its curve, invariant trace, weights and scores, appended to b.
void trial_pack(Bytes *b, const TrialResult *r);
// The inverse; validates every length against len (a damaged buffer never reads out of
// bounds or allocates more than a few times len). Returns 0, or -1 with a reason and r
// left empty. Arrays of length 0 come back NULL.
int trial_unpack(TrialResult *r, const unsigned char *data, size_t len, char *err, size_t errlen);
// Only the id and status of trial bytes, cheaply (nothing decoded beyond them): 0, or -1
// when their head is not a trial's of this version.
int trial_peek(const unsigned char *data, size_t len, int *id, TrialStatus *status);

// The version trial_pack writes. 2: the validation and test metrics, the output side, the
// tensor view; 3: group_size, the whole parameter arena; 4: a program's trial; 5: the whole
// network's weights and scores (results format 4), the rotation nulls of the Correlation
// (its sd) and of the heads' effective rank; 6: the reward beyond chance (results format
// 5): the trace's nulls, the reward's terms, a layer's mixing flag.
enum { TRIAL_BYTES_VERSION = 6 };

#endif
