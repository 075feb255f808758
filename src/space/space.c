// space.c: a sweep's YAML file -> SweepSpec, with every check `attnsweep validate` makes.
//
// libyaml's document API gives a node tree with positions; each section of the file is
// read against a table of its keys (unknown keys get the closest known one), every
// parameter value goes through config_set (the rules the command line uses) and the
// cross-parameter rules through config_check, over every combination the sweep can
// produce. Errors are one line "FILE:LINE:COL: message" (1-based).
#define _POSIX_C_SOURCE 200809L
#include "space/space.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <yaml.h>

#include "common/util.h"
#include "params/config_json.h"
#include "space/space_impl.h"
#include "trial/interpreter.h"
#include "trial/metrics.h"

enum {
    MAX_FILE_BYTES = 1 << 20,
    MAX_TRIALS = 1000000,
    MAX_REPEATS = 1000,
    MAX_SEED = 2147482,      // so trial seeds seed*1000 + repeat stay below 2^31
    MAX_LIST = 1000,         // entries of one values list
    SOBOL_MAX_DIM = 40,      // gsl_qrng_sobol's limit
    SOURCE_LIMIT = 100000,   // combinations of the parameters that conditions refer to
    CHECK_LIMIT = 2000000,   // combinations the cross-parameter checks visit
    TEXT_MAX = 512,          // longest value text (config_set rejects longer ones anyway)
    MAX_FLOW_DEPTH = 64,     // nested [ ] and { }: libyaml's time grows with depth squared
};

// Where the data live when data_dir is "" (the Debian packages dataset-fashion-mnist, fortunes).
#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define FORTUNES_DIR "/usr/share/games/fortunes"

// The parameters config_check reads: their combinations are checked exhaustively.
static const char *const checked_params[] = {"task",         "attention",    "d_model", "heads",  "layers",
                                             "core_rank",    "grassmann_offsets", "recall_pairs", "recall_vocab",
                                             "steps",        "epochs"};

// ---- the keys of each section, in the order they are read
enum { TOP_NAME, TOP_METHOD, TOP_PROGRAM, TOP_COMMAND, TOP_METRIC, TOP_OBJECTIVES, TOP_SEED, TOP_REPEATS, TOP_TRIALS,
       TOP_RUN_CAP, TOP_TASK, TOP_BUDGET, TOP_EVOLUTION, TOP_TPE, TOP_SCHEDULER, TOP_EARLY_TERMINATE, TOP_REWARD,
       TOP_RESOURCES, TOP_PARAMETERS, TOP_PROJECT, TOP_ENTITY, TOP_DESCRIPTION, TOP_N };
static const char *const top_keys[TOP_N] = {
    "name",   "method",    "program",   "command",         "metric", "objectives", "seed",       "repeats",
    "trials", "run_cap",   "task",      "budget",          "evolution", "tpe",     "scheduler",  "early_terminate",
    "reward", "resources", "parameters", "project",        "entity", "description"};
// W&B's keys that say nothing to attnsweep: accepted, and listed by validate.
static const int ignored_top[] = {TOP_PROJECT, TOP_ENTITY, TOP_DESCRIPTION};
enum { TPE_N_STARTUP, TPE_GAMMA, TPE_CANDIDATES, TPE_MULTIVARIATE, TPE_CONSTANT_LIAR, TPE_PRIOR_WEIGHT, TPE_HISTORY,
       TPE_N };
static const char *const tpe_keys[TPE_N] = {"n_startup", "gamma", "candidates", "multivariate", "constant_liar",
                                            "prior_weight", "history"};
static const char *const bool_names[] = {"false", "true", NULL};
enum { METRIC_NAME, METRIC_GOAL, METRIC_TARGET, METRIC_N };
static const char *const metric_keys[METRIC_N] = {"name", "goal", "target"};
enum { BUDGET_STEPS, BUDGET_EPOCHS, BUDGET_EVAL_EVERY, BUDGET_TIME_LIMIT, BUDGET_GRACE, BUDGET_MAX_OUTPUT,
       BUDGET_CHECKPOINT_EVERY, BUDGET_MAX_DEATHS, BUDGET_MAX_FAILURES, BUDGET_N };
static const char *const budget_keys[BUDGET_N] = {"steps",      "epochs", "eval_every",    "time_limit",
                                                  "grace",      "max_output_mb",          "checkpoint_every",
                                                  "max_deaths", "max_failures"};
enum { ET_TYPE, ET_MIN_ITER, ET_MAX_ITER, ET_S, ET_ETA, ET_STRICT, ET_N };
static const char *const early_keys[ET_N] = {"type", "min_iter", "max_iter", "s", "eta", "strict"};
enum { RES_MEM, RES_GPUS, RES_CPUS, RES_N };
static const char *const resource_keys[RES_N] = {"mem", "gpus", "cpus"};
enum { SCHED_NAME, SCHED_MIN_STEPS, SCHED_ETA, SCHED_MAX_STEPS, SCHED_PER, SCHED_N };
static const char *const sched_keys[SCHED_N] = {"name", "min_steps", "eta", "max_steps", "per"};
static const char *const asha_per_names[] = {"configuration", "trial", NULL};  // SweepSpec.asha_per_trial
enum { EVO_POPULATION, EVO_SAMPLE_SIZE, EVO_N };
static const char *const evo_keys[EVO_N] = {"population", "sample_size"};
enum { REWARD_TENSOR, REWARD_BETA, REWARD_GAMMA, REWARD_MODES, REWARD_IDEAL_RANKS, REWARD_ENERGY, REWARD_ACCURACY,
       REWARD_N };
static const char *const reward_keys[REWARD_N] = {"tensor", "beta", "gamma", "modes", "ideal_ranks", "energy",
                                                  "accuracy"};
enum { PK_VALUE, PK_VALUES, PK_DISTRIBUTION, PK_MIN, PK_MAX, PK_Q, PK_PROBABILITIES, PK_WHEN, PK_MU, PK_SIGMA,
       PK_A, PK_B, PK_GRID, PK_N };
static const char *const param_keys[PK_N] = {"value", "values", "distribution", "min", "max", "q", "probabilities",
                                             "when", "mu", "sigma", "a", "b", "grid"};

// ---- the words each choice allows (NULL-terminated)
static const char *const method_names[] = {"grid", "random", "sobol", "evolution", "tpe", "motpe", NULL};  // SweepMethod
static const char *const goal_names[] = {"maximize", "minimize", NULL};
static const char *const scheduler_names[] = {"asha", NULL};
// Distribution: the YAML spelling of each (a YAML file names those from DIST_UNIFORM on).
static const char *const dist_names[] = {"value", "values", "uniform", "int_uniform", "q_uniform",
                                         "log_uniform_values", "categorical", "constant", "log_uniform",
                                         "q_log_uniform", "q_log_uniform_values", "inv_log_uniform",
                                         "inv_log_uniform_values", "normal", "q_normal", "log_normal",
                                         "q_log_normal", "beta", "q_beta", NULL};
// Other libraries' words for these, or a parameter's, and what attnsweep calls them: a
// hint that knows what was meant beats the closest spelling ("loguniform" is not uniform).
typedef struct {
    const char *word, *hint;
} Synonym;
static const Synonym dist_synonyms[] = {
    {"loguniform", "log_uniform_values (log-uniform between min and max; W&B's log_uniform takes exponents)"},
    {"log-uniform", "log_uniform_values (log-uniform between min and max; W&B's log_uniform takes exponents)"},
    {"reciprocal", "log_uniform_values"},
    {"qloguniform", "q_log_uniform_values"},
    {"quniform", "q_uniform"},
    {"randint", "int_uniform"},
    {"int", "int_uniform"},
    {"integer", "int_uniform"},
    {"choice", "categorical (or just values: [...])"},
    {"grid_search", "values: [...] (and grid: true for a grid axis)"},
    {"gaussian", "normal"},
    {"randn", "normal"},
    {"lognormal", "log_normal"},
    {"qnormal", "q_normal"},
    {"qlognormal", "q_log_normal"},
};
static const Synonym param_synonyms[] = {
    {"learning_rate", "lr"},    {"learning-rate", "lr"},      {"batch_size", "batch"},     {"batch-size", "batch"},
    {"num_heads", "heads"},     {"n_heads", "heads"},         {"n_head", "heads"},         {"num_layers", "layers"},
    {"n_layers", "layers"},     {"n_layer", "layers"},        {"hidden_size", "d_model"},  {"n_embd", "d_model"},
    {"dim", "d_model"},         {"embed_dim", "d_model"},     {"max_steps", "steps"},      {"num_steps", "steps"},
    {"iterations", "steps"},    {"num_epochs", "epochs"},     {"wd", "weight_decay"},      {"warmup", "warmup_frac"},
    {"warmup_ratio", "warmup_frac"}, {"grad_clip", "clip"},   {"max_grad_norm", "clip"},   {"attention_type", "attention"},
    {"block_size", "seq_len"},  {"context_length", "seq_len"},
};

// The hint for a word another library uses, else NULL.
static const char *synonym(const Synonym *table, size_t n, const char *word) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(table[i].word, word)) return table[i].hint;
    return NULL;
}
#define SYNONYM(table, word) synonym(table, sizeof table / sizeof table[0], word)

typedef struct {
    int line, col;  // 1-based; line 0: not given
} Mark;

typedef struct {
    SweepSpec *s;
    const char *path, *text;
    size_t len;
    char *err;
    size_t errlen;
    yaml_document_t doc;
    int have_doc;
    Mark root;               // the top mapping
    yaml_node_t *top[TOP_N];
    Mark top_at[TOP_N];
    yaml_node_t *sched[SCHED_N];  // the scheduler's values, checked once the file is read
    const char *sched_what, *sched_section;  // "scheduler asha" in "scheduler", or W&B's
    const char *sched_min, *sched_max;       //   early_terminate, with its keys
    int budget_steps;        // a program's sweep: budget steps (0: none)
    Mark *set_at;            // per trial parameter: where the file fixes or sweeps it
    const char **set_in;     //   and in which section
    yaml_node_t **when;      // per swept parameter: its `when` mapping (NULL: none)
    Mark metric_at;          // the metric's name
} Loader;

static int fail(Loader *L, Mark m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Loader *L, Mark m, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int n = snprintf(L->err, L->errlen, "%s:%d:%d: ", L->path, m.line, m.col);
    // One line whatever the file holds: control characters (a multi-line scalar) escaped.
    for (const char *c = msg; n >= 0 && (size_t)n + 5 < L->errlen && *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u >= 0x20 && u != 0x7f)
            L->err[n++] = *c;
        else
            n += snprintf(L->err + n, 5, u == '\n' ? "\\n" : u == '\t' ? "\\t" : "\\x%02x", u);
    }
    if (n >= 0 && (size_t)n < L->errlen) L->err[n] = 0;
    return -1;
}

