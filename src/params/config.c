#define _POSIX_C_SOURCE 200809L  // strtok_r
#include "params/config.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const task_names[] = {"fashion_mnist", "charlm", "recall", NULL};
const char *const attention_names[] = {"mha", "tucker", "linear", "grassmann", NULL};
const char *const grassmann_block_names[] = {"paper", "preln", NULL};

#define OFF(f) offsetof(TrialConfig, f)
#define BIG 1e9
#define PROGRAM_INT_MAX 9007199254740992.0  // 2^53: a double holds every integer up to it
#define FIELDS(name_, type_, field, def_, lo, hi, choices_, def_text_, help_)                                   \
    .name = name_, .type = type_, .offset = OFF(field), .def = def_, .min = lo, .max = hi, .choices = choices_, \
    .def_text = def_text_, .help = help_
#define PARAM(...) {FIELDS(__VA_ARGS__)}
// steps asked for, beside the result column steps (optimizer steps taken): config_steps
#define STEPS_PARAM(...) {FIELDS(__VA_ARGS__), .column = "config_steps"}

const ParamSpec config_params[] = {
    PARAM("task", PT_CHOICE, task, 0, 0, 0, task_names, "fashion_mnist", "task: fashion_mnist, charlm or recall"),
    PARAM("attention", PT_CHOICE, attention, 0, 0, 0, attention_names, "mha", "attention variant: mha, tucker, linear or grassmann"),
    PARAM("d_model", PT_INT, d_model, 64, 1, 4096, NULL, NULL, "model width"),
    PARAM("heads", PT_INT, heads, 4, 1, 256, NULL, NULL, "attention heads (must divide d_model)"),
    PARAM("layers", PT_INT, layers, 2, 1, 64, NULL, NULL, "transformer blocks"),
    PARAM("mlp_ratio", PT_INT, mlp_ratio, 4, 1, 16, NULL, NULL, "MLP hidden width / d_model"),
    PARAM("core_rank", PT_INT, core_rank, 2, 1, 256, NULL, NULL, "tucker: rank R of the head-interaction core (1 <= R <= heads)"),
    PARAM("grassmann_rank", PT_INT, grassmann_rank, 32, 2, 256, NULL, NULL, "grassmann: reduced dimension r"),
    PARAM("grassmann_block", PT_CHOICE, grassmann_block, 0, 0, 0, grassmann_block_names, "preln", "grassmann: block, paper (mix, LayerNorm, FFN with its residual, LayerNorm) or preln (pre-LN residual block)"),
    PARAM("grassmann_offsets", PT_INTLIST, offsets, 0, 1, 4096, NULL, "1,2,4,8,12,16", "grassmann: causal offsets, comma-separated; one group for all layers or one a layer, separated by ';' (1,2;4,8)"),
    PARAM("seq_len", PT_INT, seq_len, 64, 2, 4096, NULL, NULL, "charlm: bytes per sequence"),
    PARAM("recall_pairs", PT_INT, recall_pairs, 8, 1, 1024, NULL, NULL, "recall: key-value pairs per sequence"),
    PARAM("recall_vocab", PT_INT, recall_vocab, 64, 4, 65536, NULL, NULL, "recall: vocabulary (half keys, half values)"),
    STEPS_PARAM("steps", PT_INT, steps, 0, 0, BIG, NULL, NULL, "optimizer steps (0: from --epochs)"),
    PARAM("epochs", PT_REAL, epochs, 1, 0, 1000, NULL, NULL, "passes over the training set (when steps is 0)"),
    PARAM("batch", PT_INT, batch, 128, 1, 65536, NULL, NULL, "sequences per step"),
    PARAM("lr", PT_REAL, lr, 2e-3, 0, 10, NULL, NULL, "peak learning rate"),
    PARAM("min_lr_ratio", PT_REAL, min_lr_ratio, 0.1, 0, 1, NULL, NULL, "final learning rate / peak (cosine decay)"),
    PARAM("warmup_frac", PT_REAL, warmup_frac, 0.05, 0, 1, NULL, NULL, "fraction of steps in linear warm-up"),
    PARAM("weight_decay", PT_REAL, weight_decay, 0.01, 0, 10, NULL, NULL, "AdamW decoupled weight decay (matrices only)"),
    PARAM("clip", PT_REAL, clip, 1.0, 0, BIG, NULL, NULL, "global gradient-norm clip (0: off)"),
    PARAM("seed", PT_INT, seed, 1, 0, 2147483647, NULL, NULL, "random seed (initialisation, batches, generated data)"),
    PARAM("eval_every", PT_INT, eval_every, 0, 0, BIG, NULL, NULL, "steps between evaluations (0: about 10 per run)"),
    PARAM("eval_batches", PT_INT, eval_batches, 0, 0, BIG, NULL, NULL, "held-out batches per evaluation (0: all)"),
    PARAM("lambda_orth", PT_REAL, lambda_orth, 0, 0, 1e6, NULL, NULL, "head orthogonality penalty strength"),
    PARAM("lambda_nuclear", PT_REAL, lambda_nuclear, 0, 0, 1e6, NULL, NULL, "nuclear-norm penalty strength"),
    PARAM("lambda_stability", PT_REAL, lambda_stability, 0, 0, 1e6, NULL, NULL, "invariant-stability penalty strength"),
    PARAM("stability_window", PT_INT, stability_window, 50, 1, 100000, NULL, NULL, "stability: compare with the weights this many steps ago"),
    PARAM("lambda_l2", PT_REAL, lambda_l2, 0, 0, 1e6, NULL, NULL, "plain L2 penalty on attention weights (control arm)"),
    PARAM("data_dir", PT_TEXT, data_dir, 0, 0, 0, NULL, "", "data directory (default: the Debian package's)"),
};
const int config_nparams = (int)(sizeof config_params / sizeof config_params[0]);

