// trial_read.c: reading a trial back from a results file (h5store.h h5store_read_trial,
// h5store_read_trial_details), by the layout the writer uses (trial_layout.h).
#include <cjson/cJSON.h>
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"
#include "store/h5read.h"
#include "store/h5store.h"
#include "store/schema.h"
#include "store/summary.h"
#include "store/trial_layout.h"
#include "trial/metrics.h"
#include "trial/reward.h"

// Every check returns -1 with "PATH: [WHERE: ]what is wrong" in err; nothing read
// from the file is trusted (types, shapes, counts are checked before use).

static int read_reward_spec(const H5Reader *rd, hid_t g, TrialResult *out) {
    char *text;
    if (h5read_attr_string(rd, g, "reward_spec", &text) != 0) return -1;
    const int rc = reward_spec_from_json(&out->reward_spec, text);
    free(text);
    return rc != 0 ? h5read_fail(rd, "attribute 'reward_spec' is not a reward specification") : 0;
}

// Whether a read of level reads the attribute `name` of the trial's texts, numbers and a
// program's run (reward_spec always; config and status but at TRIAL_DETAILS_PAGE).
static int wanted(TrialDetails level, const char *name) {
    static const char *const row[] = {"reason"},
                             *const page[] = {"host", "rank", "start_time", "end_time", "command", "stderr_tail"};
    const char *const *names = level == TRIAL_DETAILS_ROW ? row : page;
    const size_t n = level == TRIAL_DETAILS_ROW ? sizeof row / sizeof *row : sizeof page / sizeof *page;
    for (size_t i = 0; level != TRIAL_DETAILS_ALL && i < n; i++)
        if (!strcmp(names[i], name)) return 1;
    return level == TRIAL_DETAILS_ALL;
}

static int read_trial_attrs(const H5Reader *rd, hid_t g, TrialDetails level, TrialResult *out) {
    char *text;
    int rc;
    if (level != TRIAL_DETAILS_PAGE) {
        if (h5read_attr_string(rd, g, "config", &text) != 0) return -1;
        cJSON *json = cJSON_Parse(text);
        free(text);
        if (!json) return h5read_fail(rd, "attribute 'config' is not JSON");
        char msg[256];
        rc = config_from_json(&out->config, json, msg, sizeof msg);
        cJSON_Delete(json);
        if (rc != 0) return h5read_fail(rd, "config: %s", msg);
    }
    if (read_reward_spec(rd, g, out) != 0) return -1;
    if (level != TRIAL_DETAILS_PAGE) {
        if (h5read_attr_string(rd, g, "status", &text) != 0) return -1;
        rc = trial_status_find(text);
        free(text);
        if (rc < 0) return h5read_fail(rd, "attribute 'status' is not a trial status");
        out->status = rc;
    }
    for (int i = 0; i < n_h5trial_texts; i++) {
        if (!wanted(level, h5trial_texts[i].name)) continue;
        if (h5read_attr_string(rd, g, h5trial_texts[i].name, &text) != 0) return -1;
        snprintf((char *)out + h5trial_texts[i].offset, h5trial_texts[i].size, "%s", text);
        free(text);
    }
    for (int i = 0; i < n_h5trial_numbers; i++) {
        if (!wanted(level, h5trial_numbers[i].name)) continue;
        if (h5trial_numbers[i].since && H5Aexists(g, h5trial_numbers[i].name) <= 0) continue;
        if (h5read_attr_number(rd, g, h5trial_numbers[i].name, h5trial_native_type(h5trial_numbers[i].kind),
                             (char *)out + h5trial_numbers[i].offset) != 0)
            return -1;
    }
    out->program_metric = NAN;
    if (level == TRIAL_DETAILS_ROW) return 0;
    const int program = H5Aexists(g, "trial_dir") > 0;  // a program's trial (asked once: a search of the attributes)
    for (int i = 0; program && i < n_h5trial_run_texts; i++)
        if (wanted(level, h5trial_run_texts[i].name) &&
            h5read_attr_string(rd, g, h5trial_run_texts[i].name, (char **)((char *)out + h5trial_run_texts[i].offset)) != 0)
            return -1;
    return 0;
}

