// h5read.c: checked reading of attnsweep's HDF5 files (see h5read.h).
#define _GNU_SOURCE  // memmem
#include "store/h5read.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/bytes.h"
#include "common/util.h"
#include "store/schema.h"

enum { DEFLATE_RATIO = 1032, FILTER_SLACK = 1 << 16, GCOL_MIN = 4096 };

int h5read_fail(const H5Reader *rd, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rd->where)
        snprintf(rd->err, rd->errlen, "%s: %s: %s", rd->path, rd->where, msg);
    else
        snprintf(rd->err, rd->errlen, "%s: %s", rd->path, msg);
    return -1;
}

// Attribute `name` of loc if it holds exactly one value.
static hid_t open_scalar_attr(const H5Reader *rd, hid_t loc, const char *name) {
    hid_t attr = H5Aopen(loc, name, H5P_DEFAULT);  // one search of the attributes; H5Aexists only to say why not
    if (attr < 0)
        return h5read_fail(rd, H5Aexists(loc, name) <= 0 ? "missing attribute '%s'" : "unreadable attribute '%s'",
                           name);
    hid_t space = H5Aget_space(attr);
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (space >= 0) H5Sclose(space);
    if (n != 1) {
        H5Aclose(attr);
        return h5read_fail(rd, "attribute '%s' is not a single value", name);
    }
    return attr;
}

// A numeric attribute converted to memtype.
int h5read_attr_number(const H5Reader *rd, hid_t loc, const char *name, hid_t memtype, void *out) {
    hid_t attr = open_scalar_attr(rd, loc, name);
    if (attr < 0) return -1;
    hid_t type = H5Aget_type(attr);
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    int ok = (cls == H5T_INTEGER || cls == H5T_FLOAT) && H5Aread(attr, memtype, out) >= 0;
    if (type >= 0) H5Tclose(type);
    H5Aclose(attr);
    return ok ? 0 : h5read_fail(rd, "attribute '%s' is not a number", name);
}

// A variable-length string attribute, copied into *out (the caller frees it). It is read
// as a native variable-length string (one char * in memory), never in the file's own
// type, whose element a damaged file could make larger than the pointer it lands in.
int h5read_attr_string(const H5Reader *rd, hid_t loc, const char *name, char **out) {
    hid_t attr = open_scalar_attr(rd, loc, name);
    if (attr < 0) return -1;
    hid_t type = H5Aget_type(attr), mem = H5Tcopy(H5T_C_S1);
    char *text = NULL;
    int ok = type >= 0 && mem >= 0 && H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0 &&
             H5Tset_size(mem, H5T_VARIABLE) >= 0 && H5Tset_cset(mem, H5Tget_cset(type)) >= 0 &&
             H5Aread(attr, mem, &text) >= 0 && text;
    if (ok) *out = xstrdup(text);
    if (text) H5free_memory(text);
    if (type >= 0) H5Tclose(type);
    if (mem >= 0) H5Tclose(mem);
    H5Aclose(attr);
    return ok ? 0 : h5read_fail(rd, "attribute '%s' is not a string", name);
}

// The dataset `name` (a path relative to loc) if it has `rank` dimensions; its shape in dims.
hid_t h5read_open_dataset(const H5Reader *rd, hid_t loc, const char *name, int rank, hsize_t *dims) {
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) return h5read_fail(rd, "missing dataset %s", name);
    hid_t space = H5Dget_space(d);
    int ok = space >= 0 && H5Sget_simple_extent_ndims(space) == rank &&
             H5Sget_simple_extent_dims(space, dims, NULL) == rank;
    if (space >= 0) H5Sclose(space);
    if (!ok) {
        H5Dclose(d);
        return h5read_fail(rd, "dataset %s does not have %d dimensions", name, rank);
    }
    return d;
}

int h5read_check_storage(const H5Reader *rd, hid_t d, const char *name, hsize_t elements) {
    hid_t type = H5Dget_type(d), dcpl = H5Dget_create_plist(d);
    const size_t size = type >= 0 ? H5Tget_size(type) : 0;
    const int filters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1;
    const hsize_t stored = H5Dget_storage_size(d);
    if (type >= 0) H5Tclose(type);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (!size || filters < 0) return h5read_fail(rd, "dataset %s is unreadable", name);
    // deflate expands at most about 1032 to 1; attnsweep writes no filters
    const double room = (double)stored * (filters ? DEFLATE_RATIO : 1) + (filters ? FILTER_SLACK : 0);
    if ((double)elements * (double)size > room)
        return h5read_fail(rd, "dataset %s claims %llu elements of %zu bytes but the file stores %llu bytes of it",
                           name, (unsigned long long)elements, size, (unsigned long long)stored);
    return 0;
}

