// pack.c: the byte form of a trial (pack.h).
//
// Trial bytes, format version 6. Older versions are refused: their reward charged the
// invariant terms as measured, before the reward beyond chance (results format 5), and
// would not compare with this version's. Little-endian throughout: u32/i32/i64 as their bytes,
// f64/f32 as their IEEE-754 bit patterns (NaN payloads and −0 survive), str = u32 length
// then that many bytes (no NUL inside, none after), T[n] = n consecutive T. Counts are
// u32 and at most INT_MAX.
//
//   u32 0x54524941 ("TRIA"), u32 version = 6
//   str config                     config_to_json, unformatted (survives TrialConfig changes)
//   i32 id, rank, group_size, steps; i64 n_params
//   str status, reason, host
//   f64 val_accuracy, val_loss, val_bits_per_byte, test_accuracy, test_loss,
//       test_bits_per_byte, seconds, train_seconds, flops_per_step, start_time, end_time
//   u32 n_curve, then per point: i32 step, f64 lr, train_loss, val_loss,
//       val_accuracy, penalty, seconds
//   u32 trace n, layers, groups; i32 step[n]; f64 correlation[n·layers],
//       eff_rank[n·layers·4], head_sv[n·layers·groups], chance[n·layers·4]
//   i32 reward_spec tensor; f64 beta, gamma; i32 use_mode[4]; f64 ideal_rank[4]
//   f64 rank_deviation, correlation, correlation_chance, rank_deviation_excess,
//       correlation_excess, correlation_z, eff_rank_z, reward
//   u32 n_layers, dims[4]; f32 weights[n_layers][dims0·dims1·dims2·dims3]
//   u32 out_dims[2]; f32 weights_out[n_layers][out_dims0·out_dims1]
//   u8 has_scores (0: scores == NULL); if 1, per layer:
//       i32 view; u8 mixing; u32 dims[4]; f64 norm; 4 × (u32 n_sv, f64 sv[n_sv]); i32 num_rank[4];
//       f64 eff_rank[4], correlation, correlation_chance, correlation_chance_sd,
//       eff_rank_chance, eff_rank_chance_sd, core_energy[4]; i32 tucker_ranks[4];
//       f64 tucker_fit; i32 tucker_iters; f64 cp_fit; u32 cp_rank_max;
//       f64 cp_fits[cp_rank_max], cp_cond[4]; u32 cp_rank; f64 cp_roles[cp_rank·dims[3]]
//   u8 has_params (0: params == NULL); if 1: str param_layout; f32 params[n_params]
//   u8 has_run (0: the built-in engine's trial); if 1, a program's (trial.h ProgramRun):
//       f64 program_metric; str dir, stdout_path, stderr_path, metrics_path, command,
//       stderr_tail, checkpoint
//   (nothing after)
//
// trial_unpack trusts nothing: a count of items that follow is at most the bytes left, a
// dimension (dims, out_dims, trace layers and groups, cp_rank) at most INT_MAX, which the
// format allows whatever follows (a Grassmann layer's 4 × 4096 scored on its parameters
// has no 4096 of anything after its dims); arrays are checked against the bytes left
// before anything is allocated, products cannot overflow, strings must fit their fields,
// and trailing bytes are an error.
#define _POSIX_C_SOURCE 200809L  // strnlen
#include "trial/pack.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"

_Static_assert(sizeof(int) == 4 && sizeof(float) == 4 && sizeof(double) == 8, "the byte format assumes these sizes");

enum { TRIAL_MAGIC = 0x54524941 };  // "TRIA"

// The texts of a program's trial, in their order in the bytes.
#define RUN_TEXTS(r)                                                                                              \
    {&(r)->run.dir, &(r)->run.stdout_path, &(r)->run.stderr_path, &(r)->run.metrics_path, &(r)->run.command, \
     &(r)->run.stderr_tail, &(r)->run.checkpoint}
// A count or dimension: never negative in a valid trial.
static void put_count(Bytes *b, int n) {
    if (n < 0) die(EXIT_RUNTIME, "internal error: packing a negative count (%d)", n);
    bytes_put_u32(b, (uint32_t)n);
}

// A char-array field of TrialResult (NUL-terminated within its size).
#define PUT_FIELD(b, field) bytes_put_text((b), (field), strnlen((field), sizeof(field)))

static size_t product(const int *f, int k) {
    size_t n = 1;
    for (int i = 0; i < k; i++) n *= (size_t)f[i];
    return n;
}

