// summary_rows.c: the rows of /summary (summary.h summary_rows), read by the report's
// reader (summary.c) and by h5store_read_trial, by the conventions of h5store.c: the
// file's types, shape and storage checked before the read.
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "store/h5read.h"
#include "store/schema.h"
#include "store/summary.h"
#include "trial/metrics.h"

enum { MAX_ROWS = 1000000 };  // the most trials a sweep has (space.c): more is a damaged /summary

// A /summary column the report reads, into a TrialResult (then the row: summary_row_set).
typedef enum { SUM_INT, SUM_LONG, SUM_DOUBLE, SUM_STATUS } SumKind;
typedef struct {
    const char *name;
    SumKind kind;
    size_t offset;  // into TrialResult
} SumColumn;
enum { STATUS_LEN = STATUS_COLUMN_LEN, MAX_COLUMNS = 64 };

static int add_trial_columns(SumColumn *cols, int n, const TrialColumn *tc, int count) {
    static const SumKind kinds[] = {[COLUMN_INT32] = SUM_INT, [COLUMN_INT64] = SUM_LONG,
                                    [COLUMN_FLOAT64] = SUM_DOUBLE, [COLUMN_TEXT] = SUM_STATUS};
    for (int i = 0; i < count; i++) cols[n++] = (SumColumn){tc[i].name, kinds[tc[i].type], tc[i].offset};
    return n;
}

// Every column read, into cols[MAX_COLUMNS], in the file's order (schema.h): the lead
// columns, the metrics, a program's own metric (unless NULL), the trail columns; returns
// how many.
static int summary_columns(SumColumn *cols, const char *program_metric) {
    int n = add_trial_columns(cols, 0, trial_lead_columns, n_trial_lead_columns);
    for (int i = 0; i < n_metrics && n < MAX_COLUMNS; i++)
        cols[n++] = (SumColumn){metrics[i].name, SUM_DOUBLE, metrics[i].offset};
    if (program_metric) cols[n++] = (SumColumn){program_metric, SUM_DOUBLE, offsetof(TrialResult, program_metric)};
    return add_trial_columns(cols, n, trial_trail_columns, n_trial_trail_columns);
}

// Bytes of a column in memory (and in TrialResult).
static size_t column_size(SumKind k) {
    switch (k) {
    case SUM_INT: return sizeof(int);
    case SUM_LONG: return sizeof(long);
    case SUM_DOUBLE: return sizeof(double);
    case SUM_STATUS: return STATUS_LEN;
    }
    return 0;
}

// The memory type of the n columns read, packed in their order; *size gets its size.
static hid_t summary_memtype(const SumColumn *cols, int n, size_t *size) {
    hid_t status = H5Tcopy(H5T_C_S1);
    H5Tset_size(status, STATUS_LEN);  // null-terminated: one byte fewer than the column, ample
    const hid_t types[] = {[SUM_INT] = H5T_NATIVE_INT, [SUM_LONG] = H5T_NATIVE_LONG,
                           [SUM_DOUBLE] = H5T_NATIVE_DOUBLE, [SUM_STATUS] = status};
    *size = 0;
    for (int i = 0; i < n; i++) *size += column_size(cols[i].kind);
    hid_t t = H5Tcreate(H5T_COMPOUND, *size);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        H5Tinsert(t, cols[i].name, off, types[cols[i].kind]);
        off += column_size(cols[i].kind);
    }
    H5Tclose(status);
    return t;
}

// A row's status column (null-terminated in memory).
static int read_status(const H5Reader *rd, const char *text, unsigned long long row, TrialStatus *status) {
    const int s = trial_status_find(text);
    if (!text[0]) return h5read_fail(rd, "/summary row %llu has no status", row);
    if (s < 0) return h5read_fail(rd, "/summary row %llu has the unknown status '%s'", row, text);
    *status = s;
    return 0;
}

// Whether the file's /summary row type has every column read, each of the right class.
static int check_columns(const H5Reader *rd, hid_t filetype, const SumColumn *cols, int n) {
    for (int i = 0; i < n; i++)
        if (h5read_table_column(rd, filetype, "/summary", cols[i].name, cols[i].kind == SUM_STATUS) != 0) return -1;
    return 0;
}

