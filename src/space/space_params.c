// space_params.c: a sweep file's parameters section: each parameter's value, values or
// distribution (other libraries' words get a hint), a program's parameters of any name
// typed from how they are written (W&B's nested ones as PARENT.NAME), the grid axes of a
// sampled sweep, and the `when` conditions, resolved once the whole section is read.
#define _POSIX_C_SOURCE 200809L
#include "space/space_read.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "space/space_impl.h"
#include "trial/metrics.h"

enum { MAX_LIST = 1000 };  // entries of one values list

enum { PK_VALUE, PK_VALUES, PK_DISTRIBUTION, PK_MIN, PK_MAX, PK_Q, PK_PROBABILITIES, PK_WHEN, PK_MU, PK_SIGMA,
       PK_A, PK_B, PK_GRID, PK_N };
static const char *const param_keys[PK_N] = {"value", "values", "distribution", "min", "max", "q", "probabilities",
                                             "when", "mu", "sigma", "a", "b", "grid"};

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
    {"learning_rate", "lr"},   {"learning-rate", "lr"},       {"batch_size", "batch"},
    {"batch-size", "batch"},   {"num_heads", "heads"},        {"n_heads", "heads"},
    {"n_head", "heads"},       {"num_layers", "layers"},      {"n_layers", "layers"},
    {"n_layer", "layers"},     {"hidden_size", "d_model"},    {"n_embd", "d_model"},
    {"dim", "d_model"},        {"embed_dim", "d_model"},      {"max_steps", "steps"},
    {"num_steps", "steps"},    {"iterations", "steps"},       {"num_epochs", "epochs"},
    {"wd", "weight_decay"},    {"warmup", "warmup_frac"},     {"warmup_ratio", "warmup_frac"},
    {"grad_clip", "clip"},     {"max_grad_norm", "clip"},     {"attention_type", "attention"},
    {"block_size", "seq_len"}, {"context_length", "seq_len"},
};

// The hint for a word another library uses, else NULL.
static const char *synonym(const Synonym *table, size_t n, const char *word) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(table[i].word, word)) return table[i].hint;
    return NULL;
}
#define SYNONYM(table, word) synonym(table, sizeof table / sizeof table[0], word)

// ---- reading the sections

