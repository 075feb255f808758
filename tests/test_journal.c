// test_journal: the byte form of a trial round-trips bit for bit and survives every
// truncation and random damage; the journal replays exactly its intact records whatever
// byte a kill cut it at, cuts a torn tail away before appending, refuses foreign files;
// and a results file rebuilt from a journal (trials in any id order) reads in h5py.
// modules: store
#define _GNU_SOURCE  // memmem; mkdtemp, popen, fork, pipe, truncate
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "python_ref.h"
#include "common/outfile.h"
#include "common/util.h"
#include "store/h5store.h"
#include "store/journal.h"

static char dir[64];  // this run's temporary directory

static void path_in(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", dir, name); }

static void set(TrialConfig *c, const char *name, const char *value) {
    char err[256];
    if (config_set(c, config_find(name), value, err, sizeof err) != 0) die(EXIT_RUNTIME, "test setup: %s", err);
}

static double bits_f64(uint64_t u) {
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static float bits_f32(uint32_t u) {
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

// Values whose bits a careless encoder would change: NaN with a payload, −0, ±∞, denormals.
static double special(int i) {
    static const uint64_t bits[] = {0x7ff80000deadbeefULL, 0x8000000000000000ULL, 0x7ff0000000000000ULL,
                                    0xfff0000000000000ULL, 0x0000000000000001ULL, 0xfff4000000000123ULL};
    return bits_f64(bits[i % 6]);
}

static double *doubles(size_t n, double base) {
    double *v = xmalloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = i % 7 == 3 ? special((int)i) : base + 0.001 * (double)i;
    return v;
}

static void add_scores(TrialResult *r) {
    r->scores = xcalloc((size_t)r->n_layers, sizeof *r->scores);
    for (int l = 0; l < r->n_layers; l++) {
        LayerScore *s = &r->scores[l];
        s->view = TENSOR_PARAMETERS;
        memcpy(s->dims, r->dims, sizeof s->dims);
        s->norm = 3.5 + l;
        s->correlation_chance = 0.01 * l;
        s->mixing = l == 1;
        for (int m = 0; m < 4; m++) {
            s->n_sv[m] = r->dims[m];
            s->sv[m] = doubles((size_t)r->dims[m], 10.0 * m);
            s->num_rank[m] = m + 1;
            s->eff_rank[m] = 1.25 * m;
            s->core_energy[m] = m == 2 ? special(0) : 0.9;
            s->tucker_ranks[m] = 2;
            s->cp_cond[m] = m == 1 ? INFINITY : 12.5;
        }
        s->correlation = 0.125;
        s->tucker_fit = 0.875;
        s->tucker_iters = 7;
        if (l == 0) {  // the last layer keeps a CP sweep that did not run: no arrays
            s->cp_rank_max = 5;
            s->cp_fits = doubles(5, 0.5);
            s->cp_rank = 2;
            s->cp_fit = 0.9375;
            s->cp_roles = doubles((size_t)2 * r->dims[3], -1.0);
        }
    }
}

// kind 0: a failed trial (no curve, trace, weights or scores); 1: weights but no scores
// or trace; 2: everything, with NaNs and infinities in it.
static TrialResult make_trial(int id, int kind) {
    TrialResult r = {0};
    config_defaults(&r.config);
    r.id = id;
    r.rank = 1 + id % 3;
    snprintf(r.host, sizeof r.host, "node%02d.cluster", id);
    r.start_time = 1.7e9 + id;
    r.end_time = r.start_time + 42.5;
    r.n_params = 5000000000L + id;
    r.reward_spec = (RewardSpec){.tensor = TENSOR_PARAMETERS, .beta = 0.1, .gamma = 0.2, .use_mode = {1, 0, 1, 0},
                                 .ideal_rank = {-1, 2, 3.5, -1}};
    if (kind == 0) {
        r.status = TRIAL_FAILED;
        snprintf(r.reason, sizeof r.reason, "loss became NaN at step %d", 17 + id);
        r.val_accuracy = r.val_loss = r.val_bits_per_byte = NAN;
        r.test_accuracy = r.test_loss = r.test_bits_per_byte = NAN;
        r.rank_deviation = r.correlation = r.reward = NAN;
        r.rank_deviation_excess = r.correlation_excess = r.correlation_z = r.eff_rank_z = NAN;
        return r;
    }
    set(&r.config, "attention", kind == 2 ? "tucker" : "grassmann");
    set(&r.config, "task", "charlm");
    set(&r.config, "grassmann_offsets", "1,3,9");
    set(&r.config, "lambda_orth", "0.0123456789012345");
    set(&r.config, "data_dir", "/tmp/some data/dir");
    r.status = TRIAL_OK;
    r.val_accuracy = 0.75 + 1e-3 * id;
    r.val_loss = 0.1 * id + 1.0 / 3.0;
    r.val_bits_per_byte = r.val_loss / log(2.0);
    r.test_accuracy = 0.625 + 1e-3 * id;
    r.test_loss = 0.1 * id + 2.0 / 3.0;
    r.test_bits_per_byte = r.test_loss / log(2.0);
    r.steps = 100 + id;
    r.seconds = 12.25;
    r.train_seconds = 11.0 + 1.0 / 7.0;
    r.flops_per_step = 1.5e9;
    r.rank_deviation = 0.25;
    r.correlation = -0.0;
    r.correlation_chance = 0.0123;
    r.rank_deviation_excess = -0.125, r.correlation_excess = 0.0625, r.correlation_z = NAN, r.eff_rank_z = -2.5;
    r.reward = r.val_accuracy - 0.1 * r.rank_deviation_excess - 0.1 * r.correlation_excess;
    r.n_layers = 2;
    const int dims[4] = {4, 2, 8, 3};
    memcpy(r.dims, dims, sizeof dims);
    r.weights = xcalloc(2, sizeof *r.weights);
    for (int l = 0; l < 2; l++) {
        r.weights[l] = xmalloc(192 * sizeof(float));
        for (int i = 0; i < 192; i++) r.weights[l][i] = (float)(l + 1) * 0.5f + (float)i / 1024.0f;
        r.weights[l][5] = bits_f32(0x7fc0beefU);
        r.weights[l][6] = -0.0f;
    }
    r.out_dims[0] = 8, r.out_dims[1] = 8;
    r.weights_out = xcalloc(2, sizeof *r.weights_out);
    for (int l = 0; l < 2; l++) {
        r.weights_out[l] = xmalloc(64 * sizeof(float));
        for (int i = 0; i < 64; i++) r.weights_out[l][i] = (float)(l + 2) * 0.25f - (float)i / 512.0f;
    }
    if (kind == 1) return r;

    r.n_curve = 5;
    r.curve = xcalloc(5, sizeof *r.curve);
    for (int i = 0; i < 5; i++)
        r.curve[i] = (CurvePoint){.step = 10 * (i + 1), .lr = 1e-3 / (i + 1), .train_loss = 2.0 - 0.1 * i,
                                  .val_loss = i == 2 ? special(0) : 2.1 - 0.1 * i, .val_accuracy = 0.1 * i,
                                  .penalty = 1e-4 * i, .seconds = 0.5 * i};
    InvariantTrace *t = &r.trace;
    t->n = 3, t->cap = 8, t->layers = 2, t->groups = 4;  // capacity beyond n is not part of the trial
    t->step = xcalloc(8, sizeof *t->step);
    for (int i = 0; i < 3; i++) t->step[i] = 10 * (i + 1);
    t->correlation = doubles(8 * 2, 0.5);
    t->eff_rank = doubles(8 * 2 * 4, 1.5);
    t->head_sv = doubles(8 * 2 * 4, 7.0);
    t->chance = doubles(8 * 2 * 4, 0.25);
    add_scores(&r);
    // the parameter arena (a NaN payload and −0 among them), of a model of 300 parameters
    r.n_params = 300;
    r.params = xmalloc(300 * sizeof(float));
    for (int i = 0; i < 300; i++) r.params[i] = (float)i / 64.0f - 2.0f;
    r.params[7] = bits_f32(0x7fc0beefU);
    r.params[8] = -0.0f;
    r.param_layout = xstrdup("wte:100,head_w:200");
    return r;
}

// Bit-equal (n == 0: equal whatever the pointers).
static int same_bits(const void *a, const void *b, size_t n) { return n == 0 || (a && b && memcmp(a, b, n) == 0); }

// got->F and want->F bit-equal; an array of n elements at got->P and want->P bit-equal.
#define SAME(F) CHECK(same_bits(&got->F, &want->F, sizeof want->F), "trial %d: %s differs", id, #F)
#define SAME_ARRAY(P, n) \
    CHECK(same_bits(got->P, want->P, (size_t)(n) * sizeof *want->P), "trial %d: %s differs", id, #P)

static void check_same_score(const LayerScore *got, const LayerScore *want, int id) {
    SAME(view); SAME(mixing); SAME(dims); SAME(norm); SAME(n_sv); SAME(num_rank); SAME(eff_rank); SAME(correlation); SAME(correlation_chance);
    SAME(core_energy);
    SAME(tucker_ranks); SAME(tucker_fit); SAME(tucker_iters); SAME(cp_rank); SAME(cp_fit); SAME(cp_rank_max);
    SAME(cp_cond);
    for (int m = 0; m < 4; m++) SAME_ARRAY(sv[m], want->n_sv[m]);
    SAME_ARRAY(cp_fits, want->cp_rank_max);
    SAME_ARRAY(cp_roles, (size_t)want->cp_rank * want->dims[3]);
}

static void check_same_trial(const TrialResult *got, const TrialResult *want) {
    const int id = want->id;
    SAME(config); SAME(id); SAME(status); SAME(reason); SAME(val_accuracy); SAME(val_loss); SAME(val_bits_per_byte);
    SAME(test_accuracy); SAME(test_loss); SAME(test_bits_per_byte); SAME(steps); SAME(n_params); SAME(seconds); SAME(train_seconds); SAME(flops_per_step); SAME(start_time);
    SAME(end_time); SAME(host); SAME(rank); SAME(n_curve); SAME(reward_spec); SAME(rank_deviation);
    SAME(correlation); SAME(correlation_chance); SAME(rank_deviation_excess); SAME(correlation_excess);
    SAME(correlation_z); SAME(eff_rank_z); SAME(reward); SAME(n_layers); SAME(dims); SAME(out_dims);
    SAME(trace.n); SAME(trace.layers); SAME(trace.groups);
    for (int i = 0; i < got->n_curve && i < want->n_curve; i++) {  // CurvePoint has padding after step
        SAME(curve[i].step);
        CHECK(same_bits(&got->curve[i].lr, &want->curve[i].lr, sizeof(CurvePoint) - offsetof(CurvePoint, lr)),
              "trial %d: curve point %d differs", id, i);
    }
    const size_t points = (size_t)want->trace.n * want->trace.layers;
    SAME_ARRAY(trace.step, want->trace.n);
    SAME_ARRAY(trace.correlation, points);
    SAME_ARRAY(trace.eff_rank, points * 4);
    SAME_ARRAY(trace.head_sv, points * want->trace.groups);
    SAME_ARRAY(trace.chance, points * 4);
    const size_t count = (size_t)want->dims[0] * want->dims[1] * want->dims[2] * want->dims[3];
    for (int l = 0; l < got->n_layers && l < want->n_layers; l++) {
        SAME_ARRAY(weights[l], count);
        SAME_ARRAY(weights_out[l], (size_t)want->out_dims[0] * want->out_dims[1]);
    }
    CHECK(!got->params == !want->params, "trial %d: params %s", id, got->params ? "appeared" : "lost");
    if (got->params && want->params) {
        SAME_ARRAY(params, want->n_params);
        CHECK(!strcmp(got->param_layout, want->param_layout), "trial %d: param_layout differs", id);
    }
    CHECK(!got->scores == !want->scores, "trial %d: scores %s", id, got->scores ? "appeared" : "lost");
    if (got->scores && want->scores && got->n_layers == want->n_layers)
        for (int l = 0; l < want->n_layers; l++) check_same_score(&got->scores[l], &want->scores[l], id);
}

// What the results file keeps of a trial (h5store_read_trial reads no scores or trace).
static void check_same_stored(const TrialResult *got, const TrialResult *want) {
    const int id = want->id;
    SAME(config); SAME(status); SAME(reason); SAME(host); SAME(val_accuracy); SAME(test_accuracy); SAME(n_layers);
    SAME(dims); SAME(n_curve); SAME(out_dims);
    const size_t count = (size_t)want->dims[0] * want->dims[1] * want->dims[2] * want->dims[3];
    for (int l = 0; l < got->n_layers && l < want->n_layers; l++) {
        SAME_ARRAY(weights[l], count);
        SAME_ARRAY(weights_out[l], (size_t)want->out_dims[0] * want->out_dims[1]);
    }
    CHECK(!got->params == !want->params, "trial %d: params %s", id, got->params ? "appeared" : "lost");
    if (got->params && want->params) {
        SAME_ARRAY(params, want->n_params);
        CHECK(!strcmp(got->param_layout, want->param_layout), "trial %d: param_layout differs", id);
    }
}

static Bytes packed(const TrialResult *r) {
    Bytes b = {0};
    trial_pack(&b, r);
    return b;
}

// Same bytes when packed: the whole trial in one comparison.
static int same_packing(const TrialResult *a, const TrialResult *b) {
    Bytes x = packed(a), y = packed(b);
    int same = x.len == y.len && memcmp(x.data, y.data, x.len) == 0;
    bytes_free(&x);
    bytes_free(&y);
    return same;
}

static void test_round_trip(void) {
    for (int kind = 0; kind < 3; kind++) {
        TrialResult want = make_trial(40 + kind, kind), got;
        Bytes b = packed(&want);
        char err[512] = "";
        int rc = trial_unpack(&got, b.data, b.len, err, sizeof err);
        CHECK(rc == 0, "kind %d: unpack failed: %s", kind, err);
        if (rc == 0) {
            check_same_trial(&got, &want);
            CHECK(same_packing(&got, &want), "kind %d: packs differently after the round trip", kind);
            CHECK(got.trace.cap == got.trace.n, "trace capacity %d, want n = %d", got.trace.cap, got.trace.n);
            trial_result_free(&got);
        }
        bytes_free(&b);
        trial_result_free(&want);
    }
}


// A dimension is bounded by what the format allows, not by the bytes left: a score of a
// Grassmann layer's W_red (4 × 4096, scored on its parameters) has dims 4096 and no 4096
// of anything after them (the coordinator once refused such a result and died).
static void test_unpack_wide_dims(void) {
    TrialResult want = make_trial(9, 2), got;
    want.scores[1].dims[2] = 4096;
    want.trace.groups = 100000;
    free(want.trace.head_sv);
    want.trace.n = 0, want.trace.head_sv = NULL;
    free(want.trace.step), free(want.trace.correlation), free(want.trace.eff_rank), free(want.trace.chance);
    want.trace.step = NULL, want.trace.correlation = want.trace.eff_rank = want.trace.chance = NULL;
    Bytes b = packed(&want);
    char err[512] = "";
    const int rc = trial_unpack(&got, b.data, b.len, err, sizeof err);
    CHECK(rc == 0, "a score of dims 4096 in a %zu-byte trial: %s", b.len, err);
    if (rc == 0) {
        CHECK(same_packing(&got, &want), "a score of dims 4096 packs differently after the round trip");
        trial_result_free(&got);
    }
    bytes_free(&b);
    trial_result_free(&want);
}

// Every proper prefix lacks a field, so it must fail, leaving nothing allocated behind.
static void test_unpack_truncated(void) {
    TrialResult want = make_trial(7, 2), got;
    Bytes b = packed(&want);
    int failures = 0;
    for (size_t len = 0; len < b.len; len++) {
        // A copy of exactly len bytes, so ASan sees any read past the end.
        unsigned char *cut = xmalloc(len);
        memcpy(cut, b.data, len);
        char err[512] = "";
        int rc = trial_unpack(&got, cut, len, err, sizeof err);
        if (rc != -1 || !err[0] || got.n_layers || got.curve || got.weights) failures++;
        if (rc == 0) trial_result_free(&got);
        free(cut);
    }
    CHECK(failures == 0, "%d of %zu truncations were not refused cleanly", failures, b.len);
    char err[512];
    unsigned char *extra = xcalloc(b.len + 1, 1);
    memcpy(extra, b.data, b.len);
    CHECK(trial_unpack(&got, extra, b.len + 1, err, sizeof err) == -1 && strstr(err, "after the end"),
          "a trailing byte must be refused, got '%s'", err);
    free(extra);
    bytes_free(&b);
    trial_result_free(&want);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng_next(void) {  // xorshift64*
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

// Random damage (a few bytes, or a count forced huge) either fails or decodes to a
// trial that packs again; never a crash, an out-of-bounds read or an absurd allocation.
static void test_unpack_damaged(void) {
    enum { N_DAMAGED = 2500 };
    TrialResult want = make_trial(8, 2), got;
    Bytes b = packed(&want);
    unsigned char *buf = xmalloc(b.len);
    int decoded = 0;
    for (int iter = 0; iter < N_DAMAGED; iter++) {
        memcpy(buf, b.data, b.len);
        int flips = 1 + (int)(rng_next() % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = rng_next() % b.len;
            if (iter % 4 == 0 && at + 4 <= b.len)
                memset(buf + at, 0xff, iter % 8 == 0 ? 4 : 3);  // huge where it lands on a count
            else
                buf[at] ^= (unsigned char)(1 + rng_next() % 255);
        }
        char err[512];
        if (trial_unpack(&got, buf, b.len, err, sizeof err) == 0) {
            decoded++;
            Bytes again = packed(&got);
            TrialResult back;
            CHECK(trial_unpack(&back, again.data, again.len, err, sizeof err) == 0,
                  "a damaged trial that decoded does not decode after packing again: %s", err);
            trial_result_free(&back);
            bytes_free(&again);
            trial_result_free(&got);
        }
    }
    CHECK(decoded > 0 && decoded < N_DAMAGED, "%d of %d damaged buffers decoded (some flips hit plain values)", decoded,
          N_DAMAGED);
    free(buf);
    bytes_free(&b);
    trial_result_free(&want);
}

// ---------------------------------------------------------------- the journal file

typedef struct {
    TrialResult *r;
    int n, cap;
    int handouts, releases, starts, others;
    long last_start_pid;
} Collected;

static void collect(void *ctx, JournalRecord *rec) {
    Collected *c = ctx;
    if (rec->kind == JOURNAL_HANDOUT) c->handouts++;
    if (rec->kind == JOURNAL_RELEASE) c->releases++;
    if (rec->kind == JOURNAL_START) c->starts++, c->last_start_pid = rec->pid;
    c->others += rec->kind != JOURNAL_TRIAL && rec->kind != JOURNAL_HANDOUT && rec->kind != JOURNAL_RELEASE &&
                 rec->kind != JOURNAL_START;
    if (rec->kind != JOURNAL_TRIAL) return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->r = xrealloc(c->r, (size_t)c->cap * sizeof *c->r);
    }
    c->r[c->n++] = rec->trial;
}

static void collected_free(Collected *c) {
    for (int i = 0; i < c->n; i++) trial_result_free(&c->r[i]);
    free(c->r);
    *c = (Collected){0};
}

static long replay(const char *path, Collected *c, char *err, size_t errlen) {
    collected_free(c);
    return journal_replay_path(path, collect, c, err, errlen);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static Bytes read_whole(const char *path) {
    Bytes b = {0};
    FILE *f = xfopen(path, "rb");
    b.cap = (size_t)file_size(path) + 1;
    b.data = xmalloc(b.cap);
    b.len = fread(b.data, 1, b.cap, f);
    fclose(f);
    return b;
}

static void write_bytes(const char *path, const unsigned char *data, size_t n) {
    FILE *f = xfopen(path, "wb");
    CHECK(fwrite(data, 1, n, f) == n, "cannot write %s", path);
    fclose(f);
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// Whether the directory holds no temporary file of NAME (NAME.partial-XXXXXX).
static int no_temporary(const char *name) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q '^%s.partial-'", dir, name);
    return system(cmd) != 0;
}

static const char MAGIC[] = "attnsweep-journal 6\n";
enum { MAGIC_LEN = sizeof MAGIC - 1, HEADER = 20, N_TRIALS = 50, RECORD_MAGIC = 0x364E524A };

// A body as the journal stores it (store/journal.h): every 'J' followed by a 0.
static Bytes escaped(const unsigned char *body, size_t n) {
    Bytes b = {0};
    for (size_t i = 0; i < n; i++) {
        bytes_put_le(&b, body[i], 1);
        if (body[i] == 'J') bytes_put_le(&b, 0, 1);
    }
    return b;
}

// A whole record as the journal frames it, of a body given as stored.
static Bytes framed(uint32_t kind, const Bytes *stored) {
    Bytes r = {0};
    unsigned char *h = bytes_extend(&r, HEADER);
    store_le(h, RECORD_MAGIC, 4);
    store_le(h + 4, kind, 4);
    store_le(h + 8, stored->len, 4);
    store_le(h + 12, crc32(0L, stored->data, (uInt)stored->len), 4);
    store_le(h + 16, crc32(0L, h, 16), 4);
    memcpy(bytes_extend(&r, stored->len), stored->data, stored->len);
    return r;
}

// A journal of this process, locked, replayed (empty) and begun: as a sweep opens it.
static Journal *open_begun(const char *path) {
    char err[512];
    Journal *j = journal_open(path, err, sizeof err);
    if (!j) die(EXIT_RUNTIME, "test setup: %s", err);
    Collected c = {0};
    journal_replay(j, collect, &c, err, sizeof err);
    collected_free(&c);
    journal_begin(j, 0);
    return j;
}

static void test_append_and_replay(void) {
    char path[128];
    path_in(path, sizeof path, "fifty.journal");
    TrialResult *want = xcalloc(N_TRIALS, sizeof *want);
    Journal *j = open_begun(path);
    for (int i = 0; i < N_TRIALS; i++) {
        want[i] = make_trial((i * 37) % N_TRIALS, i % 3);  // ids in a scrambled order
        journal_handout(j, want[i].id, 1 + i % 3, "{\"attention\": \"mha\"}");
        journal_append(j, &want[i]);
    }
    journal_release(j, 7);
    journal_close(j);
    CHECK(no_temporary("fifty.journal"), "the journal's temporary file was left behind");

    // The bytes on disk: the magic line, then per record a header (magic, kind, length,
    // body CRC, header CRC) and its body, escaped: start, then handout + trial per trial,
    // release.
    Bytes file = read_whole(path);
    CHECK(file.len > MAGIC_LEN && memcmp(file.data, MAGIC, MAGIC_LEN) == 0, "the journal does not start with its magic line");
    size_t off = MAGIC_LEN;
    int records = 0, trials = 0, kinds_ok = 1;
    while (off + HEADER <= file.len) {
        const unsigned char *h = file.data + off;
        const uint32_t kind = le32(h + 4), n = le32(h + 8);
        if (le32(h) != RECORD_MAGIC || le32(h + 16) != (uint32_t)crc32(0L, h, 16) || off + HEADER + n > file.len) break;
        const unsigned char *body = h + HEADER;
        CHECK(le32(h + 12) == (uint32_t)crc32(0L, body, n), "record %d: body CRC", records);
        const uint32_t want_kind = records == 0 ? 2 : records == 2 * N_TRIALS + 1 ? 4 : records % 2 ? 3 : 1;
        kinds_ok &= kind == want_kind;
        if (kind == 1) {
            Bytes raw = packed(&want[trials]), expect = escaped(raw.data, raw.len);
            CHECK(n == expect.len && memcmp(body, expect.data, n) == 0, "record %d: body is not trial_pack escaped",
                  records);
            CHECK(!memmem(body, n, "JRN6", 4), "record %d: the magic inside a body", records);
            bytes_free(&raw);
            bytes_free(&expect);
            trials++;
        }
        off += HEADER + n;
        records++;
    }
    CHECK(kinds_ok, "the records' kinds are not start, (handout, trial) x %d, release", N_TRIALS);
    CHECK(records == 2 * N_TRIALS + 2 && trials == N_TRIALS && off == file.len, "parsed %d records to byte %zu of %zu",
          records, off, file.len);
    bytes_free(&file);

    Collected c = {0};
    char err[512] = "x";
    long n = replay(path, &c, err, sizeof err);
    CHECK(n == 2 * N_TRIALS + 2 && c.n == N_TRIALS && c.handouts == N_TRIALS && c.releases == 1 && c.starts == 1 &&
              c.last_start_pid == (long)getpid(),
          "replay: %ld records, %d trials, %d handouts, %d releases, %d starts (pid %ld)", n, c.n, c.handouts,
          c.releases, c.starts, c.last_start_pid);
    CHECK(err[0] == 0, "replay of an intact journal: err '%s'", err);
    for (int i = 0; i < c.n && i < N_TRIALS; i++) check_same_trial(&c.r[i], &want[i]);
    collected_free(&c);
    for (int i = 0; i < N_TRIALS; i++) trial_result_free(&want[i]);
    free(want);
}

// A kill can cut the last record at any byte: every such file replays exactly the
// records before it, says where the damage is, and journal_begin cuts it away.
// A hostile trial whose own bytes (its parameters: a checkpoint's weights, copied as they
// are) hold a whole valid record of another trial, as an unescaped journal would frame it:
// with the hostile record's header damaged, the reader looks for the next record through
// its body and must not find the forgery; cut anywhere inside it, likewise. Only the
// honest trials come back.
static void test_forged_record(void) {
    char path[128];
    path_in(path, sizeof path, "forged.journal");
    TrialResult forged = make_trial(3, 1), hostile = make_trial(9, 1), honest = make_trial(4, 0);
    forged.val_loss = -999.0;
    Bytes fb = packed(&forged), rec = framed(1, &fb);  // the forgery as raw bytes: no escapes
    hostile.n_params = (long)((rec.len + 3) / 4);
    hostile.params = xcalloc((size_t)hostile.n_params, sizeof(float));
    memcpy(hostile.params, rec.data, rec.len);
    char layout[64];
    snprintf(layout, sizeof layout, "weights:%ld", hostile.n_params);
    hostile.param_layout = xstrdup(layout);
    Journal *j = open_begun(path);
    const long start = file_size(path);
    journal_append(j, &hostile);
    const long end = file_size(path);
    journal_append(j, &honest);
    journal_close(j);
    Bytes file = read_whole(path);
    CHECK(!memmem(file.data + start, (size_t)(end - start), rec.data, rec.len), "the forgery stands whole in the journal");
    int forged_seen = 0, cuts = 0;
    for (long at = start; at < start + HEADER; at++) {  // each header byte of the hostile record flipped
        Bytes bad = {0};
        memcpy(bytes_extend(&bad, file.len), file.data, file.len);
        bad.data[at] ^= 0x40;
        write_bytes(path, bad.data, bad.len);
        bytes_free(&bad);
        Collected c = {0};
        char err[512];
        replay(path, &c, err, sizeof err);
        for (int i = 0; i < c.n; i++) forged_seen += c.r[i].id == 3;
        CHECK(c.n == 1 && c.r[0].id == 4, "header byte %ld flipped: %d trials back (want the honest one alone)", at - start,
              c.n);
        collected_free(&c);
    }
    for (long len = end - 1; len > start; len -= 97, cuts++) {  // the journal cut inside the hostile record
        write_bytes(path, file.data, (size_t)len);
        Collected c = {0};
        char err[512];
        replay(path, &c, err, sizeof err);
        for (int i = 0; i < c.n; i++) forged_seen += c.r[i].id == 3;
        collected_free(&c);
    }
    CHECK(forged_seen == 0, "the forged trial came back %d times", forged_seen);
    printf("test_journal: a record forged inside a trial's bytes: never replayed (20 header flips, %d cuts)\n", cuts);
    bytes_free(&file);
    bytes_free(&rec);
    bytes_free(&fb);
    trial_result_free(&forged);
    trial_result_free(&hostile);
    trial_result_free(&honest);
}

static void test_torn_tail(void) {
    char path[128];
    path_in(path, sizeof path, "torn.journal");
    TrialResult t[3] = {make_trial(0, 0), make_trial(1, 0), make_trial(2, 2)};
    Journal *j = open_begun(path);
    for (int i = 0; i < 2; i++) journal_append(j, &t[i]);
    const long boundary = file_size(path);
    journal_append(j, &t[2]);
    journal_close(j);
    const long full = file_size(path);

    Collected c = {0};
    int wrong = 0;
    for (long len = full - 1; len >= boundary; len--) {
        if (truncate(path, len) != 0) die(EXIT_RUNTIME, "truncate %s: %s", path, strerror(errno));
        char err[512] = "";
        replay(path, &c, err, sizeof err);
        int ok = c.n == 2 && c.r[0].id == 0 && c.r[1].id == 1 &&
                 (len == boundary ? err[0] == 0 : strstr(err, path) && strstr(err, "damaged stretch skipped") != NULL);
        if (!ok && wrong++ < 5) CHECK(0, "cut at %ld: %d trials (want 2), err '%s'", len, c.n, err);
    }
    CHECK(wrong == 0, "%d of %ld cuts replayed wrongly", wrong, full - boundary);

    // Cut mid-record, resume: the damaged end goes, an append lands whole after the intact part.
    if (truncate(path, boundary + (full - boundary) / 2) != 0) die(EXIT_RUNTIME, "truncate: %s", strerror(errno));
    j = open_begun(path);
    const long after_begin = file_size(path);
    journal_append(j, &t[2]);
    journal_close(j);
    char err[512];
    replay(path, &c, err, sizeof err);
    CHECK(c.n == 3 && err[0] == 0 && after_begin > boundary && after_begin < boundary + 100,
          "after cutting and appending: %d trials, '%s' (the start record ends at %ld, the intact part at %ld)", c.n,
          err, after_begin, boundary);
    if (c.n == 3) check_same_trial(&c.r[2], &t[2]);
    collected_free(&c);
    for (int i = 0; i < 3; i++) trial_result_free(&t[i]);
}

// A trial (failed, so its reason is free text) carrying n zero weights (no byte to escape)
// and a reason of k letters: its record's length is linear in both.
static TrialResult weighted_trial(int id, long n, int k) {
    TrialResult r = make_trial(id, 0);
    r.n_params = n;
    r.params = xcalloc((size_t)(n ? n : 1), sizeof(float));
    char layout[64];
    snprintf(layout, sizeof layout, "weights:%ld", n);
    r.param_layout = xstrdup(layout);
    memset(r.reason, 0, sizeof r.reason);
    memset(r.reason, 'x', (size_t)k);
    return r;
}

static long record_length(const TrialResult *r) {
    Bytes raw = packed(r), stored = escaped(raw.data, raw.len);
    const long n = HEADER + (long)stored.len;
    bytes_free(&raw);
    bytes_free(&stored);
    return n;
}

// A pass reads the journal a megabyte at a time (store/journal.c, SCAN_WINDOW) and looks
// for the record after a damaged one 64 KiB at a time (SCAN_CHUNK): records across the
// window's edges, one larger than the window, and a record whose magic straddles the end
// of the first chunk searched after a damaged one all come back whole.
static void test_windows(void) {
    enum { SMALL = 1500, CHUNK = 1 << 16 };
    char path[128];
    path_in(path, sizeof path, "windows.journal");
    Journal *j = open_begun(path);
    TrialResult big = weighted_trial(0, 1L << 19, 3);  // 2 MiB of weights
    journal_append(j, &big);
    TrialResult *small = xcalloc(SMALL, sizeof *small);
    for (int i = 0; i < SMALL; i++) {
        small[i] = make_trial(1 + i, 1 + i % 2);
        journal_append(j, &small[i]);
    }
    // The damaged record: the search for the next starts at its second byte, so the next
    // record's magic straddles the first chunk's end when the damaged one is CHUNK - 2 long.
    const long want = CHUNK - 2;
    TrialResult probe = weighted_trial(SMALL + 1, 0, 0);
    const long n = (want - record_length(&probe) - 16) / 4;
    trial_result_free(&probe);
    probe = weighted_trial(SMALL + 1, n, 0);
    const int k = (int)(want - record_length(&probe));
    trial_result_free(&probe);
    CHECK(k >= 0 && k < (int)sizeof probe.reason, "cannot make a record of %ld bytes (%d letters of reason)", want, k);
    TrialResult damaged = weighted_trial(SMALL + 1, n, k), after = make_trial(SMALL + 2, 1);
    const long at = file_size(path);
    journal_append(j, &damaged);
    journal_append(j, &after);
    journal_close(j);
    CHECK(file_size(path) - at == want + record_length(&after), "the damaged record is %ld bytes long, not %ld",
          file_size(path) - at - record_length(&after), want);

    Collected c = {0};
    char err[512] = "x";
    replay(path, &c, err, sizeof err);
    CHECK(c.n == SMALL + 3 && !err[0], "intact: %d of %d trials back ('%s')", c.n, SMALL + 3, err);
    if (c.n == SMALL + 3) {
        check_same_trial(&c.r[0], &big);
        for (int i = 0; i < SMALL; i++) check_same_trial(&c.r[1 + i], &small[i]);
        check_same_trial(&c.r[SMALL + 1], &damaged);
        check_same_trial(&c.r[SMALL + 2], &after);
    }
    Bytes file = read_whole(path);
    file.data[at] ^= 0x40;  // its magic
    write_bytes(path, file.data, file.len);
    replay(path, &c, err, sizeof err);
    CHECK(c.n == SMALL + 2 && c.r[c.n - 1].id == SMALL + 2 && strstr(err, "1 damaged stretch skipped"),
          "a damaged record before a magic across a chunk's end: %d trials back (want %d, the last %d), '%s'", c.n,
          SMALL + 2, SMALL + 2, err);
    if (c.n == SMALL + 2) check_same_trial(&c.r[c.n - 1], &after);
    collected_free(&c);
    bytes_free(&file);
    for (int i = 0; i < SMALL; i++) trial_result_free(&small[i]);
    free(small);
    trial_result_free(&big);
    trial_result_free(&damaged);
    trial_result_free(&after);
}

// Which record holds byte `at` (-1: the magic line), from the records' offsets.
static int record_of(const long *starts, int n, long at) {
    int k = -1;
    for (int i = 0; i < n; i++)
        if (starts[i] <= at) k = i;
    return k;
}

static void record_offsets(void *ctx, JournalRecord *rec) {
    long *starts = ctx;
    starts[starts[0]++ + 1] = rec->offset;
    if (rec->kind == JOURNAL_TRIAL) trial_result_free(&rec->trial);
}

// Every single byte of a journal of 8 trials (with the start and hand-out records
// between them) flipped in turn: the replay keeps every trial whose record was not the
// damaged one, unchanged, and at most that one is lost.
static void test_flip_every_byte(void) {
    enum { N = 8 };
    char path[128];
    path_in(path, sizeof path, "flips.journal");
    TrialResult t[N];
    Journal *j = open_begun(path);
    for (int i = 0; i < N; i++) {
        t[i] = make_trial(i, i == 5 ? 1 : 0);  // one with weights: a long body
        journal_handout(j, i, 1, "{}");
        journal_append(j, &t[i]);
    }
    journal_close(j);
    Bytes orig = read_whole(path);
    long starts[1 + 3 * N] = {0};
    char err[1024];
    journal_replay_path(path, record_offsets, starts, err, sizeof err);
    const int n_records = (int)starts[0];
    CHECK(n_records == 1 + 2 * N, "the journal has %d records", n_records);
    // The trial record each record index belongs to: record 2 + 2i is trial i's.
    unsigned char *buf = xmalloc(orig.len);
    Collected c = {0};
    int bad = 0, lost = 0;
    // Each flip in place (rewriting the file each time made ext4 flush it: 2 ms a flip).
    const int fd = open(path, O_RDWR);
    for (size_t at = 0; at < orig.len; at++) {
        const unsigned char flipped = orig.data[at] ^ (unsigned char)(1u << (at % 8));
        if (pwrite(fd, &flipped, 1, (off_t)at) != 1) die(EXIT_RUNTIME, "pwrite: %s", strerror(errno));
        const long n = replay(path, &c, err, sizeof err);
        if (pwrite(fd, orig.data + at, 1, (off_t)at) != 1) die(EXIT_RUNTIME, "pwrite: %s", strerror(errno));
        const int k = record_of(starts + 1, n_records, (long)at);
        const int damaged_trial = k >= 2 && k % 2 == 0 ? (k - 2) / 2 : -1;
        int kept = 0, ok = n >= 0 && strstr(err, path) != NULL;
        for (int i = 0; ok && i < c.n; i++) {
            const int id = c.r[i].id;
            ok = id >= 0 && id < N && same_packing(&c.r[i], &t[id]) && (i == 0 || id > c.r[i - 1].id);
            kept++;
        }
        ok = ok && kept >= N - (damaged_trial >= 0);
        lost += N - kept;
        if (!ok && bad++ < 5)
            CHECK(0, "byte %zu (record %d) flipped: %ld records, %d of %d trials kept, '%s'", at, k, n, kept, N, err);
    }
    close(fd);
    CHECK(bad == 0, "%d of %zu single-byte flips lost more than the damaged record's trial", bad, orig.len);
    printf("test_journal: %zu single-byte flips of a %d-trial journal: %d trials lost in all (each flip inside a "
           "trial's record costs that trial, a flip elsewhere none)\n", orig.len, N, lost);

    // A damaged length in the first trial's record (a huge one, and one a little short):
    // only that trial is lost.
    const long first = starts[1 + 2];
    for (int v = 0; v < 2; v++) {
        memcpy(buf, orig.data, orig.len);
        store_le(buf + first + 8, v ? 0xFFFFFF00u : le32(buf + first + 8) - 3, 4);
        write_bytes(path, buf, orig.len);
        replay(path, &c, err, sizeof err);
        CHECK(c.n == N - 1 && c.r[0].id == 1, "a damaged length in the first record: %d trials kept (want %d), '%s'", c.n,
              N - 1, err);
    }
    write_bytes(path, orig.data, orig.len);
    collected_free(&c);
    free(buf);
    bytes_free(&orig);
    for (int i = 0; i < N; i++) trial_result_free(&t[i]);
}

// Trial bytes of another version are refused (2 to 4: each layer's weights and scores alone,
// before the whole network's view; 6: a later attnsweep), and so are the journals of
// versions 2 and 3, which hold such trials: one line saying why, the file untouched.
static void test_older_refused(void) {
    TrialResult want = make_trial(8, 1), got;
    Bytes b = packed(&want);
    char err[512] = "", expect[128];
    for (int v = 2; v <= 6; v++) {
        if (v == TRIAL_BYTES_VERSION) continue;
        b.data[4] = (unsigned char)v;  // the version's low byte (little-endian u32 after the magic)
        snprintf(expect, sizeof expect, "trial format version %d, this attnsweep reads %d", v, TRIAL_BYTES_VERSION);
        CHECK(trial_unpack(&got, b.data, b.len, err, sizeof err) != 0 && strstr(err, expect),
              "version %d: expected refused with '%s', got '%s'", v, expect, err);
    }
    bytes_free(&b);
    trial_result_free(&want);
    static const char *const old[] = {"attnsweep-journal 2\nJRNL and old trials", "attnsweep-journal 3\nJRN3 and old trials",
                                      "attnsweep-journal 4\nJRN4 and old trials", "attnsweep-journal 5\nJRN5 and old trials"};
    for (int k = 0; k < 4; k++) {
        char path[128];
        snprintf(path, sizeof path, "%s/v%d.journal", dir, k + 2);
        write_bytes(path, (const unsigned char *)old[k], strlen(old[k]));
        Collected c = {0};
        const long n = replay(path, &c, err, sizeof err);
        snprintf(expect, sizeof expect, "a sweep of an earlier attnsweep (journal version %d", k + 2);
        CHECK(n < 0 && strstr(err, expect) && strstr(err, "start a new sweep") && !strchr(err, '\n'),
              "a version %d journal: %ld records, '%s'", k + 2, n, err);
        Bytes after = read_whole(path);
        CHECK(after.len == strlen(old[k]) && !memcmp(after.data, old[k], after.len), "a version %d journal was changed",
              k + 2);
        bytes_free(&after);
        collected_free(&c);
    }
}

// Run fn(arg) in a child with stderr captured: its exit status, stderr in out.
static int run_child(void (*fn)(const char *arg), const char *arg, char *out, size_t outlen) {
    int fds[2];
    if (pipe(fds) != 0) die(EXIT_RUNTIME, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < outlen && (k = read(fds[0], out + got, outlen - 1 - got)) > 0) got += (size_t)k;
    out[got] = 0;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void open_journal(const char *path) {
    Collected c = {0};
    char err[512];
    Journal *j = journal_open(path, err, sizeof err);
    if (journal_replay(j, collect, &c, err, sizeof err) < 0) die(EXIT_RUNTIME, "%s", err);
    collected_free(&c);
    journal_begin(j, 0);
    journal_close(j);
}

static void write_text(const char *path, const char *text) {
    FILE *f = xfopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

static void test_foreign_files(void) {
    char path[128], err[512], expect[256];
    Collected c = {0};
    path_in(path, sizeof path, "missing.journal");
    CHECK(replay(path, &c, err, sizeof err) == 0 && err[0] == 0, "a missing journal replays as empty, got '%s'", err);

    const char *foreign[] = {"", "attnsweep-journal", "{\"not\": \"a journal\"}\n", "attnsweep-journa1 1\nxxxx"};
    path_in(path, sizeof path, "foreign.journal");
    snprintf(expect, sizeof expect, "%s: not an attnsweep journal", path);
    for (size_t k = 0; k < sizeof foreign / sizeof foreign[0]; k++) {
        write_text(path, foreign[k]);
        long n = replay(path, &c, err, sizeof err);
        CHECK(n == -1 && strcmp(err, expect) == 0, "foreign file %zu: got %ld '%s', want -1 '%s'", k, n, err, expect);
    }
    char out[1024];
    int code = run_child(open_journal, path, out, sizeof out);
    CHECK(code == 1 && strstr(out, expect) && strchr(out, '\n') == out + strlen(out) - 1,
          "opening a foreign file as a journal: exit %d, stderr '%s'", code, out);
    Bytes after = read_whole(path);
    CHECK(after.len == strlen(foreign[3]) && memcmp(after.data, foreign[3], after.len) == 0,
          "opening a foreign file as a journal changed it");
    bytes_free(&after);

    // A journal of the versions before the validation split (its trials lack the test
    // metrics), or of a later one: refused whole, never cut as if its records were damaged.
    const char *versions[] = {"attnsweep-journal 1\nJRNL and the records of old trials", "attnsweep-journal 7\n"};
    for (int k = 0; k < 2; k++) {
        write_text(path, versions[k]);
        long n = replay(path, &c, err, sizeof err);
        CHECK(n == -1 && strstr(err, "a journal of another attnsweep version (this one reads \"attnsweep-journal 6\""),
              "a journal '%.19s': got %ld '%s'", versions[k], n, err);
        code = run_child(open_journal, path, out, sizeof out);
        after = read_whole(path);
        CHECK(code == 1 && strstr(out, "another attnsweep version") && after.len == strlen(versions[k]) &&
                  memcmp(after.data, versions[k], after.len) == 0,
              "opening '%.19s': exit %d, stderr '%s', or the file changed", versions[k], code, out);
        bytes_free(&after);
    }
    collected_free(&c);
}

// Snapshots: journal_last_snapshot finds the last intact one from the end (its trials and
// state as written, state bytes holding the record magic and escape bytes), wherever a
// chunk's edge cuts it, and the one before when the last is damaged; journal_replay_from
// its end visits the records after it alone; a replay skips them.
static void put_handout(Journal *j, int id, size_t len) {  // a record of 40 + len bytes
    char *config = xmalloc(len + 1);
    memset(config, 'c', len);
    config[len] = 0;
    journal_handout(j, id, 1, config);
    free(config);
}

static void test_snapshots(void) {
    char path[128], err[1024];
    path_in(path, sizeof path, "snap.journal");
    Journal *j = open_begun(path);
    JournalSnapshot snap;
    CHECK(journal_last_snapshot(j, &snap, err, sizeof err) == 0 && !err[0], "a journal without one: '%s'", err);
    JournalStanding standing[6];
    for (int i = 0; i < 6; i++) {
        TrialResult t = make_trial(i, i % 3);
        standing[i] = (JournalStanding){i, journal_append(j, &t)};
        trial_result_free(&t);
        if (i == 4) {
            static unsigned char first[200000];  // the magic and escape bytes, and more than a chunk
            for (size_t k = 0; k < sizeof first; k++) first[k] = k % 7 == 0 ? 'J' : k % 11 == 0 ? 'R' : (unsigned char)k;
            memcpy(first + 100, "JRN6", 4);
            journal_snapshot(j, standing, 5, first, sizeof first);
        }
    }
    static const unsigned char second[] = "the second";
    const long second_at = journal_length(j);
    journal_snapshot(j, standing, 6, second, sizeof second);
    for (int i = 6; i < 8; i++) {
        TrialResult t = make_trial(i, 1);
        journal_append(j, &t);
        trial_result_free(&t);
    }
    const long after = journal_length(j);
    // The second's start at these distances from the end (a hand-out after the trials):
    // in the last chunk searched, its header across the second chunk's end, further back.
    const long distances[] = {after - second_at, 65536 + 2, 65536 + 10, 65536 + 19, 3 * 65536 + 7};
    for (size_t d = 0; d < sizeof distances / sizeof *distances; d++) {
        // The hand-out's length, mended by what it came to: its time's and its length's
        // bytes may be escaped (a 'J' stored as two bytes).
        long len = distances[d] - (after - second_at) - 40;
        for (int tries = 0; tries < 8; tries++) {
            journal_close(j);
            if (truncate(path, after) != 0) die(EXIT_RUNTIME, "truncate: %s", strerror(errno));
            j = journal_open(path, err, sizeof err);
            Collected c = {0};
            if (j) journal_replay(j, collect, &c, err, sizeof err);
            collected_free(&c);
            if (!d) break;
            put_handout(j, 9, (size_t)len);
            const long over = file_size(path) - second_at - distances[d];
            if (!over) break;
            len -= over;
        }
        CHECK(file_size(path) - second_at == distances[d], "the snapshot at %ld from the end, want %ld",
              file_size(path) - second_at, distances[d]);
        const int found = journal_last_snapshot(j, &snap, err, sizeof err);
        int same = found == 1 && snap.n_trials == 6;
        for (int i = 0; same && i < 6; i++) same = snap.trials[i].id == i && snap.trials[i].offset == standing[i].offset;
        CHECK(same && snap.at == second_at && snap.state_len == sizeof second && !memcmp(snap.state, second, sizeof second),
              "%ld from the end: found %d at %ld (want %ld), %zu trials, '%s'", distances[d], found, snap.at, second_at,
              snap.n_trials, err);
        Collected c = {0};
        const long n = journal_replay_from(j, snap.end, collect, &c, err, sizeof err);
        CHECK(n == 2 + (d > 0) && c.n == 2 && c.r[0].id == 6 && c.r[1].id == 7 && c.handouts == (d > 0) && !err[0],
              "after the snapshot: %ld records, %d trials, '%s'", n, c.n, err);
        collected_free(&c);
        journal_snapshot_free(&snap);
    }
    Collected c = {0};
    const long n = journal_replay(j, collect, &c, err, sizeof err);
    CHECK(n == 10 && c.n == 8 && c.starts == 1 && !c.others && !err[0], "a whole replay: %ld records, %d trials, %d others, '%s'",
          n, c.n, c.others, err);
    collected_free(&c);
    journal_close(j);
    // The second damaged: the first is the last intact one.
    Bytes whole = read_whole(path);
    whole.data[second_at + 25] ^= 1;
    write_bytes(path, whole.data, whole.len);
    bytes_free(&whole);
    j = journal_open(path, err, sizeof err);
    const int found = journal_last_snapshot(j, &snap, err, sizeof err);
    CHECK(found == 1 && snap.n_trials == 5 && snap.state_len == 200000 && !memcmp(snap.state + 100, "JRN6", 4) &&
              snap.trials[4].offset == standing[4].offset,
          "the second damaged: found %d with %zu trials, '%s'", found, snap.n_trials, err);
    journal_snapshot_free(&snap);
    journal_close(j);
}

// One writer: while a process holds the journal, another gets NULL and one line naming
// the holder's host, pid and start, and the file is not touched.
// A child process that opens PATH with `open` and holds it until end_holder: the tests of
// a second process's view run in between.
typedef struct {
    pid_t pid;
    int to_child[2], from_child[2];
} Holder;

static Holder start_holder(const char *path, Journal *(*open)(const char *path)) {
    Holder h = {.pid = -1};
    char byte = 0;
    CHECK(pipe(h.to_child) == 0 && pipe(h.from_child) == 0, "pipe");
    fflush(NULL);
    h.pid = fork();
    if (h.pid == 0) {
        Journal *j = open(path);
        if (!j || write(h.from_child[1], &byte, 1) != 1 || read(h.to_child[0], &byte, 1) != 1) _exit(1);
        journal_close(j);
        _exit(0);
    }
    CHECK(h.pid > 0 && read(h.from_child[0], &byte, 1) == 1, "the holder did not start");
    return h;
}

static void end_holder(Holder *h) {
    char byte = 0;
    CHECK(write(h->to_child[1], &byte, 1) == 1, "cannot signal the holder");
    int status = -1;
    waitpid(h->pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the holder failed (status %d)", status);
    for (int k = 0; k < 2; k++) close(h->to_child[k]), close(h->from_child[k]);
}

static void test_lock(void) {
    char path[128];
    path_in(path, sizeof path, "locked.journal");
    Holder holder = start_holder(path, open_begun);
    const long before = file_size(path);
    char err[1024] = "", host[64] = "", want[128];
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, "is being run by attnsweep on %s, pid %ld, since ", host, (long)holder.pid);
    Journal *j = journal_open(path, err, sizeof err);
    CHECK(!j && strstr(err, path) && strstr(err, want) && !strchr(err, '\n'),
          "a second writer: got %s, '%s' (want '%s')", j ? "the journal" : "NULL", err, want);
    CHECK(file_size(path) == before, "the refused writer changed the journal");
    end_holder(&holder);
    j = journal_open(path, err, sizeof err);
    CHECK(j != NULL, "after the holder ended, the journal opens: '%s'", err);
    if (j) journal_close(j);
}

// Jobs sharing a sweep (journal_open_shared): a child job starts it (open_shared_begun);
// while it holds the sweep, a single job is refused (told to add --shared), and a second
// shared job opens it, reads the child's records in its tail (the hand-out carrying the
// job, the lease its fields), cannot take the writer lock until the child has gone, and
// cuts a torn record at the end (a job killed while appending) at its next look.
typedef struct {
    int n;
    JournalRecord rec[8];
} Tail;

static void collect_tail(void *ctx, JournalRecord *rec) {
    Tail *t = ctx;
    if (t->n < 8) t->rec[t->n++] = *rec, t->rec[t->n - 1].config = NULL;
}

// A shared job that has started the sweep: it keeps the results file, has renewed its
// lease and handed out trial 3 to rank 1.
static Journal *open_shared_begun(const char *path) {
    char err[512];
    Journal *j = journal_open_shared(path, err, sizeof err);
    if (!j) return NULL;
    journal_lock(j);
    journal_begin(j, 0);
    if (!journal_take_writer(j)) return NULL;
    journal_lease(j, 60, 0xABCu);
    journal_handout(j, 3, 1, "{}");
    journal_unlock(j);
    return j;
}

static void test_shared(void) {
    char path[128];
    path_in(path, sizeof path, "shared.journal");
    Holder holder = start_holder(path, open_shared_begun);
    char err[1024] = "";
    Journal *single = journal_open(path, err, sizeof err);
    CHECK(!single && strstr(err, "add --shared to join it") && !strchr(err, '\n'),
          "a single job on a shared sweep: got %s, '%s'", single ? "the journal" : "NULL", err);
    Journal *j = journal_open_shared(path, err, sizeof err);
    CHECK(j != NULL, "a second shared job: '%s'", err);
    if (j) {
        journal_lock(j);
        Tail t = {0};
        const long n = journal_tail(j, collect_tail, &t, err, sizeof err);
        CHECK(n == 3 && t.n == 3 && !err[0], "the tail: %ld records, '%s'", n, err);
        if (t.n == 3) {
            const long job = t.rec[0].offset;
            CHECK(t.rec[0].kind == JOURNAL_START && t.rec[0].pid == holder.pid, "the tail's first record: the holder's start");
            CHECK(t.rec[1].kind == JOURNAL_LEASE && t.rec[1].job == job && t.rec[1].seconds == 60 &&
                      t.rec[1].yaml_crc == 0xABCu && fabs(t.rec[1].time - unix_seconds()) < 60,
                  "the lease: job %ld seconds %g crc %x", t.rec[1].job, t.rec[1].seconds, t.rec[1].yaml_crc);
            CHECK(t.rec[2].kind == JOURNAL_HANDOUT && t.rec[2].id == 3 && t.rec[2].rank == 1 && t.rec[2].job == job,
                  "the hand-out: trial %d rank %d job %ld (want job %ld)", t.rec[2].id, t.rec[2].rank, t.rec[2].job, job);
        }
        CHECK(journal_take_writer(j) == 0, "the writer lock taken while the holder has it");
        journal_unlock(j);
    }
    end_holder(&holder);
    if (!j) return;
    const long intact = file_size(path);
    FILE *f = fopen(path, "ab");
    CHECK(f && fwrite("JRN6 torn", 1, 9, f) == 9 && fclose(f) == 0, "cannot tear the journal's end");
    journal_lock(j);
    Tail t = {0};
    const long n = journal_tail(j, collect_tail, &t, err, sizeof err);
    CHECK(n == 0 && strstr(err, "damaged") && file_size(path) == intact,
          "a torn end: %ld records, '%s', size %ld (want %ld)", n, err, file_size(path), intact);
    CHECK(journal_take_writer(j) == 1, "the writer lock after its holder ended");
    journal_unlock(j);
    journal_close(j);
}

// Jobs of an array starting a shared sweep at once: whichever creates the journal, the
// others join it. The creator held a write lock on the whole new file while it synced the
// directory, and a job that came in meanwhile was told to add the --shared it had.
enum { RACERS = 4, RACES = 25 };

static void test_shared_start(void) {
    int refused = 0;
    char first[1024] = "";
    for (int race = 0; race < RACES; race++) {
        char path[128];
        path_in(path, sizeof path, "race.journal");
        remove(path);
        int go[2], said[2];
        CHECK(pipe(go) == 0 && pipe(said) == 0, "pipe");
        pid_t pids[RACERS];
        fflush(NULL);
        for (int k = 0; k < RACERS; k++) {
            pids[k] = fork();
            if (pids[k] == 0) {
                char byte, err[1024] = "";
                close(go[1]);
                if (read(go[0], &byte, 1) != 0) _exit(3);  // all start when the parent closes the pipe
                Journal *j = journal_open_shared(path, err, sizeof err);
                if (!j) {
                    if (write(said[1], err, strnlen(err, sizeof err - 1) + 1) < 0) _exit(4);  // with its NUL
                    _exit(1);
                }
                nanosleep(&(struct timespec){.tv_nsec = 20000000L}, NULL);  // the others come while it holds it
                journal_close(j);
                _exit(0);
            }
        }
        close(go[0]);
        close(go[1]);
        close(said[1]);
        for (int k = 0; k < RACERS; k++) {
            int status = -1;
            waitpid(pids[k], &status, 0);
            refused += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        if (!first[0] && read(said[0], first, sizeof first - 1) < 0) first[0] = 0;
        close(said[0]);
    }
    CHECK(refused == 0, "%d of %d shared jobs starting a sweep together were refused: '%s'", refused, RACERS * RACES, first);
}

// ---------------------------------------------------------------- resume

typedef struct {
    int ids[16], n;
} Seen;

// h5py sees every trial once, summary rows in the order written. argv: path, ids.
static const char *python_check =
    "import sys, h5py\n"
    "f = h5py.File(sys.argv[1], 'r')\n"
    "ids = [int(x) for x in sys.argv[2].split(',')]\n"
    "s = f['summary'][:]\n"
    "assert len(s) == len(ids), (len(s), ids)\n"
    "assert s['trial'].tolist() == ids, s['trial'].tolist()\n"
    "assert sorted(f['trials']) == sorted('%06d' % i for i in ids), list(f['trials'])\n"
    "assert f.attrs['sweep'] == 'resume' and f.attrs['seed'] == 7, dict(f.attrs)\n"
    "for i, st in zip(ids, s['status']):\n"
    "    t = f['trials/%06d' % i]\n"
    "    assert t.attrs['status'] == st.decode() == ('ok' if len(t['weights']) else 'failed'), i\n"
    "assert f['trials/000002/scores/layer0'].attrs['cp_roles'].shape == (2, 3)\n"
    "assert f['trials/000002/invariants']['head_sv'].shape == (3, 2, 4)\n"
    "assert f['trials/000007/weights/layer1'].shape == (4, 2, 8, 3)\n"
    "print('test_journal: h5py reads the rebuilt file')\n";

static void check_with_h5py(const char *path, const char *ids) {
    char args[512];
    snprintf(args, sizeof args, "%s %s", path, ids);
    check_python(python_check, args, "h5py");
}

static const StoreMeta meta = {.sweep = "resume", .yaml = "name: resume\nseed: 7\n", .seed = 7, .start_time = 1.7e9};
static char results[128], journal[128];

static int seen_trial(void *ctx, const JournalRecord *rec, char *err, size_t errlen) {
    Seen *s = ctx;
    if (rec->kind == JOURNAL_TRIAL && s->n < 16) s->ids[s->n++] = rec->trial.id;
    return 0;
}

static H5Store *rebuild(const char *journal_path, RebuildSeen seen, void *ctx, char *err, size_t errlen) {
    Journal *j = journal_open(journal_path, err, errlen);
    if (!j) die(EXIT_RUNTIME, "%s", err);
    H5Store *s = h5store_rebuild(results, &meta, j, NULL, seen, ctx, err, errlen);
    if (s) {
        h5store_catch_up(s, INFINITY);  // every trial in before the journal closes, as a sweep's last step does
        journal_begin(j, 0);
    }
    journal_close(j);
    return s;
}

static void rebuild_from_foreign_journal(const char *arg) {
    char err[1024];
    H5Store *s = rebuild(arg, NULL, NULL, err, sizeof err);
    if (!s) die(EXIT_BADINPUT, "%s", err);
    h5store_close(s, 0);
}


static void test_rebuild(void) {
    path_in(results, sizeof results, "results.h5");
    path_in(journal, sizeof journal, "results.h5.journal");
    write_text(results, "a results file cut short by a kill\n");  // the journal is the truth

    // Trials finish out of order; one is journaled twice; a kill tears the last record.
    const int ids[] = {5, 2, 9, 0, 7, 2, 3};
    enum { N = sizeof ids / sizeof ids[0] };
    TrialResult t[N];
    Journal *j = open_begun(journal);
    for (int i = 0; i < N; i++) {
        t[i] = make_trial(ids[i], ids[i] % 3);
        journal_append(j, &t[i]);
    }
    const long intact = file_size(journal);
    TrialResult torn = make_trial(8, 2);
    journal_append(j, &torn);
    journal_close(j);
    trial_result_free(&torn);
    if (truncate(journal, intact + 100) != 0) die(EXIT_RUNTIME, "truncate: %s", strerror(errno));

    Seen seen = {0};
    char err[1024];
    H5Store *s = rebuild(journal, seen_trial, &seen, err, sizeof err);
    const int want_seen[] = {5, 2, 9, 0, 7, 3};
    CHECK(seen.n == 6 && memcmp(seen.ids, want_seen, sizeof want_seen) == 0,
          "rebuild saw %d trials (want 5,2,9,0,7,3; the duplicate skipped)", seen.n);
    CHECK(no_temporary("results.h5"), "a temporary file of %s is left after the rebuild", results);
    CHECK(file_size(journal) > intact && file_size(journal) < intact + 100,
          "the rebuild's run did not cut the damaged end away before its start record (%ld bytes, intact %ld)",
          file_size(journal), intact);

    // The rebuilt store goes on taking trials, and the journal goes on after its torn tail.
    TrialResult late = make_trial(4, 1);
    j = journal_open(journal, err, sizeof err);
    Collected c = {0};
    journal_replay(j, collect, &c, err, sizeof err);
    journal_begin(j, 0);
    journal_append(j, &late);
    journal_close(j);
    h5store_write_trial(s, &late);
    h5store_close(s, 1.7e9 + 60);

    for (int i = 0; i < N; i++) {
        if (i == 5) continue;  // the duplicate
        TrialResult got;
        int rc = h5store_read_trial(results, ids[i], &got, err, sizeof err);
        CHECK(rc == 0, "reading trial %d of the rebuilt file: %s", ids[i], err);
        if (rc != 0) continue;
        check_same_stored(&got, &t[i]);
        trial_result_free(&got);
    }
    check_with_h5py(results, "5,2,9,0,7,3,4");
    CHECK(replay(journal, &c, err, sizeof err) > 0 && c.n == N + 1 && err[0] == 0,
          "the journal after resuming: %d trials, '%s'", c.n, err);
    collected_free(&c);

    // A foreign journal: exit 2 with the reason, the results file untouched, no temporary file.
    char foreign[128], out[1024];
    path_in(foreign, sizeof foreign, "foreign.journal");
    write_text(foreign, "trial,accuracy\n5,0.75\n");
    const long before = file_size(results);
    int code = run_child(rebuild_from_foreign_journal, foreign, out, sizeof out);
    CHECK(code == 2 && strstr(out, "not an attnsweep journal"), "rebuild from a foreign journal: exit %d, '%s'", code,
          out);
    CHECK(file_size(results) == before && no_temporary("results.h5"), "a failed rebuild touched %s", results);

    // An empty journal: a fresh, empty results file.
    char fresh[128];
    path_in(fresh, sizeof fresh, "none.journal");
    s = rebuild(fresh, NULL, NULL, err, sizeof err);
    CHECK(s != NULL, "rebuild from an empty journal: '%s'", err);
    if (s) h5store_close(s, 1.7e9);
    TrialResult none;
    CHECK(h5store_read_trial(results, 5, &none, err, sizeof err) == -1 && strstr(err, "no trial 5"),
          "rebuild from an empty journal: '%s'", err);

    for (int i = 0; i < N; i++) trial_result_free(&t[i]);
    trial_result_free(&late);
}

// ---------------------------------------------------------------- a results file kept on resume

// h5py: the file's /summary holds these trials, once each. argv: path, ids.
static const char *python_ids =
    "import sys, h5py\n"
    "s = h5py.File(sys.argv[1], 'r')['summary'][:]\n"
    "want = sorted(int(x) for x in sys.argv[2].split(','))\n"
    "assert sorted(s['trial'].tolist()) == want, (s['trial'].tolist(), want)\n";

static void offset_of_trial_2(void *ctx, JournalRecord *rec) {
    if (rec->kind != JOURNAL_TRIAL) return;
    if (rec->trial.id == 2) *(long *)ctx = rec->offset;
    trial_result_free(&rec->trial);
}

static long inode_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_ino : -1;
}

// A file written anew leaves its trials waiting (h5store_catch_up writes them while the
// sweep goes on): PATH stays what it was until every one is in, also when the run is
// killed halfway; a trial recorded meanwhile waits behind them, so the rows keep the
// journal's order; once they are in, a trial is written at once.
static void test_catch_up(void) {
    enum { N = 40 };
    static const char old[] = "a results file cut short by a kill\n";
    char path[128], jpath[128], ids[512] = "";
    path_in(path, sizeof path, "later.h5");
    path_in(jpath, sizeof jpath, "later.h5.journal");
    write_text(path, old);
    Journal *j = open_begun(jpath);
    long first = -1;  // where trial 0's record is
    for (int i = 0; i < N; i++) {
        TrialResult t = make_trial(i, i % 3);
        const long at = journal_append(j, &t);
        first = i ? first : at;
        trial_result_free(&t);
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%d,", i);
    }
    journal_close(j);
    StoreMeta m = meta;
    for (int killed = 1; killed >= 0; killed--) {
        const pid_t pid = killed ? fork() : 0;
        if (pid > 0) {  // the run killed halfway through its trials
            int status;
            waitpid(pid, &status, 0);
            Bytes now = read_whole(path);
            CHECK(WIFSIGNALED(status) && now.len == sizeof old - 1 && !memcmp(now.data, old, now.len),
                  "a run killed while writing its trials from the journal changed %s", path);
            bytes_free(&now);
            continue;
        }
        char err[1024];
        outfile_remove_stale(path);  // the killed run's temporary file, as the coordinator removes it
        j = journal_open(jpath, err, sizeof err);
        H5Store *s = j ? h5store_rebuild(path, &m, j, NULL, NULL, NULL, err, sizeof err) : NULL;
        if (!s) die(EXIT_RUNTIME, "test_catch_up: %s", err);
        journal_begin(j, 0);
        if (killed) {
            for (int i = 0; i < N / 2; i++) h5store_catch_up(s, 0);
            raise(SIGKILL);
        }
        CHECK(h5store_waiting(s) == N && !no_temporary("later.h5"), "after the rebuild: %zu trials wait (want %d)",
              h5store_waiting(s), N);
        // A trial the rebuild read, offered again (a shared job that took the file over
        // before writing a trial it had journaled): left out, not written twice.
        TrialResult again = make_trial(0, 0);
        h5store_write_journaled(s, &again, first);
        trial_result_free(&again);
        CHECK(h5store_waiting(s) == N, "a trial the rebuild read, offered again: %zu wait (want %d)", h5store_waiting(s), N);
        TrialResult late = make_trial(N, 1);
        h5store_write_journaled(s, &late, journal_append(j, &late));
        trial_result_free(&late);
        int calls = 0;
        size_t left = h5store_waiting(s), prev = left;
        while (left > 0 && calls < 2 * N) {
            left = h5store_catch_up(s, 0);  // one trial a call
            CHECK(left == prev - 1, "h5store_catch_up(s, 0) wrote %zu trials (want 1)", prev - left);
            Bytes now = read_whole(path);
            CHECK(left == 0 || (now.len == sizeof old - 1 && !memcmp(now.data, old, now.len)),
                  "%s replaced with %zu trials still to write", path, left);
            bytes_free(&now);
            prev = left, calls++;
        }
        CHECK(calls == N + 1 && no_temporary("later.h5"), "%d calls wrote the %d trials (want %d), temporary file %s",
              calls, N + 1, N + 1, no_temporary("later.h5") ? "gone" : "left");
        TrialResult last = make_trial(N + 1, 2);
        h5store_write_journaled(s, &last, journal_append(j, &last));
        CHECK(h5store_waiting(s) == 0, "a trial after the catch-up waits");
        trial_result_free(&last);
        h5store_close(s, 1.7e9);
        journal_close(j);
    }
    snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%d,%d", N, N + 1);
    check_with_h5py(path, ids);
}

// A stopped run (Slurm's time limit) with trials still waiting writes them for the time it
// is given and no longer: the file it leaves holds the journal's trials before the first
// one left, marked so, in PATH; the next resume keeps it and writes only the rest.
static void test_stopped(void) {
    enum { N = 30 };
    char path[128], jpath[128], err[1024], args[512], ids[256] = "";
    path_in(path, sizeof path, "stopped.h5");
    path_in(jpath, sizeof jpath, "stopped.h5.journal");
    Journal *j = open_begun(jpath);
    for (int i = 0; i < N; i++) {
        TrialResult t = make_trial(i, i % 3);
        journal_append(j, &t);
        trial_result_free(&t);
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%d", i ? "," : "", i);
    }
    journal_close(j);
    long ino = -1;
    for (int run = 0; run < 2; run++) {
        j = journal_open(jpath, err, sizeof err);
        H5Store *s = j ? h5store_rebuild(path, &meta, j, NULL, NULL, NULL, err, sizeof err) : NULL;
        if (!s) die(EXIT_RUNTIME, "test_stopped: %s", err);
        journal_begin(j, 0);
        const size_t waiting = h5store_waiting(s);
        CHECK(waiting == (size_t)(run ? N - 1 : N) && (!run || inode_of(path) == ino),
              "run %d: %zu trials wait (want %d), the file %s", run, waiting, run ? N - 1 : N,
              run && inode_of(path) != ino ? "written anew" : "as it was");
        h5store_mark_journal(s, journal_length(j), run ? INFINITY : 0);  // the stop: one trial, then give up
        h5store_close(s, 1.7e9);
        journal_close(j);
        ino = inode_of(path);
        snprintf(args, sizeof args, "%s %s", path, run ? ids : "0");
        check_python(python_ids, args, "h5py");
        CHECK(no_temporary("stopped.h5"), "run %d left a temporary file of stopped.h5", run);
    }
}

// A run of the coordinator on kept.h5 in miniature: open the journal, resume (keep or
// write anew), append the trials `ids` (journaled, then written), and close, marking the
// file unless `killed`. 0, or -1 with h5store_rebuild's line in err.
static int kept_run(const int *ids, int n, int killed, char *err, size_t errlen) {
    char path[128], jpath[128];
    path_in(path, sizeof path, "kept.h5");
    path_in(jpath, sizeof jpath, "kept.h5.journal");
    Journal *j = journal_open(jpath, err, errlen);
    if (!j) die(EXIT_RUNTIME, "%s", err);
    H5Store *s = h5store_rebuild(path, &meta, j, NULL, NULL, NULL, err, errlen);
    if (!s) {
        journal_close(j);
        return -1;
    }
    journal_begin(j, 0);
    for (int i = 0; i < n; i++) {
        TrialResult t = make_trial(ids[i], ids[i] % 3);
        journal_append(j, &t);
        h5store_write_trial(s, &t);
        trial_result_free(&t);
    }
    if (!killed) h5store_mark_journal(s, journal_length(j), INFINITY);
    h5store_close(s, 1.7e9);
    journal_close(j);
    return 0;
}

// A file a run closed is kept by the next resume (the same inode, the trials before its
// mark not written again); one a kill left, or a damaged one, is written anew from the
// journal (a new inode); a kept file holding a trial its journal lost is refused with one
// line, and written anew by the resume after.
static void test_kept(void) {
    char path[128], jpath[128], err[1024];
    path_in(path, sizeof path, "kept.h5");
    path_in(jpath, sizeof jpath, "kept.h5.journal");
    CHECK(kept_run((int[]){1, 2, 3}, 3, 0, err, sizeof err) == 0, "a first run: '%s'", err);
    long ino = inode_of(path);
    CHECK(kept_run((int[]){4}, 1, 1, err, sizeof err) == 0 && inode_of(path) == ino,
          "a resume after a clean close did not keep the file: '%s'", err);
    char args[256];
    snprintf(args, sizeof args, "%s 1,2,3,4", path);
    check_python(python_ids, args, "h5py");
    // That run was killed (no mark): the next resume writes the file anew, and takes trial 5.
    CHECK(kept_run((int[]){5}, 1, 0, err, sizeof err) == 0 && inode_of(path) != ino,
          "a resume after a kill kept the file: '%s'", err);
    ino = inode_of(path);
    CHECK(kept_run((int[]){6}, 1, 0, err, sizeof err) == 0 && inode_of(path) == ino, "a second clean resume: '%s'", err);
    snprintf(args, sizeof args, "%s 1,2,3,4,5,6", path);
    check_python(python_ids, args, "h5py");
    CHECK(no_temporary("kept.h5"), "a temporary file of kept.h5 is left");

    // The journal loses trial 2 (a damaged record): the kept file holds a trial it does not.
    long at = -1;
    journal_replay_path(jpath, offset_of_trial_2, &at, err, sizeof err);
    CHECK(at > 0, "trial 2's record not found");
    Bytes whole = read_whole(jpath);
    whole.data[at + 30] ^= 0x40;
    write_bytes(jpath, whole.data, whole.len);
    bytes_free(&whole);
    CHECK(kept_run(NULL, 0, 0, err, sizeof err) == -1 && strstr(err, "holds 1 trials its journal does not") &&
              strstr(err, "move the results file aside") && !strchr(err, '\n'),
          "a kept file with a trial its journal lost: '%s'", err);
    CHECK(kept_run(NULL, 0, 0, err, sizeof err) == 0 && inode_of(path) != ino,
          "after the refusal, the next resume writes the file anew: '%s'", err);
    snprintf(args, sizeof args, "%s 1,3,4,5,6", path);
    check_python(python_ids, args, "h5py");

    // A marked file cut short: written anew, no crash.
    ino = inode_of(path);
    if (truncate(path, file_size(path) / 2) != 0) die(EXIT_RUNTIME, "truncate: %s", strerror(errno));
    CHECK(kept_run((int[]){7}, 1, 0, err, sizeof err) == 0 && inode_of(path) != ino,
          "a damaged marked file: '%s'", err);
    snprintf(args, sizeof args, "%s 1,3,4,5,6,7", path);
    check_python(python_ids, args, "h5py");
}

// The records of a journal, in order: whether each trial record is superseded.
typedef struct {
    int superseded[16], n;
} Standing;

static void note_superseded(void *ctx, JournalRecord *rec) {
    Standing *st = ctx;
    if (rec->kind != JOURNAL_TRIAL) return;
    if (st->n < 16) st->superseded[st->n++] = rec->superseded;
    trial_result_free(&rec->trial);
}

// h5py: /summary's trials and statuses in order, each trial's host. argv: path, ids, statuses, hosts.
static const char *python_retried =
    "import sys, h5py\n"
    "f = h5py.File(sys.argv[1], 'r')\n"
    "s = f['summary'][:]\n"
    "assert ','.join(str(t) for t in s['trial']) == sys.argv[2], s['trial']\n"
    "assert ','.join(x.decode() for x in s['status']) == sys.argv[3], s['status']\n"
    "hosts = ','.join(f['trials/%06d' % t].attrs['host'] for t in s['trial'])\n"
    "assert hosts == sys.argv[4], hosts\n"
    "print('test_journal: h5py reads each trial once, its standing record')\n";

// A failed trial run again (--retry-failed) is recorded again. The record that stands for
// a trial is its first that did not fail, else its last: the replay marks the others
// superseded, the rebuild writes only the standing ones (where they are in the journal),
// and the live store replaces a failed trial by its retry, the /summary row in place.
static void test_retried(void) {
    path_in(results, sizeof results, "retried.h5");
    path_in(journal, sizeof journal, "retried.h5.journal");
    // id, ok (else failed), superseded: 1 fails twice then is ok; 2 is recorded ok twice
    // (kept first); 3 fails twice (the last stands); 4 is ok, then a failure (ignored).
    static const int recs[][3] = {{1, 0, 1}, {2, 1, 0}, {1, 0, 1}, {3, 0, 1}, {1, 1, 0},
                                  {3, 0, 0}, {2, 1, 1}, {4, 1, 0}, {4, 0, 1}};
    enum { N = sizeof recs / sizeof recs[0] };
    TrialResult t[N];
    Journal *j = open_begun(journal);
    for (int i = 0; i < N; i++) {
        t[i] = make_trial(recs[i][0], recs[i][1]);
        snprintf(t[i].host, sizeof t[i].host, "attempt%d", i);  // which record the file holds
        journal_append(j, &t[i]);
    }
    journal_close(j);
    for (int i = 0; i < N; i++) trial_result_free(&t[i]);

    Standing st = {0};
    char err[1024];
    CHECK(journal_replay_path(journal, note_superseded, &st, err, sizeof err) == N + 1 && st.n == N,
          "the replay of the retried trials' journal: %d trial records, '%s'", st.n, err);
    for (int i = 0; i < st.n; i++)
        CHECK(st.superseded[i] == recs[i][2], "record %d (trial %d): superseded %d, want %d", i, recs[i][0],
              st.superseded[i], recs[i][2]);

    Seen seen = {0};
    H5Store *s = rebuild(journal, seen_trial, &seen, err, sizeof err);
    const int want_seen[] = {2, 1, 3, 4};
    CHECK(s && seen.n == 4 && memcmp(seen.ids, want_seen, sizeof want_seen) == 0,
          "the rebuild saw %d trials (want 2,1,3,4: the standing records), '%s'", seen.n, err);
    if (!s) return;
    TrialResult failed = make_trial(5, 0), retry = make_trial(5, 2);
    snprintf(failed.host, sizeof failed.host, "failed");
    snprintf(retry.host, sizeof retry.host, "retry");
    h5store_write_trial(s, &failed);
    TrialResult late = make_trial(6, 1);
    snprintf(late.host, sizeof late.host, "late");
    h5store_write_trial(s, &late);
    h5store_write_trial(s, &retry);
    h5store_close(s, 1.7e9 + 60);
    char args[512];
    snprintf(args, sizeof args, "%s 2,1,3,4,5,6 ok,ok,failed,ok,ok,ok attempt1,attempt4,attempt5,attempt7,retry,late",
             results);
    check_python(python_retried, args, "h5py");
    trial_result_free(&failed);
    trial_result_free(&retry);
    trial_result_free(&late);
}

static void remove_dir(void) {
    const char *names[] = {"fifty.journal", "torn.journal", "foreign.journal", "results.h5", "results.h5.journal",
                           "flips.journal", "v2.journal", "v3.journal", "v4.journal", "v5.journal", "forged.journal",
                           "locked.journal", "shared.journal", "none.journal", "retried.h5", "retried.h5.journal",
                           "kept.h5", "kept.h5.journal", "windows.journal", "later.h5", "later.h5.journal", "race.journal", "stopped.h5", "stopped.h5.journal", "snap.journal"};
    char path[128];
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        path_in(path, sizeof path, names[k]);
        remove(path);
    }
    if (rmdir(dir) != 0) warnf("%s: cannot remove: %s", dir, strerror(errno));
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_journal_XXXXXX");
    if (!mkdtemp(dir)) die(EXIT_RUNTIME, "cannot create a temporary directory");
    const double t0 = now_seconds();
    test_round_trip();
    test_older_refused();
    test_unpack_wide_dims();
    test_unpack_truncated();
    test_unpack_damaged();
    const double t1 = now_seconds();
    test_append_and_replay();
    test_torn_tail();
    test_forged_record();
    test_flip_every_byte();
    test_windows();
    test_foreign_files();
    test_lock();
    test_shared();
    test_shared_start();
    test_snapshots();
    const double t2 = now_seconds();
    test_rebuild();
    test_kept();
    test_catch_up();
    test_stopped();
    test_retried();
    printf("test_journal: packing %.2f s, journal %.2f s, rebuild %.2f s\n", t1 - t0, t2 - t1, now_seconds() - t2);
    remove_dir();
    return check_report("test_journal");
}
