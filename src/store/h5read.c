// h5read.c: checked reading of attnsweep's HDF5 files (see h5read.h).
#include "store/h5read.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "store/h5store.h"

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
    if (H5Aexists(loc, name) <= 0) return h5read_fail(rd, "missing attribute '%s'", name);
    hid_t attr = H5Aopen(loc, name, H5P_DEFAULT);
    if (attr < 0) return h5read_fail(rd, "unreadable attribute '%s'", name);
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

// A variable-length string attribute, copied into *out (the caller frees it).
int h5read_attr_string(const H5Reader *rd, hid_t loc, const char *name, char **out) {
    hid_t attr = open_scalar_attr(rd, loc, name);
    if (attr < 0) return -1;
    hid_t type = H5Aget_type(attr);
    char *text = NULL;
    int ok = type >= 0 && H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0 &&
             H5Aread(attr, type, &text) >= 0 && text;
    if (ok) *out = xstrdup(text);
    if (text) H5free_memory(text);
    if (type >= 0) H5Tclose(type);
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
    int ok = same && numeric && H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
    H5Dclose(d);
    if (!same) return h5read_fail(rd, "dataset %s has the wrong shape", name);
    if (!numeric) return h5read_fail(rd, "dataset %s does not hold numbers", name);
    return ok ? 0 : h5read_fail(rd, "dataset %s is unreadable", name);
}

// The index of column `name` in the compound row type of table `what`, or -1 (failed).
static int table_member(const H5Reader *rd, hid_t filetype, const char *what, const char *name) {
    if (H5Tget_class(filetype) != H5T_COMPOUND) return h5read_fail(rd, "%s is not a table", what);
    const int k = H5Tget_member_index(filetype, name);
    return k >= 0 ? k : h5read_fail(rd, "%s has no column '%s'", what, name);
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

int h5read_check_format(const H5Reader *rd, hid_t file) {
    int version;
    if (h5read_attr_number(rd, file, "format_version", H5T_NATIVE_INT, &version) != 0)
        return h5read_fail(rd, "not an attnsweep results file");
    if (version != H5STORE_FORMAT_VERSION)
        return h5read_fail(rd, "results format %d, this attnsweep reads %d", version, H5STORE_FORMAT_VERSION);
    return 0;
}
