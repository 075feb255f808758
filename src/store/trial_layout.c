// trial_layout.c: the layout of a trial's group /trials/NNNNNN (trial_layout.h).
#include "store/trial_layout.h"

#include <stdio.h>
#include <string.h>

#include "store/schema.h"

const TrialNumber h5trial_numbers[] = {
    {"rank", NUM_INT, offsetof(TrialResult, rank), 0},
    {"group_size", NUM_INT, offsetof(TrialResult, group_size), 1},
    {"start_time", NUM_DOUBLE, offsetof(TrialResult, start_time), 0},
    {"end_time", NUM_DOUBLE, offsetof(TrialResult, end_time), 0},
    {"seconds", NUM_DOUBLE, offsetof(TrialResult, seconds), 0},
};
#define TEXT_FIELD(f) #f, offsetof(TrialResult, f), sizeof(((TrialResult *)0)->f)
const TrialText h5trial_texts[] = {{TEXT_FIELD(reason)}, {TEXT_FIELD(host)}};

#define RUN_FIELD(f) offsetof(TrialResult, run.f)
const RunText h5trial_run_texts[] = {{"trial_dir", RUN_FIELD(dir)},     {"stdout", RUN_FIELD(stdout_path)},
                                     {"stderr", RUN_FIELD(stderr_path)}, {"metrics", RUN_FIELD(metrics_path)},
                                     {"command", RUN_FIELD(command)},    {"stderr_tail", RUN_FIELD(stderr_tail)},
                                     {"checkpoint", RUN_FIELD(checkpoint)}};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
const int n_h5trial_numbers = COUNT(h5trial_numbers), n_h5trial_texts = COUNT(h5trial_texts),
          n_h5trial_run_texts = COUNT(h5trial_run_texts);

// A curves row as CurvePoint lays it out. The file keeps this layout (4 bytes of padding
// after step): a packed file type made HDF5 convert every write through a 1 MiB buffer it
// allocates and clears each time (5 ms per trial). The reader converts a file's row into
// it by column name.
hid_t h5trial_curve_type(void) {
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(CurvePoint));
    if (t < 0) return t;
    for (int c = 0; c < n_schema_curve_columns; c++) {
        const SchemaColumn *col = &schema_curve_columns[c];
        H5Tinsert(t, col->name, col->offset, col->type == COLUMN_INT32 ? H5T_NATIVE_INT : H5T_NATIVE_DOUBLE);
    }
    return t;
}

hid_t h5trial_native_type(NumKind k) {
    switch (k) {
    case NUM_INT: return H5T_NATIVE_INT;
    case NUM_DOUBLE: return H5T_NATIVE_DOUBLE;
    }
    return H5I_INVALID_HID;
}

// invariants: step, correlation [L], eff_rank [L, 4], head_sv [L, G], chance [L, 4] (the
// rotation nulls: trial/reward.h reward_terms).
TraceRow h5trial_trace_row(int L, int G) {
    TraceRow r = {.correlation = 8};
    r.eff_rank = r.correlation + (size_t)L * sizeof(double);
    r.head_sv = r.eff_rank + (size_t)L * 4 * sizeof(double);
    r.chance = r.head_sv + (size_t)L * G * sizeof(double);
    r.size = r.chance + (size_t)L * 4 * sizeof(double);
    return r;
}

hid_t h5trial_trace_type(int L, int G) {
    const TraceRow r = h5trial_trace_row(L, G);
    hsize_t d1[1] = {(hsize_t)L}, d4[2] = {(hsize_t)L, 4}, dg[2] = {(hsize_t)L, (hsize_t)G};
    hid_t t = H5Tcreate(H5T_COMPOUND, r.size);
    hid_t corr = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, d1), eff = H5Tarray_create2(H5T_NATIVE_DOUBLE, 2, d4),
          sv = H5Tarray_create2(H5T_NATIVE_DOUBLE, 2, dg);
    int ok = t >= 0 && corr >= 0 && eff >= 0 && sv >= 0 && H5Tinsert(t, "step", 0, H5T_NATIVE_INT) >= 0 &&
             H5Tinsert(t, "correlation", r.correlation, corr) >= 0 && H5Tinsert(t, "eff_rank", r.eff_rank, eff) >= 0 &&
             H5Tinsert(t, "head_sv", r.head_sv, sv) >= 0 && H5Tinsert(t, "chance", r.chance, eff) >= 0;
    H5Tclose(corr);
    H5Tclose(eff);
    H5Tclose(sv);
    if (!ok && t >= 0) H5Tclose(t);
    return ok ? t : H5I_INVALID_HID;
}

void h5trial_trace_rows(InvariantTrace *t, unsigned char *rows, int to_rows) {
    const TraceRow r = h5trial_trace_row(t->layers, t->groups);
    const size_t L = (size_t)t->layers, G = (size_t)t->groups;
    for (size_t i = 0; i < (size_t)t->n; i++) {
        unsigned char *row = rows + i * r.size;
        struct {
            void *field, *array;
            size_t bytes;
        } parts[5] = {{row, t->step + i, sizeof(int)},
                      {row + r.correlation, t->correlation + i * L, L * sizeof(double)},
                      {row + r.eff_rank, t->eff_rank + i * L * 4, L * 4 * sizeof(double)},
                      {row + r.head_sv, t->head_sv + i * L * G, L * G * sizeof(double)},
                      {row + r.chance, t->chance + i * L * 4, L * 4 * sizeof(double)}};
        for (int k = 0; k < 5; k++)
            memcpy(to_rows ? parts[k].field : parts[k].array, to_rows ? parts[k].array : parts[k].field,
                   parts[k].bytes);
    }
}

void h5trial_group_name(char *name, size_t len, int id) { snprintf(name, len, "trials/%06d", id); }