// Read dataset `name`, which must have exactly the shape dims, into buf as memtype.
int h5read_dataset(const H5Reader *rd, hid_t loc, const char *name, hid_t memtype, int rank,
                        const hsize_t *dims, void *buf) {
    hsize_t got[4];
    hid_t d = h5read_open_dataset(rd, loc, name, rank, got);
    if (d < 0) return -1;
    int same = 1;
    for (int k = 0; k < rank; k++) same &= got[k] == dims[k];
    // A damaged element type could make HDF5 allocate gigabytes for the conversion.
    hid_t type = H5Dget_type(d);
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    int numeric = (cls == H5T_INTEGER || cls == H5T_FLOAT) && H5Tget_size(type) <= 8;
    if (type >= 0) H5Tclose(type);
    hsize_t elements = 1;
    for (int k = 0; k < rank; k++) elements *= dims[k];
    if (same && numeric && h5read_check_storage(rd, d, name, elements) != 0) {
        H5Dclose(d);
        return -1;
    }
    int ok = same && numeric && H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
    H5Dclose(d);
    if (!same) return h5read_fail(rd, "dataset %s has the wrong shape", name);
    if (!numeric) return h5read_fail(rd, "dataset %s does not hold numbers", name);
    return ok ? 0 : h5read_fail(rd, "dataset %s is unreadable", name);
}

// The index of column `name` in the compound row type of table `what`, or -1 (failed):
// the column must lie within the row (a damaged offset or size would make HDF5 copy
// bytes from beyond it).
static int table_member(const H5Reader *rd, hid_t filetype, const char *what, const char *name) {
    if (H5Tget_class(filetype) != H5T_COMPOUND) return h5read_fail(rd, "%s is not a table", what);
    const int k = H5Tget_member_index(filetype, name);
    if (k < 0) return h5read_fail(rd, "%s has no column '%s'", what, name);
    hid_t t = H5Tget_member_type(filetype, (unsigned)k);
    const size_t row = H5Tget_size(filetype), off = H5Tget_member_offset(filetype, (unsigned)k),
                 size = t >= 0 ? H5Tget_size(t) : 0;
    if (t >= 0) H5Tclose(t);
    if (!size || !row || off > row || size > row - off)
        return h5read_fail(rd, "%s column '%s' (%zu bytes at byte %zu) lies outside its %zu-byte row", what, name, size,
                           off, row);
    return k;
}

int h5read_table_column(const H5Reader *rd, hid_t filetype, const char *what, const char *name, int is_string) {
    const int k = table_member(rd, filetype, what, name);
    if (k < 0) return -1;
    const H5T_class_t cls = H5Tget_member_class(filetype, (unsigned)k);
    int ok = is_string ? cls == H5T_STRING : cls == H5T_INTEGER || cls == H5T_FLOAT;
    if (ok && !is_string) {
        hid_t t = H5Tget_member_type(filetype, (unsigned)k);
        ok = t >= 0 && H5Tget_size(t) <= 8;
        if (t >= 0) H5Tclose(t);
    }
    return ok ? 0 : h5read_fail(rd, "%s column '%s' has the wrong type", what, name);
}

int h5read_table_array(const H5Reader *rd, hid_t filetype, const char *what, const char *name, int rank,
                       hsize_t *dims) {
    const int k = table_member(rd, filetype, what, name);
    if (k < 0) return -1;
    hid_t t = H5Tget_member_type(filetype, (unsigned)k);
    int ok = t >= 0 && H5Tget_class(t) == H5T_ARRAY && rank <= 2 && H5Tget_array_ndims(t) == rank &&
             H5Tget_array_dims2(t, dims) == rank;
    if (ok) {
        hid_t base = H5Tget_super(t);
        const H5T_class_t cls = base >= 0 ? H5Tget_class(base) : H5T_NO_CLASS;
        ok = (cls == H5T_INTEGER || cls == H5T_FLOAT) && H5Tget_size(base) <= 8;
        if (base >= 0) H5Tclose(base);
    }
    if (t >= 0) H5Tclose(t);
    return ok ? 0 : h5read_fail(rd, "%s column '%s' is not a %d-dimensional array of numbers", what, name, rank);
}