// A line validate prints about the file (a W&B key ignored, a mapping to attnsweep's).
static void note(Loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(Loader *L, const char *fmt, ...) {
    SweepSpec *s = L->s;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->notes = xrealloc(s->notes, (size_t)(s->n_notes + 1) * sizeof *s->notes);
    s->notes[s->n_notes++] = xstrdup(msg);
}

static Mark mark_of(const yaml_node_t *n) {
    return (Mark){(int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
}

static yaml_node_t *node_at(Loader *L, int index) { return yaml_document_get_node(&L->doc, index); }

// A scalar's text; NULL for lists, mappings and texts holding a NUL byte.
static const char *text_of(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE) return NULL;
    const char *t = (const char *)n->data.scalar.value;
    return strlen(t) == n->data.scalar.length ? t : NULL;
}

// How a node reads in a message: 'text', nothing, a list, a mapping.
static const char *describe(const yaml_node_t *n, char *buf, size_t len) {
    if (n->type == YAML_SEQUENCE_NODE) return "a list";
    if (n->type == YAML_MAPPING_NODE) return "a mapping";
    const char *t = text_of(n);
    if (!t) return "a text with a NUL byte";
    if (!t[0] && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) return "nothing";
    if (strlen(t) > 40)
        snprintf(buf, len, "'%.37s...'", t);
    else
        snprintf(buf, len, "'%s'", t);
    return buf;
}

static void join_names(const char *const *names, int n, char *out, size_t len) {
    out[0] = 0;
    for (int i = 0; i < n && names[i]; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", i ? ", " : "", names[i]);
    }
}

static int name_count(const char *const *names) {
    int n = 0;
    while (names[n]) n++;
    return n;
}

static int find_name(const char *name, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

// A mapping key: it must be a scalar.
static int key_text(Loader *L, const yaml_node_t *k, const char **out) {
    char b[64];
    if (!(*out = text_of(k))) return fail(L, mark_of(k), "keys must be names, got %s", describe(k, b, sizeof b));
    return 0;
}

// Reads the mapping `map` whose keys come from keys[0..n): val[k] and key_at[k] get key k's
// value and position (val[k] NULL when absent). what names it in messages (NULL: the top).
static int read_section(Loader *L, yaml_node_t *map, const char *what, const char *const *keys, int n,
                        yaml_node_t **val, Mark *key_at) {
    char allowed[256], b[64];
    join_names(keys, n, allowed, sizeof allowed);
    if (map->type != YAML_MAPPING_NODE)
        return fail(L, mark_of(map), "%s must be a mapping (%s), got %s", what ? what : "the file", allowed,
                    describe(map, b, sizeof b));
    for (int k = 0; k < n; k++) val[k] = NULL;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = node_at(L, pr->key);
        const char *name;
        if (key_text(L, kn, &name)) return -1;
        int k = find_name(name, keys, n);
        if (k < 0) {
            char in[128] = "";
            if (what) snprintf(in, sizeof in, " in %s", what);
            const char *hint = closest_name(name, keys, n);
            if (hint) return fail(L, mark_of(kn), "unknown key '%s'%s (did you mean '%s'?)", name, in, hint);
            return fail(L, mark_of(kn), "unknown key '%s'%s (allowed: %s)", name, in, allowed);
        }
        if (val[k])
            return fail(L, mark_of(kn), "duplicate key '%s' (first at %d:%d)", name, key_at[k].line, key_at[k].col);
        val[k] = node_at(L, pr->value);
        key_at[k] = mark_of(kn);
    }
    return 0;
}

// A number from a scalar: whole (an integer) or real, in [lo, hi] (lo excluded if lo_open).
static int read_number(Loader *L, yaml_node_t *n, const char *what, int whole, double lo, double hi, int lo_open,
                       double *out) {
    char b[64];
    const char *t = text_of(n);
    char *end;
    errno = 0;
    double v = 0;
    if (t && whole) {
        long long w = strtoll(t, &end, 10);
        v = (double)w;
        if (errno == ERANGE) v = w < 0 ? -HUGE_VAL : HUGE_VAL;
    } else if (t) {
        v = strtod(t, &end);
    }
    if (!t || !t[0] || *end != 0 || (!whole && (errno != 0 || !isfinite(v))))
        return fail(L, mark_of(n), "%s must be %s, got %s", what, whole ? "an integer" : "a number",
                    describe(n, b, sizeof b));
    if (v < lo || v > hi || (lo_open && v == lo)) {
        if (whole) return fail(L, mark_of(n), "%s must be in [%.0f, %.0f], got %s", what, lo, hi, t);
        return fail(L, mark_of(n), "%s must be in %c%g, %g], got %g", what, lo_open ? '(' : '[', lo, hi, v);
    }
    *out = v;
    return 0;
}

static int read_int(Loader *L, yaml_node_t *n, const char *what, int lo, int hi, int *out) {
    double v;
    if (read_number(L, n, what, 1, lo, hi, 0, &v)) return -1;
    *out = (int)v;
    return 0;
}

// One of names (NULL-terminated).
static int read_choice(Loader *L, yaml_node_t *n, const char *what, const char *const *names, int *out) {
    char allowed[256], b[64];
    int count = name_count(names);
    join_names(names, count, allowed, sizeof allowed);
    const char *t = text_of(n);
    if (t) {
        int k = find_name(t, names, count);
        if (k >= 0) {
            *out = k;
            return 0;
        }
        const char *hint = closest_name(t, names, count);
        if (hint) return fail(L, mark_of(n), "unknown %s '%s' (did you mean '%s'?)", what, t, hint);
    }
    return fail(L, mark_of(n), "unknown %s %s (allowed: %s)", what, describe(n, b, sizeof b), allowed);
}

// ---- parameter values: always through config_set

static const ParamSpec *param_named(const char *name) {
    const ParamSpec *p = config_find(name);
    if (!p) {
        fprintf(stderr, "attnsweep: internal error: no parameter %s\n", name);
        abort();
    }
    return p;
}

static int param_index(const ParamSpec *p) { return (int)(p - config_params); }

// The scalars of sequence n joined by sep... into buf: a group of the offset schedule.
static int join_scalars(Loader *L, const ParamSpec *p, yaml_node_t *n, const char *sep, char *buf, size_t len) {
    char b[64];
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_at(L, *it);
        const char *et = text_of(e);
        if (!et) return fail(L, mark_of(e), "%s lists integers, got %s", p->name, describe(e, b, sizeof b));
        size_t used = strlen(buf), add = strlen(et);
        if (used + add + 2 > len) return fail(L, mark_of(n), "%s: value too long", p->name);
        if (used) buf[used++] = *sep;
        sep = ",";
        memcpy(buf + used, et, add + 1);
    }
    return 0;
}

// How a scalar reads: an integer, another number, or a text (any quoted scalar).
typedef enum { SCALAR_INT, SCALAR_REAL, SCALAR_TEXT } ScalarKind;
static ScalarKind scalar_kind(const yaml_node_t *n) {
    const char *t = text_of(n);
    if (!t || !t[0] || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return SCALAR_TEXT;
    if (strspn(t + (t[0] == '-' || t[0] == '+'), "0123456789") == strlen(t) - (t[0] == '-' || t[0] == '+') &&
        strlen(t) > (size_t)(t[0] == '-' || t[0] == '+'))
        return SCALAR_INT;
    char *end;
    errno = 0;
    const double v = strtod(t, &end);
    return *end == 0 && errno == 0 && isfinite(v) && !strpbrk(t, "xXnNiIpP") ? SCALAR_REAL : SCALAR_TEXT;
}

// A plain scalar W&B's YAML reader (PyYAML, YAML 1.1) makes a boolean ("true") or None
// ("null"), or NULL.
static const char *yaml11_word(const yaml_node_t *n) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", NULL};
    static const char *const none[] = {"null", "Null", "NULL", "~", "", NULL};
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return NULL;
    const char *t = text_of(n);
    return find_name(t, yes, name_count(yes)) >= 0 ? "true"
           : find_name(t, no, name_count(no)) >= 0 ? "false"
           : find_name(t, none, name_count(none)) >= 0 ? "null" : NULL;
}

// Whether a value reaches the program as W&B's Python object rather than a number or a
// text: a boolean, None, a list or a mapping.
static int structured(const yaml_node_t *n) { return n->type != YAML_SCALAR_NODE || yaml11_word(n); }

static void put_text(Bytes *b, const char *t) { memcpy(bytes_extend(b, strlen(t)), t, strlen(t)); }

// n as JSON (json.dumps' spacing, reals as Python writes them) at the end of b.
static void put_json(Loader *L, yaml_node_t *n, Bytes *b) {
    if (n->type == YAML_SEQUENCE_NODE || n->type == YAML_MAPPING_NODE) {
        const int seq = n->type == YAML_SEQUENCE_NODE;
        put_text(b, seq ? "[" : "{");
        if (seq)
            for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
                if (it > n->data.sequence.items.start) put_text(b, ", ");
                put_json(L, node_at(L, *it), b);
            }
        else
            for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
                if (pr > n->data.mapping.pairs.start) put_text(b, ", ");
                put_json(L, node_at(L, pr->key), b);
                put_text(b, ": ");
                put_json(L, node_at(L, pr->value), b);
            }
        put_text(b, seq ? "]" : "}");
        return;
    }
    const char *word = yaml11_word(n);
    const ScalarKind kind = scalar_kind(n);
    char num[64];
    if (word) {
        put_text(b, word);
    } else if (kind == SCALAR_INT) {
        snprintf(num, sizeof num, "%lld", strtoll(text_of(n), NULL, 10));
        put_text(b, num);
    } else if (kind == SCALAR_REAL) {
        program_real_text(strtod(text_of(n), NULL), num, sizeof num);
        put_text(b, num);
    } else {
        cJSON *str = json_must(cJSON_CreateString(text_of(n) ? text_of(n) : ""));
        char *t = cJSON_PrintUnformatted(str);
        if (!t) die(EXIT_RUNTIME, "out of memory printing JSON");
        put_text(b, t);
        cJSON_free(t);
        cJSON_Delete(str);
    }
}

// The value of a parameter whose values are W&B's Python objects, as JSON text.
static int json_text(Loader *L, const ParamSpec *p, yaml_node_t *n, char *buf, size_t len) {
    Bytes b = {0};
    put_json(L, n, &b);
    const size_t used = b.len;
    if (used < len) memcpy(buf, b.data, used), buf[used] = 0;
    bytes_free(&b);
    if (used >= len) return fail(L, mark_of(n), "%s: value too long (%zu characters as JSON)", p->name, used);
    return 0;
}

// The text config_set takes for p: a scalar, or for the offset schedule (grassmann_offsets)
// also a list of scalars, joined with commas ([1, 2, 4]: one group for every layer), or a
// list of such lists joined with ';' ([[1, 2], [4, 8]]: one group a layer).
static int value_text(Loader *L, const ParamSpec *p, yaml_node_t *n, char *buf, size_t len) {
    char b[64];
    const char *t = text_of(n);
    if (p->program && L->s->program.form[p - L->s->program_params] & PROGRAM_FORM_JSON)
        return json_text(L, p, n, buf, len);
    if (t) {
        if (strlen(t) >= len) return fail(L, mark_of(n), "%s: value too long (%zu characters)", p->name, strlen(t));
        memcpy(buf, t, strlen(t) + 1);
        return 0;
    }
    if (p->type != PT_INTLIST || n->type != YAML_SEQUENCE_NODE)
        return fail(L, mark_of(n), "%s takes a single value here, got %s", p->name, describe(n, b, sizeof b));
    buf[0] = 0;
    yaml_node_item_t *first = n->data.sequence.items.start;
    if (first == n->data.sequence.items.top || node_at(L, *first)->type != YAML_SEQUENCE_NODE)
        return join_scalars(L, p, n, ",", buf, len);
    for (yaml_node_item_t *it = first; it < n->data.sequence.items.top; it++) {
        yaml_node_t *g = node_at(L, *it);
        if (g->type != YAML_SEQUENCE_NODE)
            return fail(L, mark_of(g), "%s lists groups of integers, got %s", p->name, describe(g, b, sizeof b));
        if (g->data.sequence.items.start == g->data.sequence.items.top)
            return fail(L, mark_of(g), "%s needs at least one offset in every layer's group", p->name);
        if (join_scalars(L, p, g, it == first ? "," : ";", buf, len)) return -1;
    }
    return 0;
}

// Parse n into c's field for p, with config_set's rules and message; text (TEXT_MAX
// bytes, or NULL) gets the value as written.
static int set_value(Loader *L, TrialConfig *c, const ParamSpec *p, yaml_node_t *n, char *text) {
    char buf[TEXT_MAX], msg[TEXT_MAX];
    if (!text) text = buf;
    if (value_text(L, p, n, text, TEXT_MAX)) return -1;
    if (config_set(c, p, text, msg, sizeof msg)) return fail(L, mark_of(n), "%s", msg);
    return 0;
}

static void set_text(TrialConfig *c, const ParamSpec *p, const char *text) {
    char msg[TEXT_MAX];
    if (config_set(c, p, text, msg, sizeof msg)) {
        fprintf(stderr, "attnsweep: internal error: %s\n", msg);
        abort();
    }
}

// The canonical text of a value of p (as config_format writes it): equal texts, equal values.
static void canonical(const ParamSpec *p, const char *text, char *out, size_t len) {
    TrialConfig c;
    config_defaults(&c);
    set_text(&c, p, text);
    config_format(&c, p, out, len);
}

// Record where the file sets p; a second place is an error.
static int claim(Loader *L, const ParamSpec *p, Mark m, const char *where) {
    if (p->program) return 0;  // set under parameters only, where a duplicate key is caught
    int i = param_index(p);
    if (L->set_at[i].line)
        return fail(L, m, "%s is set twice (also in %s at %d:%d)", p->name, L->set_in[i], L->set_at[i].line,
                    L->set_at[i].col);
    L->set_at[i] = m;
    L->set_in[i] = where;
    return 0;
}

// ---- supports: what each swept parameter can take

static int is_listed(const SpaceParam *p) {
    return p->dist == DIST_VALUE || p->dist == DIST_VALUES || p->dist == DIST_CATEGORICAL;
}

static double q_first(const SpaceParam *p) { return ceil(p->min / p->q - 1e-9); }
static double q_last(const SpaceParam *p) { return floor(p->max / p->q + 1e-9); }

long space_param_count(const SpaceParam *p) {
    if (is_listed(p)) return p->n_values;
    if (p->dist == DIST_INT_UNIFORM) return (long)(p->max - p->min) + 1;
    if (p->dist == DIST_Q_UNIFORM) return (long)(q_last(p) - q_first(p)) + 1;
    return -1;
}

// Choices a parameter runs over in space_enumerate (see space_impl.h).
static long enum_count(const SpaceParam *p, int checks) {
    long n = space_param_count(p);
    if (n >= 0 || !checks) return n;
    const double lo = space_draw(p, 0), hi = space_draw(p, 1);  // the extremes a draw gives
    if (p->param->type == PT_INT) return (long)(llround(hi) - llround(lo)) + 1;
    return lo == hi ? 1 : 2;
}

static void number_text(const SpaceParam *p, double v, const char *real_format, char *buf, size_t len) {
    if (p->param->type == PT_INT)
        snprintf(buf, len, "%lld", llround(v));
    else
        snprintf(buf, len, real_format, v);
}

static void choice_text(const SpaceParam *p, long k, char *buf, size_t len) {
    if (is_listed(p))
        snprintf(buf, len, "%s", p->values[k]);
    else if (p->dist == DIST_Q_UNIFORM)
        number_text(p, (q_first(p) + (double)k) * p->q, "%.15g", buf, len);  // 0.30000000000000004 -> 0.3
    else if (p->dist == DIST_INT_UNIFORM)
        snprintf(buf, len, "%lld", (long long)p->min + k);
    else if (p->param->type == PT_INT)  // the checks run over a continuous one's integers
        snprintf(buf, len, "%lld", llround(space_draw(p, 0)) + k);
    else
        number_text(p, space_draw(p, k ? 1 : 0), "%.17g", buf, len);
}

static void gene_text(const SpaceParam *p, double gene, char *buf, size_t len) {
    if (space_param_count(p) >= 0)
        choice_text(p, (long)gene, buf, len);
    else
        number_text(p, gene, space_dist_quantised(p->dist) ? "%.15g" : "%.17g", buf, len);
}

int space_condition_holds(const SpaceParam *p, const TrialConfig *c) {
    for (int i = 0; i < p->n_when; i++) {
        const Condition *cd = &p->when[i];
        char have[TEXT_MAX];
        config_format(c, cd->param, have, sizeof have);
        int any = 0;
        for (int k = 0; k < cd->n_values && !any; k++) any = !strcmp(have, cd->values[k]);
        if (!any) return 0;
    }
    return 1;
}

void space_render(const SweepSpec *s, const double *gene, TrialConfig *out) {
    *out = s->base;
    for (int j = 0; j < s->n_params; j++) {
        const SpaceParam *p = &s->params[j];
        if (!space_condition_holds(p, out)) continue;
        char text[TEXT_MAX];
        gene_text(p, gene[j], text, sizeof text);
        set_text(out, p->param, text);
    }
}

double space_gene_of(const SpaceParam *p, const TrialConfig *c) {
    long n = space_param_count(p);
    if (n < 0) return config_number(c, p->param);
    if (is_listed(p)) {
        char have[TEXT_MAX], cand[TEXT_MAX];
        config_format(c, p->param, have, sizeof have);
        for (long k = 0; k < n; k++) {
            canonical(p->param, p->values[k], cand, sizeof cand);
            if (!strcmp(have, cand)) return (double)k;
        }
        return 0;
    }
    double v = config_number(c, p->param);
    double k = p->dist == DIST_Q_UNIFORM ? round(v / p->q) - q_first(p) : v - p->min;
    return k >= 0 && k < (double)n ? k : 0;
}

static int swept_index(const SweepSpec *s, const ParamSpec *p) {
    for (int j = 0; j < s->n_params; j++)
        if (s->params[j].param == p) return j;
    return -1;
}

void space_sources(const SweepSpec *s, unsigned char *is_source) {
    memset(is_source, 0, (size_t)s->n_params);
    for (int j = 0; j < s->n_params; j++)
        for (int i = 0; i < s->params[j].n_when; i++) {
            int src = swept_index(s, s->params[j].when[i].param);
            if (src >= 0) is_source[src] = 1;
        }
}

typedef struct {
    const SweepSpec *s;
    const unsigned char *use;
    int checks;
    long limit, visited;
    SpaceVisit visit;
    void *ctx;
    double *gene;
} Enumeration;

static int enumerate_from(Enumeration *e, int j, const TrialConfig *c) {
    if (j == e->s->n_params) {
        if (++e->visited > e->limit) return 2;
        return e->visit(e->ctx, c, e->gene) ? 1 : 0;
    }
    const SpaceParam *p = &e->s->params[j];
    if (!e->use[j] || !space_condition_holds(p, c)) {
        e->gene[j] = -1;
        return enumerate_from(e, j + 1, c);
    }
    long n = enum_count(p, e->checks);
    for (long k = 0; k < n; k++) {
        TrialConfig next = *c;
        char text[TEXT_MAX];
        choice_text(p, k, text, sizeof text);
        set_text(&next, p->param, text);
        e->gene[j] = (double)k;
        int rc = enumerate_from(e, j + 1, &next);
        if (rc) return rc;
    }
    return 0;
}

int space_enumerate(const SweepSpec *s, const unsigned char *use, int checks, long limit, SpaceVisit visit,
                    void *ctx) {
    Enumeration e = {s, use, checks, limit, 0, visit, ctx, xcalloc((size_t)s->n_params + 1, sizeof(double))};
    int rc = enumerate_from(&e, 0, &s->base);
    free(e.gene);
    return rc;
}

const char *space_method_name(SweepMethod m) { return method_names[m]; }
const char *space_distribution_name(Distribution d) { return dist_names[d]; }

// ---- size of the space: sum over the sources' combinations of the product of the
// other applicable parameters' support sizes.

typedef struct {
    const SweepSpec *s;
    const unsigned char *is_source;
    long total;
    unsigned char *active;  // per parameter: applies in some combination
} SizeCount;

static long saturating_mul(long a, long b) { return b && a > LONG_MAX / b ? LONG_MAX : a * b; }

