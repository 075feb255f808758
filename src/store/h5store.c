// h5store.c: the results file, written by one process with serial HDF5 1.10.
//
// Strings in attributes are variable-length UTF-8 (h5py reads them as str); the
// /summary strings are fixed-width, null-padded ASCII (h5py: bytes columns), so
// pandas.DataFrame(h5py.File(f)["summary"][:]) works. Root attribute
// format_version lets a later attnsweep refuse a layout it does not know.
#define _POSIX_C_SOURCE 200809L  // lstat
#include "store/h5store.h"

#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/outfile.h"
#include "common/util.h"
#include "params/config_json.h"
#include "store/h5read.h"
#include "store/journal.h"
#include "store/schema.h"
#include "store/summary.h"
#include "store/trial_layout.h"
#include "trial/metrics.h"
#include "trial/reward.h"

enum {
    STATUS_LEN = STATUS_COLUMN_LEN,  // /summary column widths, bytes (null-padded)
    CHOICE_LEN = 32,
    LIST_LEN = CONFIG_TEXT - 1,   // the offset schedule as config_format writes it (shorter than CONFIG_TEXT)
    SUMMARY_CHUNK = 64,           // rows per chunk of the extendible /summary
    PAGE_BYTES = 16 << 10,        // file space page (4, 8, 16, 64 KiB measured: 16 best)
};

// ---------------------------------------------------------------- writing

// A trial in the file: its /summary row and whether it failed (a retry may replace it).
typedef struct {
    int in_file;
    int failed;
    hsize_t row;
} Stored;

struct H5Store {
    char *path;                 // the results file
    char tmp[4096];             // the temporary file being written until it is renamed to path ("" after)
    hid_t file, summary, row_type;
    size_t row_size;
    hsize_t n_rows;
    int program;                 // a program's sweep: the columns of its parameters
    TrialConfig columns;         //   are the program parameters declared here
    char program_metric[64];     //   and its own metric's column ("" if none)
    hid_t scalar, text;         // dataspace and type of every scalar and string attribute
    hid_t curve;                // a curves row: CurvePoint's layout, in memory and in the file
    Stored *stored;             // [n_stored], by trial id: where each trial written is
    int n_stored;
    // Trials journaled but not yet written, by their records' offsets in journal order:
    // waiting[next, n). A rebuild leaves them for h5store_catch_up, and trials recorded
    // meanwhile wait behind them, so the file's rows keep the journal's order.
    long *waiting;
    size_t n_waiting, next_waiting, cap_waiting;
    const Journal *journal;     // where they are read back from
    JournalReader *reader;
    long replayed;              // h5store_rebuild's replay read the journal to here: its
                                // trials before it are in the file or waiting (0: none)
    int unflushed;              // h5store_write_journaled wrote a trial since h5store_flush
};

// HDF5's error stack: the system's reason for a failed read or write, which the file
// driver puts in its message ("..., error message = 'No space left on device', ...").
static herr_t find_reason(unsigned n, const H5E_error2_t *e, void *ctx) {
    char *reason = ctx;
    const char *m = e->desc ? strstr(e->desc, "error message = '") : NULL;
    if (!reason[0] && m) {
        m += strlen("error message = '");
        snprintf(reason, 128, "%.*s", (int)strcspn(m, "'"), m);
    }
    return 0;
}

// A failed HDF5 call while writing ends the run (the journal already holds the trial; a
// resume rebuilds the file) with the reason, without HDF5's exit handlers: closing a file
// whose write failed crashes HDF5 1.10 (a segmentation fault in H5F__close_cb).
static hid_t must(const H5Store *s, hid_t status, const char *what) {
    if (status >= 0) return status;
    const int e = errno;
    char reason[128] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_reason, reason);
    if (!reason[0]) snprintf(reason, sizeof reason, "%s", e ? strerror(e) : "HDF5 error");
    die_now(EXIT_RUNTIME, "%s: cannot write %s: %s", s->path, what, reason);
}

// len 0: variable-length UTF-8 (attributes); otherwise fixed-width null-padded ASCII.
static hid_t string_type(const H5Store *s, size_t len) {
    hid_t t = must(s, H5Tcopy(H5T_C_S1), "string type");
    must(s, H5Tset_size(t, len ? len : H5T_VARIABLE), "string type");
    if (len)
        must(s, H5Tset_strpad(t, H5T_STR_NULLPAD), "string type");
    else
        must(s, H5Tset_cset(t, H5T_CSET_UTF8), "string type");
    return t;
}

// The ids every trial's objects share, made once per file.
static void open_types(H5Store *s) {
    s->scalar = must(s, H5Screate(H5S_SCALAR), "scalar dataspace");
    s->text = string_type(s, 0);
    s->curve = must(s, h5trial_curve_type(), "curves type");
}

static void close_types(H5Store *s) {
    H5Sclose(s->scalar);
    H5Tclose(s->text);
    H5Tclose(s->curve);
}

// An attribute of loc (a file id means the root group) holding *value, in space.
static void write_attr_in(const H5Store *s, hid_t loc, const char *name, hid_t type, hid_t space, const void *value) {
    hid_t attr = must(s, H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT), name);
    must(s, H5Awrite(attr, type, value), name);
    H5Aclose(attr);
}

static void write_attr(const H5Store *s, hid_t loc, const char *name, hid_t type, const void *value) {
    write_attr_in(s, loc, name, type, s->scalar, value);
}

