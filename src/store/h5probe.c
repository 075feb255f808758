// h5probe.c: the probes of a trial (trial/probe.h) into its results file (h5probe.h).
#define _POSIX_C_SOURCE 200809L
#include "store/h5probe.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"
#include "trial/metrics.h"

typedef struct {
    const char *path;  // the file being written (PATH.partial)
    hid_t scalar, text;
} Out;

static hid_t ok(const Out *o, hid_t status, const char *what) {
    if (status < 0) die(EXIT_RUNTIME, "%s: cannot write probe/%s (HDF5 error)", o->path, what);
    return status;
}

static void attr(const Out *o, hid_t loc, const char *name, hid_t type, const void *value) {
    hid_t a = ok(o, H5Acreate2(loc, name, type, o->scalar, H5P_DEFAULT, H5P_DEFAULT), name);
    ok(o, H5Awrite(a, type, value), name);
    H5Aclose(a);
}

static void attr_text(const Out *o, hid_t loc, const char *name, const char *value) { attr(o, loc, name, o->text, &value); }
static void attr_f64(const Out *o, hid_t loc, const char *name, double v) { attr(o, loc, name, H5T_NATIVE_DOUBLE, &v); }
static void attr_int(const Out *o, hid_t loc, const char *name, long v) { attr(o, loc, name, H5T_NATIVE_LONG, &v); }

