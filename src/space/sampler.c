// sampler.c: grid, random, Sobol and regularised-evolution samplers.
//
// Trial id -> configuration index i = id / repeats and repeat r = id % repeats; every
// repeat of a configuration gets the same parameters and the seed sweep_seed*1000 + r.
// With grid axes (`grid: true`, a sampled method) configuration i is sample k = i / P of
// the other parameters at combination i % P of the P combinations of the axes (in the
// grid's order, the last axis fastest): the methods below draw samples, the axes are
// enumerated, and the samplers that learn (evolution, tpe, motpe) are told a sample's
// mean over its P combinations and repeats.
// A configuration is a vector of genes (space_impl.h), rendered with the conditions
// applied after sampling:
//   grid       the product of the supports in a fixed order: the parameters that
//              conditions refer to vary slowest, then the others in file order, the last
//              fastest; a parameter whose condition fails keeps its base value and does
//              not multiply the grid.
//   random     configuration i draws one uniform number per parameter from an MT19937
//              seeded with h(i + h(seed ^ stream)), h a bijection of 32-bit integers, so
//              it depends only on (seed, i) and differs between configurations.
//   sobol      point i of GSL's Sobol sequence (one dimension per parameter that is not a
//              fixed `value`), shifted modulo 1 by a random vector drawn from the seed
//              (Cranley-Patterson rotation: another seed, another design).
//   evolution  regularised evolution (Real et al. 2019): the first `population`
//              configurations are drawn as by random; after that, `sample_size` members
//              of the population (the last `population` configurations whose every
//              repeat was reported, their metric the mean over repeats) are drawn, the
//              best is copied and one parameter that applies to it is mutated (a values
//              list moves to a neighbouring entry, an integer range or q grid draws
//              another point, a continuous one is redrawn), and the oldest member ages out
//              as newer ones are reported.
//   tpe, motpe the Tree-structured Parzen Estimator (tpe.h): the first n_startup
//              configurations (and any drawn before that many were reported) as by random;
//              after that each new configuration i is proposed from the configurations
//              reported so far (their mean over repeats), with an MT19937 seeded by
//              (seed, i), so the same reports in the same order give the same proposal.
// A number u in [0, 1) becomes a gene by the inverse distribution function: the index
// floor(u*n) (or by the cumulative probabilities; q_uniform: of round(uniform / q)), or a
// continuous distribution's quantile (space_draw, distribution.c).
#include "space/space.h"

#include <gsl/gsl_qrng.h>
#include <gsl/gsl_rng.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "trial/metrics.h"
#include "space/space_impl.h"
#include "space/tpe.h"

enum {
    STREAM_RANDOM = 0x52414E44u,
    STREAM_SOBOL = 0x534F424Cu,
    STREAM_EVOLUTION = 0x45564F4Cu,
    STREAM_TPE = 0x54504521u,
    MUTATION_TRIES = 100
};

typedef struct {
    long config;    // configuration index
    double metric;  // mean over its repeats, larger is better
} Member;

struct Sampler {
    const SweepSpec *s;
    int n;                       // genes per configuration (s->n_params)
    const ParamSpec *seed;
    gsl_rng *rng;                // re-seeded for every configuration
    double *gene;                // scratch
    double *report;              // scratch: sampler_report_take's numbers
    // grid axes: P combinations, each a gene vector of n (the axes' indices)
    int P;
    unsigned char *is_axis;
    double *axis_gene;
    // grid: one block per combination of the sources' values
    unsigned char *is_source;
    long n_blocks;
    double *block_gene;          // n_blocks x n: the sources' indices
    long *block_start;           // n_blocks + 1: first configuration of each block
    // sobol
    gsl_qrng *qrng;
    long q_next;                 // index of the next point qrng gives
    double *point, *shift;
    int dims;
    // evolution, tpe
    int m;                       // objectives (motpe: several; otherwise the metric)
    const Metric *objective[SPACE_MAX_OBJECTIVES];
    int maximize[SPACE_MAX_OBJECTIVES];
    long n_samples;              // configurations / P
    double **genes;              // per sample, once drawn or reported
    double *sum;                 // per sample: reported values (n_samples × m)
    int *reported, *pruned;      // per sample: trials reported (of repeats × P), of which pruned
    Tpe *tpe;
    Member *pop;                 // ring of the last `population` members
    int n_pop, pop_head;
    int *order;                  // scratch for the tournament draw
};

