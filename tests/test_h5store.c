// test_h5store: the results file round-trips every field, reads in h5py/pandas as
// documented (format 5: the val_* and test_* columns, the whole network's weights, the reward's terms beyond chance), and a damaged or foreign file, or one
// of another format version, gives one line of error, never a crash;
// the config JSON round-trips exactly and names the closest parameter on a typo.
// modules: store
#define _POSIX_C_SOURCE 200809L  // mkstemp, popen, fork, pipe
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "common/util.h"
#include "params/config_json.h"
#include "python_ref.h"
#include "store/h5store.h"
#include "trial/metrics.h"

// A fresh empty file under /tmp; its name in path.
static void temp_file(char *path, size_t len) {
    snprintf(path, len, "/tmp/test_h5store_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) die(EXIT_RUNTIME, "cannot create a temporary file");
    close(fd);
}

static void set(TrialConfig *c, const char *name, const char *value) {
    char err[256];
    if (config_set(c, config_find(name), value, err, sizeof err) != 0) die(EXIT_RUNTIME, "test setup: %s", err);
}

// config_set clears the schedule beyond its offsets and groups, so configurations compare as bytes.
static int same_config(const TrialConfig *a, const TrialConfig *b) { return memcmp(a, b, sizeof *a) == 0; }

static int same_double(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

// Weight value of layer l at flat index i: exact in float32, recomputed by the Python check.
static float weight_value(int l, size_t i) { return (float)(l + 1) * 0.5f + (float)i / 1024.0f; }

static TrialResult make_trial(int id, const char *attention, const char *task, const int dims[4], int n_layers,
                              int n_curve) {
    TrialResult r = {0};
    config_defaults(&r.config);
    set(&r.config, "attention", attention);
    set(&r.config, "task", task);
    r.id = id;
    r.status = TRIAL_OK;
    snprintf(r.host, sizeof r.host, "node%02d", id);
    r.rank = id + 1;
    r.group_size = 2;
    r.val_accuracy = 0.8125 - 0.0625 * id;
    r.val_loss = 0.5 + id;
    r.val_bits_per_byte = !strcmp(task, "charlm") ? r.val_loss / log(2.0) : NAN;
    r.test_accuracy = 0.75 - 0.0625 * id;  // apart from validation's, so a mix-up shows
    r.test_loss = 0.625 + id;
    r.test_bits_per_byte = !strcmp(task, "charlm") ? r.test_loss / log(2.0) : NAN;
    r.steps = 100 * (id + 1);
    r.n_params = 5000000000L + id;  // beyond int32: the column must be int64
    r.seconds = 12.25 + id;
    r.rank_deviation = 0.25 + 0.125 * id;
    r.correlation = 0.5 - 0.125 * id;
    r.correlation_chance = 0.125;
    r.rank_deviation_excess = r.rank_deviation - 0.125, r.correlation_excess = r.correlation - 0.125;
    r.correlation_z = 2.5 + id, r.eff_rank_z = -1.5 - id;
    r.reward = r.val_accuracy - 0.1 * r.rank_deviation_excess - 0.1 * r.correlation_excess;
    r.start_time = 1.7e9 + id;
    r.end_time = r.start_time + r.seconds;
    r.n_curve = n_curve;
    r.curve = xcalloc((size_t)n_curve, sizeof *r.curve);
    for (int i = 0; i < n_curve; i++)
        r.curve[i] = (CurvePoint){.step = 10 * (i + 1), .lr = 1e-3 / (i + 1), .train_loss = 2.0 - 0.1 * i,
                                  .val_loss = 2.1 - 0.1 * i, .val_accuracy = 0.1 * i, .penalty = 1e-4 * i,
                                  .seconds = 0.5 * i + 0.1 * id};
    r.n_layers = n_layers;
    memcpy(r.dims, dims, sizeof r.dims);
    size_t count = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    r.weights = xcalloc((size_t)n_layers, sizeof *r.weights);
    for (int l = 0; l < n_layers; l++) {
        r.weights[l] = xmalloc(count * sizeof(float));
        for (size_t i = 0; i < count; i++) r.weights[l][i] = weight_value(l, i);
    }
    r.out_dims[0] = dims[2], r.out_dims[1] = dims[0] * dims[1] + 1;  // any shape: the store keeps it
    const size_t out_count = (size_t)r.out_dims[0] * r.out_dims[1];
    r.weights_out = xcalloc((size_t)n_layers, sizeof *r.weights_out);
    for (int l = 0; l < n_layers; l++) {
        r.weights_out[l] = xmalloc(out_count * sizeof(float));
        for (size_t i = 0; i < out_count; i++) r.weights_out[l][i] = -weight_value(l + 1, i);
    }
    return r;
}

static void check_same_trial(const TrialResult *got, const TrialResult *want) {
    CHECK(same_config(&got->config, &want->config), "trial %d: config differs after the round trip", want->id);
    CHECK(got->id == want->id, "id: got %d want %d", got->id, want->id);
    CHECK(got->status == want->status, "status: got %s want %s", trial_status_names[got->status], trial_status_names[want->status]);
    CHECK(strcmp(got->reason, want->reason) == 0, "reason: got '%s' want '%s'", got->reason, want->reason);
    CHECK(strcmp(got->host, want->host) == 0, "host: got '%s' want '%s'", got->host, want->host);
    CHECK(got->group_size == want->group_size, "group_size: got %d want %d", got->group_size, want->group_size);
    CHECK(got->rank == want->rank && got->steps == want->steps && got->n_params == want->n_params,
          "trial %d: rank/steps/n_params %d/%d/%ld want %d/%d/%ld", want->id, got->rank, got->steps,
          got->n_params, want->rank, want->steps, want->n_params);
    for (int k = 0; k < n_metrics; k++) {
        const double g = metric_value(got, &metrics[k]), w = metric_value(want, &metrics[k]);
        CHECK(same_double(g, w), "trial %d: %s: got %.17g want %.17g", want->id, metrics[k].name, g, w);
    }
    const double g[] = {got->seconds, got->start_time, got->end_time};
    const double w[] = {want->seconds, want->start_time, want->end_time};
    for (int k = 0; k < 3; k++)
        CHECK(same_double(g[k], w[k]), "trial %d: time %d: got %.17g want %.17g", want->id, k, g[k], w[k]);
    CHECK(got->n_curve == want->n_curve, "n_curve: got %d want %d", got->n_curve, want->n_curve);
    for (int i = 0; i < got->n_curve && i < want->n_curve; i++)
        CHECK(memcmp(&got->curve[i], &want->curve[i], sizeof(CurvePoint)) == 0, "trial %d: curve point %d differs",
              want->id, i);
    CHECK(got->n_layers == want->n_layers, "n_layers: got %d want %d", got->n_layers, want->n_layers);
    CHECK(memcmp(got->dims, want->dims, sizeof got->dims) == 0, "dims: got [%d,%d,%d,%d]", got->dims[0],
          got->dims[1], got->dims[2], got->dims[3]);
    size_t count = (size_t)want->dims[0] * want->dims[1] * want->dims[2] * want->dims[3];
    for (int l = 0; l < got->n_layers && l < want->n_layers; l++)
        CHECK(memcmp(got->weights[l], want->weights[l], count * sizeof(float)) == 0 &&
                  memcmp(got->weights_out[l], want->weights_out[l],
                         (size_t)want->out_dims[0] * want->out_dims[1] * sizeof(float)) == 0,
              "trial %d: layer %d differs", want->id, l);
    const InvariantTrace *gt = &got->trace, *wt = &want->trace;
    CHECK(gt->n == wt->n && (wt->n == 0 || (gt->layers == wt->layers && gt->groups == wt->groups)),
          "trial %d: trace %d x %d x %d, want %d x %d x %d", want->id, gt->n, gt->layers, gt->groups, wt->n,
          wt->layers, wt->groups);
    if (wt->n > 0 && gt->n == wt->n && gt->layers == wt->layers && gt->groups == wt->groups) {
        const size_t nl = (size_t)wt->n * wt->layers;
        CHECK(memcmp(gt->step, wt->step, (size_t)wt->n * sizeof(int)) == 0 &&
                  memcmp(gt->correlation, wt->correlation, nl * sizeof(double)) == 0 &&
                  memcmp(gt->eff_rank, wt->eff_rank, nl * 4 * sizeof(double)) == 0 &&
                  memcmp(gt->head_sv, wt->head_sv, nl * wt->groups * sizeof(double)) == 0 &&
                  memcmp(gt->chance, wt->chance, nl * 4 * sizeof(double)) == 0,
              "trial %d: the invariant trace differs after the round trip", want->id);
    }
}

// h5py and pandas see the documented layout. argv: path, expected column count.
static const char *python_check =
    "import json, math, sys, h5py, numpy, pandas\n"
    "f = h5py.File(sys.argv[1], 'r')\n"
    "df = pandas.DataFrame(f['summary'][:])\n"
    "cols = list(df.columns)\n"
    "assert len(df) == 3, len(df)\n"
    "assert len(cols) == int(sys.argv[2]), (len(cols), cols)\n"
    "assert cols[:5] == ['trial', 'status', 'task', 'attention', 'd_model'], cols\n"
    "assert cols[-18:] == ['val_accuracy', 'val_loss', 'val_bits_per_byte', 'test_accuracy', 'test_loss',\n"
    "                      'test_bits_per_byte', 'rank_deviation', 'correlation', 'correlation_chance',\n"
    "                      'correlation_z', 'eff_rank_z', 'rank_deviation_excess', 'correlation_excess', 'reward',\n"
    "                      'steps', 'n_params', 'seconds', 'group_size'], cols\n"
    "assert df.group_size.tolist() == [2, 2, 2], df.group_size\n"
    "assert df.test_accuracy.tolist()[:2] == [0.75, 0.6875] and df.test_loss[1] == 1.625\n"
    "assert math.isnan(df.val_bits_per_byte[0]) and df.val_bits_per_byte[1] == 1.5 / math.log(2)\n"
    "assert df.rank_deviation.tolist() == [0.25, 0.375, 0.5] and df.correlation[1] == 0.375\n"
    "assert abs(df.reward[0] - (0.8125 - 0.1 * (0.25 - 0.125) - 0.1 * (0.5 - 0.125))) < 1e-15\n"
    "assert df.correlation_z.tolist() == [2.5, 3.5, 4.5] and df.eff_rank_z[2] == -3.5\n"
    "assert f.attrs['reward_terms'] == 'beyond chance'\n"
    "assert f['trials/000000/weights_out/layer1'].shape == (64, 65)\n"
    "sc = f['trials/000000/scores/layer1']\n"
    "assert sc.attrs['sv_mode0'].tolist() == [4.0, 3.0, 2.0, 1.0] and sc.attrs['sv_mode3'].shape == (3,)\n"
    "assert len(sc) == 0, list(sc)\n"
    "assert sc.attrs['num_rank'].tolist() == [3, 10, 30, 2] and sc.attrs['correlation'] == 0.125\n"
    "assert sc.attrs['dims'].tolist() == [4, 16, 64, 3] and sc.attrs['cp_cond'].shape == (4,)\n"
    "assert sc.attrs['cp_roles'].shape == (2, 3) and sc.attrs['cp_fits'].shape == (4,) and sc.attrs['cp_rank'] == 2\n"
    "inv = f['trials/000000/invariants']\n"
    "assert inv.shape == (2,) and inv.dtype.names == ('step', 'correlation', 'eff_rank', 'head_sv', 'chance')\n"
    "assert inv['step'][:].tolist() == [10, 20] and inv['head_sv'].shape == (2, 2, 4)\n"
    "assert inv['eff_rank'].shape == (2, 2, 4) and inv['correlation'][1, 1] == 0.75 and inv['chance'][1, 0, 1] == 1.125\n"
    "assert 'scores' not in f['trials/000001'] and 'invariants' not in f['trials/000001']\n"
    "assert 'config_steps' in cols and 'lambda_orth' in cols and 'data_dir' not in cols, cols\n"
    "assert df.trial.tolist() == [0, 1, 2]\n"
    "assert df.attention.tolist() == [b'mha', b'grassmann', b'tucker'], df.attention.tolist()\n"
    "assert df.status.tolist() == [b'ok', b'ok', b'failed']\n"
    "assert df.grassmann_offsets[1] == b'1,2,4;8,12,16', df.grassmann_offsets[1]\n"
    "assert df.grassmann_offsets[0] == ';'.join(map(str, range(100, 160))).encode(), df.grassmann_offsets[0]\n"
    "assert df.val_accuracy[0] == 0.8125 and math.isnan(df.val_accuracy[2]) and math.isnan(df.test_accuracy[2])\n"
    "assert df.n_params.dtype == numpy.int64 and df.n_params[1] == 5000000001\n"
    "assert df.steps.tolist() == [100, 200, 300] and df.config_steps[1] == 500\n"
    "assert df.lr[1] == 0.0031234567891234\n"
    "assert f.attrs['version'].startswith('attnsweep '), f.attrs['version']\n"
    "assert f.attrs['sweep'] == 'unit' and f.attrs['yaml'] == 'name: unit\\nseed: 42\\n'\n"
    "assert f.attrs['seed'] == 42 and f.attrs['format_version'] == json.loads(f.attrs['schema'])['format_version']\n"
    "assert f.attrs['metric'] == 'reward' and f.attrs['goal'] == 'maximize' and f.attrs['objectives'] == '[]'\n"
    "assert f.attrs['start_time'] == 1.7e9 and f.attrs['end_time'] == 1.7e9 + 60\n"
    "w = f['trials/000000/weights/layer1']\n"
    "assert w.shape == (4, 16, 64, 3) and w.dtype == numpy.float32, (w.shape, w.dtype)\n"
    "i = ((1 * 16 + 2) * 64 + 3) * 3 + 2\n"
    "assert w[1, 2, 3, 2] == 2 * 0.5 + i / 1024, w[1, 2, 3, 2]\n"
    "assert w.attrs['roles'] == 'Q,K,V' and w.attrs['layout'] == 'groups,d_group,d_model,roles'\n"
    "g = f['trials/000001/weights/layer0']\n"
    "assert g.shape == (32, 1, 64, 1) and g.attrs['roles'] == 'mixing'\n"
    "t = f['trials/000001']\n"
    "cfg = json.loads(t.attrs['config'])\n"
    "assert cfg['attention'] == 'grassmann' and cfg['grassmann_offsets'] == [[1, 2, 4], [8, 12, 16]], cfg\n"
    "assert t.attrs['host'] == 'node01' and t.attrs['rank'] == 2 and t.attrs['seconds'] == df.seconds[1]\n"
    "assert sorted(t.attrs) == ['config', 'end_time', 'group_size', 'host', 'rank', 'reason', 'reward_spec',\n"
    "                           'seconds', 'start_time', 'status'], sorted(t.attrs)\n"
    "assert t.attrs['group_size'] == 2\n"
    "c = pandas.DataFrame(t['curves'][:])\n"
    "assert list(c.columns) == [k['name'] for k in json.loads(f.attrs['schema'])['tables']['curves']['columns']]\n"
    "assert c.step.tolist() == [10, 20, 30] and c.lr.dtype == numpy.float64\n"
    "assert t['curves']['step'].tolist() == [10, 20, 30]\n"
    "assert f['trials/000002/curves'].shape == (0,)\n"
    "assert f['trials/000002'].attrs['reason'] == 'loss became NaN at step 17'\n"
    "print('test_h5store: h5py/pandas checks passed')\n";

static void test_results_file_reads_in_h5py_and_pandas(const char *path) {
    int ncols = 2 + n_metrics + 4;  // trial, status; the metrics; steps, n_params, seconds, group_size
    for (int i = 0; i < config_nparams; i++) ncols += config_params[i].type != PT_TEXT;
    char args[512];
    snprintf(args, sizeof args, "%s %d", path, ncols);
    check_python(python_check, args, "h5py/pandas");
}

static void check_read_fails(const char *path, int id, const char *expect) {
    TrialResult r;
    char err[512] = "";
    int rc = h5store_read_trial(path, id, &r, err, sizeof err);
    CHECK(rc == -1, "reading trial %d of %s: got %d want -1", id, path, rc);
    CHECK(strstr(err, path) && strstr(err, expect) && !strchr(err, '\n'),
          "error message '%s' should name the file and say '%s' on one line", err, expect);
}

// Scores of every layer and a two-point invariant trace, with values the Python check knows.
static void add_scores_and_trace(TrialResult *r) {
    const int G = r->dims[0];
    r->scores = xcalloc((size_t)r->n_layers, sizeof *r->scores);
    for (int l = 0; l < r->n_layers; l++) {
        LayerScore *ls = &r->scores[l];
        memcpy(ls->dims, r->dims, sizeof ls->dims);
        for (int m = 0; m < 4; m++) {
            ls->n_sv[m] = r->dims[m];
            ls->sv[m] = xmalloc((size_t)r->dims[m] * sizeof(double));
            for (int i = 0; i < r->dims[m]; i++) ls->sv[m][i] = r->dims[m] - i;
        }
        const int ranks[4] = {3, 10, 30, 2};
        memcpy(ls->num_rank, ranks, sizeof ranks);
        ls->correlation = 0.125;
        ls->cp_rank = 2, ls->cp_rank_max = 4;
        ls->cp_fits = xcalloc(4, sizeof(double));
        ls->cp_roles = xcalloc((size_t)2 * r->dims[3], sizeof(double));
    }
    InvariantTrace *t = &r->trace;
    t->n = 2, t->layers = r->n_layers, t->groups = G;
    t->step = xmalloc(2 * sizeof(int));
    t->step[0] = 10, t->step[1] = 20;
    t->correlation = xmalloc((size_t)2 * t->layers * sizeof(double));
    for (int i = 0; i < 2 * t->layers; i++) t->correlation[i] = 0.25 * i;
    t->eff_rank = xmalloc((size_t)2 * t->layers * 4 * sizeof(double));
    for (int i = 0; i < 2 * t->layers * 4; i++) t->eff_rank[i] = 1.0 + 0.5 * i;
    t->head_sv = xmalloc((size_t)2 * t->layers * G * sizeof(double));
    for (int i = 0; i < 2 * t->layers * G; i++) t->head_sv[i] = 100.0 - i;
    t->chance = xmalloc((size_t)2 * t->layers * 4 * sizeof(double));
    for (int i = 0; i < 2 * t->layers * 4; i++) t->chance[i] = 0.125 * i;
}

// A checkpoint's layer wider than any sweep's (d_model 9000): its sv_mode2 attribute is
// 72 000 bytes, more than an attribute of the sweep's file format may hold.
static void test_model_scores_of_a_wide_layer(void) {
    char path[64];
    temp_file(path, sizeof path);
    LayerScore ls = {.dims = {2, 3, 9000, 3}, .cp_rank = 0, .cp_fit = NAN};
    for (int m = 0; m < 4; m++) {
        ls.n_sv[m] = ls.dims[m];
        ls.sv[m] = xmalloc((size_t)ls.dims[m] * sizeof(double));
        for (int i = 0; i < ls.dims[m]; i++) ls.sv[m][i] = ls.dims[m] - i;
    }
    char *names[1] = {"model.layers.0"};
    ModelScoresMeta meta = {.source = "wide.safetensors", .family = "LLaMA", .names = names};
    h5store_write_model_scores(path, &meta, &ls, 1);
    check_python("import sys, h5py\n"
                 "g = h5py.File(sys.argv[1], 'r')['scores/layer0']\n"
                 "sv = g.attrs['sv_mode2']\n"
                 "assert sv.shape == (9000,) and sv[0] == 9000 and sv[-1] == 1, sv\n"
                 "assert g.attrs['name'] == 'model.layers.0' and g.attrs['dims'].tolist() == [2, 3, 9000, 3]\n",
                 path, "wide model scores");
    for (int m = 0; m < 4; m++) free(ls.sv[m]);
    remove(path);
}

static void test_results_file_round_trip_and_errors(void) {
    char path[64], other[64];
    temp_file(path, sizeof path);
    temp_file(other, sizeof other);

    const int mha_dims[4] = {4, 16, 64, 3}, grassmann_dims[4] = {32, 1, 64, 1}, no_dims[4] = {0, 0, 0, 0};
    TrialResult trials[3];
    trials[0] = make_trial(0, "mha", "fashion_mnist", mha_dims, 2, 4);
    add_scores_and_trace(&trials[0]);
    char schedule[CONFIG_TEXT] = "";  // 60 groups, 239 characters: the widest column holds it whole
    for (int g = 100; g < 160; g++) snprintf(schedule + strlen(schedule), 8, "%s%d", g > 100 ? ";" : "", g);
    set(&trials[0].config, "grassmann_offsets", schedule);
    trials[1] = make_trial(1, "grassmann", "charlm", grassmann_dims, 2, 3);
    set(&trials[1].config, "grassmann_offsets", "1,2,4;8,12,16");
    set(&trials[1].config, "steps", "500");
    set(&trials[1].config, "lr", "0.0031234567891234");
    set(&trials[1].config, "data_dir", "/srv/text corpus");
    trials[2] = make_trial(2, "tucker", "recall", no_dims, 0, 0);  // failed: no curve, no weights
    trials[2].status = TRIAL_FAILED;
    snprintf(trials[2].reason, sizeof trials[2].reason, "loss became NaN at step 17");
    trials[2].val_accuracy = trials[2].test_accuracy = NAN;

    H5Store *s = h5store_create(path, &(StoreMeta){.sweep = "unit", .yaml = "name: unit\nseed: 42\n",
                                                   .seed = 42, .start_time = 1.7e9});
    for (int t = 0; t < 3; t++) h5store_write_trial(s, &trials[t]);
    h5store_close(s, 1.7e9 + 60);

    for (int t = 0; t < 3; t++) {
        TrialResult got;
        char err[512] = "";
        int rc = h5store_read_trial(path, t, &got, err, sizeof err);
        CHECK(rc == 0, "reading trial %d back: %s", t, err);
        if (rc == 0) check_same_trial(&got, &trials[t]);
        trial_result_free(&got);
    }
    test_results_file_reads_in_h5py_and_pandas(path);

    check_read_fails(path, 7, "no trial 7");
    check_read_fails(path, -1, "no trial -1");
    // The metrics come from /summary: a trial without its row is refused.
    char args[160];
    snprintf(args, sizeof args, "%s %s", path, other);
    check_python("import shutil, sys, h5py\n"
                 "shutil.copy(sys.argv[1], sys.argv[2])\n"
                 "with h5py.File(sys.argv[2], 'a') as f:\n"
                 "    f['summary'].resize((2,))\n",
                 args, "dropping the last /summary row");
    check_read_fails(other, 2, "/summary has no row for trial 2");
    // A curves table without one of its columns, an invariants table with a column of
    // the wrong shape: one line each.
    check_python("import shutil, sys, h5py, numpy\n"
                 "shutil.copy(sys.argv[1], sys.argv[2])\n"
                 "with h5py.File(sys.argv[2], 'a') as f:\n"
                 "    t = f['trials/000000']\n"
                 "    c = t['curves'][:]\n"
                 "    del t['curves']\n"
                 "    t['curves'] = c[[n for n in c.dtype.names if n != 'lr']]\n",
                 args, "dropping the lr column of curves");
    check_read_fails(other, 0, "curves has no column 'lr'");
    check_python("import shutil, sys, h5py, numpy\n"
                 "shutil.copy(sys.argv[1], sys.argv[2])\n"
                 "with h5py.File(sys.argv[2], 'a') as f:\n"
                 "    t = f['trials/000000']\n"
                 "    del t['invariants']\n"
                 "    t['invariants'] = numpy.zeros(2, dtype=[('step', 'i4'), ('correlation', 'f8', (2,)),\n"
                 "                                           ('eff_rank', 'f8', (2, 3)), ('head_sv', 'f8', (2, 4)),\n"
                 "                                           ('chance', 'f8', (2, 4))])\n",
                 args, "an invariants table with eff_rank [L, 3]");
    check_read_fails(other, 0, "invariants has implausible shapes");
    check_read_fails("/tmp/test_h5store_no_such_file", 0, "No such file");

    FILE *f = xfopen(other, "wb");
    fputs("this is not an HDF5 file\n", f);
    fclose(f);
    check_read_fails(other, 0, "not an HDF5 file");

    // The first half of a valid file: HDF5 sees the end of file before its end of data.
    FILE *in = xfopen(path, "rb");
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    rewind(in);
    char *bytes = xmalloc((size_t)size);
    CHECK(fread(bytes, 1, (size_t)size, in) == (size_t)size, "cannot read %s back", path);
    fclose(in);
    f = xfopen(other, "wb");
    fwrite(bytes, 1, (size_t)size / 2, f);
    fclose(f);
    free(bytes);
    check_read_fails(other, 0, "damaged or truncated");

    // A file another process is still writing (HDF5 locks it) says so.
    int to_child[2], from_child[2];
    char byte = 0;
    CHECK(pipe(to_child) == 0 && pipe(from_child) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        H5Store *writer = h5store_create(other, &(StoreMeta){.sweep = "busy", .yaml = ""});
        h5store_publish(writer);  // in place while still open, as a sweep's results file
        if (write(from_child[1], &byte, 1) != 1 || read(to_child[0], &byte, 1) != 1) _exit(1);
        h5store_close(writer, 0);
        _exit(0);
    }
    CHECK(pid > 0 && read(from_child[0], &byte, 1) == 1, "the writer process did not start");
    check_read_fails(other, 0, "another process is writing this file");
    CHECK(write(to_child[1], &byte, 1) == 1, "cannot signal the writer process");
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer process failed");
    for (int k = 0; k < 2; k++) {
        close(to_child[k]);
        close(from_child[k]);
    }

    // HDF5 files that are not ours, from before the validation split (format 2), before the
    // reward beyond chance (format 4, a line that says so), or from a later attnsweep.
    hid_t file = H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(file);
    check_read_fails(other, 0, "not an attnsweep results file");
    const int versions[] = {2, 4, 5, SCHEMA_FORMAT_VERSION + 1};
    const char *why[] = {"", ": its rewards charge the invariant terms as measured",
                         ": `attnsweep run SWEEP.yaml --resume` rebuilds it", ""};
    for (int k = 0; k < 4; k++) {
        char said[160];
        snprintf(said, sizeof said, "results format %d, this attnsweep reads %d%s", versions[k], SCHEMA_FORMAT_VERSION,
                 why[k]);
        file = H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t attr = H5Acreate2(file, "format_version", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(attr, H5T_NATIVE_INT, &versions[k]);
        H5Aclose(attr);
        H5Sclose(space);
        H5Fclose(file);
        check_read_fails(other, 0, said);
    }

    // Every path above, the failing ones included, closed the files and objects it opened.
    ssize_t open_ids = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
    CHECK(open_ids == 0, "%zd HDF5 files/objects left open", open_ids);

    for (int t = 0; t < 3; t++) trial_result_free(&trials[t]);
    remove(path);
    remove(other);
}

static void test_config_json_round_trip_is_exact(void) {
    TrialConfig c;
    config_defaults(&c);
    set(&c, "attention", "tucker");
    set(&c, "task", "recall");
    set(&c, "core_rank", "3");
    set(&c, "grassmann_offsets", "3,1,7;2;5,4");
    set(&c, "layers", "3");
    set(&c, "lr", "0.00123456789012345678");
    set(&c, "lambda_orth", "1e-7");
    set(&c, "epochs", "2.5");
    set(&c, "data_dir", "/data/my \"quoted\" dir");

    cJSON *json = config_to_json(&c);
    CHECK(cJSON_GetArraySize(json) == config_nparams, "JSON has %d keys want %d", cJSON_GetArraySize(json),
          config_nparams);
    CHECK(cJSON_IsArray(cJSON_GetObjectItem(json, "grassmann_offsets")), "grassmann_offsets is not an array");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(json, "attention")), "attention is not a string");
    char *text = cJSON_PrintUnformatted(json);
    cJSON_Delete(json);
    cJSON *parsed = cJSON_Parse(text);
    cJSON_free(text);
    TrialConfig back;
    char err[256] = "";
    CHECK(config_from_json(&back, parsed, err, sizeof err) == 0, "config_from_json: %s", err);
    CHECK(same_config(&back, &c), "config differs after to_json/from_json");
    cJSON_Delete(parsed);

    // An empty object gives the defaults.
    TrialConfig defaults;
    config_defaults(&defaults);
    cJSON *empty = cJSON_CreateObject();
    CHECK(config_from_json(&back, empty, err, sizeof err) == 0 && same_config(&back, &defaults),
          "{} should give the defaults (%s)", err);
    cJSON_Delete(empty);
}

static void check_json_error(const char *text, const char *expect) {
    cJSON *obj = cJSON_Parse(text);
    TrialConfig c;
    char err[256] = "";
    int rc = config_from_json(&c, obj, err, sizeof err);
    CHECK(rc == -1 && strstr(err, expect) && !strchr(err, '\n'), "%s: got %d '%s', want -1 and '%s'", text, rc, err,
          expect);
    cJSON_Delete(obj);
}

static void test_config_json_errors_say_what_is_wrong(void) {
    check_json_error("{\"d_modle\": 64}", "unknown parameter 'd_modle' (did you mean 'd_model'?)");
    check_json_error("{\"zzzzzzzzzzzz\": 1}", "unknown parameter 'zzzzzzzzzzzz'");
    check_json_error("{\"d_model\": \"64\"}", "d_model must be an integer, got a string");
    check_json_error("{\"d_model\": 64.5}", "d_model must be an integer");
    check_json_error("{\"heads\": 0}", "heads must be in [1, 256]");
    check_json_error("{\"lr\": true}", "lr must be a number, got a boolean");
    check_json_error("{\"attention\": \"rnn\"}", "unknown attention 'rnn'");
    check_json_error("{\"attention\": 1}", "attention must be a string, got a number");
    check_json_error("{\"grassmann_offsets\": \"1,2\"}", "grassmann_offsets must be an array of integers");
    check_json_error("{\"grassmann_offsets\": [1, \"x\"]}", "grassmann_offsets must be an array of integers");
    check_json_error("{\"grassmann_offsets\": []}", "at least one offset");
    check_json_error("{\"grassmann_offsets\": [[1, 2], []]}", "at least one offset in every layer's group");
    check_json_error("{\"grassmann_offsets\": [[1, 2], 4]}", "grassmann_offsets must be an array of integers or of "
                                                              "arrays of integers, got a number in it");
    check_json_error("{\"grassmann_offsets\": [[1, \"2\"]]}", "got a string in it");
    check_json_error("[1, 2]", "config must be a JSON object, got an array");
}

static void test_trial_result_json_has_every_field(void) {
    const int dims[4] = {4, 16, 64, 3};
    TrialResult r = make_trial(5, "linear", "charlm", dims, 1, 2);
    r.val_loss = INFINITY;
    cJSON *json = trial_result_to_json(&r);
    const char *keys[] = {"trial", "status", "reason", "config", "val_accuracy", "val_loss", "val_bits_per_byte",
                          "test_accuracy", "test_loss", "test_bits_per_byte", "rank_deviation", "correlation",
                          "correlation_chance", "correlation_z", "eff_rank_z", "rank_deviation_excess",
                          "correlation_excess", "reward", "steps", "n_params", "seconds"};
    const int n_keys = (int)(sizeof keys / sizeof keys[0]);
    CHECK(cJSON_GetArraySize(json) == n_keys, "trial JSON has %d keys want %d", cJSON_GetArraySize(json), n_keys);
    for (int k = 0; k < n_keys; k++) CHECK(cJSON_GetObjectItem(json, keys[k]) != NULL, "trial JSON lacks '%s'", keys[k]);
    CHECK(cJSON_GetObjectItem(json, "test_accuracy")->valuedouble == r.test_accuracy, "test_accuracy in the JSON");
    CHECK(cJSON_GetObjectItem(json, "trial")->valuedouble == 5, "trial id");
    CHECK(cJSON_GetObjectItem(json, "n_params")->valuedouble == 5000000005.0, "n_params");
    const cJSON *attention = cJSON_GetObjectItem(cJSON_GetObjectItem(json, "config"), "attention");
    CHECK(cJSON_IsString(attention) && strcmp(attention->valuestring, "linear") == 0, "config.attention");
    char *text = cJSON_PrintUnformatted(json);
    CHECK(strstr(text, "\"val_loss\":null") != NULL, "an infinite loss should print as null: %s", text);
    cJSON_free(text);
    cJSON_Delete(json);
    // Bits per byte are charlm's: another task's JSON has none.
    set(&r.config, "task", "recall");
    json = trial_result_to_json(&r);
    CHECK(cJSON_GetArraySize(json) == n_keys - 2 && !cJSON_GetObjectItem(json, "val_bits_per_byte") &&
              !cJSON_GetObjectItem(json, "test_bits_per_byte"),
          "a recall trial's JSON should have no bits per byte");
    cJSON_Delete(json);
    trial_result_free(&r);
}

int main(void) {
    test_results_file_round_trip_and_errors();
    test_model_scores_of_a_wide_layer();
    test_config_json_round_trip_is_exact();
    test_config_json_errors_say_what_is_wrong();
    test_trial_result_json_has_every_field();
    return check_report("test_h5store");
}