static int count_block(void *ctx, const TrialConfig *c, const double *gene) {
    SizeCount *sc = ctx;
    long block = 1;
    for (int j = 0; j < sc->s->n_params; j++) {
        const SpaceParam *p = &sc->s->params[j];
        if (!space_condition_holds(p, c)) continue;
        sc->active[j] = 1;
        long n = space_param_count(p);  // -1: continuous (the count is then unused)
        if (!sc->is_source[j]) block = n < 0 ? LONG_MAX : saturating_mul(block, n);
    }
    sc->total = sc->total > LONG_MAX - block ? LONG_MAX : sc->total + block;
    return 0;
}

// Counts the grid (LONG_MAX if it overflows) and marks the parameters that apply somewhere;
// returns space_enumerate's code.
static int count_space(const SweepSpec *s, long *total, unsigned char *active) {
    unsigned char *src = xcalloc((size_t)s->n_params + 1, 1);
    space_sources(s, src);
    SizeCount sc = {s, src, 0, active};
    int rc = space_enumerate(s, src, 0, SOURCE_LIMIT, count_block, &sc);
    free(src);
    *total = sc.total;
    return rc;
}

long space_size(const SweepSpec *s) {
    for (int j = 0; j < s->n_params; j++)
        if (space_param_count(&s->params[j]) < 0) return -1;
    long total;
    unsigned char *active = xcalloc((size_t)s->n_params + 1, 1);
    count_space(s, &total, active);
    free(active);
    return total;
}

// ---- reading the sections

static const ParamSpec *seed_param(void) { return param_named("seed"); }

static int read_values(Loader *L, SpaceParam *sp, yaml_node_t *n) {
    char b[64];
    const ParamSpec *p = sp->param;
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(L, mark_of(n), "values must be a list, got %s", describe(n, b, sizeof b));
    long count = n->data.sequence.items.top - n->data.sequence.items.start;
    if (count == 0) return fail(L, mark_of(n), "values of %s is empty (list at least one value)", p->name);
    if (count > MAX_LIST) return fail(L, mark_of(n), "values of %s lists more than %d entries", p->name, MAX_LIST);
    sp->values = xcalloc((size_t)count, sizeof *sp->values);
    char **canon = xcalloc((size_t)count, sizeof *canon);
    int rc = 0;
    for (long k = 0; k < count && !rc; k++) {
        yaml_node_t *e = node_at(L, n->data.sequence.items.start[k]);
        TrialConfig scratch = L->s->base;
        char text[TEXT_MAX], key[TEXT_MAX];
        if ((rc = set_value(L, &scratch, p, e, text))) break;
        config_format(&scratch, p, key, sizeof key);
        for (long i = 0; i < k && !rc; i++)
            if (!strcmp(canon[i], key)) rc = fail(L, mark_of(e), "values of %s lists %s twice", p->name, key);
        canon[k] = xstrdup(key);
        sp->values[k] = xstrdup(text);
        sp->n_values = (int)k + 1;
    }
    for (long k = 0; k < count; k++) free(canon[k]);
    free(canon);
    return rc;
}

static int read_probabilities(Loader *L, SpaceParam *sp, yaml_node_t *n) {
    char b[64];
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(L, mark_of(n), "probabilities must be a list of numbers, got %s", describe(n, b, sizeof b));
    long count = n->data.sequence.items.top - n->data.sequence.items.start;
    if (count != sp->n_values)
        return fail(L, mark_of(n), "probabilities of %s has %ld entries, but values has %d", sp->param->name, count,
                    sp->n_values);
    sp->probabilities = xcalloc((size_t)count, sizeof(double));
    double sum = 0;
    for (long k = 0; k < count; k++) {
        if (read_number(L, node_at(L, n->data.sequence.items.start[k]), "a probability", 0, 0, 1, 0,
                        &sp->probabilities[k]))
            return -1;
        sum += sp->probabilities[k];
    }
    if (fabs(sum - 1) > 1e-6)
        return fail(L, mark_of(n), "probabilities of %s sum to %.9g, not 1", sp->param->name, sum);
    return 0;
}

// min or max of a range: through config_set, so the parameter's own range applies.
static int read_bound(Loader *L, const ParamSpec *p, yaml_node_t *n, double *out) {
    TrialConfig scratch = L->s->base;
    if (set_value(L, &scratch, p, n, NULL)) return -1;
    *out = config_number(&scratch, p);
    return 0;
}

// Grid enumerates finite supports only.
static int grid_refuses(Loader *L, const SpaceParam *sp, Mark at) {
    if (L->s->method != METHOD_GRID || space_param_count(sp) >= 0) return 0;
    return fail(L, at, "method grid needs values or an integer range, but %s has distribution %s (list values, or use "
                       "method random)",
                sp->param->name, dist_names[sp->dist]);
}

// q of a q_ distribution [1], for an integer parameter an integer.
static int read_q(Loader *L, SpaceParam *sp, yaml_node_t **v) {
    sp->q = 1;
    return v[PK_Q] && read_number(L, v[PK_Q], "q", sp->param->type == PT_INT, 0, 1e9, 1, &sp->q) ? -1 : 0;
}

// A continuous distribution read: truncated to the parameter's range, which must hold
// some of its mass (and for the q_ kinds a multiple of q).
static int finish_continuous(Loader *L, SpaceParam *sp, Mark at) {
    const ParamSpec *p = sp->param;
    const double mass = space_truncate(sp, p->min, p->max);
    if (!(mass >= 1e-6))
        return fail(L, at, "distribution %s puts %.3g of its mass in %s's range [%.9g, %.9g] (at least 1e-6 must lie there)",
                    dist_names[sp->dist], mass, p->name, p->min, p->max);
    if (space_dist_quantised(sp->dist) && floor(sp->hi / sp->q + 1e-9) < ceil(sp->lo / sp->q - 1e-9))
        return fail(L, at, "no multiple of q %.9g lies in [%.9g, %.9g], where distribution %s draws %s", sp->q, sp->lo,
                    sp->hi, dist_names[sp->dist], p->name);
    return grid_refuses(L, sp, at);
}

static int takes_exponents(int dist) {
    return dist == DIST_LOG_UNIFORM || dist == DIST_Q_LOG_UNIFORM || dist == DIST_INV_LOG_UNIFORM;
}

static int read_range(Loader *L, SpaceParam *sp, yaml_node_t **v, const Mark *k_at, int dist) {
    const ParamSpec *p = sp->param;
    if (!v[PK_MIN] || !v[PK_MAX]) {
        int have = v[PK_MIN] ? PK_MIN : PK_MAX;
        return fail(L, k_at[have], "%s has %s but no %s", p->name, param_keys[have], have == PK_MIN ? "max" : "min");
    }
    if (v[PK_PROBABILITIES]) return fail(L, k_at[PK_PROBABILITIES], "probabilities go with values, not min and max");
    if (p->type != PT_INT && p->type != PT_REAL)
        return fail(L, k_at[PK_MIN], "%s takes values, not a range (min and max)", p->name);
    if (dist == DIST_CATEGORICAL)
        return fail(L, k_at[PK_DISTRIBUTION], "distribution categorical takes values, not min and max");
    if (dist < 0) dist = p->type == PT_INT ? DIST_INT_UNIFORM : DIST_UNIFORM;
    if (dist == DIST_UNIFORM && p->type == PT_INT)
        return fail(L, k_at[PK_DISTRIBUTION], "%s is an integer: use int_uniform, q_uniform or log_uniform_values",
                    p->name);
    if (v[PK_Q] && dist != DIST_Q_UNIFORM && !space_dist_quantised((Distribution)dist))
        return fail(L, k_at[PK_Q], "q only applies to the q_ distributions (q_uniform, q_log_uniform_values, ...)");
    sp->dist = (Distribution)dist;
    if (takes_exponents(dist)) {  // natural-log exponents: the values are exp of them
        if (read_number(L, v[PK_MIN], "min (an exponent)", 0, -700, 700, 0, &sp->min) ||
            read_number(L, v[PK_MAX], "max (an exponent)", 0, -700, 700, 0, &sp->max))
            return -1;
    } else if (read_bound(L, p, v[PK_MIN], &sp->min) || read_bound(L, p, v[PK_MAX], &sp->max)) {
        return -1;
    }
    if (sp->min > sp->max)
        return fail(L, mark_of(v[PK_MAX]), "empty range: min %.9g is greater than max %.9g", sp->min, sp->max);
    if (dist == DIST_INT_UNIFORM && (sp->min != floor(sp->min) || sp->max != floor(sp->max)))
        return fail(L, mark_of(sp->min != floor(sp->min) ? v[PK_MIN] : v[PK_MAX]),
                    "int_uniform needs integer min and max, got %.9g and %.9g", sp->min, sp->max);
    if ((dist == DIST_LOG_UNIFORM_VALUES || dist == DIST_Q_LOG_UNIFORM_VALUES || dist == DIST_INV_LOG_UNIFORM_VALUES) &&
        sp->min <= 0)
        return fail(L, mark_of(v[PK_MIN]), "%s needs min > 0, got %.9g", dist_names[dist], sp->min);
    if (takes_exponents(dist)) {
        const int inv = dist == DIST_INV_LOG_UNIFORM;
        const double lo = exp(inv ? -sp->max : sp->min), hi = exp(inv ? -sp->min : sp->max);
        if (dist == DIST_LOG_UNIFORM && sp->min > 0 && sp->max < 1)  // values within (1, e): surely meant as values
            return fail(L, k_at[PK_DISTRIBUTION],
                        "log_uniform takes natural-log exponents: min %.9g and max %.9g draw %s from [%.9g, %.9g]; for "
                        "values between %.9g and %.9g use log_uniform_values",
                        sp->min, sp->max, p->name, lo, hi, sp->min, sp->max);
        if (lo < p->min || hi > p->max)
            return fail(L, k_at[PK_DISTRIBUTION],
                        "%s draws %s from [exp(%smin), exp(%smax)] = [%.9g, %.9g], outside its range [%.9g, %.9g] (min "
                        "and max are natural-log exponents)",
                        dist_names[dist], p->name, inv ? "-" : "", inv ? "-" : "", lo, hi, p->min, p->max);
    }
    if ((dist == DIST_Q_UNIFORM || space_dist_quantised((Distribution)dist)) && read_q(L, sp, v)) return -1;
    if (dist == DIST_Q_UNIFORM) {
        if ((sp->max - sp->min) / sp->q > 1e12)
            return fail(L, mark_of(v[PK_Q] ? v[PK_Q] : v[PK_MAX]), "q %.9g is too small for [%.9g, %.9g]", sp->q,
                        sp->min, sp->max);
        if (q_first(sp) > q_last(sp))
            return fail(L, mark_of(v[PK_Q] ? v[PK_Q] : v[PK_MAX]), "no multiple of q %.9g lies in [%.9g, %.9g]",
                        sp->q, sp->min, sp->max);
    }
    const Mark at = v[PK_DISTRIBUTION] ? k_at[PK_DISTRIBUTION] : k_at[PK_MIN];
    return space_param_count(sp) >= 0 ? grid_refuses(L, sp, at) : finish_continuous(L, sp, at);
}

// normal, log_normal (mu [0], sigma [1] > 0), beta (a [1], b [1] > 0), and their q_.
static int read_law(Loader *L, SpaceParam *sp, yaml_node_t **v, const Mark *k_at, int dist) {
    const ParamSpec *p = sp->param;
    const int beta = dist == DIST_BETA || dist == DIST_Q_BETA;
    if (v[PK_MIN] || v[PK_MAX])
        return fail(L, k_at[v[PK_MIN] ? PK_MIN : PK_MAX], "distribution %s takes %s, not min and max",
                    dist_names[dist], beta ? "a and b" : "mu and sigma");
    if (v[PK_PROBABILITIES]) return fail(L, k_at[PK_PROBABILITIES], "probabilities go with values");
    if (p->type != PT_INT && p->type != PT_REAL)
        return fail(L, k_at[PK_DISTRIBUTION], "%s takes values, not distribution %s", p->name, dist_names[dist]);
    if (v[PK_Q] && !space_dist_quantised((Distribution)dist))
        return fail(L, k_at[PK_Q], "q only applies to the q_ distributions (q_normal, q_beta, ...)");
    sp->dist = (Distribution)dist;
    sp->mu = 0, sp->sigma = 1, sp->a = 1, sp->b = 1;
    if (beta ? (v[PK_A] && read_number(L, v[PK_A], "a", 0, 0, 1e6, 1, &sp->a)) ||
                   (v[PK_B] && read_number(L, v[PK_B], "b", 0, 0, 1e6, 1, &sp->b))
             : (v[PK_MU] && read_number(L, v[PK_MU], "mu", 0, -1e300, 1e300, 0, &sp->mu)) ||
                   (v[PK_SIGMA] && read_number(L, v[PK_SIGMA], "sigma", 0, 0, 1e300, 1, &sp->sigma)))
        return -1;
    if (space_dist_quantised((Distribution)dist) && read_q(L, sp, v)) return -1;
    return finish_continuous(L, sp, k_at[PK_DISTRIBUTION]);
}

static SpaceParam *new_param(Loader *L, const ParamSpec *p, Mark at, yaml_node_t *when) {
    SweepSpec *s = L->s;
    s->params = xrealloc(s->params, (size_t)(s->n_params + 1) * sizeof *s->params);
    L->when = xrealloc(L->when, (size_t)(s->n_params + 1) * sizeof *L->when);
    L->when[s->n_params] = when;
    SpaceParam *sp = &s->params[s->n_params++];
    memset(sp, 0, sizeof *sp);
    sp->param = p;
    sp->line = at.line;
    sp->col = at.col;
    return sp;
}

// ---- a program's sweep: parameters of any name, typed from how they are written

int space_is_program(const SweepSpec *s) { return s->program.n_command > 0; }

const Metric *space_metric(const SweepSpec *s) {
    const Metric *m = metric_find(s->metric);
    return m ? m : &s->program_metric;
}

const Metric *space_objective_metric(const SweepSpec *s, int k) {
    const Metric *m = metric_find(s->objective[k]);
    return m ? m : &s->program_metric;
}

// The value of key in mapping map, or NULL.
static yaml_node_t *map_get(Loader *L, yaml_node_t *map, const char *key) {
    if (map->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        const char *k = text_of(node_at(L, pr->key));
        if (k && !strcmp(k, key)) return node_at(L, pr->value);
    }
    return NULL;
}

// The type of a program parameter: integers when every listed value, or both bounds (and
// q), are integers, unless the distribution draws reals (uniform, log_uniform_values, the
// exponent and inverse log-uniforms, normal, log_normal, beta); for q_log_uniform and the
// q_ laws (bounds that are exponents, or none) integers when q is; reals for other
// numbers; texts when a listed value is not a number.
static ParamType program_type(Loader *L, yaml_node_t *spec) {
    yaml_node_t *values = map_get(L, spec, "values"), *value = map_get(L, spec, "value");
    if (values || value) {
        ScalarKind most = SCALAR_INT;
        if (values && values->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = values->data.sequence.items.start; it < values->data.sequence.items.top; it++) {
                const ScalarKind k = scalar_kind(node_at(L, *it));
                if (k > most) most = k;
            }
        } else {
            most = value ? scalar_kind(value) : SCALAR_TEXT;
        }
        return most == SCALAR_INT ? PT_INT : most == SCALAR_REAL ? PT_REAL : PT_TEXT;
    }
    yaml_node_t *lo = map_get(L, spec, "min"), *hi = map_get(L, spec, "max"), *q = map_get(L, spec, "q");
    const char *dist = map_get(L, spec, "distribution") ? text_of(map_get(L, spec, "distribution")) : NULL;
    static const char *const reals[] = {"uniform", "log_uniform_values", "log_uniform", "inv_log_uniform",
                                        "inv_log_uniform_values", "normal", "log_normal", "beta"};
    static const char *const by_q[] = {"q_log_uniform", "q_normal", "q_log_normal", "q_beta"};
    const int q_whole = !q || scalar_kind(q) == SCALAR_INT;
    if (dist && !strcmp(dist, "int_uniform")) return PT_INT;
    if (dist && find_name(dist, reals, (int)(sizeof reals / sizeof reals[0])) >= 0) return PT_REAL;
    if (dist && find_name(dist, by_q, (int)(sizeof by_q / sizeof by_q[0])) >= 0) return q_whole ? PT_INT : PT_REAL;
    const int whole = (!lo || scalar_kind(lo) == SCALAR_INT) && (!hi || scalar_kind(hi) == SCALAR_INT) && q_whole;
    return whole ? PT_INT : PT_REAL;
}