static void write_attr_string(const H5Store *s, hid_t loc, const char *name, const char *value) {
    write_attr(s, loc, name, s->text, &value);
}

// The root attributes that say what the file holds: format_version, schema, reward_terms,
// version.
static void write_format(const H5Store *s) {
    const int format = SCHEMA_FORMAT_VERSION;
    write_attr(s, s->file, "format_version", H5T_NATIVE_INT, &format);
    char *schema = schema_json_text();
    write_attr_string(s, s->file, "schema", schema);
    cJSON_free(schema);
    write_attr_string(s, s->file, "reward_terms", "beyond chance");
    write_attr_string(s, s->file, "version", "attnsweep " ATTNSWEEP_VERSION);
}

// An attribute of the given shape filled from data.
static void write_attr_array(const H5Store *s, hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims,
                             const void *data) {
    hid_t space = must(s, H5Screate_simple(rank, dims, NULL), name);
    write_attr_in(s, loc, name, type, space, data);
    H5Sclose(space);
}

static void write_attr_vector(const H5Store *s, hid_t loc, const char *name, hid_t type, hsize_t n, const void *data) {
    write_attr_array(s, loc, name, type, 1, &n, data);
}

// A dataset of loc with the given shape filled from data; the caller closes it.
static hid_t write_dataset(const H5Store *s, hid_t loc, const char *name, hid_t type, int rank,
                           const hsize_t *dims, const void *data) {
    hid_t space = must(s, H5Screate_simple(rank, dims, NULL), name);
    hid_t d = must(s, H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
    must(s, H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name);
    H5Sclose(space);
    return d;
}

// One pass over the /summary columns: defines the compound type (when type >= 0),
// fills one row (when row != NULL), and leaves the row size in size.
typedef struct {
    const H5Store *s;
    hid_t type;
    unsigned char *row;
    size_t size;
} Row;

static void column(Row *w, const char *name, hid_t type, const void *value) {
    if (w->type >= 0) must(w->s, H5Tinsert(w->type, name, w->size, type), name);
    if (w->row) memcpy(w->row + w->size, value, H5Tget_size(type));
    w->size += H5Tget_size(type);
}

static void column_int32(Row *w, const char *name, int32_t v) { column(w, name, H5T_NATIVE_INT32, &v); }
static void column_f64(Row *w, const char *name, double v) { column(w, name, H5T_NATIVE_DOUBLE, &v); }

static void column_string(Row *w, const char *name, size_t len, const char *v) {
    char padded[LIST_LEN] = {0};  // len <= LIST_LEN, the widest column
    _Static_assert((int)PROGRAM_TEXT <= (int)LIST_LEN, "a program's text column is no wider than the list column");
    size_t n = strlen(v);
    memcpy(padded, v, n < len ? n : len);
    hid_t t = string_type(w->s, len);
    column(w, name, t, padded);
    H5Tclose(t);
}

// The trial's facts (trial/metrics.h TrialColumn) of r.
static void trial_columns(Row *w, const TrialColumn *cols, int n, const TrialResult *r) {
    for (int i = 0; i < n; i++) {
        const void *at = (const char *)r + cols[i].offset;
        const int64_t wide = cols[i].type == COLUMN_INT64 ? *(const long *)at : 0;
        switch (cols[i].type) {
        case COLUMN_INT32: column(w, cols[i].name, H5T_NATIVE_INT32, at); break;
        case COLUMN_INT64: column(w, cols[i].name, H5T_NATIVE_INT64, &wide); break;
        case COLUMN_FLOAT64: column(w, cols[i].name, H5T_NATIVE_DOUBLE, at); break;
        case COLUMN_TEXT: column_string(w, cols[i].name, STATUS_LEN, trial_status_names[*(const TrialStatus *)at]); break;
        }
    }
}

// A program's parameters: a float64 column for each number (NaN where the trial lacks
// it), a text column for each text ("" where it lacks it).
static void program_columns(Row *w, const TrialConfig *columns, const TrialConfig *c) {
    for (int k = 0; k < columns->n_program; k++) {
        const ProgramValue *want = &columns->program[k];
        const ProgramValue *v = k < c->n_program && !strcmp(c->program[k].name, want->name) && c->program[k].set
                                    ? &c->program[k]
                                    : NULL;
        char name[PROGRAM_NAME + 8];
        metric_param_column(want->name, name, sizeof name);
        if (want->type == PT_TEXT)
            column_string(w, name, PROGRAM_TEXT, v ? v->text : "");
        else
            column_f64(w, name, v ? v->number : NAN);
    }
}

// The lead columns (trial, status), every non-text parameter in table order (a program's
// parameters instead for its sweep), then the metrics (trial/metrics.h, in its order), a
// program's own metric, the trail columns (steps, n_params, seconds, group_size): schema.h.
static void summary_columns(Row *w, const TrialResult *r) {
    trial_columns(w, trial_lead_columns, n_trial_lead_columns, r);
    if (w->s->program) program_columns(w, &w->s->columns, &r->config);
    for (int i = 0; !w->s->program && i < config_nparams; i++) {
        const ParamSpec *p = &config_params[i];
        const char *base = (const char *)&r->config + p->offset;
        char text[CONFIG_TEXT];
        switch (p->type) {
        case PT_INT: column_int32(w, config_column(p), *(const int *)base); break;
        case PT_REAL: column_f64(w, config_column(p), *(const double *)base); break;
        case PT_CHOICE: column_string(w, config_column(p), CHOICE_LEN, p->choices[*(const int *)base]); break;
        case PT_INTLIST:
            config_format(&r->config, p, text, sizeof text);
            column_string(w, config_column(p), LIST_LEN, text);
            break;
        case PT_TEXT: break;  // paths and the like: in the trial's config attribute only
        }
    }
    for (int i = 0; i < n_metrics; i++) column_f64(w, metrics[i].name, metric_value(r, &metrics[i]));
    if (w->s->program_metric[0]) column_f64(w, w->s->program_metric, r->program_metric);
    trial_columns(w, trial_trail_columns, n_trial_trail_columns, r);
}

// /summary's row type (s->row_type, s->row_size) for this sweep's columns.
static void make_row_type(H5Store *s) {
    TrialResult blank = {0};
    config_defaults(&blank.config);
    Row w = {.s = s, .type = H5I_INVALID_HID};
    summary_columns(&w, &blank);
    s->row_size = w.size;
    w = (Row){.s = s, .type = must(s, H5Tcreate(H5T_COMPOUND, s->row_size), "summary type")};
    summary_columns(&w, &blank);
    s->row_type = w.type;
}

static void create_summary(H5Store *s) {
    make_row_type(s);

    hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = SUMMARY_CHUNK;
    hid_t space = must(s, H5Screate_simple(1, &zero, &unlimited), "summary");
    hid_t dcpl = must(s, H5Pcreate(H5P_DATASET_CREATE), "summary");
    must(s, H5Pset_chunk(dcpl, 1, &chunk), "summary");
    s->summary = must(s, H5Dcreate2(s->file, "summary", s->row_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                      "summary");
    H5Pclose(dcpl);
    H5Sclose(space);
}

// What the sweep is ranked by: root attributes metric, goal and objectives (JSON); and
// until_stopped.
static void write_ranking(const H5Store *s, const StoreMeta *meta) {
    write_attr_string(s, s->file, "metric", meta->metric ? meta->metric : "reward");
    write_attr_string(s, s->file, "goal", !meta->metric || meta->maximize ? "maximize" : "minimize");
    cJSON *objectives = cJSON_CreateArray();
    for (int k = 0; k < meta->n_objectives; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", meta->objective[k]);
        cJSON_AddStringToObject(o, "goal", meta->objective_maximize[k] ? "maximize" : "minimize");
        cJSON_AddItemToArray(objectives, o);
    }
    char *text = cJSON_PrintUnformatted(objectives);
    cJSON_Delete(objectives);
    if (!text) die(EXIT_RUNTIME, "%s: out of memory", s->path);
    write_attr_string(s, s->file, "objectives", text);
    cJSON_free(text);
    write_attr(s, s->file, "until_stopped", H5T_NATIVE_INT, &meta->until_stopped);
}

// H5Fcreate of a temporary file, exclusively (no file or link that was there is opened).
typedef struct {
    hid_t fcpl, fapl;
} CreateProps;

static long create_exclusive(const char *tmp, void *ctx) {
    const CreateProps *p = ctx;
    return H5Fcreate(tmp, H5F_ACC_EXCL, p->fcpl, p->fapl);
}

// A store for PATH of meta's sweep, no file open yet.
static H5Store *new_store(const char *path, const StoreMeta *meta) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);  // our one-line messages replace HDF5's stack dumps
    H5Store *s = xcalloc(1, sizeof *s);
    s->path = xstrdup(path);
    if (meta->program) s->program = 1, s->columns = *meta->program;
    if (meta->program_metric) snprintf(s->program_metric, sizeof s->program_metric, "%s", meta->program_metric);
    return s;
}