// lowbias32 (C. Wellons): a bijection of the 32-bit integers that mixes every bit.
static uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

static unsigned long stream_seed(int seed, uint32_t stream, long i) {
    return mix32((uint32_t)i + mix32((uint32_t)seed ^ stream));
}

static double gene_from_unit(const SpaceParam *p, double u) {
    long n = space_param_count(p);
    if (p->probabilities) {
        double cum = 0;
        for (long k = 0; k < n - 1; k++)
            if (u < (cum += p->probabilities[k])) return (double)k;
        return (double)(n - 1);
    }
    if (p->dist == DIST_Q_UNIFORM) {  // W&B's round(uniform(min, max) / q), as an index of the support
        const double k = round((p->min + u * (p->max - p->min)) / p->q) - ceil(p->min / p->q - 1e-9);
        return k < 0 ? 0 : k > (double)(n - 1) ? (double)(n - 1) : k;
    }
    if (n >= 0) {
        long k = (long)(u * (double)n);
        return (double)(k < n ? k : n - 1);
    }
    return space_draw(p, u);
}

static void random_genes(Sampler *sm, long i, double *gene) {
    gsl_rng_set(sm->rng, stream_seed(sm->s->seed, STREAM_RANDOM, i));
    for (int j = 0; j < sm->n; j++) gene[j] = gene_from_unit(&sm->s->params[j], gsl_rng_uniform(sm->rng));
}

static void sobol_genes(Sampler *sm, long i, double *gene) {
    if (sm->dims && i < sm->q_next - 1) {  // going back: start the sequence again
        gsl_qrng_init(sm->qrng);
        sm->q_next = 0;
    }
    while (sm->dims && sm->q_next <= i) {
        gsl_qrng_get(sm->qrng, sm->point);
        sm->q_next++;
    }
    for (int j = 0, d = 0; j < sm->n; j++) {
        const SpaceParam *p = &sm->s->params[j];
        if (p->dist == DIST_VALUE || p->grid) {
            gene[j] = 0;
            continue;
        }
        double u = sm->point[d] + sm->shift[d];
        d++;
        gene[j] = gene_from_unit(p, u - floor(u));
    }
}

static int add_axis_point(void *ctx, const TrialConfig *c, const double *gene) {
    Sampler *sm = ctx;
    sm->axis_gene = xrealloc(sm->axis_gene, (size_t)(sm->P + 1) * (size_t)sm->n * sizeof(double) + 1);
    for (int j = 0; j < sm->n; j++) sm->axis_gene[(size_t)sm->P * sm->n + j] = gene[j] < 0 ? 0 : gene[j];
    sm->P++;
    return 0;
}

static int add_block(void *ctx, const TrialConfig *c, const double *gene) {
    Sampler *sm = ctx;
    long size = 1;
    for (int j = 0; j < sm->n; j++)
        if (!sm->is_source[j] && space_condition_holds(&sm->s->params[j], c))
            size *= space_param_count(&sm->s->params[j]);
    long b = sm->n_blocks++;
    sm->block_gene = xrealloc(sm->block_gene, (size_t)sm->n_blocks * (size_t)sm->n * sizeof(double) + 1);
    sm->block_start = xrealloc(sm->block_start, (size_t)(sm->n_blocks + 1) * sizeof(long));
    for (int j = 0; j < sm->n; j++) sm->block_gene[b * sm->n + j] = gene[j] < 0 ? 0 : gene[j];
    sm->block_start[b + 1] = sm->block_start[b] + size;
    return 0;
}