static int read_values(Loader *L, SpaceParam *sp, yaml_node_t *n) {
    char b[64];
    const ParamSpec *p = sp->param;
    if (n->type != YAML_SEQUENCE_NODE)
        return space_fail(L, space_mark(n), "values must be a list, got %s", space_describe(n, b, sizeof b));
    long count = n->data.sequence.items.top - n->data.sequence.items.start;
    if (count == 0) return space_fail(L, space_mark(n), "values of %s is empty (list at least one value)", p->name);
    if (count > MAX_LIST)
        return space_fail(L, space_mark(n), "values of %s lists more than %d entries", p->name, MAX_LIST);
    sp->values = xcalloc((size_t)count, sizeof *sp->values);
    char **canon = xcalloc((size_t)count, sizeof *canon);
    int rc = 0;
    for (long k = 0; k < count && !rc; k++) {
        yaml_node_t *e = space_node(L, n->data.sequence.items.start[k]);
        TrialConfig scratch = L->s->base;
        char text[TEXT_MAX], key[TEXT_MAX];
        if ((rc = space_set_value(L, &scratch, p, e, text))) break;
        config_format(&scratch, p, key, sizeof key);
        for (long i = 0; i < k && !rc; i++)
            if (!strcmp(canon[i], key)) rc = space_fail(L, space_mark(e), "values of %s lists %s twice", p->name, key);
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
        return space_fail(L, space_mark(n), "probabilities must be a list of numbers, got %s",
                          space_describe(n, b, sizeof b));
    long count = n->data.sequence.items.top - n->data.sequence.items.start;
    if (count != sp->n_values)
        return space_fail(L, space_mark(n), "probabilities of %s has %ld entries, but values has %d", sp->param->name,
                          count, sp->n_values);
    sp->probabilities = xcalloc((size_t)count, sizeof(double));
    double sum = 0;
    for (long k = 0; k < count; k++) {
        if (space_read_number(L, space_node(L, n->data.sequence.items.start[k]), "a probability", 0, 0, 1, 0,
                              &sp->probabilities[k]))
            return -1;
        sum += sp->probabilities[k];
    }
    if (fabs(sum - 1) > 1e-6)
        return space_fail(L, space_mark(n), "probabilities of %s sum to %.9g, not 1", sp->param->name, sum);
    return 0;
}

// min or max of a range: through config_set, so the parameter's own range applies.
static int read_bound(Loader *L, const ParamSpec *p, yaml_node_t *n, double *out) {
    TrialConfig scratch = L->s->base;
    if (space_set_value(L, &scratch, p, n, NULL)) return -1;
    *out = config_number(&scratch, p);
    return 0;
}

// Grid enumerates finite supports only.
static int grid_refuses(Loader *L, const SpaceParam *sp, Mark at) {
    if (L->s->method != METHOD_GRID || space_param_count(sp) >= 0) return 0;
    return space_fail(L, at,
                      "method grid needs values or an integer range, but %s has distribution %s (list values, or use "
                      "method random)",
                      sp->param->name, space_dist_names[sp->dist]);
}

// q of a q_ distribution [1], for an integer parameter an integer.
static int read_q(Loader *L, SpaceParam *sp, yaml_node_t **v) {
    sp->q = 1;
    return v[PK_Q] && space_read_number(L, v[PK_Q], "q", sp->param->type == PT_INT, 0, 1e9, 1, &sp->q) ? -1 : 0;
}

// A continuous distribution read: truncated to the parameter's range, which must hold
// some of its mass (and for the q_ kinds a multiple of q).
static int finish_continuous(Loader *L, SpaceParam *sp, Mark at) {
    const ParamSpec *p = sp->param;
    const double mass = space_truncate(sp, p->min, p->max);
    if (!(mass >= 1e-6))
        return space_fail(
            L, at, "distribution %s puts %.3g of its mass in %s's range [%.9g, %.9g] (at least 1e-6 must lie there)",
            space_dist_names[sp->dist], mass, p->name, p->min, p->max);
    if (space_dist_quantised(sp->dist) && floor(sp->hi / sp->q + 1e-9) < ceil(sp->lo / sp->q - 1e-9))
        return space_fail(L, at, "no multiple of q %.9g lies in [%.9g, %.9g], where distribution %s draws %s", sp->q,
                          sp->lo, sp->hi, space_dist_names[sp->dist], p->name);
    return grid_refuses(L, sp, at);
}

static int takes_exponents(int dist) {
    return dist == DIST_LOG_UNIFORM || dist == DIST_Q_LOG_UNIFORM || dist == DIST_INV_LOG_UNIFORM;
}

static int read_range(Loader *L, SpaceParam *sp, yaml_node_t **v, const Mark *k_at, int dist) {
    const ParamSpec *p = sp->param;
    if (!v[PK_MIN] || !v[PK_MAX]) {
        int have = v[PK_MIN] ? PK_MIN : PK_MAX;
        return space_fail(L, k_at[have], "%s has %s but no %s", p->name, param_keys[have],
                          have == PK_MIN ? "max" : "min");
    }
    if (v[PK_PROBABILITIES])
        return space_fail(L, k_at[PK_PROBABILITIES], "probabilities go with values, not min and max");
    if (p->type != PT_INT && p->type != PT_REAL)
        return space_fail(L, k_at[PK_MIN], "%s takes values, not a range (min and max)", p->name);
    if (dist == DIST_CATEGORICAL)
        return space_fail(L, k_at[PK_DISTRIBUTION], "distribution categorical takes values, not min and max");
    if (dist < 0) dist = p->type == PT_INT ? DIST_INT_UNIFORM : DIST_UNIFORM;
    if (dist == DIST_UNIFORM && p->type == PT_INT)
        return space_fail(L, k_at[PK_DISTRIBUTION],
                          "%s is an integer: use int_uniform, q_uniform or log_uniform_values", p->name);
    if (v[PK_Q] && dist != DIST_Q_UNIFORM && !space_dist_quantised((Distribution)dist))
        return space_fail(L, k_at[PK_Q],
                          "q only applies to the q_ distributions (q_uniform, q_log_uniform_values, ...)");
    sp->dist = (Distribution)dist;
    if (takes_exponents(dist)) {  // natural-log exponents: the values are exp of them
        if (space_read_number(L, v[PK_MIN], "min (an exponent)", 0, -700, 700, 0, &sp->min) ||
            space_read_number(L, v[PK_MAX], "max (an exponent)", 0, -700, 700, 0, &sp->max))
            return -1;
    } else if (read_bound(L, p, v[PK_MIN], &sp->min) || read_bound(L, p, v[PK_MAX], &sp->max)) {
        return -1;
    }
    if (sp->min > sp->max)
        return space_fail(L, space_mark(v[PK_MAX]), "empty range: min %.9g is greater than max %.9g", sp->min, sp->max);
    if (dist == DIST_INT_UNIFORM && (sp->min != floor(sp->min) || sp->max != floor(sp->max)))
        return space_fail(L, space_mark(sp->min != floor(sp->min) ? v[PK_MIN] : v[PK_MAX]),
                          "int_uniform needs integer min and max, got %.9g and %.9g", sp->min, sp->max);
    if ((dist == DIST_LOG_UNIFORM_VALUES || dist == DIST_Q_LOG_UNIFORM_VALUES || dist == DIST_INV_LOG_UNIFORM_VALUES) &&
        sp->min <= 0)
        return space_fail(L, space_mark(v[PK_MIN]), "%s needs min > 0, got %.9g", space_dist_names[dist], sp->min);
    if (takes_exponents(dist)) {
        const int inv = dist == DIST_INV_LOG_UNIFORM;
        const double lo = exp(inv ? -sp->max : sp->min), hi = exp(inv ? -sp->min : sp->max);
        if (dist == DIST_LOG_UNIFORM && sp->min > 0 && sp->max < 1)  // values within (1, e): surely meant as values
            return space_fail(
                L, k_at[PK_DISTRIBUTION],
                "log_uniform takes natural-log exponents: min %.9g and max %.9g draw %s from [%.9g, %.9g]; for "
                "values between %.9g and %.9g use log_uniform_values",
                sp->min, sp->max, p->name, lo, hi, sp->min, sp->max);
        if (lo < p->min || hi > p->max)
            return space_fail(
                L, k_at[PK_DISTRIBUTION],
                "%s draws %s from [exp(%smin), exp(%smax)] = [%.9g, %.9g], outside its range [%.9g, %.9g] (min "
                "and max are natural-log exponents)",
                space_dist_names[dist], p->name, inv ? "-" : "", inv ? "-" : "", lo, hi, p->min, p->max);
    }
    if ((dist == DIST_Q_UNIFORM || space_dist_quantised((Distribution)dist)) && read_q(L, sp, v)) return -1;
    if (dist == DIST_Q_UNIFORM) {
        if ((sp->max - sp->min) / sp->q > 1e12)
            return space_fail(L, space_mark(v[PK_Q] ? v[PK_Q] : v[PK_MAX]), "q %.9g is too small for [%.9g, %.9g]",
                              sp->q, sp->min, sp->max);
        if (space_q_first(sp) > space_q_last(sp))
            return space_fail(L, space_mark(v[PK_Q] ? v[PK_Q] : v[PK_MAX]),
                              "no multiple of q %.9g lies in [%.9g, %.9g]", sp->q, sp->min, sp->max);
    }
    const Mark at = v[PK_DISTRIBUTION] ? k_at[PK_DISTRIBUTION] : k_at[PK_MIN];
    return space_param_count(sp) >= 0 ? grid_refuses(L, sp, at) : finish_continuous(L, sp, at);
}

// normal, log_normal (mu [0], sigma [1] > 0), beta (a [1], b [1] > 0), and their q_.
static int read_law(Loader *L, SpaceParam *sp, yaml_node_t **v, const Mark *k_at, int dist) {
    const ParamSpec *p = sp->param;
    const int beta = dist == DIST_BETA || dist == DIST_Q_BETA;
    if (v[PK_MIN] || v[PK_MAX])
        return space_fail(L, k_at[v[PK_MIN] ? PK_MIN : PK_MAX], "distribution %s takes %s, not min and max",
                          space_dist_names[dist], beta ? "a and b" : "mu and sigma");
    if (v[PK_PROBABILITIES]) return space_fail(L, k_at[PK_PROBABILITIES], "probabilities go with values");
    if (p->type != PT_INT && p->type != PT_REAL)
        return space_fail(L, k_at[PK_DISTRIBUTION], "%s takes values, not distribution %s", p->name,
                          space_dist_names[dist]);
    if (v[PK_Q] && !space_dist_quantised((Distribution)dist))
        return space_fail(L, k_at[PK_Q], "q only applies to the q_ distributions (q_normal, q_beta, ...)");
    sp->dist = (Distribution)dist;
    sp->mu = 0, sp->sigma = 1, sp->a = 1, sp->b = 1;
    if (beta ? (v[PK_A] && space_read_number(L, v[PK_A], "a", 0, 0, 1e6, 1, &sp->a)) ||
                   (v[PK_B] && space_read_number(L, v[PK_B], "b", 0, 0, 1e6, 1, &sp->b))
             : (v[PK_MU] && space_read_number(L, v[PK_MU], "mu", 0, -1e300, 1e300, 0, &sp->mu)) ||
                   (v[PK_SIGMA] && space_read_number(L, v[PK_SIGMA], "sigma", 0, 0, 1e300, 1, &sp->sigma)))
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

// The type of a program parameter: integers when every listed value, or both bounds (and
// q), are integers, unless the distribution draws reals (uniform, log_uniform_values, the
// exponent and inverse log-uniforms, normal, log_normal, beta); for q_log_uniform and the
// q_ laws (bounds that are exponents, or none) integers when q is; reals for other
// numbers; texts when a listed value is not a number.
static ParamType program_type(Loader *L, yaml_node_t *spec) {
    yaml_node_t *values = space_map_get(L, spec, "values"), *value = space_map_get(L, spec, "value");
    if (values || value) {
        ScalarKind most = SCALAR_INT;
        if (values && values->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = values->data.sequence.items.start; it < values->data.sequence.items.top; it++) {
                const ScalarKind k = space_scalar_kind(space_node(L, *it));
                if (k > most) most = k;
            }
        } else {
            most = value ? space_scalar_kind(value) : SCALAR_TEXT;
        }
        return most == SCALAR_INT ? PT_INT : most == SCALAR_REAL ? PT_REAL : PT_TEXT;
    }
    yaml_node_t *lo = space_map_get(L, spec, "min"), *hi = space_map_get(L, spec, "max"),
                *q = space_map_get(L, spec, "q");
    const char *dist =
        space_map_get(L, spec, "distribution") ? space_text(space_map_get(L, spec, "distribution")) : NULL;
    static const char *const reals[] = {"uniform", "log_uniform_values", "log_uniform", "inv_log_uniform",
                                        "inv_log_uniform_values", "normal", "log_normal", "beta"};
    static const char *const by_q[] = {"q_log_uniform", "q_normal", "q_log_normal", "q_beta"};
    const int q_whole = !q || space_scalar_kind(q) == SCALAR_INT;
    if (dist && !strcmp(dist, "int_uniform")) return PT_INT;
    if (dist && space_find_name(dist, reals, (int)(sizeof reals / sizeof reals[0])) >= 0) return PT_REAL;
    if (dist && space_find_name(dist, by_q, (int)(sizeof by_q / sizeof by_q[0])) >= 0)
        return q_whole ? PT_INT : PT_REAL;
    const int whole =
        (!lo || space_scalar_kind(lo) == SCALAR_INT) && (!hi || space_scalar_kind(hi) == SCALAR_INT) && q_whole;
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
    if (!program_name_ok(name) || (nested && strchr(space_text(key), '.'))) {
        space_fail(L, space_mark(key),
                   "parameter name %s: a program's parameters have 1 to %d letters, digits, '_', '-' or '.' (a nested "
                   "one's full name PARENT.NAME, its own part without '.'), the first a letter or '_'",
                   space_describe(key, b, sizeof b), PROGRAM_NAME - 1);
        return NULL;
    }
    for (int k = 0; k < s->n_program_params; k++)
        if (!strcmp(s->program_params[k].name, name)) {
            space_fail(L, space_mark(key),
                       "parameter %s is given twice (a nested parameter's full name is PARENT.NAME)", name);
            return NULL;
        }
    if (s->n_program_params == MAX_PROGRAM_PARAMS) {
        space_fail(L, space_mark(key), "more than %d parameters (a program's sweep has at most %d)", MAX_PROGRAM_PARAMS,
                   MAX_PROGRAM_PARAMS);
        return NULL;
    }
    const int k = s->n_program_params++;
    char column[PROGRAM_NAME + 8];
    metric_param_column(name, column, sizeof column);  // trial, status, steps, ... are results
    ParamSpec *p = &s->program_params[k];
    yaml_node_t *values = space_map_get(L, spec, "values"), *value = space_map_get(L, spec, "value");
    int json = value && space_structured(value);
    for (yaml_node_item_t *it = values && values->type == YAML_SEQUENCE_NODE ? values->data.sequence.items.start : NULL;
         it && it < values->data.sequence.items.top; it++)
        json |= space_structured(space_node(L, *it));
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
    const char *name = space_text(key);
    if (space_is_program(s)) {
        const char *names[MAX_PROGRAM_PARAMS];
        for (int k = 0; k < s->n_program_params; k++) {
            if (!strcmp(s->program_params[k].name, name)) return &s->program_params[k];
            names[k] = s->program_params[k].name;
        }
        const char *hint = closest_name(name, names, s->n_program_params);
        if (hint) space_fail(L, space_mark(key), "unknown parameter '%s'%s (did you mean '%s'?)", name, where, hint);
        else
            space_fail(L, space_mark(key),
                       "unknown parameter '%s'%s (a condition refers to a parameter defined before it)", name, where);
        return NULL;
    }
    const ParamSpec *p = config_find(name);
    if (p) return p;
    const char *hint = config_closest(name);
    if (hint) space_fail(L, space_mark(key), "unknown parameter '%s'%s (did you mean '%s'?)", name, where, hint);
    else if (where[0]) space_fail(L, space_mark(key), "unknown parameter '%s'%s", name, where);
    else space_fail(L, space_mark(key), "unknown parameter '%s' (attnsweep train --help lists them)", name);
    return NULL;
}

// `grid: true` makes a finite parameter a grid axis of a sampled sweep.
static int read_grid_axis(Loader *L, const ParamSpec *p, yaml_node_t **v, const Mark *k_at) {
    int on = 0;
    if (!v[PK_GRID]) return 0;
    if (space_read_choice(L, v[PK_GRID], "grid", space_bool_names, &on)) return -1;
    SpaceParam *sp = L->s->n_params ? &L->s->params[L->s->n_params - 1] : NULL;
    if (!on) return 0;
    if (!sp || sp->param != p)
        return space_fail(L, k_at[PK_GRID], "grid: true needs values or a range to run over, but value fixes %s",
                          p->name);
    if (space_param_count(sp) < 0)
        return space_fail(L, k_at[PK_GRID],
                          "grid: true needs values or an integer range, but %s has distribution %s (a grid axis is "
                          "enumerated: list values)",
                          p->name, space_dist_names[sp->dist]);
    sp->grid = 1;
    return 0;
}

// The parameter's value, values or distribution, once its keys are read.
static int read_param_spec(Loader *L, const ParamSpec *p, yaml_node_t *key, yaml_node_t **v, const Mark *k_at) {
    int dist = -1;
    const char *word = v[PK_DISTRIBUTION] ? space_text(v[PK_DISTRIBUTION]) : NULL;
    const char *synonym_of = word ? SYNONYM(dist_synonyms, word) : NULL;
    if (synonym_of)
        return space_fail(L, space_mark(v[PK_DISTRIBUTION]), "unknown distribution '%s' (did you mean %s?)", word,
                          synonym_of);
    if (v[PK_DISTRIBUTION] &&
        space_read_choice(L, v[PK_DISTRIBUTION], "distribution", space_dist_names + DIST_UNIFORM, &dist))
        return -1;
    if (dist >= 0) dist += DIST_UNIFORM;
    const int law = dist >= 0 && space_dist_has_law((Distribution)dist);
    const int beta = dist == DIST_BETA || dist == DIST_Q_BETA;
    for (int k = PK_MU; k <= PK_B; k++)
        if (v[k] && !(law && (k <= PK_SIGMA) != beta))
            return space_fail(L, k_at[k], "%s only applies to distributions %s", param_keys[k],
                              k <= PK_SIGMA ? "normal, q_normal, log_normal and q_log_normal" : "beta and q_beta");
    if (dist == DIST_CONSTANT && !v[PK_VALUE])
        return space_fail(L, k_at[PK_DISTRIBUTION], "distribution constant needs value");

    if (v[PK_VALUE]) {
        if (dist >= 0 && dist != DIST_CONSTANT)
            return space_fail(L, k_at[PK_DISTRIBUTION], "value fixes %s, so distribution %s does not apply", p->name,
                              space_dist_names[dist]);
        static const int others[] = {PK_VALUES, PK_MIN, PK_MAX, PK_Q, PK_PROBABILITIES};
        for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
            if (v[others[i]])
                return space_fail(L, k_at[others[i]], "value fixes %s, so %s does not apply", p->name,
                                  param_keys[others[i]]);
        if (!v[PK_WHEN]) return space_set_value(L, &L->s->base, p, v[PK_VALUE], NULL);
        SpaceParam *sp = new_param(L, p, space_mark(key), v[PK_WHEN]);
        sp->dist = DIST_VALUE;
        TrialConfig scratch = L->s->base;
        char text[TEXT_MAX];
        if (space_set_value(L, &scratch, p, v[PK_VALUE], text)) return -1;
        sp->values = xcalloc(1, sizeof *sp->values);
        sp->values[0] = xstrdup(text);
        sp->n_values = 1;
        return 0;
    }
    if (v[PK_VALUES]) {
        if (v[PK_MIN] || v[PK_MAX])
            return space_fail(L, k_at[v[PK_MIN] ? PK_MIN : PK_MAX], "%s has values, so %s does not apply", p->name,
                              v[PK_MIN] ? "min" : "max");
        if (v[PK_Q]) return space_fail(L, k_at[PK_Q], "q only applies to distribution q_uniform");
        if (dist >= 0 && dist != DIST_CATEGORICAL)
            return space_fail(L, k_at[PK_DISTRIBUTION], "distribution %s takes min and max, not values",
                              space_dist_names[dist]);
        SpaceParam *sp = new_param(L, p, space_mark(key), v[PK_WHEN]);
        sp->dist = dist == DIST_CATEGORICAL ? DIST_CATEGORICAL : DIST_VALUES;
        if (read_values(L, sp, v[PK_VALUES])) return -1;
        return v[PK_PROBABILITIES] ? read_probabilities(L, sp, v[PK_PROBABILITIES]) : 0;
    }
    if (law) return read_law(L, new_param(L, p, space_mark(key), v[PK_WHEN]), v, k_at, dist);
    if (v[PK_MIN] || v[PK_MAX]) return read_range(L, new_param(L, p, space_mark(key), v[PK_WHEN]), v, k_at, dist);
    return space_fail(L, space_mark(key), "parameter %s needs value, values, or min and max", p->name);
}

// Parameter key: spec (under parent's parameters when parent is not NULL).
static int read_param(Loader *L, yaml_node_t *key, yaml_node_t *spec, const char *parent) {
    char b[64], what[96], full[2 * PROGRAM_NAME + 2];
    const char *name = space_text(key);
    const int program = space_is_program(L->s);
    if (parent) snprintf(full, sizeof full, "%s.%s", parent, name), name = full;
    yaml_node_t *nested = space_map_get(L, spec, "parameters");
    if (nested && !program)
        return space_fail(L, space_mark(key),
                          "parameter %s has parameters (W&B's nested parameters), which a sweep of a "
                          "program takes; the built-in engine's parameters are its own",
                          name);
    if (nested) {  // W&B's nested parameters: PARENT.NAME each, reaching the program as PARENT's mapping
        for (yaml_node_pair_t *pr = spec->data.mapping.pairs.start; pr < spec->data.mapping.pairs.top; pr++)
            if (space_node(L, pr->value) != nested)
                return space_fail(L, space_mark(space_node(L, pr->key)),
                                  "parameter %s has parameters (nested), so %s does not "
                                  "apply",
                                  name, space_describe(space_node(L, pr->key), b, sizeof b));
        return space_read_parameters(L, nested, name);
    }
    const char *meant = program || config_find(name) ? NULL : SYNONYM(param_synonyms, name);
    if (meant) return space_fail(L, space_mark(key), "unknown parameter '%s' (did you mean '%s'?)", name, meant);
    const ParamSpec *p = program ? program_param(L, key, name, parent != NULL, spec) : find_param(L, key, "");
    if (!p) return -1;
    if (p == space_param_named("seed"))
        return space_fail(L, space_mark(key),
                          "seed is not swept: set the sweep's seed at the top level (and repeats: N for "
                          "several seeds per configuration)");
    if (space_claim(L, p, space_mark(key), "parameters")) return -1;
    if (spec->type != YAML_MAPPING_NODE)
        return space_fail(L, space_mark(spec),
                          "parameter %s must be a mapping with value, values, or min and max, got %s", p->name,
                          space_describe(spec, b, sizeof b));
    yaml_node_t *v[PK_N];
    Mark k_at[PK_N];
    snprintf(what, sizeof what, "parameter %s", p->name);
    if (space_read_section(L, spec, what, param_keys, PK_N, v, k_at)) return -1;
    return read_param_spec(L, p, key, v, k_at) || read_grid_axis(L, p, v, k_at) ? -1 : 0;
}

int space_read_parameters(Loader *L, yaml_node_t *map, const char *parent) {
    char b[64];
    if (map->type != YAML_MAPPING_NODE)
        return space_fail(L, space_mark(map), "parameters%s%s must be a mapping of parameter names, got %s",
                          parent ? " of " : "", parent ? parent : "", space_describe(map, b, sizeof b));
    yaml_node_pair_t *first = map->data.mapping.pairs.start;
    if (first == map->data.mapping.pairs.top)
        return space_fail(L, space_mark(map), "parameters is empty (give at least one parameter)");
    for (yaml_node_pair_t *pr = first; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = space_node(L, pr->key);
        const char *name;
        if (space_key_text(L, kn, &name)) return -1;
        for (yaml_node_pair_t *e = first; e < pr; e++)
            if (!strcmp(space_text(space_node(L, e->key)), name)) {
                Mark m = space_mark(space_node(L, e->key));
                return space_fail(L, space_mark(kn), "duplicate key '%s' (first at %d:%d)", name, m.line, m.col);
            }
        if (read_param(L, kn, space_node(L, pr->value), parent)) return -1;
    }
    return 0;
}

// ---- conditions

// Whether p can take the canonical `value` in the sweep: one of its listed values, or the
// base value when it is fixed or conditional. all gets those values ("mha, linear").
static int can_take(const SweepSpec *s, const ParamSpec *p, const char *value, char *all, size_t len) {
    int j = space_swept_index(s, p), found = 0;
    char v[TEXT_MAX];
    all[0] = 0;
    for (int k = -1; k < (j >= 0 ? s->params[j].n_values : 0); k++) {
        if (k < 0 && j >= 0 && !s->params[j].n_when) continue;
        if (k < 0)
            config_format(&s->base, p, v, sizeof v);
        else
            space_canonical(p, s->params[j].values[k], v, sizeof v);
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
    if (space_key_text(L, kn, &name)) return -1;
    const ParamSpec *p = find_param(L, kn, " in when");
    if (!p) return -1;
    for (int i = 0; i < sp->n_when; i++)
        if (sp->when[i].param == p) return space_fail(L, space_mark(kn), "duplicate key '%s' in when", name);
    if (p == sp->param) return space_fail(L, space_mark(kn), "%s cannot depend on itself", name);
    int src = space_swept_index(s, p);
    if (src > j)
        return space_fail(L, space_mark(kn), "when refers to %s, which must be defined before %s in parameters",
                          p->name, sp->param->name);
    if (src >= 0 && !space_is_listed(&s->params[src]))
        return space_fail(L, space_mark(kn),
                          "when can only refer to parameters with listed values, but %s has distribution %s", p->name,
                          space_dist_names[s->params[src].dist]);
    cd->param = p;
    int single = vn->type != YAML_SEQUENCE_NODE || p->type == PT_INTLIST;
    long count = single ? 1 : vn->data.sequence.items.top - vn->data.sequence.items.start;
    if (count == 0) return space_fail(L, space_mark(vn), "when %s lists no values", p->name);
    if (count > MAX_LIST) return space_fail(L, space_mark(vn), "when %s lists more than %d values", p->name, MAX_LIST);
    cd->values = xcalloc((size_t)count, sizeof *cd->values);
    for (long k = 0; k < count; k++) {
        yaml_node_t *e = single ? vn : space_node(L, vn->data.sequence.items.start[k]);
        TrialConfig scratch = s->base;
        char value[TEXT_MAX], all[2048];
        if (space_set_value(L, &scratch, p, e, NULL)) return -1;
        config_format(&scratch, p, value, sizeof value);
        cd->values[k] = xstrdup(value);
        cd->n_values = (int)k + 1;
        if (!can_take(s, p, value, all, sizeof all))
            return space_fail(L, space_mark(e), "condition %s: %s can never hold (%s %s %s)", p->name, value, p->name,
                              src >= 0 ? "takes" : "is fixed at", all);
    }
    return 0;
}

int space_resolve_conditions(Loader *L) {
    SweepSpec *s = L->s;
    char b[64];
    for (int j = 0; j < s->n_params; j++) {
        yaml_node_t *map = L->when[j];
        if (!map) continue;
        if (map->type != YAML_MAPPING_NODE || map->data.mapping.pairs.start == map->data.mapping.pairs.top)
            return space_fail(L, space_mark(map),
                              "when must map parameters to values, e.g. when: {attention: tucker}; got %s",
                              space_describe(map, b, sizeof b));
        SpaceParam *sp = &s->params[j];
        sp->when = xcalloc((size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start), sizeof *sp->when);
        for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
            int rc = read_condition(L, j, space_node(L, pr->key), space_node(L, pr->value), &sp->when[sp->n_when]);
            if (sp->when[sp->n_when].param) sp->n_when++;  // owned by sp from here on
            if (rc) return -1;
        }
    }
    return 0;
}