// How a results file is opened for writing.
static hid_t file_access(const H5Store *s) {
    // A trial's objects leave HDF5's metadata cache when closed: H5Fflush after every
    // trial scans the whole cache (HDF5 1.10), which otherwise keeps the metadata of
    // every trial written (flushing cost 0.9 ms per trial over 400 short trials, 0.03 ms
    // with the eviction: scripts/bench/coordinator_overhead.sh).
    hid_t fapl = must(s, H5Pcreate(H5P_FILE_ACCESS), "file access");
    must(s, H5Pset_evict_on_close(fapl, 1), "file access");
    // The 1.8 file format: /trials's links in a fractal heap and a B-tree rather than an
    // old-style group's one local name heap, which each append rewrote whole (the flush
    // grew with the trials: scripts/bench/h5_append_bench.c). h5py and h5dump read it.
    must(s, H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST), "file access");
    return fapl;
}

H5Store *h5store_create(const char *path, const StoreMeta *meta) {
    H5Store *s = new_store(path, meta);
    hid_t fapl = file_access(s);
    // File space in pages. Not through HDF5's page buffer (H5Pset_page_buffer_size): it
    // saved 0.16 ms a trial (0.60 -> 0.44 ms for 1 layer), but in HDF5 1.10.8 it reads past
    // its buffer (heap-buffer-overflow in H5PB_read under AddressSanitizer) when a retried
    // trial's group is deleted (run --resume --retry-failed; test_failures), once the root
    // attributes grew with format 6.
    hid_t fcpl = must(s, H5Pcreate(H5P_FILE_CREATE), "file creation");
    must(s, H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_PAGE, 0, 1), "file creation");
    must(s, H5Pset_file_space_page_size(fcpl, PAGE_BYTES), "file creation");
    s->file = (hid_t)outfile_create_with(path, s->tmp, sizeof s->tmp, create_exclusive, &(CreateProps){fcpl, fapl});
    H5Pclose(fcpl);
    H5Pclose(fapl);
    if (s->file < 0) die(EXIT_RUNTIME, "%s: cannot create the results file: %s", path, strerror(errno ? errno : EIO));
    open_types(s);

    write_format(s);
    write_attr_string(s, s->file, "sweep", meta->sweep);
    write_attr_string(s, s->file, "yaml", meta->yaml);
    write_attr(s, s->file, "seed", H5T_NATIVE_INT, &meta->seed);
    write_attr(s, s->file, "start_time", H5T_NATIVE_DOUBLE, &meta->start_time);
    write_ranking(s, meta);
    create_summary(s);
    H5Gclose(must(s, H5Gcreate2(s->file, "trials", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "trials"));
    must(s, H5Fflush(s->file, H5F_SCOPE_GLOBAL), "file");
    return s;
}