static void grid_genes(Sampler *sm, long i, double *gene) {
    long lo = 0, hi = sm->n_blocks - 1;  // the block b with block_start[b] <= i < block_start[b + 1]
    while (lo < hi) {
        long mid = (lo + hi + 1) / 2;
        if (sm->block_start[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    memcpy(gene, &sm->block_gene[lo * sm->n], (size_t)sm->n * sizeof(double));
    TrialConfig c;
    space_render(sm->s, gene, &c);  // fixes which of the other parameters apply
    long r = i - sm->block_start[lo];
    for (int j = sm->n - 1; j >= 0; j--) {
        const SpaceParam *p = &sm->s->params[j];
        if (sm->is_source[j] || !space_condition_holds(p, &c)) continue;
        long count = space_param_count(p);
        gene[j] = (double)(r % count);
        r /= count;
    }
}

// One parameter that applies to the configuration changes (see the top of the file).
static void mutate(Sampler *sm, double *gene) {
    const SweepSpec *s = sm->s;
    TrialConfig c;
    space_render(s, gene, &c);
    int *cand = xmalloc((size_t)sm->n * sizeof(int) + 1), m = 0;
    for (int j = 0; j < sm->n; j++) {
        const SpaceParam *p = &s->params[j];
        long count = space_param_count(p);
        if (!p->grid && space_condition_holds(p, &c) && (count > 1 || (count < 0 && p->lo < p->hi))) cand[m++] = j;
    }
    if (m > 0) {
        const SpaceParam *p = &s->params[cand[gsl_rng_uniform_int(sm->rng, (unsigned long)m)]];
        double *g = &gene[p - s->params];
        long count = space_param_count(p), k = (long)*g;
        if (p->dist == DIST_VALUES || p->dist == DIST_CATEGORICAL) {
            k = k == 0 ? 1 : k == count - 1 ? count - 2 : k + (gsl_rng_uniform(sm->rng) < 0.5 ? -1 : 1);
            *g = (double)k;
        } else if (count > 0) {
            long other = (long)(gsl_rng_uniform(sm->rng) * (double)(count - 1));
            *g = (double)(other >= k ? other + 1 : other);
        } else {
            int whole = p->param->type == PT_INT;
            for (int t = 0; t < MUTATION_TRIES; t++) {
                double v = gene_from_unit(p, gsl_rng_uniform(sm->rng));
                if (whole ? llround(v) != llround(*g) : v != *g) {
                    *g = v;
                    break;
                }
            }
        }
    }
    free(cand);
}

static void tpe_genes(Sampler *sm, long i, double *gene) {
    if (!sm->genes[i]) {
        double *g = xmalloc((size_t)sm->n * sizeof(double) + 1);
        random_genes(sm, i, g);
        if (tpe_observed(sm->tpe) >= sm->s->tpe.n_startup) {
            gsl_rng_set(sm->rng, stream_seed(sm->s->seed, STREAM_TPE, i));
            tpe_propose(sm->tpe, g, sm->rng, g);
        }
        sm->genes[i] = g;
        tpe_pending(sm->tpe, i, g);
    }
    memcpy(gene, sm->genes[i], (size_t)sm->n * sizeof(double));
}

// Returns -1 when the population is too small for a tournament yet.
static int evolution_genes(Sampler *sm, long i, double *gene) {
    const SweepSpec *s = sm->s;
    if (!sm->genes[i]) {
        if (i >= s->population && sm->n_pop < s->sample_size) return -1;
        double *g = xmalloc((size_t)sm->n * sizeof(double) + 1);
        if (i < s->population) {
            random_genes(sm, i, g);
        } else {
            gsl_rng_set(sm->rng, stream_seed(s->seed, STREAM_EVOLUTION, i));
            for (int k = 0; k < sm->n_pop; k++) sm->order[k] = k;
            int best = -1;
            for (int k = 0; k < s->sample_size; k++) {  // partial Fisher-Yates: distinct members
                int r = k + (int)gsl_rng_uniform_int(sm->rng, (unsigned long)(sm->n_pop - k));
                int t = sm->order[k];
                sm->order[k] = sm->order[r];
                sm->order[r] = t;
                if (best < 0 || sm->pop[sm->order[k]].metric > sm->pop[best].metric) best = sm->order[k];
            }
            memcpy(g, sm->genes[sm->pop[best].config], (size_t)sm->n * sizeof(double));
            mutate(sm, g);
        }
        sm->genes[i] = g;
    }
    memcpy(gene, sm->genes[i], (size_t)sm->n * sizeof(double));
    return 0;
}

Sampler *sampler_create(const SweepSpec *s) {
    Sampler *sm = xcalloc(1, sizeof *sm);
    sm->s = s;
    sm->n = s->n_params;
    sm->seed = config_find("seed");
    sm->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!sm->rng) die(EXIT_RUNTIME, "out of memory for a random number generator");
    sm->gene = xcalloc((size_t)sm->n + 1, sizeof(double));
    sm->report = xcalloc((size_t)sm->n + SPACE_MAX_OBJECTIVES, sizeof(double));
    sm->P = 1;
    if (s->grid_points > 1) {
        sm->is_axis = xcalloc((size_t)sm->n + 1, 1);
        for (int j = 0; j < sm->n; j++) sm->is_axis[j] = (unsigned char)s->params[j].grid;
        sm->P = 0;
        space_enumerate(s, sm->is_axis, 0, LONG_MAX, add_axis_point, sm);
    }
    switch (s->method) {
    case METHOD_GRID: {
        sm->is_source = xcalloc((size_t)sm->n + 1, 1);
        space_sources(s, sm->is_source);
        sm->block_start = xcalloc(1, sizeof(long));
        space_enumerate(s, sm->is_source, 0, LONG_MAX, add_block, sm);
        break;
    }
    case METHOD_SOBOL:
        for (int j = 0; j < sm->n; j++) sm->dims += s->params[j].dist != DIST_VALUE && !s->params[j].grid;
        sm->point = xcalloc((size_t)sm->dims + 1, sizeof(double));
        sm->shift = xcalloc((size_t)sm->dims + 1, sizeof(double));
        if (sm->dims) {
            sm->qrng = gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)sm->dims);
            if (!sm->qrng) die(EXIT_RUNTIME, "cannot make a Sobol sequence of dimension %d", sm->dims);
        }
        gsl_rng_set(sm->rng, stream_seed(s->seed, STREAM_SOBOL, 0));
        for (int d = 0; d < sm->dims; d++) sm->shift[d] = gsl_rng_uniform(sm->rng);
        break;
    case METHOD_EVOLUTION:
    case METHOD_TPE:
    case METHOD_MOTPE:
        sm->m = s->method == METHOD_MOTPE ? s->n_objectives : 1;
        for (int k = 0; k < sm->m; k++) {
            sm->objective[k] = s->method == METHOD_MOTPE ? space_objective_metric(s, k) : space_metric(s);
            sm->maximize[k] = s->method == METHOD_MOTPE ? s->objective_maximize[k] : s->maximize;
            if (!sm->objective[k]) die(EXIT_RUNTIME, "internal error: no metric %s", s->objective[k]);
        }
        sm->n_samples = s->trials / s->repeats / sm->P;
        sm->genes = xcalloc((size_t)sm->n_samples, sizeof *sm->genes);
        sm->sum = xcalloc((size_t)sm->n_samples * sm->m, sizeof *sm->sum);
        sm->reported = xcalloc((size_t)sm->n_samples, sizeof *sm->reported);
        sm->pruned = xcalloc((size_t)sm->n_samples, sizeof *sm->pruned);
        if (s->method == METHOD_EVOLUTION) {
            sm->pop = xcalloc((size_t)s->population, sizeof *sm->pop);
            sm->order = xcalloc((size_t)s->population, sizeof *sm->order);
        } else {
            sm->tpe = tpe_create(s, sm->m, sm->n_samples);
        }
        break;
    case METHOD_RANDOM: break;
    }
    return sm;
}