// The global heap collections of a file (where its variable-length strings are): "GCOL",
// version 1, three zero bytes, the collection's size (8 bytes, at least 4096), then objects
// of a 16-byte header (u16 index, u16 references, 4 reserved, u64 size) and their data
// padded to 8 bytes; the free space (index 0) counts its header in its size and is not
// padded. HDF5 1.10 walks a collection this way (H5HG__cache_heap_deserialize) without
// comparing the sizes it finds to the collection, and copies an object by its size (a
// damaged one crashes H5Aread), so every collection is walked here first: each object must
// lie within it and the walk end at its end. 0, or -1 with where it is damaged.
static int check_collection(const H5Reader *rd, const unsigned char *c, uint64_t size, uint64_t at) {
    unsigned char *seen = xcalloc(1 << 16, 1);  // an index twice is damage too
    int rc = 0;
    for (uint64_t p = 16; rc == 0 && p + 16 <= size;) {  // a tail too small for an object is free space, as HDF5 takes it
        const uint64_t index = load_le(c + p, 2), n = load_le(c + p + 8, 8);
        const uint64_t need = index ? 16 + ((n + 7) & ~(uint64_t)7) : n;
        if (n > size || need < 16 || need > size - p || (index && seen[index]++))
            rc = h5read_fail(rd, "the global heap at byte %llu is damaged (object %llu at byte %llu)",
                             (unsigned long long)at, (unsigned long long)index, (unsigned long long)(at + p));
        p += need;
    }
    free(seen);
    return rc;
}

// The collection whose mark is at byte `at` of the file (fd, `total` bytes), read whole.
static int check_collection_at(const H5Reader *rd, int fd, uint64_t at, uint64_t total) {
    unsigned char head[16];
    const uint64_t size = total - at >= 16 && pread(fd, head, 16, (off_t)at) == 16 ? load_le(head + 8, 8) : 0;
    if (size < GCOL_MIN || size > total - at)
        return h5read_fail(rd, "the global heap at byte %llu is damaged (its size)", (unsigned long long)at);
    unsigned char *c = xmalloc(size);  // at most the file's size
    const int rc = pread(fd, c, size, (off_t)at) == (ssize_t)size ? check_collection(rd, c, size, at)
                                                                    : h5read_fail(rd, "%s", strerror(errno));
    free(c);
    return rc;
}

// The file is read, never mapped: a mapped page of a file on a full tmpfs is a SIGBUS.
int h5read_check_heaps(const H5Reader *rd) {
    enum { CHUNK = 1 << 20 };
    // Looked for by its letters alone, then its version and zeros: memmem's search for
    // the whole mark stopped at every pair of zero bytes, which a results file is full of
    // (a 210 MB file of 50,000 trials: about 0.34 s of CPU, now 0.08 s).
    static const unsigned char mark[8] = {'G', 'C', 'O', 'L', 1, 0, 0, 0};
    const int fd = open(rd->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return h5read_fail(rd, "%s", strerror(errno));
    }
    unsigned char *buf = xmalloc(CHUNK + sizeof mark - 1);  // chunks overlap by a mark's length less one
    int rc = 0;
    for (uint64_t base = 0; rc == 0 && base < (uint64_t)st.st_size; base += CHUNK) {
        const ssize_t n = pread(fd, buf, CHUNK + sizeof mark - 1, (off_t)base);
        if (n < 0) rc = h5read_fail(rd, "%s", strerror(errno));
        if (n <= 0) break;
        const unsigned char *p = buf, *end = buf + n;
        while (rc == 0 && (p = memmem(p, (size_t)(end - p), mark, 4)) && p < buf + CHUNK) {
            if (end - p >= (ptrdiff_t)sizeof mark && !memcmp(p + 4, mark + 4, sizeof mark - 4))
                rc = check_collection_at(rd, fd, base + (uint64_t)(p - buf), (uint64_t)st.st_size);
            p++;
        }
    }
    free(buf);
    close(fd);
    return rc;
}

int h5read_check_format(const H5Reader *rd, hid_t file) {
    int version;
    if (h5read_attr_number(rd, file, "format_version", H5T_NATIVE_INT, &version) != 0)
        return h5read_fail(rd, "not an attnsweep results file");
    if (version == 4)  // the whole network's scores, the reward as measured
        return h5read_fail(rd,
                           "results format 4, this attnsweep reads %d: its rewards charge the invariant terms as "
                           "measured, not beyond chance: read it with the attnsweep that wrote it",
                           SCHEMA_FORMAT_VERSION);
    if (version == 5)  // the sweep's metric only in its YAML
        return h5read_fail(rd,
                           "results format 5, this attnsweep reads %d: `attnsweep run SWEEP.yaml --resume` rebuilds "
                           "it from its journal, %s.journal",
                           SCHEMA_FORMAT_VERSION, rd->path);
    if (version != SCHEMA_FORMAT_VERSION)
        return h5read_fail(rd, "results format %d, this attnsweep reads %d", version, SCHEMA_FORMAT_VERSION);
    return 0;
}

