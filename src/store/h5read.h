// h5read.h: checked reading of attnsweep's HDF5 files, shared by the trial reader
// (trial_read.c), the sweep summary reader (summary.c) and the resume (h5store.c). Every check returns -1 with
// "PATH: [WHERE: ]what is wrong" in the reader's err; nothing read from a file is
// trusted (types, shapes and counts are checked before use).
#ifndef ATTN_H5READ_H
#define ATTN_H5READ_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "trial/metrics.h"

typedef struct {
    const char *path;
    const char *where;  // the object being read, or NULL for the file itself
    char *err;
    size_t errlen;
} H5Reader;

int h5read_fail(const H5Reader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// A numeric attribute of loc converted to memtype.
int h5read_attr_number(const H5Reader *rd, hid_t loc, const char *name, hid_t memtype, void *out);
// A variable-length string attribute, copied into *out (the caller frees it).
int h5read_attr_string(const H5Reader *rd, hid_t loc, const char *name, char **out);
// The dataset `name` (relative to loc) if it has `rank` dimensions; its shape in dims.
hid_t h5read_open_dataset(const H5Reader *rd, hid_t loc, const char *name, int rank, hsize_t *dims);
// Dataset `name`, which must have exactly the shape dims, into buf as memtype.
int h5read_dataset(const H5Reader *rd, hid_t loc, const char *name, hid_t memtype, int rank, const hsize_t *dims,
                   void *buf);
// Whether the file stores enough bytes for `elements` elements of dataset d (a damaged
// shape must not make the reader allocate, fill and convert what the file cannot hold):
// at most the dataset's storage size, or about 1032 times it when compressed.
int h5read_check_storage(const H5Reader *rd, hid_t d, const char *name, hsize_t elements);
// Whether the compound row type of table `what` has the column `name` within its row: a string if
// is_string, else a number of at most 8 bytes.
int h5read_table_column(const H5Reader *rd, hid_t filetype, const char *what, const char *name, int is_string);
// Whether that row type has the column `name` holding an array of numbers of `rank`
// dimensions (at most 2); their sizes in dims.
int h5read_table_array(const H5Reader *rd, hid_t filetype, const char *what, const char *name, int rank,
                       hsize_t *dims);
// The file's global heap collections (its variable-length strings) are whole: before HDF5
// reads a string attribute, which it does trusting the sizes it finds there.
int h5read_check_heaps(const H5Reader *rd);
// The root attribute format_version is the one this attnsweep writes.
int h5read_check_format(const H5Reader *rd, hid_t file);
// reader(ctx, err, errlen) first in a child process, whose death cannot take the caller down:
// libhdf5 1.10 decodes a damaged file's objects trusting their sizes and offsets (SIGSEGV
// in H5HG_read, heap overflows under H5Aexists), which no check before it can rule out.
// 0 when the child's read succeeded (the caller then reads the file itself, the same code
// on the same heap, so the same way); -1 with the child's own message in rd's err when it
// failed, or "PATH: damaged (the HDF5 library failed reading it: ...)" when it died.
int h5read_survives(const H5Reader *rd, int (*reader)(const void *ctx, char *err, size_t errlen), const void *ctx);

// Whether another process has the file open for writing: HDF5 1.10 holds flock(LOCK_EX)
// on a file it writes (unless HDF5_USE_FILE_LOCKING=FALSE), so a shared lock is refused.
int h5read_locked_by_writer(const char *path);

// What a resume reads of a results file a run closed, to keep it (store/h5store.h):
// each /summary row's trial and status.
typedef struct {
    int32_t trial;
    char status[STATUS_COLUMN_LEN];
} H5KeptRow;

typedef struct {
    const char *path;
    const char *yaml;   // the sweep's YAML, which the file must hold
    hid_t row_type;     // /summary's row type, which the file's must equal
    long journal_end;   // out: the file's journal_end
    H5KeptRow *rows;    // out, when asked: [n] (the caller frees)
    hsize_t n;
} H5Kept;

// Whether the open file is one a run of this sweep closed: this format and schema, the
// YAML, /summary of the row type, journal_end set; its rows read when `rows`. 0, or -1.
int h5read_kept(const H5Reader *rd, hid_t file, H5Kept *k, int rows);
// The same on k->path opened read-only, after a look at its heaps: for h5read_survives
// (ctx: an H5Kept), as a damaged file may crash libhdf5.
int h5read_kept_path(const void *ctx, char *err, size_t errlen);

#endif
