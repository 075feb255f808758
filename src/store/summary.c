// summary.c: reading a results file for the report (see summary.h), by the conventions of
// h5store.c: nothing read from the file is trusted (types, shapes and counts are checked
// before use), every problem is one line "PATH: what is wrong".
#define _DEFAULT_SOURCE  // flock
#include "store/summary.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "common/config_json.h"
#include "common/util.h"
#include "store/h5read.h"
#include "store/h5store.h"
#include "trial/metrics.h"

enum {
    MAX_ROWS = 1000000,       // the most trials a sweep has (space.c): more is a damaged /summary
    RETRIES = 50,             // reads of a file being written, RETRY_MS apart
    RETRY_MS = 100,
};

// The /summary columns the report reads, into the TrialResult of each row: these and
// every metric (trial/metrics.h).
typedef enum { SUM_INT, SUM_LONG, SUM_DOUBLE, SUM_STATUS } SumKind;
typedef struct {
    const char *name;
    SumKind kind;
    size_t offset;  // into TrialResult
} SumColumn;
static const SumColumn other_columns[] = {
    {"trial", SUM_INT, offsetof(TrialResult, id)},
    {"status", SUM_STATUS, offsetof(TrialResult, status)},
    {"steps", SUM_INT, offsetof(TrialResult, steps)},
    {"n_params", SUM_LONG, offsetof(TrialResult, n_params)},
    {"seconds", SUM_DOUBLE, offsetof(TrialResult, seconds)},
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
enum { STATUS_LEN = SUMMARY_STATUS_LEN, MAX_COLUMNS = 64 };

// Every column read, into cols[MAX_COLUMNS] (a program's own metric too, unless NULL);
// returns how many.
static int summary_columns(SumColumn *cols, const char *program_metric) {
    int n = 0;
    for (size_t i = 0; i < COUNT(other_columns); i++) cols[n++] = other_columns[i];
    for (int i = 0; i < n_metrics && n < MAX_COLUMNS; i++)
        cols[n++] = (SumColumn){metrics[i].name, SUM_DOUBLE, metrics[i].offset};
    if (program_metric) cols[n++] = (SumColumn){program_metric, SUM_DOUBLE, offsetof(TrialResult, program_metric)};
    return n;
}

// ---------------------------------------------------------------- the sweep's metric

// A scalar's text, or NULL.
static const char *scalar(yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

// The value of `key` in mapping node map, or NULL.
static yaml_node_t *lookup(yaml_document_t *doc, yaml_node_t *map, const char *key) {
    if (!map || map->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(yaml_document_get_node(doc, p->key));
        if (k && !strcmp(k, key)) return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

// objectives: [{name: N, goal: G}, ...] of the stored YAML (motpe), into s.
static void read_objectives(SweepSummary *s, yaml_document_t *doc, yaml_node_t *list) {
    if (!list || list->type != YAML_SEQUENCE_NODE) return;
    for (yaml_node_item_t *it = list->data.sequence.items.start;
         it < list->data.sequence.items.top && s->n_objectives < SPACE_MAX_OBJECTIVES; it++) {
        yaml_node_t *o = yaml_document_get_node(doc, *it);
        const char *name = scalar(lookup(doc, o, "name")), *goal = scalar(lookup(doc, o, "goal"));
        const Metric *m = name ? metric_find(name) : NULL;
        if (!m) continue;
        s->objective[s->n_objectives] = m;
        s->objective_maximize[s->n_objectives++] = goal ? strcmp(goal, "minimize") != 0 : m->maximize;
    }
    if (s->n_objectives < 2) s->n_objectives = 0;
}

// metric: {name: N, goal: G} and objectives: of the stored YAML, behind the depth guard
// every reader of YAML has (space_yaml_guard). Only these keys are read,
// rather than the whole space with space_parse, so a file can be reported on a machine
// without the sweep's data files (space_parse checks them); the text was validated when
// the sweep ran.
static int read_metric(const H5Reader *rd, SweepSummary *s) {
    snprintf(s->metric, sizeof s->metric, "reward");
    s->maximize = 1;
    int line, col;
    char why[128];
    if (space_yaml_guard(s->yaml, strlen(s->yaml), &line, &col, why, sizeof why) != 0)
        return h5read_fail(rd, "attribute 'yaml' is no sweep's YAML: %d:%d: %s", line, col, why);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return h5read_fail(rd, "out of memory reading its YAML");
    yaml_parser_set_input_string(&parser, (const unsigned char *)s->yaml, strlen(s->yaml));
    if (yaml_parser_load(&parser, &doc)) {
        yaml_node_t *metric = lookup(&doc, yaml_document_get_root_node(&doc), "metric");
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        const char *name = scalar(lookup(&doc, metric, "name")), *goal = scalar(lookup(&doc, metric, "goal"));
        const Metric *m = name ? metric_find(name) : NULL;
        const int program = lookup(&doc, root, "program") || lookup(&doc, root, "command");
        if (m && m->use == METRIC_DECIDES) {  // the names a sweep may optimise (space.h)
            snprintf(s->metric, sizeof s->metric, "%s", name);
            s->maximize = goal ? strcmp(goal, "minimize") != 0 : m->maximize;
        } else if (program && name && !m && strlen(name) < sizeof s->metric) {  // a program's own, W&B's goal
            snprintf(s->metric, sizeof s->metric, "%s", name);
            s->maximize = goal && !strcmp(goal, "maximize");
            metric_program(&s->program_metric, s->metric, s->maximize);
        } else if (program && !name && !lookup(&doc, root, "reward")) {  // as space.c ranks such a sweep
            snprintf(s->metric, sizeof s->metric, "val_loss");
            s->maximize = 0;
        }
        read_objectives(s, &doc, lookup(&doc, yaml_document_get_root_node(&doc), "objectives"));
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    return 0;
}

// ---------------------------------------------------------------- /summary and /trials

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

int summary_rows(const H5Reader *rd, hid_t file, const char *program_metric, TrialResult **trials, int *n_trials) {
    *trials = NULL, *n_trials = 0;
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
        size_t row_size;
        hid_t mem = summary_memtype(cols, n_cols, &row_size);
        unsigned char *rows = xcalloc((size_t)n, row_size);
        if (H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
            rc = h5read_fail(rd, "/summary is unreadable");
        } else {
            *trials = xcalloc((size_t)n, sizeof **trials);
            *n_trials = (int)n;
        }
        for (hsize_t r = 0; rc == 0 && r < n; r++) {
            const unsigned char *row = rows + r * row_size;
            TrialResult *t = &(*trials)[r];
            size_t off = 0;
            for (int i = 0; rc == 0 && i < n_cols; i++) {
                if (cols[i].kind == SUM_STATUS)
                    rc = read_status(rd, (const char *)row + off, (unsigned long long)r, &t->status);
                else
                    memcpy((char *)t + cols[i].offset, row + off, column_size(cols[i].kind));
                off += column_size(cols[i].kind);
            }
        }
        free(rows);
        H5Tclose(mem);
    }
    if (filetype >= 0) H5Tclose(filetype);
    if (space >= 0) H5Sclose(space);
    H5Dclose(d);
    if (rc != 0) {
        free(*trials);
        *trials = NULL, *n_trials = 0;
    }
    return rc;
}

// What /trials/NNNNNN adds to the trial's /summary row (h5store_read_trial_details).
static int read_trial_group(const H5Reader *file_rd, hid_t file, TrialResult *t) {
    char name[32];
    snprintf(name, sizeof name, "trials/%06d", t->id);
    if (t->id < 0 || H5Lexists(file, "trials", H5P_DEFAULT) <= 0 || H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return h5read_fail(file_rd, "/summary lists trial %d but there is no group %s", t->id, name);
    H5Reader trial_rd = *file_rd;
    trial_rd.where = name;
    hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
    if (g < 0) return h5read_fail(&trial_rd, "unreadable group");
    const int rc = h5store_read_trial_details(&trial_rd, g, t);
    H5Gclose(g);
    return rc;
}

static int by_id(const void *a, const void *b) {
    const int x = ((const TrialResult *)a)->id, y = ((const TrialResult *)b)->id;
    return (x > y) - (x < y);
}

static int read_file(const H5Reader *rd, hid_t file, SweepSummary *s) {
    if (h5read_check_format(rd, file)) return -1;
    // The metric first (a program's own metric is a column of /summary), unless there is
    // no /summary, which summary_rows reports.
    if (H5Lexists(file, "summary", H5P_DEFAULT) > 0) {
        if (h5read_attr_string(rd, file, "sweep", &s->sweep) || h5read_attr_string(rd, file, "yaml", &s->yaml) ||
            read_metric(rd, s))
            return -1;
    }
    if (summary_rows(rd, file, s->program_metric.name, &s->trials, &s->n_trials)) return -1;
    for (int i = 0; i < s->n_trials; i++)
        if (read_trial_group(rd, file, &s->trials[i]) != 0) return -1;
    if (s->n_trials > 1) qsort(s->trials, (size_t)s->n_trials, sizeof *s->trials, by_id);
    for (int i = 1; i < s->n_trials; i++)
        if (s->trials[i].id == s->trials[i - 1].id) return h5read_fail(rd, "/summary lists trial %d twice", s->trials[i].id);
    return 0;
}

// ---------------------------------------------------------------- opening

// Open read-only without HDF5's file locking (see summary.h); closing the file closes
// what is still open in it, so an error half-way leaves nothing behind for the next attempt.
static hid_t open_file(const char *path) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return H5I_INVALID_HID;
    hid_t file = H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) >= 0 && H5Pset_file_locking(fapl, 0, 1) >= 0
                     ? H5Fopen(path, H5F_ACC_RDONLY, fapl)
                     : H5I_INVALID_HID;
    H5Pclose(fapl);
    return file;
}

// Whether another process has the file open for writing: HDF5 1.10 holds flock(LOCK_EX)
// on a file it writes (unless HDF5_USE_FILE_LOCKING=FALSE), so a shared lock is refused.
static int locked_by_writer(const char *path) {
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    const int locked = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);  // and with it our lock, if we got it
    return locked;
}

const Metric *summary_metric(const SweepSummary *s, const char *name) {
    const Metric *m = metric_find(name);
    return m ? m : s->program_metric.name && !strcmp(name, s->program_metric.name) ? &s->program_metric : NULL;
}

void summary_free(SweepSummary *s) {
    free(s->sweep);
    free(s->yaml);
    for (int i = 0; i < s->n_trials; i++) trial_result_free(&s->trials[i]);
    free(s->trials);
    memset(s, 0, sizeof *s);
}

int summary_read_here(const char *path, SweepSummary *out, char *err, size_t errlen) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);  // our one-line messages replace HDF5's stack dumps
    memset(out, 0, sizeof *out);
    const H5Reader rd = {.path = path, .err = err, .errlen = errlen};
    struct stat st;
    if (stat(path, &st) != 0) return h5read_fail(&rd, "%s", strerror(errno));
    if (!S_ISREG(st.st_mode)) return h5read_fail(&rd, "not a regular file");
    FILE *f = fopen(path, "rb");
    if (!f) return h5read_fail(&rd, "%s", strerror(errno));
    fclose(f);
    if (H5Fis_hdf5(path) <= 0) return h5read_fail(&rd, "not an HDF5 file");
    if (h5read_check_heaps(&rd) != 0) return -1;
    // A read that catches the writer of a running sweep between two flushes fails or finds
    // the file inconsistent; it is tried again.
    int writing = locked_by_writer(path);
    for (int attempt = 0;; attempt++) {
        hid_t file = open_file(path);
        const int rc = file >= 0 ? read_file(&rd, file, out) : h5read_fail(&rd, "cannot open: damaged or truncated HDF5 file");
        if (file >= 0) H5Fclose(file);
        if (rc == 0) {
            out->being_written = writing;
            return 0;
        }
        summary_free(out);
        writing = writing || locked_by_writer(path);
        if (!writing || attempt == RETRIES) return -1;
        nanosleep(&(struct timespec){.tv_nsec = RETRY_MS * 1000000L}, NULL);
    }
}

// In the child of h5read_survives: the whole read, its result dropped.
static int read_in_child(const void *path, char *err, size_t errlen) {
    SweepSummary s;
    const int rc = summary_read_here(path, &s, err, errlen);
    if (rc == 0) summary_free(&s);
    return rc;
}

int summary_read(const char *path, SweepSummary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const H5Reader rd = {.path = path, .err = err, .errlen = errlen};
    return h5read_survives(&rd, read_in_child, path) != 0 ? -1 : summary_read_here(path, out, err, errlen);
}