void sampler_free(Sampler *sm) {
    if (!sm) return;
    gsl_rng_free(sm->rng);
    free(sm->gene);
    free(sm->report);
    free(sm->is_axis);
    free(sm->axis_gene);
    free(sm->is_source);
    free(sm->block_gene);
    free(sm->block_start);
    if (sm->qrng) gsl_qrng_free(sm->qrng);
    free(sm->point);
    free(sm->shift);
    for (long i = 0; i < sm->n_samples; i++) free(sm->genes[i]);
    free(sm->genes);
    free(sm->sum);
    free(sm->reported);
    free(sm->pruned);
    tpe_free(sm->tpe);
    free(sm->pop);
    free(sm->order);
    free(sm);
}

static void check_id(const Sampler *sm, int id) {
    if (id < 0 || id >= sm->s->trials)
        die(EXIT_RUNTIME, "internal error: trial %d outside the sweep's 0..%d", id, sm->s->trials - 1);
}

int sampler_config(Sampler *sm, int id, TrialConfig *out) {
    const SweepSpec *s = sm->s;
    check_id(sm, id);
    const long i = id / s->repeats, k = i / sm->P;  // configuration, sample
    switch (s->method) {
    case METHOD_GRID: grid_genes(sm, i, sm->gene); break;
    case METHOD_RANDOM: random_genes(sm, k, sm->gene); break;
    case METHOD_SOBOL: sobol_genes(sm, k, sm->gene); break;
    case METHOD_EVOLUTION:
        if (evolution_genes(sm, k, sm->gene)) return -1;
        break;
    case METHOD_TPE:
    case METHOD_MOTPE: tpe_genes(sm, k, sm->gene); break;
    }
    if (sm->axis_gene) {
        const double *axes = &sm->axis_gene[(size_t)(i % sm->P) * sm->n];
        for (int j = 0; j < sm->n; j++)
            if (sm->is_axis[j]) sm->gene[j] = axes[j];
    }
    space_render(s, sm->gene, out);
    char text[32], err[256];
    snprintf(text, sizeof text, "%d", s->seed * 1000 + id % s->repeats);
    if (config_set(out, sm->seed, text, err, sizeof err)) die(EXIT_RUNTIME, "internal error: %s", err);
    return 0;
}