static void pack_score(Bytes *b, const LayerScore *s) {
    bytes_put_i32(b, s->view);
    bytes_put_u8(b, (unsigned)s->mixing);
    for (int m = 0; m < 4; m++) put_count(b, s->dims[m]);
    bytes_put_f64(b, s->norm);
    for (int m = 0; m < 4; m++) {
        put_count(b, s->n_sv[m]);
        bytes_put_array(b, s->sv[m], (size_t)s->n_sv[m], 8);
    }
    bytes_put_array(b, s->num_rank, 4, 4);
    bytes_put_array(b, s->eff_rank, 4, 8);
    bytes_put_f64(b, s->correlation);
    bytes_put_f64(b, s->correlation_chance);
    bytes_put_f64(b, s->correlation_chance_sd);
    bytes_put_f64(b, s->eff_rank_chance);
    bytes_put_f64(b, s->eff_rank_chance_sd);
    bytes_put_array(b, s->core_energy, 4, 8);
    bytes_put_array(b, s->tucker_ranks, 4, 4);
    bytes_put_f64(b, s->tucker_fit);
    bytes_put_i32(b, s->tucker_iters);
    bytes_put_f64(b, s->cp_fit);
    put_count(b, s->cp_rank_max);
    bytes_put_array(b, s->cp_fits, (size_t)s->cp_rank_max, 8);
    bytes_put_array(b, s->cp_cond, 4, 8);
    put_count(b, s->cp_rank);
    bytes_put_array(b, s->cp_roles, (size_t)s->cp_rank * (size_t)s->dims[3], 8);
}

void trial_pack(Bytes *b, const TrialResult *r) {
    bytes_put_u32(b, TRIAL_MAGIC);
    bytes_put_u32(b, TRIAL_BYTES_VERSION);
    char *config = config_to_json_text(&r->config);
    bytes_put_text(b, config, strlen(config));
    cJSON_free(config);

    bytes_put_i32(b, r->id);
    bytes_put_i32(b, r->rank);
    bytes_put_i32(b, r->group_size);
    bytes_put_i32(b, r->steps);
    bytes_put_i64(b, r->n_params);
    bytes_put_text(b, trial_status_names[r->status], strlen(trial_status_names[r->status]));
    PUT_FIELD(b, r->reason);
    PUT_FIELD(b, r->host);
    const double scalars[] = {r->val_accuracy,  r->val_loss,       r->val_bits_per_byte, r->test_accuracy,
                              r->test_loss,     r->test_bits_per_byte, r->seconds,       r->train_seconds,
                              r->flops_per_step, r->start_time,    r->end_time};
    bytes_put_array(b, scalars, sizeof scalars / sizeof scalars[0], 8);

    put_count(b, r->n_curve);
    for (int i = 0; i < r->n_curve; i++) {
        const CurvePoint *c = &r->curve[i];
        bytes_put_i32(b, c->step);
        const double v[] = {c->lr, c->train_loss, c->val_loss, c->val_accuracy, c->penalty, c->seconds};
        bytes_put_array(b, v, sizeof v / sizeof v[0], 8);
    }

    const InvariantTrace *t = &r->trace;
    put_count(b, t->n);
    put_count(b, t->layers);
    put_count(b, t->groups);
    const size_t points = (size_t)t->n * (size_t)t->layers;
    bytes_put_array(b, t->step, (size_t)t->n, 4);
    bytes_put_array(b, t->correlation, points, 8);
    bytes_put_array(b, t->eff_rank, points * 4, 8);
    bytes_put_array(b, t->head_sv, points * (size_t)t->groups, 8);
    bytes_put_array(b, t->chance, points * 4, 8);

    bytes_put_i32(b, r->reward_spec.tensor);
    bytes_put_f64(b, r->reward_spec.beta);
    bytes_put_f64(b, r->reward_spec.gamma);
    bytes_put_array(b, r->reward_spec.use_mode, 4, 4);
    bytes_put_array(b, r->reward_spec.ideal_rank, 4, 8);
    bytes_put_f64(b, r->rank_deviation);
    bytes_put_f64(b, r->correlation);
    bytes_put_f64(b, r->correlation_chance);
    bytes_put_f64(b, r->rank_deviation_excess);
    bytes_put_f64(b, r->correlation_excess);
    bytes_put_f64(b, r->correlation_z);
    bytes_put_f64(b, r->eff_rank_z);
    bytes_put_f64(b, r->reward);

    put_count(b, r->n_layers);
    for (int k = 0; k < 4; k++) put_count(b, r->dims[k]);
    const size_t per_layer = product(r->dims, 4);
    for (int l = 0; l < r->n_layers; l++) bytes_put_array(b, r->weights[l], per_layer, 4);
    for (int k = 0; k < 2; k++) put_count(b, r->out_dims[k]);
    const size_t per_out = product(r->out_dims, 2);
    for (int l = 0; l < r->n_layers; l++) bytes_put_array(b, r->weights_out[l], per_out, 4);

    bytes_put_u8(b, r->scores != NULL);
    if (r->scores)
        for (int l = 0; l < r->n_layers; l++) pack_score(b, &r->scores[l]);
    bytes_put_u8(b, r->params != NULL);
    if (r->params) {
        bytes_put_text(b, r->param_layout, strlen(r->param_layout));
        bytes_put_array(b, r->params, (size_t)r->n_params, 4);
    }

    bytes_put_u8(b, r->run.dir != NULL);
    if (!r->run.dir) return;
    bytes_put_f64(b, r->program_metric);
    char *const *texts[] = RUN_TEXTS(r);
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        const char *text = *texts[k] ? *texts[k] : "";
        bytes_put_text(b, text, strlen(text));
    }
}