// The n rows of dataset d (file space `space`) into rows, SUMMARY_ROWS_READ at a time (a
// hyperslab each: the buffer stays SUMMARY_ROWS_READ rows at any size of the table).
static int read_rows(const H5Reader *rd, hid_t d, hid_t space, const SumColumn *cols, int n_cols, SummaryRow *rows,
                     hsize_t n) {
    size_t row_size;
    hid_t mem = summary_memtype(cols, n_cols, &row_size);
    const hsize_t chunk = n < SUMMARY_ROWS_READ ? n : SUMMARY_ROWS_READ;
    unsigned char *buf = xcalloc((size_t)chunk, row_size);
    TrialResult *t = xcalloc(1, sizeof *t);  // each row's columns, then the row's
    hid_t mem_space = H5Screate_simple(1, &chunk, NULL);
    int rc = mem < 0 || mem_space < 0 ? h5read_fail(rd, "/summary is unreadable") : 0;
    for (hsize_t start = 0; rc == 0 && start < n; start += chunk) {
        hsize_t count = n - start < chunk ? n - start : chunk, at = 0;
        if (H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
            H5Sselect_hyperslab(mem_space, H5S_SELECT_SET, &at, NULL, &count, NULL) < 0 ||
            H5Dread(d, mem, mem_space, space, H5P_DEFAULT, buf) < 0) {
            rc = h5read_fail(rd, "/summary is unreadable");
            break;
        }
        for (hsize_t r = 0; rc == 0 && r < count; r++) {
            const unsigned char *row = buf + r * row_size;
            size_t off = 0;
            for (int i = 0; rc == 0 && i < n_cols; i++) {
                if (cols[i].kind == SUM_STATUS)
                    rc = read_status(rd, (const char *)row + off, (unsigned long long)(start + r), &t->status);
                else
                    memcpy((char *)t + cols[i].offset, row + off, column_size(cols[i].kind));
                off += column_size(cols[i].kind);
            }
            summary_row_set(&rows[start + r], t);
        }
    }
    if (mem_space >= 0) H5Sclose(mem_space);
    free(t);
    free(buf);
    if (mem >= 0) H5Tclose(mem);
    return rc;
}

int summary_rows(const H5Reader *rd, hid_t file, const char *program_metric, SummaryRow **rows, int *n_rows) {
    *rows = NULL, *n_rows = 0;
    if (H5Lexists(file, "summary", H5P_DEFAULT) <= 0)
        return h5read_fail(rd, "no /summary table: not the results of a sweep or a trial (a model's scores file?)");
    hid_t d = H5Dopen2(file, "summary", H5P_DEFAULT);
    if (d < 0) return h5read_fail(rd, "/summary is unreadable");
    hid_t space = H5Dget_space(d), filetype = H5Dget_type(d);
    hsize_t n = 0;
    SumColumn cols[MAX_COLUMNS];
    const int n_cols = summary_columns(cols, program_metric);
    int rc = space < 0 || filetype < 0 || H5Sget_simple_extent_ndims(space) != 1 ||
                     H5Sget_simple_extent_dims(space, &n, NULL) != 1
                 ? h5read_fail(rd, "/summary is not a one-dimensional table")
                 : check_columns(rd, filetype, cols, n_cols);
    if (rc == 0 && n > MAX_ROWS) rc = h5read_fail(rd, "/summary has an implausible %llu rows", (unsigned long long)n);
    if (rc == 0) rc = h5read_check_storage(rd, d, "/summary", n);
    if (rc == 0 && n > 0) {
        *rows = xcalloc((size_t)n, sizeof **rows);
        *n_rows = (int)n;
        rc = read_rows(rd, d, space, cols, n_cols, *rows, n);
    }
    if (filetype >= 0) H5Tclose(filetype);
    if (space >= 0) H5Sclose(space);
    H5Dclose(d);
    if (rc != 0) {
        free(*rows);
        *rows = NULL, *n_rows = 0;
    }
    return rc;
}
