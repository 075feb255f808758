// space_genes.c: the swept parameters' supports and genes (space_impl.h): a configuration
// from genes (space_render) and back (space_gene_of), the enumeration of the combinations
// the checks and the grid visit, the space's size; and what a loaded SweepSpec answers
// (its method's and distributions' names, whether it runs a program, its metric). Nothing
// here reads YAML: the samplers use it as the loader does.
#define _POSIX_C_SOURCE 200809L
#include "space/space_impl.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "trial/metrics.h"

const char *const space_method_names[] = {"grid", "random", "sobol", "evolution", "tpe", "motpe", NULL};
const char *const space_dist_names[] = {"value", "values", "uniform", "int_uniform", "q_uniform",
                                        "log_uniform_values", "categorical", "constant", "log_uniform",
                                        "q_log_uniform", "q_log_uniform_values", "inv_log_uniform",
                                        "inv_log_uniform_values", "normal", "q_normal", "log_normal",
                                        "q_log_normal", "beta", "q_beta", NULL};

// The text of a value into c's field for p, where it is known to be valid (a value read
// and checked before, or one the enumeration makes).
void space_set_text(TrialConfig *c, const ParamSpec *p, const char *text) {
    char msg[TEXT_MAX];
    if (config_set(c, p, text, msg, sizeof msg)) {
        fprintf(stderr, "attnsweep: internal error: %s\n", msg);
        abort();
    }
}

// The canonical text of a value of p (as config_format writes it): equal texts, equal values.
void space_canonical(const ParamSpec *p, const char *text, char *out, size_t len) {
    TrialConfig c;
    config_defaults(&c);
    space_set_text(&c, p, text);
    config_format(&c, p, out, len);
}

// ---- supports: what each swept parameter can take

int space_is_listed(const SpaceParam *p) {
    return p->dist == DIST_VALUE || p->dist == DIST_VALUES || p->dist == DIST_CATEGORICAL;
}

double space_q_first(const SpaceParam *p) { return ceil(p->min / p->q - 1e-9); }
double space_q_last(const SpaceParam *p) { return floor(p->max / p->q + 1e-9); }

long space_param_count(const SpaceParam *p) {
    if (space_is_listed(p)) return p->n_values;
    if (p->dist == DIST_INT_UNIFORM) return (long)(p->max - p->min) + 1;
    if (p->dist == DIST_Q_UNIFORM) return (long)(space_q_last(p) - space_q_first(p)) + 1;
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
    if (space_is_listed(p))
        snprintf(buf, len, "%s", p->values[k]);
    else if (p->dist == DIST_Q_UNIFORM)
        number_text(p, (space_q_first(p) + (double)k) * p->q, "%.15g", buf, len);  // 0.30000000000000004 -> 0.3
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
        space_set_text(out, p->param, text);
    }
}

double space_gene_of(const SpaceParam *p, const TrialConfig *c) {
    long n = space_param_count(p);
    if (n < 0) return config_number(c, p->param);
    if (space_is_listed(p)) {
        char have[TEXT_MAX], cand[TEXT_MAX];
        config_format(c, p->param, have, sizeof have);
        for (long k = 0; k < n; k++) {
            space_canonical(p->param, p->values[k], cand, sizeof cand);
            if (!strcmp(have, cand)) return (double)k;
        }
        return 0;
    }
    double v = config_number(c, p->param);
    double k = p->dist == DIST_Q_UNIFORM ? round(v / p->q) - space_q_first(p) : v - p->min;
    return k >= 0 && k < (double)n ? k : 0;
}

int space_swept_index(const SweepSpec *s, const ParamSpec *p) {
    for (int j = 0; j < s->n_params; j++)
        if (s->params[j].param == p) return j;
    return -1;
}

void space_sources(const SweepSpec *s, unsigned char *is_source) {
    memset(is_source, 0, (size_t)s->n_params);
    for (int j = 0; j < s->n_params; j++)
        for (int i = 0; i < s->params[j].n_when; i++) {
            int src = space_swept_index(s, s->params[j].when[i].param);
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
        space_set_text(&next, p->param, text);
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

const char *space_method_name(SweepMethod m) { return space_method_names[m]; }
const char *space_distribution_name(Distribution d) { return space_dist_names[d]; }

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
int space_count(const SweepSpec *s, long *total, unsigned char *active) {
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
    space_count(s, &total, active);
    free(active);
    return total;
}

int space_is_program(const SweepSpec *s) { return s->program.n_command > 0; }

const Metric *space_metric(const SweepSpec *s) {
    const Metric *m = metric_find(s->metric);
    return m ? m : &s->program_metric;
}

const Metric *space_objective_metric(const SweepSpec *s, int k) {
    const Metric *m = metric_find(s->objective[k]);
    return m ? m : &s->program_metric;
}

int space_adaptive(const SweepSpec *s) {
    return s->method == METHOD_EVOLUTION || s->method == METHOD_TPE || s->method == METHOD_MOTPE;
}