// The trial's /summary row: row `at`, one past the last extending the table.
static void write_summary_row(H5Store *s, const TrialResult *r, hsize_t at) {
    unsigned char *row = xcalloc(1, s->row_size);
    Row w = {.s = s, .type = H5I_INVALID_HID, .row = row};
    summary_columns(&w, r);

    hsize_t start = at, count = 1, size = s->n_rows > at ? s->n_rows : at + 1;
    if (size > s->n_rows) must(s, H5Dset_extent(s->summary, &size), "summary");
    hid_t file_space = must(s, H5Dget_space(s->summary), "summary");
    must(s, H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, NULL, &count, NULL), "summary");
    hid_t mem_space = must(s, H5Screate_simple(1, &count, NULL), "summary");
    must(s, H5Dwrite(s->summary, s->row_type, mem_space, file_space, H5P_DEFAULT, row), "summary");
    H5Sclose(mem_space);
    H5Sclose(file_space);
    free(row);
    s->n_rows = size;
}

// curves: one row per evaluation (a compound table, as /summary).
static void write_curves(const H5Store *s, hid_t trial, const TrialResult *r) {
    hsize_t n = (hsize_t)r->n_curve;
    H5Dclose(write_dataset(s, trial, "curves", s->curve, 1, &n, r->curve));
}

static void write_weights(const H5Store *s, hid_t trial, const TrialResult *r) {
    hid_t g = must(s, H5Gcreate2(trial, "weights", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "weights");
    hsize_t dims[4];
    for (int k = 0; k < 4; k++) dims[k] = (hsize_t)r->dims[k];
    for (int l = 0; l < r->n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "layer%d", l);
        hid_t d = write_dataset(s, g, name, H5T_NATIVE_FLOAT, 4, dims, r->weights[l]);
        write_attr_string(s, d, "layout", "groups,d_group,d_model,roles");
        write_attr_string(s, d, "roles", r->dims[3] == 3 ? "Q,K,V" : "mixing");
        H5Dclose(d);
    }
    H5Gclose(g);
    // the output side (model_export_output): W_O, or Grassmann's W_plu
    g = must(s, H5Gcreate2(trial, "weights_out", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "weights_out");
    const hsize_t out_dims[2] = {(hsize_t)r->out_dims[0], (hsize_t)r->out_dims[1]};
    for (int l = 0; l < r->n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "layer%d", l);
        hid_t d = write_dataset(s, g, name, H5T_NATIVE_FLOAT, 2, out_dims, r->weights_out[l]);
        write_attr_string(s, d, "layout", r->dims[3] == 3 ? "d_model,heads*d_k" : "d_model,pairs");
        H5Dclose(d);
    }
    H5Gclose(g);
}

// The whole parameter arena (TrialResult.params): params [n_params] float32 with its
// layout ("name:count,...", arena order) as an attribute. Not compressed: shuffle + deflate
// saved 14 % of the default model's 420 kB at 8.6 ms of the coordinator's CPU per trial,
// against 0.35 ms written as it is.
static void write_params(const H5Store *s, hid_t trial, const TrialResult *r) {
    const hsize_t n = (hsize_t)r->n_params;
    hid_t d = write_dataset(s, trial, "params", H5T_NATIVE_FLOAT, 1, &n, r->params);
    write_attr_string(s, d, "layout", r->param_layout);
    H5Dclose(d);
}

// What a score was computed on: attributes tensor (its view), modes (the view's mode
// names, comma-separated) and roles (the names of the roles mode's entries).
static void write_scored_tensor(const H5Store *s, hid_t g, const LayerScore *ls) {
    const char *const *m = tensor_mode_names[ls->view];
    char modes[64];
    snprintf(modes, sizeof modes, "%s,%s,%s,%s", m[0], m[1], m[2], m[3]);
    write_attr_string(s, g, "tensor", tensor_view_names[ls->view]);
    write_attr_string(s, g, "modes", modes);
    write_attr_string(s, g, "roles", ls->dims[3] == 3 ? "Q,K,V" : ls->dims[3] == 2 ? "QK,OV" : "mixing");
}