// The sample of trial `id` (an adaptive sampler's), with these genes when it has none yet
// (a trial from before a resume: its configuration's).
static long sample_of(Sampler *sm, int id, const double *genes) {
    const SweepSpec *s = sm->s;
    check_id(sm, id);
    const long i = id / s->repeats / sm->P;
    if (!sm->genes[i]) {
        sm->genes[i] = xmalloc((size_t)sm->n * sizeof(double) + 1);
        memcpy(sm->genes[i], genes, (size_t)sm->n * sizeof(double));
    }
    return i;
}

int sampler_report_size(const Sampler *sm) { return space_adaptive(sm->s) ? sm->n + sm->m : 0; }

void sampler_report_take(const Sampler *sm, const TrialResult *r, double *out) {
    if (!space_adaptive(sm->s)) return;
    for (int j = 0; j < sm->n; j++) out[j] = space_gene_of(&sm->s->params[j], &r->config);
    for (int k = 0; k < sm->m; k++) out[sm->n + k] = metric_value(r, sm->objective[k]);
}

void sampler_report_numbers(Sampler *sm, int id, TrialStatus status, const double *in) {
    const SweepSpec *s = sm->s;
    if (!space_adaptive(s)) return;
    const long i = sample_of(sm, id, in);
    const int trials = s->repeats * sm->P;  // of the sample
    if (sm->reported[i] == trials) return;  // reported twice
    const int failed = status == TRIAL_FAILED;
    for (int k = 0; k < sm->m; k++) {  // larger is better; a failed trial is the worst
        const double v = in[sm->n + k] * (sm->maximize[k] ? 1.0 : -1.0);
        sm->sum[i * sm->m + k] += !failed && isfinite(v) ? v : -HUGE_VAL;
    }
    sm->pruned[i] += status == TRIAL_PRUNED;
    if (++sm->reported[i] < trials) return;
    double mean[SPACE_MAX_OBJECTIVES];
    for (int k = 0; k < sm->m; k++) mean[k] = sm->sum[i * sm->m + k] / trials;
    if (sm->tpe) {  // -inf (a failed repeat): not an observation (tpe_observe)
        for (int k = 0; k < sm->m; k++) mean[k] = isfinite(mean[k]) ? mean[k] : NAN;
        tpe_observe(sm->tpe, i, sm->genes[i], mean, sm->pruned[i] == 0);
        return;
    }
    Member m = {i, mean[0]};
    if (sm->n_pop < s->population) {
        sm->pop[(sm->pop_head + sm->n_pop++) % s->population] = m;
    } else {  // the oldest member ages out
        sm->pop[sm->pop_head] = m;
        sm->pop_head = (sm->pop_head + 1) % s->population;
    }
}

void sampler_report(Sampler *sm, const TrialResult *r) {
    sampler_report_take(sm, r, sm->report);
    sampler_report_numbers(sm, r->id, r->status, sm->report);
}

void sampler_retry(Sampler *sm, const TrialResult *r) {
    if (!space_adaptive(sm->s)) return;
    sampler_report_take(sm, r, sm->report);
    const long i = sample_of(sm, r->id, sm->report);
    if (sm->tpe) tpe_pending(sm->tpe, i, sm->genes[i]);  // running again: the constant liar counts it
}