// The defaults, made once from the table: a replay of 50,000 trials' configurations
// spent a fifth of its time formatting and parsing them again for each.
static TrialConfig defaults;
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;

static void make_defaults(void) {
    char err[256];
    for (int i = 0; i < config_nparams; i++) {
        const ParamSpec *p = &config_params[i];
        char buf[64];
        const char *text = p->def_text;
        if (p->type == PT_INT || p->type == PT_REAL) {
            snprintf(buf, sizeof buf, "%.17g", p->def);
            text = buf;
        }
        if (config_set(&defaults, p, text, err, sizeof err) != 0) {
            fprintf(stderr, "attnsweep: internal error: default of %s: %s\n", p->name, err);
            abort();
        }
    }
}

void config_defaults(TrialConfig *c) {
    pthread_once(&defaults_once, make_defaults);
    *c = defaults;
}

// Compare names treating '-' and '_' alike.
static int same_name(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;
        if (x != y) return 0;
    }
    return *a == *b;
}

const ParamSpec *config_find(const char *name) {
    for (int i = 0; i < config_nparams; i++)
        if (same_name(config_params[i].name, name)) return &config_params[i];
    return NULL;
}

int name_distance(const char *a, const char *b) {
    int n = (int)strlen(a), m = (int)strlen(b);
    if (n > 63 || m > 63) return INT_MAX;
    int d[64][64];
    for (int i = 0; i <= n; i++) d[i][0] = i;
    for (int j = 0; j <= m; j++) d[0][j] = j;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= m; j++) {
            char x = a[i - 1] == '-' ? '_' : a[i - 1], y = b[j - 1] == '-' ? '_' : b[j - 1];
            int best = d[i - 1][j - 1] + (x != y);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

// About one edit per three characters: "lamda-orth" -> lambda_orth, "d-modle" -> d_model,
// but no guess for an unrelated short word ("quiet" is not "clip").
static int close_enough(const char *name, int distance) { return distance <= ((int)strlen(name) + 2) / 3; }

const char *closest_name(const char *name, const char *const *names, int n) {
    const char *best = NULL;
    int bd = INT_MAX;
    for (int i = 0; i < n; i++) {
        const int d = name_distance(name, names[i]);
        if (d < bd) bd = d, best = names[i];
    }
    return best && close_enough(name, bd) ? best : NULL;
}

const char *config_closest(const char *name) {
    const char *best = NULL;
    int bd = INT_MAX;
    for (int i = 0; i < config_nparams; i++) {
        const int d = name_distance(name, config_params[i].name);
        if (d < bd) bd = d, best = config_params[i].name;
    }
    return best && close_enough(name, bd) ? best : NULL;
}

static void list_choices(const char *const *choices, char *out, size_t outlen) {
    out[0] = 0;
    for (int i = 0; choices[i]; i++) {
        size_t used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s", i ? ", " : "", choices[i]);
    }
}

static int parse_long(const char *text, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(text, &end, 10);
    return errno == 0 && end != text && *end == 0;
}

static ProgramValue *slot_of(TrialConfig *c, const ParamSpec *p) { return (ProgramValue *)((char *)c + p->offset); }
static const ProgramValue *cslot_of(const TrialConfig *c, const ParamSpec *p) {
    return (const ProgramValue *)((const char *)c + p->offset);
}

void config_program_param(ParamSpec *p, const char *name, const char *column, ParamType type, int slot) {
    *p = (ParamSpec){.name = name, .type = type, .offset = OFF(program) + (size_t)slot * sizeof(ProgramValue),
                     .min = type == PT_INT ? -PROGRAM_INT_MAX : -DBL_MAX,
                     .max = type == PT_INT ? PROGRAM_INT_MAX : DBL_MAX, .def_text = "",
                     .help = "a parameter of the sweep's program", .program = 1, .column = column};
}

void config_program_declare(TrialConfig *c, const ParamSpec *p) {
    ProgramValue *v = slot_of(c, p);
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", p->name);
    v->type = p->type;
    const int n = (int)((p->offset - OFF(program)) / sizeof(ProgramValue)) + 1;
    if (c->n_program < n) c->n_program = n;
}

const ProgramValue *config_program_find(const TrialConfig *c, const char *name) {
    for (int i = 0; i < c->n_program; i++)
        if (!strcmp(c->program[i].name, name)) return &c->program[i];
    return NULL;
}

void config_program_format(const ProgramValue *v, char *out, size_t outlen) {
    if (v->type == PT_TEXT) {
        snprintf(out, outlen, "%s", v->text);
    } else if (v->type == PT_INT) {
        snprintf(out, outlen, "%.0f", v->number);
    } else {  // the shortest text strtod reads back as the same double
        for (int digits = 1; digits <= 17; digits++) {
            snprintf(out, outlen, "%.*g", digits, v->number);
            if (strtod(out, NULL) == v->number) break;
        }
    }
}

// A program parameter: its text parsed by type into its slot, which then counts as set.
// A program parameter's value, set, into its slot.
static void program_store(TrialConfig *c, const ParamSpec *p, ProgramValue v) {
    v.type = p->type;
    v.set = 1;
    snprintf(v.name, sizeof v.name, "%s", p->name);
    config_program_declare(c, p);
    *slot_of(c, p) = v;
}

static int program_set(TrialConfig *c, const ParamSpec *p, const char *text, char *err, size_t errlen) {
    ProgramValue v = {0};
    if (p->type == PT_TEXT) {
        if (strlen(text) >= PROGRAM_TEXT) {
            snprintf(err, errlen, "%s: the value '%.40s...' is longer than %d characters", p->name, text,
                     PROGRAM_TEXT - 1);
            return -1;
        }
        snprintf(v.text, sizeof v.text, "%s", text);
    } else {
        char *end;
        errno = 0;
        v.number = strtod(text, &end);
        if (errno != 0 || end == text || *end != 0 || !isfinite(v.number)) {
            snprintf(err, errlen, "%s must be a finite number, got '%s'", p->name, text);
            return -1;
        }
        if (p->type == PT_INT && (v.number != floor(v.number) || strpbrk(text, ".eE"))) {
            snprintf(err, errlen, "%s must be an integer, got '%s'", p->name, text);
            return -1;
        }
        if (v.number < p->min || v.number > p->max) {
            snprintf(err, errlen, "%s must be in [%g, %g], got %s", p->name, p->min, p->max, text);
            return -1;
        }
    }
    program_store(c, p, v);
    return 0;
}

// One group of the schedule: offsets separated by commas or spaces, each in p's range,
// none twice, at most MAX_OFFSETS. Appends them to vals[*n] and returns how many.
static int parse_group(const ParamSpec *p, char *text, int *vals, int *n, char *err, size_t errlen) {
    int first = *n;
    for (char *save, *tok = strtok_r(text, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        long long v;
        if (!parse_long(tok, &v) || v < p->min || v > p->max) {
            snprintf(err, errlen, "%s must be integers in [%.0f, %.0f], got '%s'", p->name, p->min, p->max, tok);
            return -1;
        }
        if (*n - first == MAX_OFFSETS) {
            snprintf(err, errlen, "%s takes at most %d offsets a layer", p->name, MAX_OFFSETS);
            return -1;
        }
        for (int i = first; i < *n; i++)
            if (vals[i] == v) {
                snprintf(err, errlen, "%s lists %lld twice in one layer", p->name, v);
                return -1;
            }
        vals[(*n)++] = (int)v;  // *n < MAX_OFFSETS_ALL: the text has at most that many
    }
    if (*n == first) {
        snprintf(err, errlen, "%s needs at least one offset in every layer's group", p->name);
        return -1;
    }
    return *n - first;
}

// The schedule "1,2;4,8;12,16": groups separated by ';', one for every layer or one
// for all (config_check compares the count with layers).
static int set_schedule(TrialConfig *c, const ParamSpec *p, const char *text, char *err, size_t errlen) {
    int vals[MAX_OFFSETS_ALL] = {0}, len[MAX_OFFSET_GROUPS] = {0}, n = 0, groups = 0;
    char buf[CONFIG_TEXT];
    if (strlen(text) >= sizeof buf) {
        snprintf(err, errlen, "%s is longer than %d characters", p->name, CONFIG_TEXT - 1);
        return -1;
    }
    strcpy(buf, text);
    for (char *group = buf, *end = buf; end; group = end + 1) {
        end = strchr(group, ';');
        if (end) *end = 0;
        if (groups == MAX_OFFSET_GROUPS) {
            snprintf(err, errlen, "%s has more than %d groups (one a layer)", p->name, MAX_OFFSET_GROUPS);
            return -1;
        }
        int k = parse_group(p, group, vals, &n, err, errlen);
        if (k < 0) return -1;
        len[groups++] = k;
    }
    memcpy(c->offsets, vals, sizeof vals);
    memcpy(c->group_len, len, sizeof len);
    c->n_offsets = n, c->n_groups = groups;
    return 0;
}

int config_set(TrialConfig *c, const ParamSpec *p, const char *text, char *err, size_t errlen) {
    if (p->program) return program_set(c, p, text, err, errlen);
    char *base = (char *)c + p->offset;
    switch (p->type) {
    case PT_INT: {
        long long v;
        if (!parse_long(text, &v)) {
            if (errno == ERANGE && strspn(text, "+-0123456789") == strlen(text))  // beyond long long
                snprintf(err, errlen, "%s must be in [%.0f, %.0f], got %s", p->name, p->min, p->max, text);
            else
                snprintf(err, errlen, "%s must be an integer, got '%s'", p->name, text);
            return -1;
        }
        if (v < p->min || v > p->max) {
            snprintf(err, errlen, "%s must be in [%.0f, %.0f], got %lld", p->name, p->min, p->max, v);
            return -1;
        }
        *(int *)base = (int)v;
        return 0;
    }
    case PT_REAL: {
        char *end;
        errno = 0;
        double v = strtod(text, &end);
        if (errno != 0 || end == text || *end != 0 || !isfinite(v)) {
            snprintf(err, errlen, "%s must be a finite number, got '%s'", p->name, text);
            return -1;
        }
        if (v < p->min || v > p->max) {
            snprintf(err, errlen, "%s must be in [%g, %g], got %g", p->name, p->min, p->max, v);
            return -1;
        }
        *(double *)base = v;
        return 0;
    }
    case PT_CHOICE:
        for (int i = 0; p->choices[i]; i++)
            if (strcmp(p->choices[i], text) == 0) {
                *(int *)base = i;
                return 0;
            }
        {
            char list[256];
            list_choices(p->choices, list, sizeof list);
            snprintf(err, errlen, "unknown %s '%s' (allowed: %s)", p->name, text, list);
        }
        return -1;
    case PT_TEXT:
        if (strlen(text) >= CONFIG_TEXT) {
            snprintf(err, errlen, "%s is longer than %d characters", p->name, CONFIG_TEXT - 1);
            return -1;
        }
        strcpy(base, text);
        return 0;
    case PT_INTLIST:  // only the grassmann offset schedule is a list
        return set_schedule(c, p, text, err, errlen);
    }
    return -1;
}

int config_set_number(TrialConfig *c, const ParamSpec *p, double v) {
    const int whole = v == trunc(v) && fabs(v) < 1e15;  // config_set's text: "%.0f", which parse_long takes
    if (!(p->type == PT_REAL ? isfinite(v) : p->type == PT_INT && whole) || v < p->min || v > p->max) return -1;
    if (p->program)
        program_store(c, p, (ProgramValue){.number = v});
    else if (p->type == PT_INT)
        *(int *)((char *)c + p->offset) = (int)v;
    else
        *(double *)((char *)c + p->offset) = v;
    return 0;
}

int config_check(const TrialConfig *c, char *err, size_t errlen) {
    if (c->d_model % c->heads != 0) {
        snprintf(err, errlen, "heads (%d) must divide d_model (%d)", c->heads, c->d_model);
        return -1;
    }
    if (c->attention == ATTN_TUCKER && c->core_rank > c->heads) {
        snprintf(err, errlen, "core_rank (%d) must be at most heads (%d)", c->core_rank, c->heads);
        return -1;
    }
    if (c->task == TASK_RECALL && c->recall_vocab % 2 != 0) {
        snprintf(err, errlen, "recall_vocab (%d) must be even (half keys, half values)", c->recall_vocab);
        return -1;
    }
    if (c->task == TASK_RECALL && c->recall_pairs > c->recall_vocab / 2) {
        snprintf(err, errlen, "recall_pairs (%d) must be at most recall_vocab/2 (%d) so keys are distinct",
                 c->recall_pairs, c->recall_vocab / 2);
        return -1;
    }
    if (c->attention == ATTN_GRASSMANN && c->n_groups != 1 && c->n_groups != c->layers) {
        snprintf(err, errlen,
                 "grassmann_offsets has %d groups for %d layers (one group for all layers, or one for each)",
                 c->n_groups, c->layers);
        return -1;
    }
    if (c->steps == 0 && c->epochs <= 0) {
        snprintf(err, errlen, "steps or epochs must be positive");
        return -1;
    }
    return 0;
}

void config_format(const TrialConfig *c, const ParamSpec *p, char *out, size_t outlen) {
    if (p->program) {
        const ProgramValue *v = cslot_of(c, p);
        if (v->set)
            config_program_format(v, out, outlen);
        else if (outlen)
            out[0] = 0;
        return;
    }
    const char *base = (const char *)c + p->offset;
    switch (p->type) {
    case PT_INT: snprintf(out, outlen, "%d", *(const int *)base); break;
    case PT_REAL: snprintf(out, outlen, "%.9g", *(const double *)base); break;
    case PT_CHOICE: snprintf(out, outlen, "%s", p->choices[*(const int *)base]); break;
    case PT_TEXT: snprintf(out, outlen, "%s", base); break;
    case PT_INTLIST:
        out[0] = 0;
        for (int g = 0, i = 0; g < c->n_groups; g++)
            for (int k = 0; k < c->group_len[g]; k++, i++) {
                size_t used = strlen(out);
                snprintf(out + used, outlen - used, "%s%d", i == 0 ? "" : k == 0 ? ";" : ",", c->offsets[i]);
            }
        break;
    }
}

const int *config_layer_offsets(const TrialConfig *c, int l, int *n) {
    const int g = c->n_groups == 1 ? 0 : l;
    int start = 0;
    for (int k = 0; k < g; k++) start += c->group_len[k];
    *n = c->group_len[g];
    return c->offsets + start;
}

const char *config_column(const ParamSpec *p) { return p->column ? p->column : p->name; }

double config_number(const TrialConfig *c, const ParamSpec *p) {
    const char *b = (const char *)c + p->offset;
    if (p->program) return cslot_of(c, p)->number;
    return p->type == PT_REAL ? *(const double *)b : *(const int *)b;
}

int config_relevant(const TrialConfig *c, const ParamSpec *p) {
    if (p->program) return cslot_of(c, p)->set;
    if (p->offset == OFF(core_rank)) return c->attention == ATTN_TUCKER;
    if (p->offset == OFF(grassmann_rank) || p->offset == OFF(grassmann_block) || p->offset == OFF(offsets))
        return c->attention == ATTN_GRASSMANN;
    if (p->offset == OFF(seq_len)) return c->task == TASK_CHARLM;
    if (p->offset == OFF(recall_pairs) || p->offset == OFF(recall_vocab)) return c->task == TASK_RECALL;
    if (p->offset == OFF(stability_window)) return c->lambda_stability > 0;
    return 1;
}