// The child answers on a pipe: 'K' (read), or 'E' and its one-line message (failed). No
// answer, or an exit other than 0 (a sanitizer's report exits 1), is a death.
int h5read_survives(const H5Reader *rd, int (*reader)(const void *ctx, char *err, size_t errlen), const void *ctx) {
    int answer[2];
    fflush(NULL);  // nothing buffered is written twice
    if (pipe2(answer, O_CLOEXEC) != 0) return 0;  // no child: the caller reads unguarded
    const pid_t pid = fork();
    if (pid < 0) {
        close(answer[0]), close(answer[1]);
        return 0;
    }
    if (pid == 0) {
        close(answer[0]);
        const int quiet = open("/dev/null", O_WRONLY | O_CLOEXEC);  // a library's dying words are not the report's
        if (quiet >= 0) dup2(quiet, 2);
        char msg[1025] = "K";
        if (reader(ctx, msg + 1, sizeof msg - 1) != 0) msg[0] = 'E';
        const size_t n = msg[0] == 'K' ? 1 : 1 + strlen(msg + 1);
        _exit(write(answer[1], msg, n) == (ssize_t)n ? 0 : 3);
    }
    close(answer[1]);
    char msg[1026];
    size_t got = 0;
    for (ssize_t n; got < sizeof msg - 1 && ((n = read(answer[0], msg + got, sizeof msg - 1 - got)) > 0 ||
                                             (n < 0 && errno == EINTR));)
        got += n > 0 ? (size_t)n : 0;
    close(answer[0]);
    msg[got] = 0;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && got >= 1) {
        if (msg[0] == 'K') return 0;
        if (msg[0] == 'E') {
            snprintf(rd->err, rd->errlen, "%s", msg + 1);
            return -1;
        }
    }
    char how[64];
    if (WIFSIGNALED(status))
        snprintf(how, sizeof how, "signal %d, %s", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(how, sizeof how, "exit code %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return h5read_fail(rd, "damaged (the HDF5 library failed reading it: %s)", how);
}

int h5read_locked_by_writer(const char *path) {
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    const int locked = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);  // and with it our lock, if we got it
    return locked;
}

int h5read_kept(const H5Reader *rd, hid_t file, H5Kept *k, int rows) {
    char *text = NULL, *schema = schema_json_text();
    int ok = h5read_check_format(rd, file) == 0 && h5read_attr_string(rd, file, "yaml", &text) == 0 &&
             !strcmp(text, k->yaml);
    free(text);
    text = NULL;
    ok = ok && h5read_attr_string(rd, file, "schema", &text) == 0 && !strcmp(text, schema);
    free(text);
    cJSON_free(schema);
    ok = ok && h5read_attr_number(rd, file, "journal_end", H5T_NATIVE_LONG, &k->journal_end) == 0;
    hid_t d = ok ? h5read_open_dataset(rd, file, "summary", 1, &k->n) : H5I_INVALID_HID;
    if (d < 0) return -1;
    hid_t type = H5Dget_type(d);
    ok = type >= 0 && H5Tequal(type, k->row_type) > 0;
    if (type >= 0) H5Tclose(type);
    if (ok && rows) {
        hid_t status = H5Tcopy(H5T_C_S1), row = H5Tcreate(H5T_COMPOUND, sizeof(H5KeptRow));
        H5Tset_size(status, STATUS_COLUMN_LEN);
        H5Tset_strpad(status, H5T_STR_NULLPAD);
        H5Tinsert(row, "trial", HOFFSET(H5KeptRow, trial), H5T_NATIVE_INT32);
        H5Tinsert(row, "status", HOFFSET(H5KeptRow, status), status);
        k->rows = xcalloc(k->n ? k->n : 1, sizeof *k->rows);
        ok = H5Dread(d, row, H5S_ALL, H5S_ALL, H5P_DEFAULT, k->rows) >= 0;
        H5Tclose(row);
        H5Tclose(status);
    }
    H5Dclose(d);
    return ok ? 0 : h5read_fail(rd, "not a results file of this sweep");
}

int h5read_kept_path(const void *ctx, char *err, size_t errlen) {
    H5Kept k = *(const H5Kept *)ctx;
    H5Reader rd = {.path = k.path, .err = err, .errlen = errlen};
    if (h5read_check_heaps(&rd) != 0) return -1;
    hid_t f = H5Fopen(k.path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return h5read_fail(&rd, "cannot open it");
    const int rc = h5read_kept(&rd, f, &k, 0);
    H5Fclose(f);
    return rc;
}
