// summary.c: reading a results file for the report (see summary.h), by the conventions of
// h5store.c: nothing read from the file is trusted (types, shapes and counts are checked
// before use), every problem is one line "PATH: what is wrong".
#include "store/summary.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "params/config_json.h"
#include "store/h5read.h"
#include "store/h5store.h"
#include "store/schema.h"
#include "trial/metrics.h"

enum {
    RETRIES = 50,             // reads of a file being written, RETRY_MS apart
    RETRY_MS = 100,
};

// ---------------------------------------------------------------- the sweep's metric

// The Metric of a name the file ranks by: the table's, else the sweep's program metric
// (s->program_metric set from the root attribute metric before the objectives are read).
static const Metric *ranked_metric(const SweepSummary *s, const char *name) {
    const Metric *m = metric_find(name);
    return m ? m : s->program_metric.name && !strcmp(name, s->program_metric.name) ? &s->program_metric : NULL;
}

// motpe's objectives: the root attribute objectives, [{"name": N, "goal": G}, ...]; a name
// of none of the table's metrics is the program's own (one at most: space.c), which becomes
// the program metric unless the sweep's metric already is.
static int read_objectives(const H5Reader *rd, SweepSummary *s, const char *text) {
    cJSON *list = cJSON_Parse(text);
    if (!cJSON_IsArray(list)) {
        cJSON_Delete(list);
        return h5read_fail(rd, "attribute 'objectives' is not a JSON list");
    }
    int rc = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name"), *goal = cJSON_GetObjectItemCaseSensitive(o, "goal");
        const Metric *m = cJSON_IsString(name) ? ranked_metric(s, name->valuestring) : NULL;
        if (!m && cJSON_IsString(name) && cJSON_IsString(goal) && !s->program_metric.name &&
            strlen(name->valuestring) < sizeof s->program_objective) {
            snprintf(s->program_objective, sizeof s->program_objective, "%s", name->valuestring);
            metric_program(&s->program_metric, s->program_objective, !strcmp(goal->valuestring, "maximize"));
            m = &s->program_metric;
        }
        if (!m || !cJSON_IsString(goal) || s->n_objectives == METRIC_MAX_OBJECTIVES) {
            rc = h5read_fail(rd, "attribute 'objectives' names no metric of this attnsweep, or too many");
            break;
        }
        s->objective[s->n_objectives] = m;
        s->objective_maximize[s->n_objectives++] = strcmp(goal->valuestring, "minimize") != 0;
    }
    cJSON_Delete(list);
    if (s->n_objectives == 1) s->n_objectives = 0;
    return rc;
}

// The root attributes metric, goal, objectives and until_stopped (schema.h): what the file
// is ranked by, and whether the sweep had a planned end. A name that is none of the metric
// table's is the program's own (metrics.h metric_program).
static int read_metric(const H5Reader *rd, hid_t file, SweepSummary *s) {
    char *name = NULL, *goal = NULL, *objectives = NULL;
    int rc = h5read_attr_string(rd, file, "metric", &name) || h5read_attr_string(rd, file, "goal", &goal) ||
                     h5read_attr_string(rd, file, "objectives", &objectives) ||
                     h5read_attr_number(rd, file, "until_stopped", H5T_NATIVE_INT, &s->until_stopped)
                 ? -1
                 : 0;
    if (rc == 0 && (strlen(name) >= sizeof s->metric || (strcmp(goal, "maximize") && strcmp(goal, "minimize"))))
        rc = h5read_fail(rd, "attribute 'metric' or 'goal' is not a metric and its goal");
    if (rc == 0) {
        snprintf(s->metric, sizeof s->metric, "%s", name);
        s->maximize = !strcmp(goal, "maximize");
        if (!metric_find(s->metric)) metric_program(&s->program_metric, s->metric, s->maximize);
        rc = read_objectives(rd, s, objectives);
    }
    free(name), free(goal), free(objectives);
    return rc;
}

// ---------------------------------------------------------------- /summary and /trials