// ---------------------------------------------------------------- unpacking
//
// Through the checked reader of common/bytes.h: it fails once and stays failed, so the
// decoder reads straight through and checks once.

// A dimension: a u32 up to INT_MAX, not bounded by the bytes left (what it sizes is
// checked against them when it is read, by br_new_array).
static int get_dim(ByteReader *rd, const char *what) {
    const uint32_t n = br_u32(rd);
    if (!rd->failed && n > INT_MAX) br_fail(rd, "%s %u exceeds %d", what, n, INT_MAX);
    return rd->failed ? 0 : (int)n;
}

// f[0]·…·f[k−1] elements of at most 8 bytes, or 0 (and failed) when their bytes overflow a size_t.
static size_t get_product(ByteReader *rd, const int *f, int k, const char *what) {
    size_t n = 1;
    for (int i = 0; i < k; i++) {
        if (f[i] != 0 && n > SIZE_MAX / 8 / (size_t)f[i]) {
            br_fail(rd, "%s: the product of its dimensions overflows", what);
            return 0;
        }
        n *= (size_t)f[i];
    }
    return n;
}

// A char-array field of TrialResult.
static void get_field(ByteReader *rd, char *field, size_t size, const char *what) {
    size_t n;
    const char *s = br_text(rd, size, &n, what);
    if (!s) return;
    memcpy(field, s, n);
    field[n] = 0;
}
#define GET_FIELD(rd, field) get_field((rd), (field), sizeof(field), #field)

// A status by its name (trial_status_names).
static void get_status(ByteReader *rd, TrialStatus *status) {
    char name[16];
    get_field(rd, name, sizeof name, "status");
    const int s = rd->failed ? 0 : trial_status_find(name);
    if (s < 0) br_fail(rd, "unknown status '%s'", name);
    *status = s < 0 ? TRIAL_OK : s;
}

static void get_config(ByteReader *rd, TrialConfig *c) {
    size_t n;
    const char *s = br_text(rd, SIZE_MAX, &n, "config");
    if (!s) return;
    char *text = xmalloc(n + 1);
    memcpy(text, s, n);
    text[n] = 0;
    cJSON *json = cJSON_ParseWithOpts(text, NULL, 1);  // nothing may follow the object
    free(text);
    char msg[256];
    if (!json)
        br_fail(rd, "config is not JSON");
    else if (config_from_json(c, json, msg, sizeof msg) != 0)
        br_fail(rd, "config: %s", msg);
    cJSON_Delete(json);
}

static void get_dims(ByteReader *rd, int dims[4]) {
    for (int k = 0; k < 4; k++) dims[k] = get_dim(rd, "dimension");
}

// A TensorView: 0 (function) or 1 (parameters).
static TensorView get_view(ByteReader *rd) {
    const int v = br_i32(rd);
    if (!rd->failed && v != TENSOR_FUNCTION && v != TENSOR_PARAMETERS)
        br_fail(rd, "tensor view %d (0 function, 1 parameters)", v);
    return v == TENSOR_PARAMETERS ? TENSOR_PARAMETERS : TENSOR_FUNCTION;
}