static int program_name_ok(const char *t) {
    return t[0] && strlen(t) < PROGRAM_NAME && (isalpha((unsigned char)t[0]) || t[0] == '_') &&
           strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == strlen(t);
}

// The spec of program parameter `name` (written at key; PARENT.KEY when nested) in the
// next slot, declared in the base configuration, with its form (PROGRAM_FORM_*).
static const ParamSpec *program_param(Loader *L, yaml_node_t *key, const char *name, int nested, yaml_node_t *spec) {
    SweepSpec *s = L->s;
    char b[64];
    if (!program_name_ok(name) || (nested && strchr(text_of(key), '.'))) {
        fail(L, mark_of(key),
             "parameter name %s: a program's parameters have 1 to %d letters, digits, '_', '-' or '.' (a nested "
             "one's full name PARENT.NAME, its own part without '.'), the first a letter or '_'",
             describe(key, b, sizeof b), PROGRAM_NAME - 1);
        return NULL;
    }
    for (int k = 0; k < s->n_program_params; k++)
        if (!strcmp(s->program_params[k].name, name)) {
            fail(L, mark_of(key), "parameter %s is given twice (a nested parameter's full name is PARENT.NAME)", name);
            return NULL;
        }
    if (s->n_program_params == MAX_PROGRAM_PARAMS) {
        fail(L, mark_of(key), "more than %d parameters (a program's sweep has at most %d)", MAX_PROGRAM_PARAMS,
             MAX_PROGRAM_PARAMS);
        return NULL;
    }
    const int k = s->n_program_params++;
    char column[PROGRAM_NAME + 8];
    metric_param_column(name, column, sizeof column);  // trial, status, steps, ... are results
    ParamSpec *p = &s->program_params[k];
    yaml_node_t *values = map_get(L, spec, "values"), *value = map_get(L, spec, "value");
    int json = value && structured(value);
    for (yaml_node_item_t *it = values && values->type == YAML_SEQUENCE_NODE ? values->data.sequence.items.start : NULL;
         it && it < values->data.sequence.items.top; it++)
        json |= structured(node_at(L, *it));
    s->program.form[k] = (unsigned char)((json ? PROGRAM_FORM_JSON : 0) | (nested ? PROGRAM_FORM_NESTED : 0));
    config_program_param(p, xstrdup(name), strcmp(column, name) ? xstrdup(column) : NULL,
                         json ? PT_TEXT : program_type(L, spec), k);
    config_program_declare(&s->base, p);
    return p;
}

// The parameter a name refers to: one of the program's in a program's sweep, otherwise a
// trial parameter; NULL after failing with a message naming where (" in when", or "").
static const ParamSpec *find_param(Loader *L, yaml_node_t *key, const char *where) {
    const SweepSpec *s = L->s;
    const char *name = text_of(key);
    if (space_is_program(s)) {
        const char *names[MAX_PROGRAM_PARAMS];
        for (int k = 0; k < s->n_program_params; k++) {
            if (!strcmp(s->program_params[k].name, name)) return &s->program_params[k];
            names[k] = s->program_params[k].name;
        }
        const char *hint = closest_name(name, names, s->n_program_params);
        if (hint) fail(L, mark_of(key), "unknown parameter '%s'%s (did you mean '%s'?)", name, where, hint);
        else fail(L, mark_of(key), "unknown parameter '%s'%s (a condition refers to a parameter defined before it)", name, where);
        return NULL;
    }
    const ParamSpec *p = config_find(name);
    if (p) return p;
    const char *hint = config_closest(name);
    if (hint) fail(L, mark_of(key), "unknown parameter '%s'%s (did you mean '%s'?)", name, where, hint);
    else if (where[0]) fail(L, mark_of(key), "unknown parameter '%s'%s", name, where);
    else fail(L, mark_of(key), "unknown parameter '%s' (attnsweep train --help lists them)", name);
    return NULL;
}

// `grid: true` makes a finite parameter a grid axis of a sampled sweep.
static int read_grid_axis(Loader *L, const ParamSpec *p, yaml_node_t **v, const Mark *k_at) {
    int on = 0;
    if (!v[PK_GRID]) return 0;
    if (read_choice(L, v[PK_GRID], "grid", bool_names, &on)) return -1;
    SpaceParam *sp = L->s->n_params ? &L->s->params[L->s->n_params - 1] : NULL;
    if (!on) return 0;
    if (!sp || sp->param != p)
        return fail(L, k_at[PK_GRID], "grid: true needs values or a range to run over, but value fixes %s", p->name);
    if (space_param_count(sp) < 0)
        return fail(L, k_at[PK_GRID],
                    "grid: true needs values or an integer range, but %s has distribution %s (a grid axis is "
                    "enumerated: list values)",
                    p->name, dist_names[sp->dist]);
    sp->grid = 1;
    return 0;
}

// The parameter's value, values or distribution, once its keys are read.
static int read_param_spec(Loader *L, const ParamSpec *p, yaml_node_t *key, yaml_node_t **v, const Mark *k_at) {
    int dist = -1;
    const char *word = v[PK_DISTRIBUTION] ? text_of(v[PK_DISTRIBUTION]) : NULL;
    const char *synonym_of = word ? SYNONYM(dist_synonyms, word) : NULL;
    if (synonym_of)
        return fail(L, mark_of(v[PK_DISTRIBUTION]), "unknown distribution '%s' (did you mean %s?)", word, synonym_of);
    if (v[PK_DISTRIBUTION] && read_choice(L, v[PK_DISTRIBUTION], "distribution", dist_names + DIST_UNIFORM, &dist))
        return -1;
    if (dist >= 0) dist += DIST_UNIFORM;
    const int law = dist >= 0 && space_dist_has_law((Distribution)dist);
    const int beta = dist == DIST_BETA || dist == DIST_Q_BETA;
    for (int k = PK_MU; k <= PK_B; k++)
        if (v[k] && !(law && (k <= PK_SIGMA) != beta))
            return fail(L, k_at[k], "%s only applies to distributions %s", param_keys[k],
                        k <= PK_SIGMA ? "normal, q_normal, log_normal and q_log_normal" : "beta and q_beta");
    if (dist == DIST_CONSTANT && !v[PK_VALUE])
        return fail(L, k_at[PK_DISTRIBUTION], "distribution constant needs value");

    if (v[PK_VALUE]) {
        if (dist >= 0 && dist != DIST_CONSTANT)
            return fail(L, k_at[PK_DISTRIBUTION], "value fixes %s, so distribution %s does not apply", p->name,
                        dist_names[dist]);
        static const int others[] = {PK_VALUES, PK_MIN, PK_MAX, PK_Q, PK_PROBABILITIES};
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
            if (v[others[i]])
                return fail(L, k_at[others[i]], "value fixes %s, so %s does not apply", p->name,
                            param_keys[others[i]]);
        if (!v[PK_WHEN]) return set_value(L, &L->s->base, p, v[PK_VALUE], NULL);
        SpaceParam *sp = new_param(L, p, mark_of(key), v[PK_WHEN]);
        sp->dist = DIST_VALUE;
        TrialConfig scratch = L->s->base;
        char text[TEXT_MAX];
        if (set_value(L, &scratch, p, v[PK_VALUE], text)) return -1;
        sp->values = xcalloc(1, sizeof *sp->values);
        sp->values[0] = xstrdup(text);
        sp->n_values = 1;
        return 0;
    }
    if (v[PK_VALUES]) {
        if (v[PK_MIN] || v[PK_MAX])
            return fail(L, k_at[v[PK_MIN] ? PK_MIN : PK_MAX], "%s has values, so %s does not apply", p->name,
                        v[PK_MIN] ? "min" : "max");
        if (v[PK_Q]) return fail(L, k_at[PK_Q], "q only applies to distribution q_uniform");
        if (dist >= 0 && dist != DIST_CATEGORICAL)
            return fail(L, k_at[PK_DISTRIBUTION], "distribution %s takes min and max, not values", dist_names[dist]);
        SpaceParam *sp = new_param(L, p, mark_of(key), v[PK_WHEN]);
        sp->dist = dist == DIST_CATEGORICAL ? DIST_CATEGORICAL : DIST_VALUES;
        if (read_values(L, sp, v[PK_VALUES])) return -1;
        return v[PK_PROBABILITIES] ? read_probabilities(L, sp, v[PK_PROBABILITIES]) : 0;
    }
    if (law) return read_law(L, new_param(L, p, mark_of(key), v[PK_WHEN]), v, k_at, dist);
    if (v[PK_MIN] || v[PK_MAX]) return read_range(L, new_param(L, p, mark_of(key), v[PK_WHEN]), v, k_at, dist);
    return fail(L, mark_of(key), "parameter %s needs value, values, or min and max", p->name);
}

static int read_parameters(Loader *L, yaml_node_t *map, const char *parent);

// Parameter key: spec (under parent's parameters when parent is not NULL).
static int read_param(Loader *L, yaml_node_t *key, yaml_node_t *spec, const char *parent) {
    char b[64], what[96], full[2 * PROGRAM_NAME + 2];
    const char *name = text_of(key);
    const int program = space_is_program(L->s);
    if (parent) snprintf(full, sizeof full, "%s.%s", parent, name), name = full;
    yaml_node_t *nested = map_get(L, spec, "parameters");
    if (nested && !program)
        return fail(L, mark_of(key), "parameter %s has parameters (W&B's nested parameters), which a sweep of a "
                                     "program takes; the built-in engine's parameters are its own", name);
    if (nested) {  // W&B's nested parameters: PARENT.NAME each, reaching the program as PARENT's mapping
        for (yaml_node_pair_t *pr = spec->data.mapping.pairs.start; pr < spec->data.mapping.pairs.top; pr++)
            if (node_at(L, pr->value) != nested)
                return fail(L, mark_of(node_at(L, pr->key)), "parameter %s has parameters (nested), so %s does not "
                            "apply", name, describe(node_at(L, pr->key), b, sizeof b));
        return read_parameters(L, nested, name);
    }
    const char *meant = program || config_find(name) ? NULL : SYNONYM(param_synonyms, name);
    if (meant) return fail(L, mark_of(key), "unknown parameter '%s' (did you mean '%s'?)", name, meant);
    const ParamSpec *p = program ? program_param(L, key, name, parent != NULL, spec) : find_param(L, key, "");
    if (!p) return -1;
    if (p == seed_param())
        return fail(L, mark_of(key), "seed is not swept: set the sweep's seed at the top level (and repeats: N for "
                                     "several seeds per configuration)");
    if (claim(L, p, mark_of(key), "parameters")) return -1;
    if (spec->type != YAML_MAPPING_NODE)
        return fail(L, mark_of(spec), "parameter %s must be a mapping with value, values, or min and max, got %s",
                    p->name, describe(spec, b, sizeof b));
    yaml_node_t *v[PK_N];
    Mark k_at[PK_N];
    snprintf(what, sizeof what, "parameter %s", p->name);
    if (read_section(L, spec, what, param_keys, PK_N, v, k_at)) return -1;
    return read_param_spec(L, p, key, v, k_at) || read_grid_axis(L, p, v, k_at) ? -1 : 0;
}

static int read_parameters(Loader *L, yaml_node_t *map, const char *parent) {
    char b[64];
    if (map->type != YAML_MAPPING_NODE)
        return fail(L, mark_of(map), "parameters%s%s must be a mapping of parameter names, got %s", parent ? " of " : "",
                    parent ? parent : "", describe(map, b, sizeof b));
    yaml_node_pair_t *first = map->data.mapping.pairs.start;
    if (first == map->data.mapping.pairs.top)
        return fail(L, mark_of(map), "parameters is empty (give at least one parameter)");
    for (yaml_node_pair_t *pr = first; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = node_at(L, pr->key);
        const char *name;
        if (key_text(L, kn, &name)) return -1;
        for (yaml_node_pair_t *e = first; e < pr; e++)
            if (!strcmp(text_of(node_at(L, e->key)), name)) {
                Mark m = mark_of(node_at(L, e->key));
                return fail(L, mark_of(kn), "duplicate key '%s' (first at %d:%d)", name, m.line, m.col);
            }
        if (read_param(L, kn, node_at(L, pr->value), parent)) return -1;
    }
    return 0;
}

// A {name, goal} mapping naming a metric of use `most` or lower (trial/metrics.h) into
// name (32 bytes) and its goal; what names it in messages ("metric", "objective").
static int read_goal_metric(Loader *L, yaml_node_t *map, const char *what, MetricUse most, char *name, int *maximize) {
    yaml_node_t *v[METRIC_N];
    Mark k_at[METRIC_N];
    if (read_section(L, map, what, metric_keys, METRIC_N, v, k_at)) return -1;
    const char *names[METRIC_NAMES];
    metric_names(most, names);
    char allowed[256];
    metric_names_text(most, allowed, sizeof allowed);
    if (!v[METRIC_NAME]) return fail(L, mark_of(map), "%s needs name (%s)", what, allowed);
    const char *t = text_of(v[METRIC_NAME]);
    char why[512];
    if (v[METRIC_TARGET]) note(L, "%s target: a Weights & Biases key attnsweep does not use (ignored)", what);
    if (t && metric_refusal(t, most, why, sizeof why)) return fail(L, mark_of(v[METRIC_NAME]), "%s %s", what, why);
    int k, goal;
    if (read_choice(L, v[METRIC_NAME], what, names, &k)) return -1;
    snprintf(name, 32, "%s", names[k]);
    *maximize = metric_find(names[k])->maximize;
    if (v[METRIC_GOAL]) {
        if (read_choice(L, v[METRIC_GOAL], "goal", goal_names, &goal)) return -1;
        *maximize = goal == 0;
    }
    return 0;
}