static int read_curves(const H5Reader *rd, hid_t g, TrialResult *out) {
    hsize_t n;
    hid_t d = h5read_open_dataset(rd, g, "curves", 1, &n);
    if (d < 0) return -1;
    hid_t filetype = H5Dget_type(d);
    int rc = filetype < 0 ? h5read_fail(rd, "curves is unreadable") : 0;
    for (int c = 0; rc == 0 && c < n_schema_curve_columns; c++)
        rc = h5read_table_column(rd, filetype, "curves", schema_curve_columns[c].name, 0);
    if (filetype >= 0) H5Tclose(filetype);
    if (rc == 0 && n > INT_MAX) rc = h5read_fail(rd, "curves has %llu rows", (unsigned long long)n);
    if (rc == 0) rc = h5read_check_storage(rd, d, "curves", n);
    if (rc == 0) {
        out->n_curve = (int)n;
        out->curve = xcalloc(n ? n : 1, sizeof *out->curve);
        hid_t mem = h5trial_curve_type();
        if (mem < 0 || H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->curve) < 0)
            rc = h5read_fail(rd, "curves is unreadable");
        if (mem >= 0) H5Tclose(mem);
    }
    H5Dclose(d);
    return rc;
}

// The shape of GROUP/layer0, a float array of rank `rank`, into d and dims; *count gets its
// number of elements, which the file must be able to hold.
static int layer_shape(const H5Reader *rd, hid_t g, const char *group, int rank, hsize_t *d, int *dims, size_t *count) {
    char name[48];
    snprintf(name, sizeof name, "%s/layer0", group);
    hid_t ds = h5read_open_dataset(rd, g, name, rank, d);
    if (ds < 0) return -1;
    int rc = 0;
    *count = 1;
    for (int k = 0; k < rank && rc == 0; k++) {
        if (d[k] == 0 || d[k] > MAX_WEIGHT_FLOATS || *count * d[k] > MAX_WEIGHT_FLOATS)
            rc = h5read_fail(rd, "%s has the implausible shape of %llu in dimension %d", name, (unsigned long long)d[k],
                             k);
        *count *= d[k];
        dims[k] = (int)d[k];
    }
    if (rc == 0) rc = h5read_check_storage(rd, ds, name, (hsize_t)*count);  // before allocating
    H5Dclose(ds);
    return rc;
}

// GROUP/layer0..layer{n−1}, float arrays of rank `rank`, all of the shape of the first,
// which goes to dims; arrays gets n allocated arrays (the caller frees them).
static int read_layers(const H5Reader *rd, hid_t g, const char *group, int n, int rank, int *dims, float **arrays) {
    hsize_t d[4];
    size_t count = 1;
    for (int l = 0; l < n; l++) {
        char name[48];
        snprintf(name, sizeof name, "%s/layer%d", group, l);
        if (l == 0 && layer_shape(rd, g, group, rank, d, dims, &count) != 0) return -1;
        arrays[l] = xmalloc(count * sizeof(float));
        if (h5read_dataset(rd, g, name, H5T_NATIVE_FLOAT, rank, d, arrays[l]) != 0) return -1;
    }
    return 0;
}

// weights/layer0..layerN-1 (N = the number of links in weights/) and weights_out/ of
// the same layers.
static int read_weights(const H5Reader *rd, hid_t g, TrialResult *out) {
    H5G_info_t info;
    if (H5Gget_info_by_name(g, "weights", &info, H5P_DEFAULT) < 0) return h5read_fail(rd, "missing group weights");
    if (info.nlinks > INT_MAX) return h5read_fail(rd, "weights has %llu entries", (unsigned long long)info.nlinks);
    out->n_layers = (int)info.nlinks;
    out->weights = xcalloc(info.nlinks ? info.nlinks : 1, sizeof *out->weights);
    out->weights_out = xcalloc(info.nlinks ? info.nlinks : 1, sizeof *out->weights_out);
    return read_layers(rd, g, "weights", out->n_layers, 4, out->dims, out->weights) ||
                   read_layers(rd, g, "weights_out", out->n_layers, 2, out->out_dims, out->weights_out)
               ? -1
               : 0;
}