static void unpack_score(ByteReader *rd, LayerScore *s) {
    s->view = get_view(rd);
    const unsigned mixing = br_u8(rd);
    if (mixing > 1) br_fail(rd, "mixing is %u (0 or 1)", mixing);
    s->mixing = (int)mixing;
    get_dims(rd, s->dims);
    s->norm = br_f64(rd);
    for (int m = 0; m < 4; m++) {
        s->n_sv[m] = br_count(rd, 8, "n_sv");
        s->sv[m] = br_new_array(rd, (size_t)s->n_sv[m], 8);
    }
    br_array(rd, s->num_rank, 4, 4);
    br_array(rd, s->eff_rank, 4, 8);
    s->correlation = br_f64(rd);
    s->correlation_chance = br_f64(rd);
    s->correlation_chance_sd = br_f64(rd);
    s->eff_rank_chance = br_f64(rd);
    s->eff_rank_chance_sd = br_f64(rd);
    br_array(rd, s->core_energy, 4, 8);
    br_array(rd, s->tucker_ranks, 4, 4);
    s->tucker_fit = br_f64(rd);
    s->tucker_iters = br_i32(rd);
    s->cp_fit = br_f64(rd);
    s->cp_rank_max = br_count(rd, 8, "cp_rank_max");
    s->cp_fits = br_new_array(rd, (size_t)s->cp_rank_max, 8);
    br_array(rd, s->cp_cond, 4, 8);
    s->cp_rank = get_dim(rd, "cp_rank");
    const int roles[2] = {s->cp_rank, s->dims[3]};
    const size_t n_roles = get_product(rd, roles, 2, "cp_roles");
    s->cp_roles = br_new_array(rd, n_roles, 8);
}

// The parameter arena: n_params floats and their layout.
static void unpack_params(ByteReader *rd, TrialResult *r) {
    const unsigned has_params = br_u8(rd);
    if (has_params > 1) br_fail(rd, "has_params is %u (0 or 1)", has_params);
    if (has_params != 1 || rd->failed) return;
    size_t n;
    const char *layout = br_text(rd, SIZE_MAX, &n, "param_layout");
    if (r->n_params < 1) br_fail(rd, "parameters stored for a model of %ld parameters", r->n_params);
    if (!layout || rd->failed) return;
    r->param_layout = xmalloc(n + 1);
    memcpy(r->param_layout, layout, n);
    r->param_layout[n] = 0;
    r->params = br_new_array(rd, (size_t)r->n_params, 4);
}

// A program's run: its metric and where it ran.
static void unpack_run(ByteReader *rd, TrialResult *r) {
    const unsigned has_run = br_u8(rd);
    if (has_run > 1) br_fail(rd, "has_run is %u (0 or 1)", has_run);
    if (has_run != 1 || rd->failed) return;
    r->program_metric = br_f64(rd);
    char **texts[] = RUN_TEXTS(r);
    for (size_t k = 0; k < sizeof texts / sizeof texts[0] && !rd->failed; k++) {
        size_t n;
        const char *text = br_text(rd, SIZE_MAX, &n, "a program's text");
        if (!text) break;
        *texts[k] = xmalloc(n + 1);
        memcpy(*texts[k], text, n);
        (*texts[k])[n] = 0;
    }
}

// The head of the bytes: magic and version, the configuration (only its text's length
// read when it is not decoded: a peek), id, rank, group_size, steps, n_params, status.
static void unpack_head(ByteReader *rd, TrialResult *r, int decode_config) {
    const uint32_t magic = br_u32(rd), version = br_u32(rd);
    if (!rd->failed && magic != TRIAL_MAGIC) br_fail(rd, "not a trial (bad magic 0x%08x)", magic);
    if (!rd->failed && version != TRIAL_BYTES_VERSION)
        br_fail(rd, "trial format version %u, this attnsweep reads %d", version, TRIAL_BYTES_VERSION);
    size_t n;
    if (decode_config) get_config(rd, &r->config);
    else br_text(rd, SIZE_MAX, &n, "config");
    r->id = br_i32(rd);
    r->rank = br_i32(rd);
    r->group_size = br_i32(rd);
    r->steps = br_i32(rd);
    r->n_params = br_i64(rd);
    get_status(rd, &r->status);
}