static void dataset(const Out *o, hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims,
                    const void *data) {
    hid_t space = ok(o, H5Screate_simple(rank, dims, NULL), name);
    hid_t d = ok(o, H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
    ok(o, H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name);
    H5Dclose(d);
    H5Sclose(space);
}

static hid_t group(const Out *o, hid_t loc, const char *name) {
    return ok(o, H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
}

static void write_noise(const Out *o, hid_t g, const Probe *p) {
    typedef struct {
        double sigma, val_accuracy, val_loss;
    } NoiseRow;
    NoiseRow rows[16];
    for (int i = 0; i < p->n_sigma; i++) rows[i] = (NoiseRow){p->sigma[i], p->noise_accuracy[i], p->noise_loss[i]};
    hid_t t = ok(o, H5Tcreate(H5T_COMPOUND, sizeof(NoiseRow)), "noise");
    H5Tinsert(t, "sigma", HOFFSET(NoiseRow, sigma), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "val_accuracy", HOFFSET(NoiseRow, val_accuracy), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "val_loss", HOFFSET(NoiseRow, val_loss), H5T_NATIVE_DOUBLE);
    const hsize_t n = (hsize_t)p->n_sigma;
    dataset(o, g, "noise", t, 1, &n, rows);
    H5Tclose(t);
}

static void write_table(const Out *o, hid_t g, const Probe *p) {
    hid_t name = ok(o, H5Tcopy(H5T_C_S1), "invariants");
    H5Tset_size(name, sizeof p->table[0].name);
    H5Tset_strpad(name, H5T_STR_NULLPAD);
    hid_t t = ok(o, H5Tcreate(H5T_COMPOUND, sizeof(ProbeRow)), "invariants");
    H5Tinsert(t, "name", HOFFSET(ProbeRow, name), name);
    H5Tinsert(t, "layer", HOFFSET(ProbeRow, layer), H5T_NATIVE_INT);
    H5Tinsert(t, "original", HOFFSET(ProbeRow, original), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "transformed", HOFFSET(ProbeRow, transformed), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "change", HOFFSET(ProbeRow, change), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "stays", HOFFSET(ProbeRow, stays), H5T_NATIVE_INT);
    H5Tinsert(t, "control", HOFFSET(ProbeRow, control), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "control_change", HOFFSET(ProbeRow, control_change), H5T_NATIVE_DOUBLE);
    const hsize_t n = (hsize_t)p->n_table;
    dataset(o, g, "invariants", t, 1, &n, p->table);
    H5Tclose(t);
    H5Tclose(name);
}

// A trained trial's metrics as attributes, and its final weights (what its scores read).
static void write_trained(const Out *o, hid_t g, const TrialResult *r) {
    char *config = config_to_json_text(&r->config);
    attr_text(o, g, "config", config);
    cJSON_free(config);
    attr_text(o, g, "status", trial_status_names[r->status]);
    for (int i = 0; i < n_metrics; i++) attr_f64(o, g, metrics[i].name, metric_value(r, &metrics[i]));
    attr_f64(o, g, "seconds", r->seconds);
    attr_int(o, g, "steps", r->steps);
    const hsize_t dims[4] = {(hsize_t)r->dims[0], (hsize_t)r->dims[1], (hsize_t)r->dims[2], (hsize_t)r->dims[3]};
    const hsize_t out_dims[2] = {(hsize_t)r->out_dims[0], (hsize_t)r->out_dims[1]};
    hid_t w = group(o, g, "weights"), wo = group(o, g, "weights_out");
    for (int l = 0; l < r->n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "layer%d", l);
        dataset(o, w, name, H5T_NATIVE_FLOAT, 4, dims, r->weights[l]);
        dataset(o, wo, name, H5T_NATIVE_FLOAT, 2, out_dims, r->weights_out[l]);
    }
    H5Gclose(w);
    H5Gclose(wo);
}

static void write_transform(const Out *o, hid_t probe, const Probe *p) {
    hid_t g = group(o, probe, "transform");
    attr_text(o, g, "kind", transform_names[p->transform]);
    attr_int(o, g, "seed", p->transform_seed);
    attr_f64(o, g, "tolerance", p->tolerance);
    const hsize_t q[2] = {(hsize_t)p->q_dim, (hsize_t)p->q_dim};
    dataset(o, g, "matrix", H5T_NATIVE_FLOAT, 2, q, p->Q);
    write_table(o, g, p);
    hid_t t = group(o, g, "transformed");
    write_trained(o, t, &p->transformed);
    H5Gclose(t);
    if (p->has_control) {
        hid_t c = group(o, g, "control");
        write_trained(o, c, &p->control);
        H5Gclose(c);
    }
    H5Gclose(g);
}

// The per-head ablation beside the heads' redundancy (probe.h), Δ = ablated − clean.
static void write_ablation(const Out *o, hid_t probe, const Probe *p) {
    const int L = p->layers, H = p->heads;
    hid_t g = group(o, probe, "ablation");
    attr_f64(o, g, "clean_loss", p->clean_loss);
    attr_f64(o, g, "clean_accuracy", p->clean_accuracy);
    attr_f64(o, g, "spearman_pooled", p->spearman[L]);
    double *delta = xmalloc((size_t)L * H * sizeof(double)), *layer_delta = xmalloc((size_t)L * sizeof(double));
    for (int k = 0; k < L * H; k++) delta[k] = p->ablation_loss[k] - p->clean_loss;
    for (int l = 0; l < L; l++) layer_delta[l] = p->layer_loss[l] - p->clean_loss;
    const hsize_t lh[2] = {(hsize_t)L, (hsize_t)H}, l1 = (hsize_t)L;
    dataset(o, g, "loss", H5T_NATIVE_DOUBLE, 2, lh, p->ablation_loss);
    dataset(o, g, "accuracy", H5T_NATIVE_DOUBLE, 2, lh, p->ablation_accuracy);
    dataset(o, g, "delta_loss", H5T_NATIVE_DOUBLE, 2, lh, delta);
    dataset(o, g, "layer_loss", H5T_NATIVE_DOUBLE, 1, &l1, p->layer_loss);
    dataset(o, g, "layer_accuracy", H5T_NATIVE_DOUBLE, 1, &l1, p->layer_accuracy);
    dataset(o, g, "layer_delta_loss", H5T_NATIVE_DOUBLE, 1, &l1, layer_delta);
    dataset(o, g, "redundancy", H5T_NATIVE_DOUBLE, 2, lh, p->redundancy);
    dataset(o, g, "spearman", H5T_NATIVE_DOUBLE, 1, &l1, p->spearman);
    free(delta);
    free(layer_delta);
    H5Gclose(g);
}

static void write_probe(const Out *o, hid_t trial, const Probe *p) {
    if (H5Lexists(trial, "probe", H5P_DEFAULT) > 0) ok(o, H5Ldelete(trial, "probe", H5P_DEFAULT), "probe");
    hid_t g = group(o, trial, "probe");
    attr_int(o, g, "examples", p->n_examples);
    attr_int(o, g, "token_rows", p->n_rows);
    const int L = p->layers, H = p->heads;
    const hsize_t nl[2] = {(hsize_t)L + 1, (hsize_t)L + 1}, nh[3] = {(hsize_t)L, (hsize_t)H, (hsize_t)H};
    dataset(o, g, "cka_layers", H5T_NATIVE_DOUBLE, 2, nl, p->cka_layers);
    if (p->cka_heads) dataset(o, g, "cka_heads", H5T_NATIVE_DOUBLE, 3, nh, p->cka_heads);
    write_noise(o, g, p);
    if (p->maps) {
        const hsize_t nm[5] = {(hsize_t)p->n_maps, (hsize_t)L, (hsize_t)H, (hsize_t)p->T, (hsize_t)p->T};
        dataset(o, g, "attention", H5T_NATIVE_FLOAT, 5, nm, p->maps);
    }
    if (p->ablation_loss) write_ablation(o, g, p);
    if (p->transform != TRANSFORM_NONE) write_transform(o, g, p);
    H5Gclose(g);
}

// Copy src to dst byte for byte: 0, or −1 (errno set).
static int copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    if (!out) {
        if (in) fclose(in);
        return -1;
    }
    char buf[1 << 16];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) rc = -1;
    if (ferror(in)) rc = -1;
    fclose(in);
    if (fclose(out) != 0) rc = -1;
    return rc;
}

void h5store_write_probe(const char *path, int id, const Probe *p) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.partial", path);
    if (copy_file(path, tmp) != 0) {
        remove(tmp);
        die(EXIT_RUNTIME, "probe: cannot copy %s to %s: %s", path, tmp, strerror(errno));
    }
    Out o = {.path = tmp};
    hid_t file = H5Fopen(tmp, H5F_ACC_RDWR, H5P_DEFAULT);
    if (file < 0) {
        remove(tmp);
        die(EXIT_RUNTIME, "probe: cannot open %s for writing (HDF5 error)", tmp);
    }
    o.scalar = ok(&o, H5Screate(H5S_SCALAR), "dataspace");
    o.text = ok(&o, H5Tcopy(H5T_C_S1), "string type");
    H5Tset_size(o.text, H5T_VARIABLE);
    H5Tset_cset(o.text, H5T_CSET_UTF8);
    char name[32];
    snprintf(name, sizeof name, "trials/%06d", id);
    hid_t trial = ok(&o, H5Gopen2(file, name, H5P_DEFAULT), name);
    write_probe(&o, trial, p);
    H5Gclose(trial);
    H5Sclose(o.scalar);
    H5Tclose(o.text);
    ok(&o, H5Fclose(file), "file");
    if (rename(tmp, path) != 0) die(EXIT_RUNTIME, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
}