// params and its layout (absent in files written before they were stored).
static int read_params(const H5Reader *rd, hid_t g, TrialResult *out) {
    if (H5Lexists(g, "params", H5P_DEFAULT) <= 0) return 0;
    const hsize_t n = (hsize_t)out->n_params;
    if (out->n_params < 1 || n > MAX_WEIGHT_FLOATS) return h5read_fail(rd, "params for a model of %ld parameters", out->n_params);
    hid_t d = H5Dopen2(g, "params", H5P_DEFAULT);
    int rc = d < 0 ? h5read_fail(rd, "params is unreadable") : h5read_attr_string(rd, d, "layout", &out->param_layout);
    if (d >= 0) H5Dclose(d);
    out->params = xmalloc(n * sizeof(float));
    return rc || h5read_dataset(rd, g, "params", H5T_NATIVE_FLOAT, 1, &n, out->params) ? -1 : 0;
}

// invariants (absent when training ran without a grid).
static int read_trace(const H5Reader *rd, hid_t g, TrialResult *out) {
    if (H5Lexists(g, "invariants", H5P_DEFAULT) <= 0) return 0;
    InvariantTrace *t = &out->trace;
    hsize_t n, corr[1], eff[2], sv[2], chance[2];
    hid_t d = h5read_open_dataset(rd, g, "invariants", 1, &n);
    if (d < 0) return -1;
    hid_t filetype = H5Dget_type(d);
    int rc = filetype < 0 ? h5read_fail(rd, "invariants is unreadable")
                          : h5read_table_column(rd, filetype, "invariants", "step", 0) ||
                                    h5read_table_array(rd, filetype, "invariants", "correlation", 1, corr) ||
                                    h5read_table_array(rd, filetype, "invariants", "eff_rank", 2, eff) ||
                                    h5read_table_array(rd, filetype, "invariants", "head_sv", 2, sv) ||
                                    h5read_table_array(rd, filetype, "invariants", "chance", 2, chance)
                                ? -1
                                : 0;
    if (filetype >= 0) H5Tclose(filetype);
    if (rc == 0 && (n > INT_MAX || corr[0] < 1 || corr[0] > 65536 || eff[0] != corr[0] || eff[1] != 4 ||
                    chance[0] != corr[0] || chance[1] != 4 ||
                    sv[0] != corr[0] || sv[1] < 1 || sv[1] > 65536 || n * corr[0] * sv[1] > MAX_WEIGHT_FLOATS))
        rc = h5read_fail(rd, "invariants has implausible shapes");
    if (rc == 0) rc = h5read_check_storage(rd, d, "invariants", n);
    if (rc == 0) {
        t->n = t->cap = (int)n, t->layers = (int)corr[0], t->groups = (int)sv[1];
        const size_t nl = n * corr[0];
        t->step = xmalloc((n ? n : 1) * sizeof(int));
        t->correlation = xmalloc((nl ? nl : 1) * sizeof(double));
        t->eff_rank = xmalloc((nl ? nl : 1) * 4 * sizeof(double));
        t->head_sv = xmalloc((nl ? nl : 1) * sv[1] * sizeof(double));
        t->chance = xmalloc((nl ? nl : 1) * 4 * sizeof(double));
        unsigned char *rows = xcalloc(n ? n : 1, h5trial_trace_row(t->layers, t->groups).size);
        hid_t mem = h5trial_trace_type(t->layers, t->groups);
        if (mem < 0 || H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
            rc = h5read_fail(rd, "invariants is unreadable");
        else
            h5trial_trace_rows(t, rows, 0);
        if (mem >= 0) H5Tclose(mem);
        free(rows);
    }
    H5Dclose(d);
    return rc;
}

int h5store_read_trial_details(const H5Reader *rd, hid_t g, TrialDetails level, TrialResult *out) {
    TrialResult x = {0};  // the attributes (status and the metrics again: /summary's are kept)
    const int curves = level != TRIAL_DETAILS_ROW || out->status == TRIAL_OK;
    int rc = read_trial_attrs(rd, g, level, &x) || (curves && (read_curves(rd, g, out) || read_trace(rd, g, out)));
    H5G_info_t info;
    if (rc == 0 && H5Gget_info_by_name(g, "weights", &info, H5P_DEFAULT) < 0) rc = h5read_fail(rd, "missing group weights");
    hsize_t d[4];
    size_t count;
    if (rc == 0 && info.nlinks == 0 && out->trace.n > 0)
        rc = h5read_fail(rd, "invariants without weights: their shapes are unknown");
    else if (rc == 0 && out->trace.n > 0)  // the shapes the trace is scored by (a third of the read's time)
        rc = layer_shape(rd, g, "weights", 4, d, out->dims, &count) ||
             layer_shape(rd, g, "weights_out", 2, d, out->out_dims, &count);
    if (rc == 0) {
        if (level != TRIAL_DETAILS_PAGE) out->config = x.config, memcpy(out->reason, x.reason, sizeof out->reason);
        out->reward_spec = x.reward_spec;
        memcpy(out->host, x.host, sizeof out->host);
        out->rank = x.rank, out->group_size = x.group_size;
        out->start_time = x.start_time, out->end_time = x.end_time;
        out->run = x.run;
        x.run = (ProgramRun){0};
    }
    trial_result_free(&x);
    return rc;
}

// The metrics of trial id from its /summary row.
static int read_summary_row(const H5Reader *rd, hid_t file, int id, TrialResult *out) {
    SummaryRow *rows;
    int n;
    if (summary_rows(rd, file, NULL, &rows, &n) != 0) return -1;
    int i = 0;
    while (i < n && rows[i].id != id) i++;
    if (i < n) summary_row_values(&rows[i], out);  // the attributes read after it replace its status and seconds
    free(rows);
    return i < n ? 0 : h5read_fail(rd, "/summary has no row for trial %d", id);
}

static int read_trial_file(H5Reader *rd, hid_t file, int id, TrialResult *out) {
    if (h5read_check_format(rd, file) != 0) return -1;
    char name[32];
    h5trial_group_name(name, sizeof name, id);
    if (id < 0 || H5Lexists(file, "trials", H5P_DEFAULT) <= 0 || H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return h5read_fail(rd, "no trial %d", id);
    if (read_summary_row(rd, file, id, out) != 0) return -1;
    hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
    rd->where = name;
    if (g < 0) return h5read_fail(rd, "not a group");
    out->id = id;
    int rc = read_trial_attrs(rd, g, TRIAL_DETAILS_ALL, out) || read_curves(rd, g, out) || read_weights(rd, g, out) ||
                     read_params(rd, g, out) || read_trace(rd, g, out)
                 ? -1
                 : 0;
    H5Gclose(g);
    rd->where = NULL;
    return rc;
}


int h5store_read_trial(const char *path, int id, TrialResult *out, char *err, size_t errlen) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    memset(out, 0, sizeof *out);
    H5Reader rd = {.path = path, .err = err, .errlen = errlen};
    FILE *f = fopen(path, "rb");
    if (!f) return h5read_fail(&rd, "%s", strerror(errno));
    fclose(f);
    if (H5Fis_hdf5(path) <= 0) return h5read_fail(&rd, "not an HDF5 file");
    if (h5read_check_heaps(&rd) != 0) return -1;
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0 && h5read_locked_by_writer(path))
        return h5read_fail(&rd, "another process is writing this file (a running sweep?); read it when that ends");
    if (file < 0) return h5read_fail(&rd, "cannot open: damaged or truncated HDF5 file");
    int rc = read_trial_file(&rd, file, id, out);
    H5Fclose(file);
    if (rc != 0) trial_result_free(out);
    return rc;
}