// A program's sweep: a {name, goal} mapping (what: "metric" or "objective") naming one of
// the table's metrics of use `most` or lower, or any other name the program reports, but a
// test metric or a result column attnsweep fills itself; the goal of one of the program's
// own (*own set) is minimize unless given (W&B's default).
static int read_program_goal(Loader *L, yaml_node_t *map, const char *what, MetricUse most, char *name, int *maximize,
                             int *own) {
    yaml_node_t *v[METRIC_N];
    Mark k_at[METRIC_N];
    char b[64];
    *own = 0;
    if (read_section(L, map, what, metric_keys, METRIC_N, v, k_at)) return -1;
    if (!v[METRIC_NAME]) return fail(L, mark_of(map), "%s needs name (a metric the program reports)", what);
    const char *t = text_of(v[METRIC_NAME]);
    const Metric *m = t ? metric_find(t) : NULL;
    if (m && m->use <= most) return read_goal_metric(L, map, what, most, name, maximize);
    const Mark at = mark_of(v[METRIC_NAME]);
    if (!t || !t[0] || strlen(t) >= PROGRAM_KEY || strpbrk(t, "\t\n\r\"\\"))
        return fail(L, at, "%s name must be 1 to %d characters without quotes, backslashes or line breaks, got %s",
                    what, PROGRAM_KEY - 1, describe(v[METRIC_NAME], b, sizeof b));
    if (!strncmp(t, "test_", 5))
        return fail(L, at, "%s '%s' is a test metric, and test metrics never drive decisions (the program's "
                           "metric must be measured on validation data)", what, t);
    if (metric_column_taken(t))
        return fail(L, at, "%s '%s' is a result attnsweep records itself, not one a sweep optimises (a program's "
                           "own metric needs another name)", what, t);
    if (v[METRIC_TARGET]) note(L, "%s target: a Weights & Biases key attnsweep does not use (ignored)", what);
    snprintf(name, 32, "%s", t);
    *maximize = 0;
    *own = 1;
    int goal;
    if (v[METRIC_GOAL]) {
        if (read_choice(L, v[METRIC_GOAL], "goal", goal_names, &goal)) return -1;
        *maximize = goal == 0;
    }
    return 0;
}

static int read_program_metric(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    int own;
    if (read_program_goal(L, map, "metric", METRIC_DECIDES, s->metric, &s->maximize, &own)) return -1;
    if (own) {
        snprintf(s->program.metric, sizeof s->program.metric, "%s", s->metric);
        note(L, "metric %s is the program's own, not a name attnsweep measures: it cannot be checked before the "
                "program runs (a trial whose lines never hold it fails, naming the keys they held)",
             s->metric);
    }
    return 0;
}

static int read_metric(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    if (map->type == YAML_MAPPING_NODE)  // where its name is, for the checks made once the parameters are read
        for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
            const char *k = text_of(node_at(L, pr->key));
            if (k && !strcmp(k, "name")) L->metric_at = mark_of(node_at(L, pr->value));
        }
    if (space_is_program(s)) return read_program_metric(L, map);
    return read_goal_metric(L, map, "metric", METRIC_DECIDES, s->metric, &s->maximize);
}

// motpe's objectives: a list of 2 to SPACE_MAX_OBJECTIVES {name, goal} mappings, any metric
// the report may rank by (the validation metrics, the reward, the scores).
static int read_objectives(Loader *L, yaml_node_t *list) {
    SweepSpec *s = L->s;
    char b[64];
    const int n = list->type == YAML_SEQUENCE_NODE
                      ? (int)(list->data.sequence.items.top - list->data.sequence.items.start)
                      : -1;
    if (n < 2 || n > SPACE_MAX_OBJECTIVES)
        return fail(L, mark_of(list), "objectives must be a list of 2 to %d {name, goal} mappings; got %s",
                    SPACE_MAX_OBJECTIVES, describe(list, b, sizeof b));
    for (int k = 0; k < n; k++) {
        yaml_node_t *o = node_at(L, list->data.sequence.items.start[k]);
        int own = 0;
        if (space_is_program(s) ? read_program_goal(L, o, "objective", METRIC_RANKS, s->objective[k],
                                                    &s->objective_maximize[k], &own)
                                : read_goal_metric(L, o, "objective", METRIC_RANKS, s->objective[k],
                                                   &s->objective_maximize[k]))
            return -1;
        if (own && s->program.metric[0] && strcmp(s->program.metric, s->objective[k]))
            return fail(L, mark_of(o), "objectives name %s and %s, both the program's own: a trial records one "
                        "metric of the program's own (the others may be val_loss, val_accuracy, n_params, ...)",
                        s->program.metric, s->objective[k]);
        if (own) snprintf(s->program.metric, sizeof s->program.metric, "%s", s->objective[k]);
        for (int q = 0; q < k; q++)
            if (!strcmp(s->objective[q], s->objective[k]))
                return fail(L, mark_of(o), "objectives lists %s twice", s->objective[k]);
    }
    s->n_objectives = n;
    return 0;
}

static int read_tpe(Loader *L, yaml_node_t *map) {
    yaml_node_t *v[TPE_N];
    Mark k_at[TPE_N];
    TpeOptions *t = &L->s->tpe;
    int yes;
    if (read_section(L, map, "tpe", tpe_keys, TPE_N, v, k_at)) return -1;
    if ((v[TPE_N_STARTUP] && read_int(L, v[TPE_N_STARTUP], "n_startup", 1, 100000, &t->n_startup)) ||
        (v[TPE_GAMMA] && read_number(L, v[TPE_GAMMA], "gamma", 0, 0, 1, 1, &t->gamma)) ||
        (v[TPE_CANDIDATES] && read_int(L, v[TPE_CANDIDATES], "candidates", 1, 10000, &t->candidates)) ||
        (v[TPE_PRIOR_WEIGHT] && read_number(L, v[TPE_PRIOR_WEIGHT], "prior_weight", 0, 0, 1e6, 1, &t->prior_weight)) ||
        (v[TPE_HISTORY] && read_int(L, v[TPE_HISTORY], "history", 0, 100000000, &t->history)))
        return -1;
    if (v[TPE_MULTIVARIATE]) {
        if (read_choice(L, v[TPE_MULTIVARIATE], "multivariate", bool_names, &yes)) return -1;
        t->multivariate = yes;
    }
    if (v[TPE_CONSTANT_LIAR]) {
        if (read_choice(L, v[TPE_CONSTANT_LIAR], "constant_liar", bool_names, &yes)) return -1;
        t->constant_liar = yes;
    }
    return 0;
}

// The budget. For the built-in engine steps, epochs and eval_every are trial parameters,
// checkpoint_every its checkpoints; a program's trials are as long as its parameters make
// them, and there steps (optional) is only the end of ASHA's rungs, grace and
// max_output_mb how it is stopped. time_limit, max_deaths and max_failures apply to both.
static int read_budget(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    yaml_node_t *v[BUDGET_N];
    Mark k_at[BUDGET_N];
    if (read_section(L, map, "budget", budget_keys, BUDGET_N, v, k_at)) return -1;
    if (v[BUDGET_STEPS] && v[BUDGET_EPOCHS])
        return fail(L, k_at[BUDGET_EPOCHS], "budget gives steps and epochs: give one of them");
    const int program = space_is_program(s);
    for (int k = BUDGET_EPOCHS; k <= BUDGET_CHECKPOINT_EVERY; k++) {
        const int for_program = k == BUDGET_GRACE || k == BUDGET_MAX_OUTPUT, for_engine = k != BUDGET_TIME_LIMIT && !for_program;
        if (v[k] && program && for_engine)
            return fail(L, k_at[k], "budget %s is %s of the built-in engine; %s", budget_keys[k],
                        k == BUDGET_CHECKPOINT_EVERY ? "the checkpointing" : "a trial parameter",
                        k == BUDGET_CHECKPOINT_EVERY ? "a program checkpoints itself (and continues from "
                                                       "ATTNSWEEP_RESUME_DIR)"
                                                     : "a program's trials last as its own parameters say");
        if (v[k] && !program && for_program)
            return fail(L, k_at[k], "budget %s applies to a sweep of a program (its stop after SIGTERM, its output)",
                        budget_keys[k]);
    }
    if (program) {
        double mb = 0;
        if ((v[BUDGET_STEPS] && read_int(L, v[BUDGET_STEPS], "steps", 1, 1000000000, &L->budget_steps)) ||
            (v[BUDGET_GRACE] && read_number(L, v[BUDGET_GRACE], "grace (seconds)", 0, 0, 3600, 0, &s->program.grace)) ||
            (v[BUDGET_MAX_OUTPUT] && read_number(L, v[BUDGET_MAX_OUTPUT], "max_output_mb", 0, 0, 1e7, 1, &mb)))
            return -1;
        if (v[BUDGET_MAX_OUTPUT]) s->program.max_output = mb * 1048576.0;
    } else {
        for (int k = BUDGET_STEPS; k <= BUDGET_EVAL_EVERY; k++) {  // trial parameters
            if (!v[k]) continue;
            const ParamSpec *p = param_named(budget_keys[k]);
            if (claim(L, p, k_at[k], "budget") || set_value(L, &s->base, p, v[k], NULL)) return -1;
        }
    }
    if (v[BUDGET_CHECKPOINT_EVERY] &&
        read_int(L, v[BUDGET_CHECKPOINT_EVERY], "checkpoint_every (steps; 0: only when stopped)", 0, INT_MAX,
                 &L->s->checkpoint_every))
        return -1;
    if (v[BUDGET_MAX_DEATHS] && read_int(L, v[BUDGET_MAX_DEATHS], "max_deaths", 1, 1000, &L->s->max_deaths)) return -1;
    if (v[BUDGET_MAX_FAILURES] &&
        read_int(L, v[BUDGET_MAX_FAILURES], "max_failures (0: never stop)", 0, 1000000, &L->s->max_failures))
        return -1;
    return v[BUDGET_TIME_LIMIT] ? read_number(L, v[BUDGET_TIME_LIMIT], "time_limit (seconds)", 0, 0, 1e9, 0,
                                              &s->time_limit)
                                : 0;
}

static int read_evolution(Loader *L, yaml_node_t *map) {
    yaml_node_t *v[EVO_N];
    Mark k_at[EVO_N];
    SweepSpec *s = L->s;
    if (read_section(L, map, "evolution", evo_keys, EVO_N, v, k_at)) return -1;
    if (v[EVO_POPULATION] && read_int(L, v[EVO_POPULATION], "population", 2, 100000, &s->population)) return -1;
    if (v[EVO_SAMPLE_SIZE]) {
        if (read_int(L, v[EVO_SAMPLE_SIZE], "sample_size", 1, 100000, &s->sample_size)) return -1;
        if (s->sample_size > s->population)
            return fail(L, mark_of(v[EVO_SAMPLE_SIZE]), "sample_size (%d) must be at most population (%d)",
                        s->sample_size, s->population);
    } else if (s->sample_size > s->population) {
        s->sample_size = s->population;
    }
    return 0;
}

// The scheduler's keys; checked against the budget once the whole file is read.
static int read_scheduler(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    Mark k_at[SCHED_N];
    if (read_section(L, map, "scheduler", sched_keys, SCHED_N, L->sched, k_at)) return -1;
    L->sched_what = "scheduler asha", L->sched_section = "scheduler", L->sched_min = "min_steps", L->sched_max = "max_steps";
    int k;
    if (!L->sched[SCHED_NAME]) return fail(L, mark_of(map), "scheduler needs name (allowed: asha)");
    if (read_choice(L, L->sched[SCHED_NAME], "scheduler", scheduler_names, &k)) return -1;
    s->asha = 1;
    if (!L->sched[SCHED_MIN_STEPS])
        return fail(L, mark_of(map), "scheduler asha needs min_steps (the first rung, in steps)");
    if (read_int(L, L->sched[SCHED_MIN_STEPS], "min_steps", 1, 1000000000, &s->min_steps)) return -1;
    if (L->sched[SCHED_ETA] && read_int(L, L->sched[SCHED_ETA], "eta", 2, 1000, &s->eta)) return -1;
    if (L->sched[SCHED_PER] && read_choice(L, L->sched[SCHED_PER], "per", asha_per_names, &s->asha_per_trial)) return -1;
    return L->sched[SCHED_MAX_STEPS] ? read_int(L, L->sched[SCHED_MAX_STEPS], "max_steps", 1, 1000000000, &s->max_steps)
                                     : 0;
}

// W&B's early_terminate: {type: hyperband, min_iter | max_iter and s, eta [3], strict},
// run as ASHA: min_steps = min_iter, or max_iter / eta^s with max_steps = max_iter; its
// iterations are steps (of the program's metric lines, in a program's sweep).
static int read_early_terminate(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    yaml_node_t *v[ET_N];
    Mark k_at[ET_N];
    static const char *const types[] = {"hyperband", NULL};
    int k, brackets = 0;
    if (read_section(L, map, "early_terminate", early_keys, ET_N, v, k_at)) return -1;
    if (L->top[TOP_SCHEDULER])
        return fail(L, L->top_at[TOP_EARLY_TERMINATE], "early_terminate and scheduler both stop trials early: give one");
    if (!v[ET_TYPE]) return fail(L, mark_of(map), "early_terminate needs type (allowed: hyperband)");
    if (read_choice(L, v[ET_TYPE], "early_terminate type", types, &k)) return -1;
    if (v[ET_ETA] && read_int(L, v[ET_ETA], "eta", 2, 1000, &s->eta)) return -1;
    if (v[ET_MIN_ITER] && v[ET_MAX_ITER])
        return fail(L, k_at[ET_MAX_ITER], "early_terminate gives min_iter and max_iter: give min_iter, or max_iter and s");
    if (v[ET_MIN_ITER]) {
        if (v[ET_S]) return fail(L, k_at[ET_S], "s goes with max_iter, not min_iter");
        if (read_int(L, v[ET_MIN_ITER], "min_iter", 1, 1000000000, &s->min_steps)) return -1;
        L->sched[SCHED_MIN_STEPS] = v[ET_MIN_ITER];
    } else if (v[ET_MAX_ITER]) {
        if (!v[ET_S]) return fail(L, k_at[ET_MAX_ITER], "early_terminate max_iter needs s (the number of brackets)");
        if (read_int(L, v[ET_MAX_ITER], "max_iter", 1, 1000000000, &s->max_steps) ||
            read_int(L, v[ET_S], "s", 1, 30, &brackets))
            return -1;
        long long lowest = s->max_steps;
        for (int b = 0; b < brackets; b++) lowest /= s->eta;
        if (lowest < 1)
            return fail(L, mark_of(v[ET_S]), "max_iter %d / eta^s = %d / %d^%d is below 1 iteration", s->max_steps,
                        s->max_steps, s->eta, brackets);
        s->min_steps = (int)lowest;
        L->sched[SCHED_MIN_STEPS] = v[ET_S];
        L->sched[SCHED_MAX_STEPS] = v[ET_MAX_ITER];
    } else {
        return fail(L, mark_of(map), "early_terminate needs min_iter, or max_iter and s");
    }
    if (v[ET_STRICT]) note(L, "early_terminate strict: a Weights & Biases key attnsweep does not use (ignored)");
    L->sched_what = "early_terminate hyperband", L->sched_section = "early_terminate";
    L->sched_min = v[ET_MIN_ITER] ? "min_iter" : "max_iter / eta^s",
    L->sched_max = "max_iter";
    s->asha = 1;
    char from[128];
    if (v[ET_MIN_ITER])
        snprintf(from, sizeof from, "min_iter: %d", s->min_steps);
    else
        snprintf(from, sizeof from, "max_iter: %d, s: %d", s->max_steps, brackets);
    // W&B's iteration is a value of the metric in the run's history (sweeps'
    // hyperband_stopping.py: run.metric_history(metric)[band - 1]): a program's lines that
    // hold the metric are counted, whatever their step.
    s->program.count_reports = space_is_program(s);
    note(L, "early_terminate {type: hyperband, %s, eta: %d} runs as scheduler {name: asha, min_steps: %d, eta: %d%s}, "
            "counting %s",
         from, s->eta, s->min_steps, s->eta, v[ET_MAX_ITER] ? ", max_steps: max_iter" : "",
         space_is_program(s) ? "the program's lines that report the metric (W&B's iterations)" : "optimizer steps");
    return 0;
}