// scores/layerK: the invariants of the final tensor of layer K (see invariants/score.h),
// all as attributes of the layer's group (an attribute costs a fifth of a dataset to
// write; the longest, sv_mode2 of d_model <= 4096 values, is 32 KiB, within the 64 KiB
// an attribute may have in this file format).
static void write_layer_scores(const H5Store *s, hid_t parent, const LayerScore *scores, int n_layers) {
    hid_t g = must(s, H5Gcreate2(parent, "scores", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "scores");
    for (int l = 0; l < n_layers; l++) {
        const LayerScore *ls = &scores[l];
        char name[32];
        snprintf(name, sizeof name, "layer%d", l);
        hid_t lg = must(s, H5Gcreate2(g, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
        for (int m = 0; m < 4; m++) {
            char sv[16];
            snprintf(sv, sizeof sv, "sv_mode%d", m);
            write_attr_vector(s, lg, sv, H5T_NATIVE_DOUBLE, (hsize_t)ls->n_sv[m], ls->sv[m]);
        }
        write_attr_vector(s, lg, "dims", H5T_NATIVE_INT, 4, ls->dims);
        write_scored_tensor(s, lg, ls);
        write_attr_vector(s, lg, "num_rank", H5T_NATIVE_INT, 4, ls->num_rank);
        write_attr_vector(s, lg, "eff_rank", H5T_NATIVE_DOUBLE, 4, ls->eff_rank);
        write_attr_vector(s, lg, "core_energy", H5T_NATIVE_DOUBLE, 4, ls->core_energy);
        write_attr_vector(s, lg, "tucker_ranks", H5T_NATIVE_INT, 4, ls->tucker_ranks);
        write_attr(s, lg, "norm", H5T_NATIVE_DOUBLE, &ls->norm);
        write_attr(s, lg, "correlation", H5T_NATIVE_DOUBLE, &ls->correlation);
        write_attr(s, lg, "correlation_chance", H5T_NATIVE_DOUBLE, &ls->correlation_chance);
        write_attr(s, lg, "correlation_chance_sd", H5T_NATIVE_DOUBLE, &ls->correlation_chance_sd);
        write_attr(s, lg, "eff_rank_chance", H5T_NATIVE_DOUBLE, &ls->eff_rank_chance);
        write_attr(s, lg, "eff_rank_chance_sd", H5T_NATIVE_DOUBLE, &ls->eff_rank_chance_sd);
        write_attr(s, lg, "mixing", H5T_NATIVE_INT, &ls->mixing);
        write_attr(s, lg, "tucker_fit", H5T_NATIVE_DOUBLE, &ls->tucker_fit);
        write_attr(s, lg, "tucker_iters", H5T_NATIVE_INT, &ls->tucker_iters);
        write_attr(s, lg, "cp_rank", H5T_NATIVE_INT, &ls->cp_rank);
        write_attr(s, lg, "cp_fit", H5T_NATIVE_DOUBLE, &ls->cp_fit);
        if (ls->cp_rank_max > 0) {
            write_attr_vector(s, lg, "cp_fits", H5T_NATIVE_DOUBLE, (hsize_t)ls->cp_rank_max, ls->cp_fits);
            write_attr_vector(s, lg, "cp_cond", H5T_NATIVE_DOUBLE, 4, ls->cp_cond);
        }
        if (ls->cp_rank > 0) {
            hsize_t d[2] = {(hsize_t)ls->cp_rank, (hsize_t)ls->dims[3]};
            write_attr_array(s, lg, "cp_roles", H5T_NATIVE_DOUBLE, 2, d, ls->cp_roles);
        }
        H5Gclose(lg);
    }
    H5Gclose(g);
}

static void write_trace(const H5Store *s, hid_t trial, const InvariantTrace *t) {
    hid_t type = must(s, h5trial_trace_type(t->layers, t->groups), "invariants type");
    unsigned char *rows = xcalloc((size_t)t->n, h5trial_trace_row(t->layers, t->groups).size);
    h5trial_trace_rows((InvariantTrace *)t, rows, 1);
    hsize_t n = (hsize_t)t->n;
    H5Dclose(write_dataset(s, trial, "invariants", type, 1, &n, rows));
    free(rows);
    H5Tclose(type);
}

// Where trial id is kept track of (the table grown to hold it).
static Stored *stored_at(H5Store *s, int id) {
    if (id < 0) die(EXIT_RUNTIME, "%s: a trial id of %d", s->path, id);
    if (id >= s->n_stored) {
        const int n = id >= s->n_stored * 2 ? id + 1 : s->n_stored * 2;
        s->stored = xrealloc(s->stored, (size_t)n * sizeof *s->stored);
        memset(s->stored + s->n_stored, 0, (size_t)(n - s->n_stored) * sizeof *s->stored);
        s->n_stored = n;
    }
    return &s->stored[id];
}

// The trial's group and /summary row, without the flush. A failed trial run again
// (--retry-failed) replaces its failed attempt: the group anew, the row in its place.
static void write_trial(H5Store *s, const TrialResult *r) {
    char name[32];
    h5trial_group_name(name, sizeof name, r->id);
    Stored *at = stored_at(s, r->id);
    if (at->in_file && !at->failed) die(EXIT_RUNTIME, "%s: trial %d is already in the file", s->path, r->id);
    if (at->in_file) must(s, H5Ldelete(s->file, name, H5P_DEFAULT), name);
    const hsize_t row = at->in_file ? at->row : s->n_rows;
    *at = (Stored){.in_file = 1, .failed = r->status == TRIAL_FAILED, .row = row};
    hid_t g = must(s, H5Gcreate2(s->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);

    char *config = config_to_json_text(&r->config);
    write_attr_string(s, g, "config", config);
    cJSON_free(config);
    char *reward = reward_spec_to_json(&r->reward_spec);
    write_attr_string(s, g, "reward_spec", reward);
    cJSON_free(reward);
    write_attr_string(s, g, "status", trial_status_names[r->status]);
    for (int i = 0; i < n_h5trial_texts; i++)
        write_attr_string(s, g, h5trial_texts[i].name, (const char *)r + h5trial_texts[i].offset);
    for (int i = 0; i < n_h5trial_numbers; i++)
        write_attr(s, g, h5trial_numbers[i].name, h5trial_native_type(h5trial_numbers[i].kind),
                   (const char *)r + h5trial_numbers[i].offset);
    for (int i = 0; r->run.dir && i < n_h5trial_run_texts; i++) {
        const char *text = *(char *const *)((const char *)r + h5trial_run_texts[i].offset);
        write_attr_string(s, g, h5trial_run_texts[i].name, text ? text : "");
    }
    write_curves(s, g, r);
    write_weights(s, g, r);
    if (r->params) write_params(s, g, r);
    if (r->trace.n > 0) write_trace(s, g, &r->trace);
    if (r->scores) write_layer_scores(s, g, r->scores, r->n_layers);
    H5Gclose(g);

    write_summary_row(s, r, row);
}

size_t h5store_waiting(const H5Store *s) { return s->n_waiting - s->next_waiting; }

static void wait_for(H5Store *s, long offset) {
    if (s->n_waiting == s->cap_waiting)
        s->waiting = xrealloc(s->waiting, (s->cap_waiting = 2 * s->cap_waiting + 1024) * sizeof *s->waiting);
    s->waiting[s->n_waiting++] = offset;
}

// No trial waits any more: the file (all written, or marked up to the first left) goes
// over PATH.
static void end_waiting(H5Store *s) {
    s->n_waiting = s->next_waiting = 0;
    journal_reader_free(s->reader);
    s->reader = NULL;
    h5store_publish(s);
}

size_t h5store_catch_up(H5Store *s, double seconds) {
    const double t0 = now_seconds();
    while (s->next_waiting < s->n_waiting) {
        if (!s->reader) s->reader = journal_reader(s->journal);
        TrialResult r;
        char err[1024];
        if (journal_reader_trial(s->reader, s->waiting[s->next_waiting], &r, err, sizeof err) != 0)
            die(EXIT_RUNTIME, "%s: cannot write it from its journal: %s", s->path, err);
        write_trial(s, &r);
        trial_result_free(&r);
        s->next_waiting++;
        if (now_seconds() - t0 >= seconds) break;
    }
    if (s->n_waiting && s->next_waiting == s->n_waiting) {  // every trial in: the file is whole again
        end_waiting(s);
        must(s, H5Fflush(s->file, H5F_SCOPE_GLOBAL), "file");
    }
    return h5store_waiting(s);
}

void h5store_write_trial(H5Store *s, const TrialResult *r) {
    h5store_catch_up(s, INFINITY);
    write_trial(s, r);
    must(s, H5Fflush(s->file, H5F_SCOPE_GLOBAL), "file");
}

void h5store_write_journaled(H5Store *s, const TrialResult *r, long offset) {
    if (offset < s->replayed) return;  // the rebuild took it (a job that became the writer with it unwritten)
    if (s->next_waiting < s->n_waiting) {
        wait_for(s, offset);
    } else {
        write_trial(s, r);
        s->unflushed = 1;
    }
}

void h5store_flush(H5Store *s) {
    if (s->unflushed) must(s, H5Fflush(s->file, H5F_SCOPE_GLOBAL), "file");
    s->unflushed = 0;
}

// ---------------------------------------------------------------- resume

typedef struct {
    H5Store *s;          // NULL: replay to seen alone
    long kept_end;       // a kept file (reopen): its trials are the journal's before this offset; else -1
    hsize_t kept;        // the trials found in the kept file
    const char *journal;
    RebuildSeen seen;
    void *ctx;
    char *err;
    size_t errlen;
    int refused;
} Rebuild;

static const char KEPT_ADVICE[] =
    " (a damaged journal?): move the results file aside and run --resume again, which writes it anew from the journal";

// Trial id's standing record, at offset, into the file: written, unless a kept file has
// it already.
static void rebuild_trial(Rebuild *rb, int id, long offset) {
    const Stored *at = id >= 0 && id < rb->s->n_stored ? &rb->s->stored[id] : NULL;
    if (at && at->in_file && offset < rb->kept_end) {
        rb->kept++;
    } else if (at && at->in_file && !at->failed) {  // the kept file and its journal do not match
        snprintf(rb->err, rb->errlen, "%s: trial %d is in the results file and again after it in its journal%s",
                 rb->s->path, id, KEPT_ADVICE);
        rb->refused = 1;
    } else {
        wait_for(rb->s, offset);  // h5store_catch_up writes it
    }
}

static void rebuild_record(void *arg, JournalRecord *rec) {
    Rebuild *rb = arg;
    TrialResult *r = &rec->trial;
    if (rb->refused) {
    } else if (rec->kind == JOURNAL_TRIAL && rec->superseded) {  // a failed attempt retried says nothing
        if (r->status != TRIAL_FAILED)
            warnf("%s: trial %d appears twice; keeping its first record that did not fail", rb->journal, r->id);
    } else if (rb->seen && rb->seen(rb->ctx, rec, rb->err, rb->errlen) != 0) {
        rb->refused = 1;
    } else if (rec->kind == JOURNAL_TRIAL && rb->s) {
        rebuild_trial(rb, r->id, rec->offset);
    }
    if (rec->kind == JOURNAL_TRIAL) trial_result_free(r);
}

// A results file a run of this sweep closed, kept by the resume instead of written anew:
// open for appending, where each trial is read back from /summary, and journal_end,
// end_time and start_time taken away before anything else is written (so a kill from
// here on leaves a file the next resume writes anew), start_time this run's. NULL, with
// PATH untouched, when it is anything else, or is not a plain file (a link is never
// written through: the file HDF5 opened must be the one lstat saw), or its journal is
// shorter than journal_end says.
static H5Store *reopen(const char *path, const StoreMeta *meta, const Journal *journal, long *kept_end) {
    struct stat st, js, opened;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || stat(journal_path(journal), &js) != 0) return NULL;
    H5Store *s = new_store(path, meta);
    make_row_type(s);
    H5Kept k = {.path = path, .yaml = meta->yaml, .row_type = s->row_type};
    char err[512];
    H5Reader rd = {.path = path, .err = err, .errlen = sizeof err};
    int ok = h5read_survives(&rd, h5read_kept_path, &k) == 0;
    if (ok) {
        hid_t fapl = file_access(s);
        s->file = H5Fopen(path, H5F_ACC_RDWR, fapl);
        H5Pclose(fapl);
    }
    void *handle = NULL;
    ok = ok && s->file >= 0 && H5Fget_vfd_handle(s->file, H5P_DEFAULT, &handle) >= 0 && handle &&
         fstat(*(int *)handle, &opened) == 0 && opened.st_dev == st.st_dev && opened.st_ino == st.st_ino &&
         h5read_kept(&rd, s->file, &k, 1) == 0 && k.journal_end <= (long)js.st_size;
    for (hsize_t i = 0; ok && i < k.n; i++) {
        ok = k.rows[i].trial >= 0 && (k.rows[i].trial >= s->n_stored || !s->stored[k.rows[i].trial].in_file);
        if (ok)
            *stored_at(s, k.rows[i].trial) = (Stored){.in_file = 1, .row = i,
                                                      .failed = !strncmp(k.rows[i].status, "failed", STATUS_LEN)};
    }
    free(k.rows);
    if (!ok) {
        if (s->file > 0) H5Fclose(s->file);
        H5Tclose(s->row_type);
        free(s->stored);
        free(s->path);
        free(s);
        return NULL;
    }
    s->summary = must(s, H5Dopen2(s->file, "summary", H5P_DEFAULT), "summary");
    s->n_rows = k.n;
    open_types(s);
    static const char *const unset[] = {"journal_end", "end_time", "start_time"};
    for (size_t i = 0; i < sizeof unset / sizeof *unset; i++)
        if (must(s, H5Aexists(s->file, unset[i]), unset[i]) > 0) must(s, H5Adelete(s->file, unset[i]), unset[i]);
    write_attr(s, s->file, "start_time", H5T_NATIVE_DOUBLE, &meta->start_time);
    must(s, H5Fflush(s->file, H5F_SCOPE_GLOBAL), "file");
    *kept_end = k.journal_end;
    return s;
}

void h5store_mark_journal(H5Store *s, long journal_end, double seconds) {
    if (h5store_catch_up(s, seconds) > 0) {  // the file holds the journal's trials before the first still waiting
        journal_end = s->waiting[s->next_waiting];
        end_waiting(s);
    }
    write_attr(s, s->file, "journal_end", H5T_NATIVE_LONG, &journal_end);
}

static void close_file(H5Store *s) {
    free(s->stored);
    free(s->waiting);
    journal_reader_free(s->reader);
    H5Tclose(s->row_type);
    H5Dclose(s->summary);
    close_types(s);
    must(s, H5Fclose(s->file), "file");
}

void h5store_publish(H5Store *s) {
    if (!s->tmp[0]) return;
    must(s, H5Fflush(s->file, H5F_SCOPE_GLOBAL), "file");
    // Renaming the open file is safe: HDF5 goes on writing through its descriptor.
    if (outfile_commit(-1, s->tmp, s->path) != 0)
        die(EXIT_RUNTIME, "%s: cannot rename %s to it: %s", s->path, s->tmp, strerror(errno));
    s->tmp[0] = 0;
}

// A store given up: a new file's temporary file goes and PATH stays as it was; a kept
// file (reopen: no temporary file) is closed as it is, without its mark.
static void abandon(H5Store *s) {
    close_file(s);
    if (s->tmp[0]) outfile_discard(s->tmp);
    free(s->path);
    free(s);
}

// The journal's standing records to rb's seen and, when rb->s is set, its trials into
// the file (a snapshot's trials, then the records after it): 0, or -1 with one line in
// rb's err.
static int replay_into(Rebuild *rb, Journal *journal, const JournalSnapshot *snap) {
    char damage[1024];  // the replay's own message: a failure, or damage to warn about
    for (size_t i = 0; snap && rb->s && i < snap->n_trials && !rb->refused; i++)
        rebuild_trial(rb, snap->trials[i].id, snap->trials[i].offset);
    if (rb->refused) return -1;
    const long n = snap ? journal_replay_from(journal, snap->end, rebuild_record, rb, damage, sizeof damage)
                        : journal_replay(journal, rebuild_record, rb, damage, sizeof damage);
    if (n < 0) snprintf(rb->err, rb->errlen, "%s", damage);
    if (n < 0 || rb->refused) return -1;
    if (damage[0]) warnf("%s", damage);
    return 0;
}

H5Store *h5store_rebuild(const char *path, const StoreMeta *meta, Journal *journal, const JournalSnapshot *snap,
                         RebuildSeen seen, void *ctx, char *err, size_t errlen) {
    Rebuild rb = {.kept_end = -1, .journal = journal_path(journal), .seen = seen, .ctx = ctx, .err = err,
                  .errlen = errlen};
    rb.s = reopen(path, meta, journal, &rb.kept_end);
    if (!rb.s) {
        rb.s = h5store_create(path, meta);
        rb.s->journal = journal;
        if (replay_into(&rb, journal, snap) != 0) {
            abandon(rb.s);
            return NULL;
        }
        if (!rb.s->n_waiting) h5store_publish(rb.s);  // else when the trials are in (h5store_catch_up)
        rb.s->replayed = journal_length(journal);
        return rb.s;
    }
    rb.s->journal = journal;
    const hsize_t rows = rb.s->n_rows;
    int rc = replay_into(&rb, journal, snap);
    rb.s->replayed = journal_length(journal);
    if (rc == 0 && rb.kept != rows) {
        snprintf(err, errlen, "%s: the results file holds %llu trials its journal does not%s", path,
                 (unsigned long long)(rows - rb.kept), KEPT_ADVICE);
        rc = -1;
    }
    if (rc == 0) return rb.s;
    abandon(rb.s);  // without journal_end: the next resume writes it anew from the journal
    return NULL;
}

int h5store_replay(Journal *journal, const JournalSnapshot *snap, RebuildSeen seen, void *ctx, char *err,
                   size_t errlen) {
    Rebuild rb = {.kept_end = -1, .journal = journal_path(journal), .seen = seen, .ctx = ctx, .err = err,
                  .errlen = errlen};
    return replay_into(&rb, journal, snap);
}

void h5store_write_model_scores(const char *path, const ModelScoresMeta *meta, const LayerScore *scores,
                                int n_layers) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    H5Store s = {.path = (char *)path};
    // A checkpoint's layer can be wider than a sweep's (d_model 8192: sv_mode2 is 64 KiB):
    // the 1.8 file format stores attributes of any size.
    hid_t fapl = must(&s, H5Pcreate(H5P_FILE_ACCESS), "file access");
    must(&s, H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST), "file access");
    s.file = (hid_t)outfile_create_with(path, s.tmp, sizeof s.tmp, create_exclusive, &(CreateProps){H5P_DEFAULT, fapl});
    H5Pclose(fapl);
    if (s.file < 0) die(EXIT_RUNTIME, "%s: cannot create the scores file: %s", path, strerror(errno ? errno : EIO));
    open_types(&s);
    write_format(&s);
    write_attr_string(&s, s.file, "source", meta->source);
    write_attr_string(&s, s.file, "family", meta->family);
    write_attr(&s, s.file, "beta", H5T_NATIVE_DOUBLE, &meta->spec.beta);
    write_attr(&s, s.file, "gamma", H5T_NATIVE_DOUBLE, &meta->spec.gamma);
    const RewardTerms *t = &meta->terms;
    const struct {
        const char *name;
        double v;
    } terms[] = {{"rank_deviation", t->rank_deviation},
                 {"correlation", t->correlation},
                 {"correlation_chance", t->correlation_chance},
                 {"rank_deviation_excess", t->rank_deviation_excess},
                 {"correlation_excess", t->correlation_excess},
                 {"correlation_z", t->correlation_z},
                 {"eff_rank_z", t->eff_rank_z}};
    for (size_t k = 0; k < sizeof terms / sizeof terms[0]; k++)
        write_attr(&s, s.file, terms[k].name, H5T_NATIVE_DOUBLE, &terms[k].v);
    char *reward = reward_spec_to_json(&meta->spec);
    write_attr_string(&s, s.file, "reward_spec", reward);
    cJSON_free(reward);
    write_layer_scores(&s, s.file, scores, n_layers);
    hid_t g = must(&s, H5Gopen2(s.file, "scores", H5P_DEFAULT), "scores");
    for (int l = 0; l < n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "layer%d", l);
        hid_t lg = must(&s, H5Gopen2(g, name, H5P_DEFAULT), name);
        write_attr_string(&s, lg, "name", meta->names[l]);
        H5Gclose(lg);
    }
    H5Gclose(g);
    close_types(&s);
    must(&s, H5Fclose(s.file), "file");
    if (outfile_commit(-1, s.tmp, path) != 0) die(EXIT_RUNTIME, "%s: cannot rename %s to it: %s", path, s.tmp, strerror(errno));
}

void h5store_close(H5Store *s, double end_time) {
    h5store_catch_up(s, INFINITY);
    write_attr(s, s->file, "end_time", H5T_NATIVE_DOUBLE, &end_time);
    const int published = !s->tmp[0];
    close_file(s);
    if (!published && outfile_commit(-1, s->tmp, s->path) != 0)
        die(EXIT_RUNTIME, "%s: cannot rename %s to it: %s", s->path, s->tmp, strerror(errno));
    free(s->path);
    free(s);
}