// Decode into r (zeroed first); on failure r holds a partial result for trial_result_free.
static void unpack(ByteReader *rd, TrialResult *r) {
    unpack_head(rd, r, 1);
    GET_FIELD(rd, r->reason);
    GET_FIELD(rd, r->host);
    double *const scalars[] = {&r->val_accuracy,   &r->val_loss,           &r->val_bits_per_byte, &r->test_accuracy,
                               &r->test_loss,      &r->test_bits_per_byte, &r->seconds,           &r->train_seconds,
                               &r->flops_per_step, &r->start_time,         &r->end_time};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) *scalars[i] = br_f64(rd);

    enum { CURVE_POINT_BYTES = 4 + 6 * 8 };
    const int n_curve = br_count(rd, CURVE_POINT_BYTES, "n_curve");
    if (n_curve > 0) r->curve = xcalloc((size_t)n_curve, sizeof *r->curve);
    r->n_curve = n_curve;
    for (int i = 0; i < n_curve; i++) {
        CurvePoint *c = &r->curve[i];
        c->step = br_i32(rd);
        double *const v[] = {&c->lr, &c->train_loss, &c->val_loss, &c->val_accuracy, &c->penalty, &c->seconds};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) *v[k] = br_f64(rd);
    }

    InvariantTrace *t = &r->trace;
    t->n = t->cap = br_count(rd, 4, "trace points");
    t->layers = get_dim(rd, "trace layers");
    t->groups = get_dim(rd, "trace groups");
    const int shape[3] = {t->n, t->layers, 4}, heads[3] = {t->n, t->layers, t->groups};
    const size_t points = get_product(rd, shape, 2, "trace"), n_eff = get_product(rd, shape, 3, "trace"),
                 n_heads = get_product(rd, heads, 3, "trace");
    t->step = br_new_array(rd, (size_t)t->n, 4);
    t->correlation = br_new_array(rd, points, 8);
    t->eff_rank = br_new_array(rd, n_eff, 8);
    t->head_sv = br_new_array(rd, n_heads, 8);
    t->chance = br_new_array(rd, n_eff, 8);

    r->reward_spec.tensor = get_view(rd);
    r->reward_spec.beta = br_f64(rd);
    r->reward_spec.gamma = br_f64(rd);
    br_array(rd, r->reward_spec.use_mode, 4, 4);
    br_array(rd, r->reward_spec.ideal_rank, 4, 8);
    r->rank_deviation = br_f64(rd);
    r->correlation = br_f64(rd);
    r->correlation_chance = br_f64(rd);
    r->rank_deviation_excess = br_f64(rd);
    r->correlation_excess = br_f64(rd);
    r->correlation_z = br_f64(rd);
    r->eff_rank_z = br_f64(rd);
    r->reward = br_f64(rd);

    const int n_layers = br_count(rd, 1, "n_layers");
    get_dims(rd, r->dims);
    const size_t per_layer = get_product(rd, r->dims, 4, "weights");
    if (n_layers > 0) r->weights = xcalloc((size_t)n_layers, sizeof *r->weights);
    r->n_layers = n_layers;
    for (int l = 0; l < n_layers; l++) r->weights[l] = br_new_array(rd, per_layer, 4);
    for (int k = 0; k < 2; k++) r->out_dims[k] = get_dim(rd, "dimension");
    const size_t per_out = get_product(rd, r->out_dims, 2, "weights_out");
    if (n_layers > 0) r->weights_out = xcalloc((size_t)n_layers, sizeof *r->weights_out);
    for (int l = 0; l < n_layers; l++) r->weights_out[l] = br_new_array(rd, per_out, 4);

    const unsigned has_scores = br_u8(rd);
    if (has_scores > 1) br_fail(rd, "has_scores is %u (0 or 1)", has_scores);
    if (has_scores == 1 && !rd->failed) {
        r->scores = xcalloc((size_t)n_layers, sizeof *r->scores);
        for (int l = 0; l < n_layers; l++) unpack_score(rd, &r->scores[l]);
    }
    unpack_params(rd, r);
    r->program_metric = NAN;
    unpack_run(rd, r);
    if (!rd->failed && rd->left) br_fail(rd, "%zu bytes after the end of the trial", rd->left);
}

int trial_unpack(TrialResult *r, const unsigned char *data, size_t len, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    ByteReader rd = byte_reader(data, len, "trial record", err, errlen);
    unpack(&rd, r);
    if (!rd.failed) return 0;
    trial_result_free(r);
    return -1;
}

int trial_peek(const unsigned char *data, size_t len, int *id, TrialStatus *status) {
    char err[160];
    ByteReader rd = byte_reader(data, len, "trial record", err, sizeof err);
    TrialResult r = {0};  // the head's fields only: nothing allocated
    unpack_head(&rd, &r, 0);
    *id = r.id, *status = r.status;
    return rd.failed ? -1 : 0;
}