// resources.mem: the memory of one worker group, Slurm's way: a number of megabytes, or
// with a suffix K, M, G or T (powers of 1024).
static int read_mem(Loader *L, yaml_node_t *n) {
    char b[64];
    const char *t = text_of(n);
    char *end = NULL;
    errno = 0;
    const double x = t ? strtod(t, &end) : NAN;
    static const char units[] = "KMGT";
    const char *u = end && *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    double scale = 1024.0 * 1024.0;
    if (u && end[1] == 0) scale = pow(1024.0, (double)(u - units + 1));
    if (!t || end == t || errno || !isfinite(x) || x <= 0 || (*end && (!u || end[1])) || x * scale < 1 << 20 ||
        x * scale > 1e18)
        return fail(L, mark_of(n),
                    "mem must be the memory of a worker group, at least 1M: megabytes, or a number with K, M, G or T "
                    "(e.g. 4G), got %s",
                    describe(n, b, sizeof b));
    L->s->mem_bytes = x * scale;
    return 0;
}

// resources: {mem: 4G} for the built-in engine's worker groups (a trial whose estimated
// peak exceeds it fails before it starts); {gpus: K, cpus: C} for each worker group of a
// program's sweep.
static int read_resources(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    yaml_node_t *v[RES_N];
    Mark k_at[RES_N];
    if (read_section(L, map, "resources", resource_keys, RES_N, v, k_at)) return -1;
    if (space_is_program(s) && v[RES_MEM])
        return fail(L, k_at[RES_MEM], "resources mem is for the built-in engine (the peak it estimates for a trial); "
                                      "a program's memory is its own");
    if (!space_is_program(s) && (v[RES_GPUS] || v[RES_CPUS]))
        return fail(L, k_at[v[RES_GPUS] ? RES_GPUS : RES_CPUS],
                    "resources %s is for a sweep of a program (the built-in engine trains on one CPU core per rank)",
                    resource_keys[v[RES_GPUS] ? RES_GPUS : RES_CPUS]);
    return (v[RES_MEM] && read_mem(L, v[RES_MEM])) ||
                   (v[RES_GPUS] && read_int(L, v[RES_GPUS], "gpus", 0, 1024, &s->program.gpus)) ||
                   (v[RES_CPUS] && read_int(L, v[RES_CPUS], "cpus", 1, 4096, &s->program.cpus))
               ? -1
               : 0;
}

// A word of the command: a plain word, or one macro as a whole word.
static int read_command_word(Loader *L, yaml_node_t *n, char **out) {
    char b[64], why[256];
    const char *t = text_of(n);
    if (!t || !t[0]) return fail(L, mark_of(n), "command words are texts, got %s", describe(n, b, sizeof b));
    if (!program_macro_known(t, why, sizeof why)) return fail(L, mark_of(n), "command: %s", why);
    *out = xstrdup(t);
    return 0;
}

// program: the training script (${program}); command: the words to run, W&B's macros in
// them [PROGRAM_DEFAULT_COMMAND].
static int read_program(Loader *L, yaml_node_t *prog, yaml_node_t *cmd) {
    ProgramSpec *ps = &L->s->program;
    char b[64];
    if (prog) {
        const char *t = text_of(prog);
        if (!t || !t[0] || prog->type != YAML_SCALAR_NODE)
            return fail(L, mark_of(prog), "program must be the path of the training script, got %s",
                        describe(prog, b, sizeof b));
        ps->program = xstrdup(t);
    }
    if (cmd) {
        const long n = cmd->type == YAML_SEQUENCE_NODE ? cmd->data.sequence.items.top - cmd->data.sequence.items.start : 0;
        if (n == 0 || n > 1000)
            return fail(L, mark_of(cmd), "command must be a list of 1 to 1000 words (W&B's form: [${env}, "
                                         "${interpreter}, ${program}, ${args}]), got %s", describe(cmd, b, sizeof b));
        ps->command = xcalloc((size_t)n, sizeof *ps->command);
        for (long k = 0; k < n; k++) {
            yaml_node_t *w = node_at(L, cmd->data.sequence.items.start[k]);
            if (read_command_word(L, w, &ps->command[k])) return -1;
            ps->n_command = (int)k + 1;
            if (!ps->program && !strcmp(ps->command[k], "${program}"))
                return fail(L, mark_of(w), "command uses ${program}, but the sweep names no program");
        }
    } else {
        if (!ps->program) return 0;
        char words[] = PROGRAM_DEFAULT_COMMAND;
        ps->command = xcalloc(4, sizeof *ps->command);
        for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
            ps->command[ps->n_command++] = xstrdup(w);
    }
    snprintf(ps->accuracy, sizeof ps->accuracy, "val_accuracy");
    ps->grace = 10;
    ps->max_output = 1024.0 * 1048576.0;
    L->s->program_params = xcalloc(MAX_PROGRAM_PARAMS, sizeof *L->s->program_params);
    return 0;
}

static int read_reward(Loader *L, yaml_node_t *map) {
    yaml_node_t *v[REWARD_N];
    Mark k_at[REWARD_N];
    RewardSpec *r = &L->s->reward;
    char b[64];
    if (read_section(L, map, "reward", reward_keys, REWARD_N, v, k_at)) return -1;
    int view = TENSOR_FUNCTION;
    if (v[REWARD_TENSOR] && read_choice(L, v[REWARD_TENSOR], "tensor", tensor_view_names, &view)) return -1;
    r->tensor = view == TENSOR_PARAMETERS ? TENSOR_PARAMETERS : TENSOR_FUNCTION;
    const char *const *m4 = tensor_mode_names[r->tensor];  // the modes of the tensor scored
    const char *const mode_names[] = {m4[0], m4[1], m4[2], m4[3], NULL};
    if ((v[REWARD_BETA] && read_number(L, v[REWARD_BETA], "beta", 0, 0, REWARD_WEIGHT_MAX, 0, &r->beta)) ||
        (v[REWARD_GAMMA] && read_number(L, v[REWARD_GAMMA], "gamma", 0, 0, REWARD_WEIGHT_MAX, 0, &r->gamma)) ||
        (v[REWARD_ENERGY] && read_number(L, v[REWARD_ENERGY], "energy", 0, REWARD_ENERGY_MIN, 1, 0, &L->s->energy)))
        return -1;
    if (v[REWARD_ACCURACY]) {  // the key of the program's lines that is its validation accuracy
        const char *t = text_of(v[REWARD_ACCURACY]);
        if (!space_is_program(L->s))
            return fail(L, k_at[REWARD_ACCURACY], "reward accuracy names a key of a program's metric lines; the "
                                                  "built-in engine's reward reads val_accuracy");
        if (!t || !t[0] || strlen(t) >= PROGRAM_KEY || !strncmp(t, "test_", 5))
            return fail(L, mark_of(v[REWARD_ACCURACY]), "reward accuracy must name a validation metric of the "
                                                        "program (1 to %d characters, not test_*), got %s",
                        PROGRAM_KEY - 1, describe(v[REWARD_ACCURACY], b, sizeof b));
        snprintf(L->s->program.accuracy, sizeof L->s->program.accuracy, "%s", t);
    }
    if (v[REWARD_MODES]) {
        yaml_node_t *n = v[REWARD_MODES];
        if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.start == n->data.sequence.items.top)
            return fail(L, mark_of(n), "modes must be a non-empty list of %s, %s, %s, %s; got %s", m4[0], m4[1], m4[2],
                        m4[3], describe(n, b, sizeof b));
        for (int m = 0; m < 4; m++) r->use_mode[m] = 0;
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            int m;
            if (read_choice(L, node_at(L, *it), "mode", mode_names, &m)) return -1;
            if (r->use_mode[m]) return fail(L, mark_of(node_at(L, *it)), "modes lists %s twice", mode_names[m]);
            r->use_mode[m] = 1;
        }
    }
    if (!v[REWARD_IDEAL_RANKS]) return 0;
    yaml_node_t *ideal = v[REWARD_IDEAL_RANKS];
    if (ideal->type != YAML_MAPPING_NODE)
        return fail(L, mark_of(ideal), "ideal_ranks must be a mapping of mode to rank, e.g. {heads: 2}; got %s",
                    describe(ideal, b, sizeof b));
    int seen[4] = {0};
    for (yaml_node_pair_t *pr = ideal->data.mapping.pairs.start; pr < ideal->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = node_at(L, pr->key);
        int m;
        if (read_choice(L, kn, "mode", mode_names, &m)) return -1;
        if (seen[m]++) return fail(L, mark_of(kn), "duplicate key '%s'", mode_names[m]);
        if (!r->use_mode[m])
            return fail(L, mark_of(kn), "ideal_ranks gives %s, but modes does not include it", mode_names[m]);
        char what[64];
        snprintf(what, sizeof what, "ideal rank of %s", mode_names[m]);
        if (read_number(L, node_at(L, pr->value), what, 0, 1, m == 3 ? (r->tensor == TENSOR_FUNCTION ? 2 : 3) : 1e6, 0,
                        &r->ideal_rank[m]))
            return -1;
    }
    return 0;
}

// Sweep name: it names results/NAME.h5, so letters, digits, '_', '-', '.'.
static int name_ok(const char *t) {
    if (!t[0] || t[0] == '.' || strlen(t) > 64) return 0;
    return strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == strlen(t);
}

// A name as W&B takes it (any text, "my sweep #2"): its file name, each other byte and a
// leading '.' made '_' ("my_sweep__2").
static char *safe_name(const char *t) {
    char *out = xstrdup(t);
    for (char *c = out; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && (*c != '.' || c == out)) *c = '_';
    return out;
}

// The file's stem ("sweeps/demo.yaml" -> "demo"), other characters made '_'.
static void default_name(SweepSpec *s) {
    const char *base = strrchr(s->path, '/');
    base = base ? base + 1 : s->path;
    int n = (int)strcspn(base, ".");
    char name[65];
    snprintf(name, sizeof name, "%.*s", n, base);
    for (char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-') *c = '_';
    s->name = xstrdup(name[0] ? name : "sweep");
}

static int read_top(Loader *L, yaml_node_t *root) {
    SweepSpec *s = L->s;
    yaml_node_t **v = L->top;
    char b[64];
    if (read_section(L, root, NULL, top_keys, TOP_N, v, L->top_at)) return -1;
    if (!v[TOP_METHOD]) return fail(L, L->root, "missing method (allowed: grid, random, sobol, evolution, tpe, motpe)");
    if (!v[TOP_PARAMETERS])
        return fail(L, L->root, "missing parameters (a mapping of parameter names to value, values, or min and max)");
    if (v[TOP_NAME]) {
        const char *t = text_of(v[TOP_NAME]);
        if (!t || !t[0] || strlen(t) > 64 || strpbrk(t, "\n\r\t"))
            return fail(L, mark_of(v[TOP_NAME]), "name must be a text of 1-64 characters on one line (it names "
                        "results/NAME.h5), got %s", describe(v[TOP_NAME], b, sizeof b));
        s->name = name_ok(t) ? xstrdup(t) : safe_name(t);
        if (!name_ok(t)) note(L, "name '%s' names its files %s (results/%s.h5)", t, s->name, s->name);
    } else {
        default_name(s);
    }
    int k;
    const char *method = text_of(v[TOP_METHOD]);
    if (method && !strcmp(method, "bayes")) {  // W&B's model-based method: attnsweep's is TPE
        k = METHOD_TPE;
        s->method_alias = "bayes";
    } else if (read_choice(L, v[TOP_METHOD], "method", method_names, &k)) {
        return -1;
    }
    s->method = (SweepMethod)k;
    if ((v[TOP_PROGRAM] || v[TOP_COMMAND]) && read_program(L, v[TOP_PROGRAM], v[TOP_COMMAND])) return -1;
    for (size_t i = 0; i < sizeof ignored_top / sizeof ignored_top[0]; i++)
        if (v[ignored_top[i]]) note(L, "%s: a Weights & Biases key attnsweep does not use (ignored)", top_keys[ignored_top[i]]);
    if (v[TOP_METRIC] && read_metric(L, v[TOP_METRIC])) return -1;
    if (v[TOP_OBJECTIVES] && s->method != METHOD_MOTPE)
        return fail(L, L->top_at[TOP_OBJECTIVES], "objectives are for method motpe (method %s optimises the metric)",
                    method_names[s->method]);
    if (s->method == METHOD_MOTPE && !v[TOP_OBJECTIVES])
        return fail(L, L->top_at[TOP_METHOD], "method motpe needs objectives (a list of {name, goal})");
    if (v[TOP_OBJECTIVES] && read_objectives(L, v[TOP_OBJECTIVES])) return -1;
    if (v[TOP_TPE] && read_tpe(L, v[TOP_TPE])) return -1;
    if (v[TOP_SEED] && read_int(L, v[TOP_SEED], "seed", 0, MAX_SEED, &s->seed)) return -1;
    if (v[TOP_REPEATS] && read_int(L, v[TOP_REPEATS], "repeats", 1, MAX_REPEATS, &s->repeats)) return -1;
    if (v[TOP_TRIALS] && v[TOP_RUN_CAP])
        return fail(L, L->top_at[TOP_RUN_CAP], "run_cap is W&B's name for trials: give one of them");
    if (v[TOP_RUN_CAP]) {
        if (read_int(L, v[TOP_RUN_CAP], "run_cap", 1, MAX_TRIALS, &s->trials)) return -1;
        v[TOP_TRIALS] = v[TOP_RUN_CAP];  // the checks of trials apply
        note(L, "run_cap: %d runs as trials: %d", s->trials, s->trials);
    } else if (v[TOP_TRIALS] && read_int(L, v[TOP_TRIALS], "trials", 1, MAX_TRIALS, &s->trials)) {
        return -1;
    }
    if (v[TOP_TASK] && space_is_program(s))
        return fail(L, L->top_at[TOP_TASK], "task is a trial parameter of the built-in engine; a sweep of a program "
                                            "passes its parameters to the program");
    if (v[TOP_TASK]) {
        const ParamSpec *p = param_named("task");
        if (claim(L, p, L->top_at[TOP_TASK], "the top level") || set_value(L, &s->base, p, v[TOP_TASK], NULL))
            return -1;
    }
    if ((v[TOP_BUDGET] && read_budget(L, v[TOP_BUDGET])) || (v[TOP_EVOLUTION] && read_evolution(L, v[TOP_EVOLUTION])) ||
        (v[TOP_SCHEDULER] && read_scheduler(L, v[TOP_SCHEDULER])) ||
        (v[TOP_EARLY_TERMINATE] && read_early_terminate(L, v[TOP_EARLY_TERMINATE])) ||
        (v[TOP_REWARD] && read_reward(L, v[TOP_REWARD])) || (v[TOP_RESOURCES] && read_resources(L, v[TOP_RESOURCES])))
        return -1;
    return read_parameters(L, v[TOP_PARAMETERS], NULL);
}

// ---- conditions

// Whether p can take the canonical `value` in the sweep: one of its listed values, or the
// base value when it is fixed or conditional. all gets those values ("mha, linear").
static int can_take(const SweepSpec *s, const ParamSpec *p, const char *value, char *all, size_t len) {
    int j = swept_index(s, p), found = 0;
    char v[TEXT_MAX];
    all[0] = 0;
    for (int k = -1; k < (j >= 0 ? s->params[j].n_values : 0); k++) {
        if (k < 0 && j >= 0 && !s->params[j].n_when) continue;
        if (k < 0)
            config_format(&s->base, p, v, sizeof v);
        else
            canonical(p, s->params[j].values[k], v, sizeof v);
        found |= !strcmp(v, value);
        size_t used = strlen(all);
        snprintf(all + used, len - used, "%s%s", used ? ", " : "", v);
    }
    return found;
}

static int read_condition(Loader *L, int j, yaml_node_t *kn, yaml_node_t *vn, Condition *cd) {
    SweepSpec *s = L->s;
    const SpaceParam *sp = &s->params[j];
    const char *name;
    if (key_text(L, kn, &name)) return -1;
    const ParamSpec *p = find_param(L, kn, " in when");
    if (!p) return -1;
    for (int i = 0; i < sp->n_when; i++)
        if (sp->when[i].param == p) return fail(L, mark_of(kn), "duplicate key '%s' in when", name);
    if (p == sp->param) return fail(L, mark_of(kn), "%s cannot depend on itself", name);
    int src = swept_index(s, p);
    if (src > j)
        return fail(L, mark_of(kn), "when refers to %s, which must be defined before %s in parameters", p->name,
                    sp->param->name);
    if (src >= 0 && !is_listed(&s->params[src]))
        return fail(L, mark_of(kn), "when can only refer to parameters with listed values, but %s has distribution %s",
                    p->name, dist_names[s->params[src].dist]);
    cd->param = p;
    int single = vn->type != YAML_SEQUENCE_NODE || p->type == PT_INTLIST;
    long count = single ? 1 : vn->data.sequence.items.top - vn->data.sequence.items.start;
    if (count == 0) return fail(L, mark_of(vn), "when %s lists no values", p->name);
    if (count > MAX_LIST) return fail(L, mark_of(vn), "when %s lists more than %d values", p->name, MAX_LIST);
    cd->values = xcalloc((size_t)count, sizeof *cd->values);
    for (long k = 0; k < count; k++) {
        yaml_node_t *e = single ? vn : node_at(L, vn->data.sequence.items.start[k]);
        TrialConfig scratch = s->base;
        char value[TEXT_MAX], all[2048];
        if (set_value(L, &scratch, p, e, NULL)) return -1;
        config_format(&scratch, p, value, sizeof value);
        cd->values[k] = xstrdup(value);
        cd->n_values = (int)k + 1;
        if (!can_take(s, p, value, all, sizeof all))
            return fail(L, mark_of(e), "condition %s: %s can never hold (%s %s %s)", p->name, value, p->name,
                        src >= 0 ? "takes" : "is fixed at", all);
    }
    return 0;
}

static int resolve_conditions(Loader *L) {
    SweepSpec *s = L->s;
    char b[64];
    for (int j = 0; j < s->n_params; j++) {
        yaml_node_t *map = L->when[j];
        if (!map) continue;
        if (map->type != YAML_MAPPING_NODE || map->data.mapping.pairs.start == map->data.mapping.pairs.top)
            return fail(L, mark_of(map), "when must map parameters to values, e.g. when: {attention: tucker}; got %s",
                        describe(map, b, sizeof b));
        SpaceParam *sp = &s->params[j];
        sp->when = xcalloc((size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start), sizeof *sp->when);
        for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
            int rc = read_condition(L, j, node_at(L, pr->key), node_at(L, pr->value), &sp->when[sp->n_when]);
            if (sp->when[sp->n_when].param) sp->n_when++;  // owned by sp from here on
            if (rc) return -1;
        }
    }
    return 0;
}