// Trial row's group, /trials/NNNNNN, read into out: row's /summary values and what
// h5store_read_trial_details reads at level (rd's err names the group on failure).
static int read_trial_group(const H5Reader *file_rd, hid_t file, const SummaryRow *row, TrialDetails level,
                            TrialResult *out) {
    memset(out, 0, sizeof *out);
    summary_row_values(row, out);
    char name[32];
    snprintf(name, sizeof name, "trials/%06d", row->id);
    if (row->id < 0 || H5Lexists(file, "trials", H5P_DEFAULT) <= 0 || H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return h5read_fail(file_rd, "/summary lists trial %d but there is no group %s", row->id, name);
    H5Reader trial_rd = *file_rd;
    trial_rd.where = name;
    hid_t g = H5Gopen2(file, name, H5P_DEFAULT);
    if (g < 0) return h5read_fail(&trial_rd, "unreadable group");
    const int rc = h5store_read_trial_details(&trial_rd, g, level, out);
    H5Gclose(g);
    return rc;
}

static int by_id(const void *a, const void *b) {
    const int x = ((const SummaryRow *)a)->id, y = ((const SummaryRow *)b)->id;
    return (x > y) - (x < y);
}

// What a read takes (SummaryRead): the root attributes and /summary, and unless
// SUMMARY_ROWS what each trial's group adds to its row (summary_row_details).
// torn_ok: the file is not being written, so a last /summary row whose trial group is
// incomplete was cut by an interrupted flush (a full disk, a kill during H5Fflush: the
// writer flushes after every trial, so only the last trial can be torn); it is left out
// with a warning, as the journal leaves out a torn last record.
static int read_file(const H5Reader *rd, hid_t file, SweepSummary *s, SummaryRead what, int torn_ok) {
    if (h5read_check_format(rd, file)) return -1;
    // The metric first (a program's own metric is a column of /summary), unless there is
    // no /summary, which summary_rows reports.
    if (H5Lexists(file, "summary", H5P_DEFAULT) > 0) {
        if (h5read_attr_string(rd, file, "sweep", &s->sweep) || h5read_attr_string(rd, file, "yaml", &s->yaml) ||
            read_metric(rd, file, s))
            return -1;
    }
    if (summary_rows(rd, file, s->program_metric.name, &s->trials, &s->n_trials)) return -1;
    TrialResult *t = xmalloc(sizeof *t);  // each trial's group, as long as its row takes from it
    int rc = 0;
    for (int i = 0; what != SUMMARY_ROWS && i < s->n_trials && rc == 0; i++) {
        if (read_trial_group(rd, file, &s->trials[i], what == SUMMARY_PAGE ? TRIAL_DETAILS_ALL : TRIAL_DETAILS_ROW,
                             t) == 0) {
            if (i == 0) s->base = t->config;
            summary_row_details(s, &s->trials[i], t);
        }
        else if (!torn_ok || i != s->n_trials - 1)
            rc = -1;
        else {
            warnf("%s; trial %d, the last written, is left out: `attnsweep run SWEEP.yaml --resume` rebuilds the "
                  "file from its journal", rd->err, s->trials[i].id);
            s->n_trials--;
        }
        trial_result_free(t);
    }
    free(t);
    if (rc != 0) return -1;
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


const Metric *summary_metric(const SweepSummary *s, const char *name) { return ranked_metric(s, name); }

void summary_free(SweepSummary *s) {
    free(s->sweep);
    free(s->yaml);
    for (int i = 0; i < s->n_trials; i++) summary_row_free(&s->trials[i]);
    free(s->trials);
    memset(s, 0, sizeof *s);
}

int summary_read_here(const char *path, SummaryRead what, SweepSummary *out, char *err, size_t errlen) {
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
    int writing = h5read_locked_by_writer(path);
    for (int attempt = 0;; attempt++) {
        hid_t file = open_file(path);
        const int rc = file >= 0 ? read_file(&rd, file, out, what, !writing)
                                 : h5read_fail(&rd, "cannot open: damaged or truncated HDF5 file");
        if (file >= 0) H5Fclose(file);
        if (rc == 0) {
            out->being_written = writing;
            return 0;
        }
        summary_free(out);
        writing = writing || h5read_locked_by_writer(path);
        if (!writing || attempt == RETRIES) return -1;
        nanosleep(&(struct timespec){.tv_nsec = RETRY_MS * 1000000L}, NULL);
    }
}

typedef struct {
    const char *path;
    SummaryRead what;
} ReadJob;

// In the child of h5read_survives: the read, its result dropped.
static int read_in_child(const void *ctx, char *err, size_t errlen) {
    const ReadJob *job = ctx;
    SweepSummary s;
    const int rc = summary_read_here(job->path, job->what, &s, err, errlen);
    if (rc == 0) summary_free(&s);
    return rc;
}

int summary_read(const char *path, SummaryRead what, SweepSummary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const H5Reader rd = {.path = path, .err = err, .errlen = errlen};
    const ReadJob job = {path, what};
    return h5read_survives(&rd, read_in_child, &job) != 0
               ? -1
               : summary_read_here(path, what == SUMMARY_PAGE ? SUMMARY_REPORT : what, out, err, errlen);
}

// ---------------------------------------------------------------- a trial's group again

int summary_groups_open(SummaryGroups *g, const char *path, char *err, size_t errlen) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    g->rd = (H5Reader){.path = path, .err = err, .errlen = errlen};
    g->file = open_file(path);
    return g->file >= 0 ? 0 : h5read_fail(&g->rd, "cannot open: damaged or truncated HDF5 file");
}

int summary_groups_read(SummaryGroups *g, const SweepSummary *s, const SummaryRow *row, TrialResult *out) {
    const int rc = read_trial_group(&g->rd, g->file, row, TRIAL_DETAILS_PAGE, out);
    if (rc != 0) {
        trial_result_free(out);
        return rc;
    }
    TrialConfig *c = summary_config(s, row);
    out->config = *c;
    free(c);
    snprintf(out->reason, sizeof out->reason, "%s", row->reason ? row->reason : "");
    return 0;
}

void summary_groups_close(SummaryGroups *g) {
    if (g->file >= 0) H5Fclose(g->file);
    g->file = H5I_INVALID_HID;
}

typedef struct {
    const char *path;
    const SummaryRow *row;
    TrialResult *out;
} OneTrial;

// One trial's group, whole: opened, read, closed.
static int read_one(const OneTrial *one, char *err, size_t errlen) {
    SummaryGroups g;
    int rc = summary_groups_open(&g, one->path, err, errlen);
    if (rc == 0 && (rc = read_trial_group(&g.rd, g.file, one->row, TRIAL_DETAILS_ALL, one->out)) != 0)
        trial_result_free(one->out);
    summary_groups_close(&g);
    return rc;
}

// In the child of h5read_survives: the read, its result dropped.
static int read_one_in_child(const void *ctx, char *err, size_t errlen) {
    const OneTrial *one = ctx;
    TrialResult t;
    const int rc = read_one(&(OneTrial){one->path, one->row, &t}, err, errlen);
    if (rc == 0) trial_result_free(&t);
    return rc;
}

int summary_trial(const char *path, const SummaryRow *row, TrialResult *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const H5Reader rd = {.path = path, .err = err, .errlen = errlen};
    const OneTrial one = {path, row, out};
    return h5read_survives(&rd, read_one_in_child, &one) != 0 ? -1 : read_one(&one, err, errlen);
}
