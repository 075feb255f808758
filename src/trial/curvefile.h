// curvefile.h: a program trial's curve as the runner read it, kept in its directory as
// TRIAL_DIR/curve.jsonl, so that an attempt continued after a stop (external.h, the
// earlier attempt's directory moved to NNNNNN.resume) starts from the whole curve of the
// attempts before it. One JSON object a line, written by the runner:
//     {"step": 3, "val_accuracy": 0.8, "val_loss": 0.5, "train_loss": null, "lr": null,
//      "seconds": 1.25, "metric": null}
// seconds: since the first attempt's start (the earlier attempts' time up to their last
// point included); metric: the sweep's own program metric at the point (null: none). The
// file lies in the program's directory, so it is read as untrusted input.
#ifndef ATTN_CURVEFILE_H
#define ATTN_CURVEFILE_H

#include <stddef.h>

#include "model/train.h"

typedef struct {
    CurvePoint pt;
    double metric;  // the sweep's program metric at this evaluation (NaN: none)
} CurveRecord;

// Append the n records as lines to fd. 0, or -1 with errno.
int curve_file_write(int fd, const CurveRecord *rec, int n);

// The records of the file at path, at most max of them, into *out (free it) and *n. A file
// that is missing gives none. Reading stops at the first line that is not a record (or a
// line longer than 4 KiB, or the max-th): what came before it is kept, and why says where it
// stopped (why[0] == 0: the whole file was read). The file is opened without following a
// link and read only when it is a regular file (a FIFO planted at its name cannot block).
void curve_file_read(const char *path, int max, CurveRecord **out, int *n, char *why, size_t len);

#endif