// ---- checks over the whole space

// The position of the last place (in the file) that sets one of the used parameters.
static Mark last_place(Loader *L, const unsigned char *use) {
    Mark m = L->root;
    for (size_t i = 0; i < sizeof checked_params / sizeof checked_params[0]; i++) {
        Mark a = L->set_at[param_index(param_named(checked_params[i]))];
        if (a.line > m.line || (a.line == m.line && a.col > m.col)) m = a;
    }
    for (int j = 0; j < L->s->n_params; j++) {
        Mark a = {L->s->params[j].line, L->s->params[j].col};
        if (use[j] && (a.line > m.line || (a.line == m.line && a.col > m.col))) m = a;
    }
    return m;
}

// use[j] for the swept parameters named in names, and every parameter their conditions refer to.
static void mark_used(const SweepSpec *s, const char *const *names, int n, unsigned char *use) {
    for (int j = 0; j < s->n_params; j++) use[j] = find_name(s->params[j].param->name, names, n) >= 0;
    for (int j = s->n_params - 1; j >= 0; j--)  // conditions refer to earlier parameters
        for (int i = 0; use[j] && i < s->params[j].n_when; i++) {
            int src = swept_index(s, s->params[j].when[i].param);
            if (src >= 0) use[src] = 1;
        }
}

typedef struct {
    const SweepSpec *s;
    const unsigned char *use;
    char msg[TEXT_MAX];
    char combination[TEXT_MAX + 32];
} Found;

// " (in the combination a=1, b=2)" for the used swept parameters that apply in c.
static void describe_combination(Found *f, const TrialConfig *c, const double *gene) {
    char list[TEXT_MAX] = "";
    for (int j = 0; j < f->s->n_params; j++) {
        if (!f->use[j] || gene[j] < 0 || f->s->params[j].dist == DIST_VALUE) continue;
        char v[TEXT_MAX];
        config_format(c, f->s->params[j].param, v, sizeof v);
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s=%.64s", used ? ", " : "", f->s->params[j].param->name, v);
    }
    if (list[0]) snprintf(f->combination, sizeof f->combination, " (in the combination %s)", list);
}

static int visit_check(void *ctx, const TrialConfig *c, const double *gene) {
    Found *f = ctx;
    if (config_check(c, f->msg, sizeof f->msg) == 0) return 0;
    describe_combination(f, c, gene);
    return 1;
}

static int check_combinations(Loader *L) {
    const SweepSpec *s = L->s;
    int n = (int)(sizeof checked_params / sizeof checked_params[0]);
    unsigned char *use = xcalloc((size_t)s->n_params + 1, 1);
    mark_used(s, checked_params, n, use);
    Found f = {s, use, "", ""};
    int rc = space_enumerate(s, use, 1, CHECK_LIMIT, visit_check, &f);
    Mark at = last_place(L, use);
    free(use);
    if (rc == 1) return fail(L, at, "%s%s", f.msg, f.combination);
    if (rc == 2)
        return fail(L, at, "more than %d combinations of task, attention, d_model, heads, layers, core_rank, "
                           "grassmann_offsets, recall_pairs, recall_vocab, steps and epochs to check: list fewer values",
                    CHECK_LIMIT);
    return 0;
}

// Visits the combinations of the swept parameters named in names (and of those their
// conditions refer to) until visit reports one in *f; returns space_enumerate's code.
static int find_combination(const SweepSpec *s, const char *const *names, int n, SpaceVisit visit, Found *f) {
    unsigned char *use = xcalloc((size_t)s->n_params + 1, 1);
    mark_used(s, names, n, use);
    *f = (Found){s, use, "", ""};
    const int rc = space_enumerate(s, use, 0, CHECK_LIMIT, visit, f);
    free(use);
    f->use = NULL;
    return rc;
}

// A metric measured for some tasks only (bits per byte: charlm) is one every trial has.
static int visit_metric(void *ctx, const TrialConfig *c, const double *gene) {
    Found *f = ctx;
    if (metric_applies(metric_find(f->s->metric), c->task)) return 0;
    snprintf(f->msg, sizeof f->msg, "%s", task_names[c->task]);
    describe_combination(f, c, gene);
    return 1;
}

static int check_metric(Loader *L) {
    static const char *const names[] = {"task"};
    Found f;
    return find_combination(L->s, names, 1, visit_metric, &f)
               ? fail(L, L->metric_at, "metric %s is measured for task charlm only (use val_loss): this sweep trains %s%s",
                      L->s->metric, f.msg, f.combination)
               : 0;
}

