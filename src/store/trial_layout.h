// trial_layout.h: how a trial's group /trials/NNNNNN is laid out, shared by the results
// file's writer (h5store.c) and its reader (trial_read.c): the attributes, the curves
// row, the invariants row. Internal to store/.
#ifndef ATTN_TRIAL_LAYOUT_H
#define ATTN_TRIAL_LAYOUT_H

#include <hdf5.h>
#include <stddef.h>

#include "trial/trial.h"

enum { MAX_WEIGHT_FLOATS = 1 << 30 };  // refuse to allocate more for one layer of a damaged file

// The numeric and text attributes of /trials/NNNNNN, one list for writer and reader.
// The trial's metrics are in its /summary row only.
typedef enum { NUM_INT, NUM_DOUBLE } NumKind;
typedef struct {
    const char *name;
    NumKind kind;
    size_t offset;  // into TrialResult
    int since;      // 1: absent from files written before it was recorded (read as 0)
} TrialNumber;
typedef struct {
    const char *name;
    size_t offset, size;  // of the char array in TrialResult
} TrialText;
typedef struct {
    const char *name;
    size_t offset;  // of the char * in TrialResult
} RunText;
extern const TrialNumber h5trial_numbers[];
extern const TrialText h5trial_texts[];   // and status, by its name
extern const RunText h5trial_run_texts[];  // a program's trial (trial.h ProgramRun), when it has them
extern const int n_h5trial_numbers, n_h5trial_texts, n_h5trial_run_texts;
hid_t h5trial_native_type(NumKind k);

// A curves row as CurvePoint lays it out (schema.h schema_curve_columns).
hid_t h5trial_curve_type(void);

// invariants: one row per evaluation, step padded to 8 bytes then the arrays, the same in
// memory and in the file: byte offsets in a row of L layers of G heads, and its size.
typedef struct {
    size_t correlation, eff_rank, head_sv, chance, size;
} TraceRow;
TraceRow h5trial_trace_row(int L, int G);
hid_t h5trial_trace_type(int L, int G);
// Between the trace's arrays and rows (to_rows: into rows, else out of them).
void h5trial_trace_rows(InvariantTrace *t, unsigned char *rows, int to_rows);

// "trials/NNNNNN"
void h5trial_group_name(char *name, size_t len, int id);

#endif