// The task's data files: cheap existence checks, naming the first missing file.
static int data_missing(const TrialConfig *c, char *msg, size_t len) {
    static const char *const fashion_files[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    char path[TEXT_MAX + 64];
    if (c->task == TASK_FASHION_MNIST) {
        const char *dir = c->data_dir[0] ? c->data_dir : FASHION_MNIST_DIR;
        for (size_t i = 0; i < sizeof fashion_files / sizeof fashion_files[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, fashion_files[i]);
            if (access(path, R_OK) != 0) {
                snprintf(msg, len, "fashion_mnist data file %.300s: %s (install the Debian package "
                         "dataset-fashion-mnist or set data_dir)", path, strerror(errno));
                return 1;
            }
        }
    } else if (c->task == TASK_CHARLM) {
        const char *dir = c->data_dir[0] ? c->data_dir : FORTUNES_DIR;
        snprintf(path, sizeof path, "%s/.", dir);
        if (access(path, R_OK | X_OK) != 0) {
            snprintf(msg, len, "charlm data directory %.300s: %s (install the Debian package fortunes or set data_dir)",
                     dir, strerror(errno));
            return 1;
        }
    }
    return 0;
}

static int visit_data(void *ctx, const TrialConfig *c, const double *gene) {
    Found *f = ctx;
    if (!data_missing(c, f->msg, sizeof f->msg)) return 0;
    describe_combination(f, c, gene);
    return 1;
}

static int check_data(Loader *L) {
    static const char *const names[] = {"task", "data_dir"};
    Found f;
    const int rc = find_combination(L->s, names, 2, visit_data, &f);
    Mark at = L->set_at[param_index(param_named("data_dir"))];
    if (!at.line) at = L->set_at[param_index(param_named("task"))];
    if (!at.line) at = L->root;
    return rc ? fail(L, at, "%s", f.msg) : 0;
}

static int count_point(void *ctx, const TrialConfig *c, const double *gene) {
    (*(long *)ctx)++;
    return 0;
}

// The grid axes of a sampled sweep (`grid: true`): their conditions refer only to axes
// (and, with a sampler that learns from results, no sampled parameter's to an axis); the
// number of their combinations in *points (1 without axes).
static int grid_axes(Loader *L, long *points) {
    SweepSpec *s = L->s;
    unsigned char *axis = xcalloc((size_t)s->n_params + 1, 1);
    int rc = 0;
    for (int j = 0; j < s->n_params && !rc; j++) {
        axis[j] = (unsigned char)s->params[j].grid;
        for (int i = 0; i < s->params[j].n_when && !rc; i++) {
            const int src = swept_index(s, s->params[j].when[i].param);
            if (src < 0 || s->params[src].grid == s->params[j].grid) continue;
            if (s->params[j].grid)
                rc = fail(L, mark_of(L->when[j]), "%s is a grid axis, so its when can refer only to other grid axes, "
                                                  "but %s is sampled", s->params[j].param->name, s->params[src].param->name);
            else if (space_adaptive(s))
                rc = fail(L, mark_of(L->when[j]),
                          "with method %s the sampled %s cannot depend on the grid axis %s (make %s a grid axis too, or "
                          "use method random or sobol)",
                          method_names[s->method], s->params[j].param->name, s->params[src].param->name,
                          s->params[j].param->name);
        }
    }
    *points = 0;
    if (!rc && space_enumerate(s, axis, 0, MAX_TRIALS, count_point, points) == 2)
        rc = fail(L, L->top_at[TOP_PARAMETERS], "the grid axes have more than %d combinations", MAX_TRIALS);
    free(axis);
    return rc;
}

// W&B's grid order (sweeps' grid_search.py: itertools.product over the parameters sorted
// by name, the last fastest) for a grid that run_cap cuts short, where no condition
// orders the parameters; 1 when they were sorted.
static int wandb_grid_order(Loader *L) {
    SweepSpec *s = L->s;
    for (int j = 0; j < s->n_params; j++)
        if (s->params[j].n_when || L->when[j]) return 0;
    for (int j = 1; j < s->n_params; j++)
        for (int i = j; i > 0 && strcmp(s->params[i - 1].param->name, s->params[i].param->name) > 0; i--) {
            const SpaceParam t = s->params[i];
            s->params[i] = s->params[i - 1], s->params[i - 1] = t;
        }
    return 1;
}

// Every conditional parameter applies in some combination; the grid's size and trials.
static int check_size(Loader *L) {
    SweepSpec *s = L->s;
    unsigned char *active = xcalloc((size_t)s->n_params + 1, 1);
    long size;
    int rc = count_space(s, &size, active);
    int j = 0;
    while (j < s->n_params && (!s->params[j].n_when || active[j])) j++;
    free(active);
    if (rc == 2)
        return fail(L, L->top_at[TOP_PARAMETERS], "conditions refer to more than %d combinations of values",
                    SOURCE_LIMIT);
    if (j < s->n_params)
        return fail(L, mark_of(L->when[j]), "the conditions of %s never hold together in any combination",
                    s->params[j].param->name);
    s->grid_points = 1;
    if (s->method != METHOD_GRID) {
        char as[64] = "";
        if (s->method_alias) snprintf(as, sizeof as, "%s (runs as %s)", s->method_alias, method_names[s->method]);
        if (L->top[TOP_TRIALS] && s->trials % s->repeats)
            return fail(L, mark_of(L->top[TOP_TRIALS]), "trials (%d) must be a multiple of repeats (%d)", s->trials,
                        s->repeats);
        long points;
        if (grid_axes(L, &points)) return -1;
        if (!L->top[TOP_TRIALS]) {  // W&B's sampled sweep without run_cap: until it is stopped
            s->until_stopped = 1;
            s->trials = (int)(MAX_TRIALS / points / s->repeats * s->repeats);
            note(L, "no %s: method %s runs until stopped (SIGTERM or SIGUSR1 to mpirun, Slurm's time limit, "
                    "budget.max_failures), at most %ld trials", space_is_program(s) ? "run_cap or trials" : "trials",
                 as[0] ? as : method_names[s->method], (long)s->trials * points);
        }
        if (points > MAX_TRIALS / s->trials)
            return fail(L, mark_of(L->top[TOP_TRIALS]),
                        "trials times the grid axes' combinations, %d x %ld, is more than %d trials", s->trials, points,
                        MAX_TRIALS);
        s->grid_points = (int)points;
        s->trials *= (int)points;
    } else {
        if (size == LONG_MAX)  // the count saturated
            return fail(L, L->top_at[TOP_PARAMETERS], "the grid has more than 9.2e18 points (at most %d trials)",
                        MAX_TRIALS);
        if (size > MAX_TRIALS / s->repeats)
            return fail(L, L->top_at[TOP_PARAMETERS], "the grid's size times repeats, %ld x %d, is more than %d trials",
                        size, s->repeats, MAX_TRIALS);
        long want = size * s->repeats;
        if (L->top[TOP_RUN_CAP] && s->trials < want) {  // W&B's grid stops at run_cap
            if (s->trials % s->repeats)
                return fail(L, mark_of(L->top[TOP_RUN_CAP]), "run_cap (%d) must be a multiple of repeats (%d)",
                            s->trials, s->repeats);
            const int sorted = wandb_grid_order(L);
            note(L, "run_cap: %d of the grid's %ld trials run, the first in %s", s->trials, want,
                 sorted ? "W&B's order (the parameters by name, the last fastest)"
                        : "the file's order (the last parameter fastest; conditions keep W&B's by-name order out)");
            want = s->trials;
        } else if (L->top[TOP_RUN_CAP] && s->trials > want) {
            note(L, "run_cap: %d is more than the grid's %ld trials: the grid ends first, as W&B's", s->trials, want);
        } else if (L->top[TOP_TRIALS] && s->trials != want)
            return fail(L, mark_of(L->top[TOP_TRIALS]),
                        "trials (%d) must equal the grid's size times repeats, %ld x %d = %ld (or be left out)",
                        s->trials, size, s->repeats, want);
        s->trials = (int)want;
    }
    int dims = 0;
    for (int i = 0; i < s->n_params; i++) dims += s->params[i].dist != DIST_VALUE && !s->params[i].grid;
    if (s->method == METHOD_SOBOL && dims > SOBOL_MAX_DIM)
        return fail(L, L->top_at[TOP_METHOD], "method sobol handles at most %d swept parameters, this sweep has %d",
                    SOBOL_MAX_DIM, dims);
    return 0;
}

// ASHA rungs are steps: the budget must be a fixed number of steps, max_steps equal to it.
// A program's sweep has no such budget: its rungs end at max_steps, or at the budget's
// steps, or go on as long as the program's steps do.
static int check_scheduler(Loader *L) {
    SweepSpec *s = L->s;
    if (!s->asha) return 0;
    const char *what = L->sched_what, *section = L->sched_section, *min = L->sched_min, *max = L->sched_max;
    if (space_is_program(s)) {
        // The reward needs the scored checkpoint, which a program has only at its end: at
        // every rung all trials would rank alike, and ASHA would stop them at random.
        if (!strcmp(s->metric, "reward"))
            return fail(L, L->top_at[L->top[TOP_SCHEDULER] ? TOP_SCHEDULER : TOP_EARLY_TERMINATE],
                        "%s cannot decide on reward in a program's sweep: the reward is known only once the final "
                        "checkpoint is scored, not at the rungs (decide on a metric the program reports, e.g. "
                        "metric: {name: val_loss, goal: minimize}, or leave the %s out)",
                        what, section);
        if (L->budget_steps && L->sched[SCHED_MAX_STEPS] && s->max_steps != L->budget_steps)
            return fail(L, mark_of(L->sched[SCHED_MAX_STEPS]), "%s %s (%d) must equal the budget's steps (%d) (or be "
                        "left out)", section, max, s->max_steps, L->budget_steps);
        if (!L->sched[SCHED_MAX_STEPS]) s->max_steps = L->budget_steps ? L->budget_steps : INT_MAX;
    } else {
        const ParamSpec *steps = param_named("steps"), *epochs = param_named("epochs");
        int j = swept_index(s, steps);
        if (j >= 0) {
            Mark m = {s->params[j].line, s->params[j].col};
            return fail(L, m, "%s needs a fixed number of steps, so steps cannot be swept", what);
        }
        if (L->set_at[param_index(epochs)].line)
            return fail(L, L->set_at[param_index(epochs)], "%s counts steps: give steps instead of epochs", what);
        if (L->sched[SCHED_MAX_STEPS]) {
            Mark m = L->set_at[param_index(steps)];
            if (m.line && s->base.steps != s->max_steps)
                return fail(L, mark_of(L->sched[SCHED_MAX_STEPS]),
                            "%s %s (%d) must equal the budget's steps (%d) (or be left out)", section, max,
                            s->max_steps, s->base.steps);
            char text[32];
            snprintf(text, sizeof text, "%d", s->max_steps);
            set_text(&s->base, steps, text);
        } else if (s->base.steps == 0) {
            return fail(L, L->top_at[L->top[TOP_SCHEDULER] ? TOP_SCHEDULER : TOP_EARLY_TERMINATE],
                        "%s needs budget steps (its rungs are counted in steps)", what);
        }
        s->max_steps = s->base.steps;
    }
    if (s->min_steps >= s->max_steps)
        return fail(L, mark_of(L->sched[SCHED_MIN_STEPS]), "%s %s (%d) must be less than %s (%d)", section, min,
                    s->min_steps, max, s->max_steps);
    return 0;
}

// Where PATH's directories hold an executable file named word (or word itself, with a '/').
static int executable(const char *word) {
    char full[4096];
    return program_on_path(word, full, sizeof full);
}

// A program's sweep: the program and the command's executable exist here (paths from
// the working directory, as the workers run it), parameter columns and the metric are
// distinct, and whether the trials' weights are scored.
static int check_program(Loader *L) {
    SweepSpec *s = L->s;
    ProgramSpec *ps = &s->program;
    const Mark at = L->top[TOP_PROGRAM] ? mark_of(L->top[TOP_PROGRAM]) : mark_of(L->top[TOP_COMMAND]);
    if (ps->program && access(ps->program, R_OK) != 0)
        return fail(L, at, "program %s: %s (its path is relative to the directory attnsweep runs in)", ps->program,
                    strerror(errno));
    char err[256];
    char **argv;
    int argc;
    if (program_command(ps, &s->base, "args.json", &argv, &argc, err, sizeof err))
        return fail(L, at, "command: %s", err);
    const int found = executable(argv[0]);
    char exe[256];
    snprintf(exe, sizeof exe, "%s", argv[0]);
    int env_ok = 1;
    if (found && !strcmp(argv[0], "/usr/bin/env") && argc > 1) env_ok = executable(argv[1]), snprintf(exe, sizeof exe, "%s", argv[1]);
    program_argv_free(argv);
    if (!found || !env_ok)
        return fail(L, at, "command: %s is not %s", exe,
                    strchr(exe, '/') ? "an executable file" : "an executable on PATH (load what the program needs first)");
    for (int k = 0; k < s->n_program_params; k++) {
        const ParamSpec *p = &s->program_params[k];
        for (int j = 0; j < s->n_program_params; j++)
            if (j != k && !strcmp(config_column(p), s->program_params[j].name))
                return fail(L, L->top_at[TOP_PARAMETERS], "parameters %s and %s would share the /summary column %s "
                            "(%s is a result column): rename one", p->name, s->program_params[j].name, config_column(p),
                            p->name);
        if (ps->metric[0] && !strcmp(ps->metric, p->name))
            return fail(L, L->metric_at, "metric %s is also the name of a parameter: they would share a /summary column",
                        ps->metric);
    }
    if (!L->top[TOP_METRIC] && !L->top[TOP_REWARD] && s->method == METHOD_MOTPE) {  // the first objective
        snprintf(s->metric, sizeof s->metric, "%s", s->objective[0]);
        s->maximize = s->objective_maximize[0];
    } else if (!L->top[TOP_METRIC] && !L->top[TOP_REWARD]) {  // W&B's metric is optional
        snprintf(s->metric, sizeof s->metric, "val_loss");
        s->maximize = 0;
        note(L, "no metric and no reward section: the program's val_loss ranks the trials (minimize), no scores");
    }
    int own = -1;  // motpe's objective that is the program's own
    for (int k = 0; s->method == METHOD_MOTPE && k < s->n_objectives; k++)
        if (!strcmp(s->objective[k], ps->metric)) own = k;
    if (own >= 0) metric_program(&s->program_metric, s->objective[own], s->objective_maximize[own]);
    else metric_program(&s->program_metric, s->metric, s->maximize);
    int scores = !strcmp(s->metric, "reward") || L->top[TOP_REWARD] != NULL;
    for (int k = 0; s->method == METHOD_MOTPE && k < s->n_objectives; k++)
        scores |= space_objective_metric(s, k)->use == METRIC_RANKS || !strcmp(s->objective[k], "reward");
    ps->needs_checkpoint = scores;
    return 0;
}

// ---- libyaml

// Line and column (1-based, in characters) of byte offset `at`.
static Mark mark_at_offset(const char *text, size_t len, size_t at) {
    Mark m = {1, 1};
    for (size_t i = 0; i < at && i < len; i++) {
        if (text[i] == '\n')
            m.line++, m.col = 1;
        else if (((unsigned char)text[i] & 0xC0) != 0x80)
            m.col++;
    }
    return m;
}

// The byte at a 1-based line and character column, or 0.
static char char_at(const char *text, size_t len, Mark m) {
    size_t i = 0;
    for (int line = 1; line < m.line && i < len; i++)
        if (text[i] == '\n') line++;
    for (int col = 1; i < len && text[i] != '\n'; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80 && col++ == m.col) return text[i];
    return 0;
}

static int syntax_error(Loader *L, const yaml_parser_t *P) {
    if (P->error == YAML_MEMORY_ERROR) return fail(L, (Mark){1, 1}, "out of memory while reading the YAML");
    if (P->error == YAML_READER_ERROR) {
        Mark m = mark_at_offset(L->text, L->len, P->problem_offset);
        if (P->problem_value >= 0)
            return fail(L, m, "YAML syntax error: %s (byte 0x%02x)", P->problem, (unsigned)P->problem_value & 0xFF);
        return fail(L, m, "YAML syntax error: %s", P->problem);
    }
    Mark m = {(int)P->problem_mark.line + 1, (int)P->problem_mark.column + 1};
    const char *problem = P->problem ? P->problem : "malformed YAML";
    if (char_at(L->text, L->len, m) == '\t')
        return fail(L, m, "YAML syntax error: %s (a tab: indent with spaces)", problem);
    if (P->context)
        return fail(L, m, "YAML syntax error: %s (%s at %d:%d)", problem, P->context, (int)P->context_mark.line + 1,
                    (int)P->context_mark.column + 1);
    return fail(L, m, "YAML syntax error: %s", problem);
}

int space_yaml_guard(const char *text, size_t len, int *line, int *col, char *why, size_t whylen) {
    *line = *col = 1;
    if (len > MAX_FILE_BYTES) {
        snprintf(why, whylen, "larger than %d bytes: not a sweep file", MAX_FILE_BYTES);
        return -1;
    }
    int depth = 0, comment = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\n') {
            ++*line, *col = 1, comment = 0;
            continue;
        }
        if (c == '#' && (i == 0 || strchr(" \t\n", text[i - 1]))) comment = 1;
        if (!comment && (c == '[' || c == '{') && ++depth > MAX_FLOW_DEPTH) {
            snprintf(why, whylen, "lists and mappings nested more than %d deep", MAX_FLOW_DEPTH);
            return -1;
        }
        if (!comment && (c == ']' || c == '}') && depth > 0) depth--;
        if (((unsigned char)c & 0xC0) != 0x80) ++*col;
    }
    return 0;
}

// A regulariser the sweep searches that minimises a term of its own reward: its gain in
// reward is partly by construction (lambda_orth pushes apart the very heads whose mean
// |cos| is the Correlation term; lambda_stability holds still the heads' singular values
// that RankDeviation reads), so the note says to judge it by the validation metrics.
static void note_regularised_terms(Loader *L) {
    const SweepSpec *s = L->s;
    if (strcmp(s->metric, "reward") != 0) return;
    static const struct {
        const char *param, *term, *what;
    } minimised[] = {
        {"lambda_orth", "Correlation", "pushes apart the heads whose mean |cos| is the reward's Correlation term"},
        {"lambda_stability", "RankDeviation", "holds still the heads' singular values the reward's RankDeviation reads"},
    };
    for (size_t k = 0; k < sizeof minimised / sizeof minimised[0]; k++) {
        const double weight = k == 0 ? s->reward.gamma : s->reward.beta;
        for (int j = 0; weight > 0 && j < s->n_params; j++)
            if (!strcmp(s->params[j].param->name, minimised[k].param))
                note(L, "%s:%d:%d: %s %s (%s = %g): what it gains in reward is partly by construction; judge it "
                     "by val_accuracy, as the report's ablations and verdict do",
                     L->path, s->params[j].line, s->params[j].col, minimised[k].param, minimised[k].what,
                     k == 0 ? "gamma" : "beta", weight);
    }
}

static int check_nesting(Loader *L) {
    Mark m;
    char why[128];
    return space_yaml_guard(L->text, L->len, &m.line, &m.col, why, sizeof why) ? fail(L, m, "%s", why) : 0;
}

static int load_yaml(Loader *L) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return fail(L, (Mark){1, 1}, "out of memory while reading the YAML");
    yaml_parser_set_input_string(&parser, (const unsigned char *)L->text, L->len);
    int rc = 0;
    if (!yaml_parser_load(&parser, &L->doc)) {
        rc = syntax_error(L, &parser);
    } else {
        L->have_doc = 1;
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            rc = syntax_error(L, &parser);
        } else {
            yaml_node_t *r = yaml_document_get_root_node(&extra);
            if (r) rc = fail(L, mark_of(r), "a second YAML document: a sweep file holds one");
            yaml_document_delete(&extra);
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

static int read_sweep(Loader *L) {
    SweepSpec *s = L->s;
    if (check_nesting(L) || load_yaml(L)) return -1;
    yaml_node_t *root = yaml_document_get_root_node(&L->doc);
    if (!root) return fail(L, (Mark){1, 1}, "empty file (a sweep needs method and parameters)");
    L->root = mark_of(root);
    if (read_top(L, root) || resolve_conditions(L) || check_size(L) || check_scheduler(L)) return -1;
    if (space_is_program(s) ? check_program(L) : check_combinations(L) || check_metric(L) || check_data(L)) return -1;
    if (!space_is_program(s)) note_regularised_terms(L);
    char text[32];
    snprintf(text, sizeof text, "%d", s->seed * 1000);  // repeat 0's seed (sampler.c)
    set_text(&s->base, seed_param(), text);
    return 0;
}

int space_parse(SweepSpec *s, const char *path, const char *text, size_t len, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->path = xstrdup(path);
    s->text = xmalloc(len + 1);
    memcpy(s->text, text, len);
    s->text[len] = 0;
    config_defaults(&s->base);
    snprintf(s->metric, sizeof s->metric, "reward");
    s->maximize = 1;
    s->repeats = 1;
    s->seed = 1;
    s->eta = 3;
    s->population = 8;
    s->sample_size = 3;
    s->tpe = (TpeOptions){.n_startup = 10, .gamma = 0.1, .candidates = 24, .multivariate = 1, .constant_liar = 1,
                          .prior_weight = 1.0, .history = 500};
    s->n_objectives = 1;
    reward_spec_default(&s->reward);
    s->energy = 0.99;
    s->checkpoint_every = -1;
    s->max_deaths = 2;
    s->max_failures = 5;  // W&B's agent: WANDB_AGENT_MAX_INITIAL_FAILURES, 5

    Loader L = {.s = s, .path = path, .text = s->text, .len = len, .err = err, .errlen = errlen};
    L.set_at = xcalloc((size_t)config_nparams, sizeof *L.set_at);
    L.set_in = xcalloc((size_t)config_nparams, sizeof *L.set_in);
    int rc = read_sweep(&L);
    if (L.have_doc) yaml_document_delete(&L.doc);
    free(L.set_at);
    free(L.set_in);
    free(L.when);
    if (rc) space_free(s);
    return rc ? -1 : 0;
}

int space_load(SweepSpec *s, const char *path, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = xmalloc((size_t)MAX_FILE_BYTES + 2);
    size_t len = fread(text, 1, (size_t)MAX_FILE_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    int rc = -1;
    if (bad)
        snprintf(err, errlen, "%s: read error", path);
    else
        rc = space_parse(s, path, text, len, err, errlen);
    free(text);
    return rc;
}

void space_free(SweepSpec *s) {
    for (int j = 0; j < s->n_params; j++) {
        SpaceParam *p = &s->params[j];
        for (int k = 0; k < p->n_values; k++) free(p->values[k]);
        free(p->values);
        free(p->probabilities);
        for (int i = 0; i < p->n_when; i++) {
            for (int k = 0; k < p->when[i].n_values; k++) free(p->when[i].values[k]);
            free(p->when[i].values);
        }
        free(p->when);
    }
    free(s->params);
    for (int k = 0; k < s->n_program_params; k++) {
        free((char *)s->program_params[k].name);
        free((char *)s->program_params[k].column);
    }
    free(s->program_params);
    program_spec_free(&s->program);
    for (int k = 0; k < s->n_notes; k++) free(s->notes[k]);
    free(s->notes);
    free(s->path);
    free(s->name);
    free(s->text);
    memset(s, 0, sizeof *s);
}

int space_adaptive(const SweepSpec *s) {
    return s->method == METHOD_EVOLUTION || s->method == METHOD_TPE || s->method == METHOD_MOTPE;
}
