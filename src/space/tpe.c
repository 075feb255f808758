// tpe.c: the Tree-structured Parzen Estimator and MOTPE (see tpe.h).
//
// Parameter kinds and their spaces (the gene of space_impl.h):
//   categorical  values / categorical / value lists: the index, n choices
//   discrete     int_uniform, q_uniform: the support index k ∈ [0, n), kernels on
//                [−0.5, n − 0.5], a candidate rounded to the nearest index
//   continuous   in the space of the law's distribution function, u = F(x) on
//                [u_lo, u_hi] (space_impl.h, distribution.c): uniform on [min, max]
//                and log_uniform_values on [log min, log max] up to an affine map; a
//                normal, log_normal or beta law is its own prior there; a q_ kind's
//                proposal is rounded to a multiple of q
// Numerics: a kernel's normalisation over [low, high] and a discrete index's mass are
// Gaussian masses Φ(b) − Φ(a), taken in logs from whichever tail keeps them exact
// (log_gauss_mass), so that a far-out candidate gets a finite log l − log g.
#define _DEFAULT_SOURCE  // M_PI
#include "space/tpe.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_erf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/pareto.h"
#include "common/util.h"
#include "space/space_impl.h"

enum { OBS_PENDING, OBS_COMPLETE, OBS_PRUNED };
enum { KIND_FIXED, KIND_CATEGORICAL, KIND_DISCRETE, KIND_CONTINUOUS };
enum { GAMMA_CAP = 25, RECENT = 25 };

typedef struct {
    int state;
    long order;                     // when it was handed out (chronological order)
    double *gene;                   // n
    unsigned char *applies;         // n
    double value[SPACE_MAX_OBJECTIVES];
} Obs;

struct Tpe {
    const SweepSpec *s;
    int n, m;                       // parameters, objectives
    long n_configs, clock;
    Obs *obs;                       // per configuration; gene NULL until handed out or observed
    long *chron, chron_cap;         // [clock]: the configuration whose order is that tick
    int *kind;
    double *low, *high;             // numerical kernels' support, in the transformed space
    long *count;                    // categorical and discrete: choices
};

static int kind_of(const SpaceParam *p) {
    if (p->dist == DIST_VALUE || p->grid) return KIND_FIXED;  // a grid axis is enumerated, not proposed
    if (p->dist == DIST_VALUES || p->dist == DIST_CATEGORICAL) return KIND_CATEGORICAL;
    return space_param_count(p) >= 0 ? KIND_DISCRETE : KIND_CONTINUOUS;
}

Tpe *tpe_create(const SweepSpec *s, int n_objectives, long n_configs) {
    Tpe *t = xcalloc(1, sizeof *t);
    t->s = s, t->n = s->n_params, t->m = n_objectives, t->n_configs = n_configs;
    t->obs = xcalloc((size_t)n_configs, sizeof *t->obs);
    t->kind = xcalloc((size_t)t->n + 1, sizeof *t->kind);
    t->low = xcalloc((size_t)t->n + 1, sizeof *t->low);
    t->high = xcalloc((size_t)t->n + 1, sizeof *t->high);
    t->count = xcalloc((size_t)t->n + 1, sizeof *t->count);
    for (int j = 0; j < t->n; j++) {
        const SpaceParam *p = &s->params[j];
        t->kind[j] = kind_of(p);
        t->count[j] = space_param_count(p);
        if (t->kind[j] == KIND_DISCRETE) {
            t->low[j] = -0.5, t->high[j] = (double)t->count[j] - 0.5;
        } else if (t->kind[j] == KIND_CONTINUOUS) {
            t->low[j] = p->u_lo;
            t->high[j] = p->u_hi;
        }
    }
    return t;
}

void tpe_free(Tpe *t) {
    if (!t) return;
    for (long i = 0; i < t->n_configs; i++) {
        free(t->obs[i].gene);
        free(t->obs[i].applies);
    }
    free(t->obs);
    free(t->chron);
    free(t->kind);
    free(t->low);
    free(t->high);
    free(t->count);
    free(t);
}

long tpe_observed(const Tpe *t) {
    long k = 0;
    for (long i = 0; i < t->n_configs; i++) k += t->obs[i].gene && t->obs[i].state != OBS_PENDING;
    return k;
}

// The gene in the kernels' space (its distribution function: space_to_model), and back.
static double to_space(const Tpe *t, int j, double gene) {
    return t->kind[j] == KIND_CONTINUOUS ? space_to_model(&t->s->params[j], gene) : gene;
}
static double from_space(const Tpe *t, int j, double x) {
    return t->kind[j] == KIND_CONTINUOUS ? space_from_model(&t->s->params[j], x) : x;
}

static void remember(Tpe *t, long i, const double *gene, int state) {
    Obs *o = &t->obs[i];
    if (!o->gene) {
        o->gene = xmalloc((size_t)t->n * sizeof(double) + 1);
        o->applies = xmalloc((size_t)t->n + 1);
        if (t->clock == t->chron_cap)
            t->chron = xrealloc(t->chron, (size_t)(t->chron_cap = t->chron_cap ? 2 * t->chron_cap : 64) * sizeof(long));
        t->chron[t->clock] = i;
        o->order = t->clock++;
    }
    memcpy(o->gene, gene, (size_t)t->n * sizeof(double));
    TrialConfig c;
    space_render(t->s, gene, &c);
    for (int j = 0; j < t->n; j++) o->applies[j] = space_condition_holds(&t->s->params[j], &c);
    o->state = state;
}

void tpe_pending(Tpe *t, long i, const double *gene) {
    if (!t->obs[i].gene || t->obs[i].state == OBS_PENDING) remember(t, i, gene, OBS_PENDING);
}

void tpe_observe(Tpe *t, long i, const double *gene, const double *values, int complete) {
    int finite = 1;
    for (int k = 0; k < t->m; k++) finite &= isfinite(values[k]);
    if (!finite) {  // a failed trial teaches nothing (as Optuna's TPE): forget it
        free(t->obs[i].gene);
        free(t->obs[i].applies);
        memset(&t->obs[i], 0, sizeof t->obs[i]);
        return;
    }
    remember(t, i, gene, complete ? OBS_COMPLETE : OBS_PRUNED);
    memcpy(t->obs[i].value, values, (size_t)t->m * sizeof(double));
}

// ---------------------------------------------------------------- ranking


// One objective's ranking, a total order: completed before pruned, then by value, then the
// earlier. (Several objectives: by non-domination rank, split_multi below.)
static int compare_single(const Obs *a, const Obs *b) {
    if (a->state != b->state) return a->state == OBS_COMPLETE ? -1 : 1;  // completed first
    if (a->value[0] != b->value[0]) return a->value[0] > b->value[0] ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static const Obs *sort_base;
static int cmp_order(const void *x, const void *y) {
    const long a = sort_base[*(const long *)x].order, b = sort_base[*(const long *)y].order;
    return (a > b) - (a < b);
}

// The good group (n_good indices, chronological) and its weights; the bad group.
typedef struct {
    long *good, *bad;
    int n_good, n_bad;
    int older;            // the oldest finished bad ones left out of bad (the bounded history)
    double *good_weight;  // NULL: the default weights
} Split;

static void split_free(Split *sp) {
    free(sp->good);
    free(sp->bad);
    free(sp->good_weight);
}

// MOTPE's good group (sp->good): whole fronts while they fit, then from the next front the
// subset of greatest hypervolume, chosen greedily; each good one weighted by its
// hypervolume contribution to the good group (as the largest one, in (0, 1]).
static void split_multi(const Tpe *t, long *done, int n_done, int n_good, Split *sp) {
    const int m = t->m;
    int *rank = xcalloc((size_t)n_done + 1, sizeof(int)), *assigned = xcalloc((size_t)n_done + 1, sizeof(int));
    for (int r = 0, left = n_done; left > 0; r++) {  // peel the fronts
        int *front = xmalloc((size_t)n_done * sizeof(int)), nf = 0;
        for (int a = 0; a < n_done; a++) {
            if (assigned[a]) continue;
            int dom = 0;
            for (int b = 0; b < n_done && !dom; b++)
                dom = !assigned[b] && b != a && pareto_dominates(t->obs[done[b]].value, t->obs[done[a]].value, m);
            if (!dom) front[nf++] = a;
        }
        for (int k = 0; k < nf; k++) rank[front[k]] = r, assigned[front[k]] = 1;
        left -= nf;
        free(front);
    }
    unsigned char *chosen = xcalloc((size_t)n_done + 1, 1);
    int taken = 0;
    for (int r = 0; taken < n_good; r++) {
        int in_rank = 0;
        for (int a = 0; a < n_done; a++) in_rank += rank[a] == r;
        if (taken + in_rank <= n_good) {
            for (int a = 0; a < n_done; a++)
                if (rank[a] == r) chosen[a] = 1;
            taken += in_rank;
            continue;
        }
        // hypervolume subset selection on front r, greedily, against a reference below its worst
        double ref[SPACE_MAX_OBJECTIVES], *pts = xmalloc((size_t)(n_good + 1) * m * sizeof(double));
        for (int k = 0; k < m; k++) {
            ref[k] = HUGE_VAL;
            for (int a = 0; a < n_done; a++)
                if (rank[a] == r) ref[k] = fmin(ref[k], t->obs[done[a]].value[k]);
            ref[k] -= 0.1 * fabs(ref[k]) + 1e-12;
        }
        int n_pts = 0;
        while (taken < n_good) {
            int best = -1;
            double best_hv = -1.0;
            for (int a = 0; a < n_done; a++) {
                if (rank[a] != r || chosen[a]) continue;
                memcpy(pts + (size_t)n_pts * m, t->obs[done[a]].value, (size_t)m * sizeof(double));
                const double hv = pareto_hypervolume(pts, n_pts + 1, m, ref);
                if (hv > best_hv) best_hv = hv, best = a;
            }
            memcpy(pts + (size_t)n_pts++ * m, t->obs[done[best]].value, (size_t)m * sizeof(double));
            chosen[best] = 1;
            taken++;
        }
        free(pts);
    }
    for (int a = 0; a < n_done; a++)
        if (chosen[a]) sp->good[sp->n_good++] = done[a];
    sort_base = t->obs;
    qsort(sp->good, (size_t)sp->n_good, sizeof(long), cmp_order);
    // weights: each good one's contribution to the good group's hypervolume
    double ref[SPACE_MAX_OBJECTIVES], *pts = xmalloc((size_t)(sp->n_good + 1) * m * sizeof(double));
    for (int k = 0; k < m; k++) {
        ref[k] = HUGE_VAL;
        for (int a = 0; a < sp->n_good; a++) ref[k] = fmin(ref[k], t->obs[sp->good[a]].value[k]);
        ref[k] -= 0.1 * fabs(ref[k]) + 1e-12;
    }
    for (int a = 0; a < sp->n_good; a++) memcpy(pts + (size_t)a * m, t->obs[sp->good[a]].value, (size_t)m * sizeof(double));
    const double all = pareto_hypervolume(pts, sp->n_good, m, ref);
    sp->good_weight = xmalloc((size_t)(sp->n_good + 1) * sizeof(double));
    double wmax = 0.0;
    for (int a = 0; a < sp->n_good; a++) {
        double *others = xmalloc((size_t)(sp->n_good + 1) * m * sizeof(double));
        for (int b = 0, k = 0; b < sp->n_good; b++)
            if (b != a) memcpy(others + (size_t)k++ * m, pts + (size_t)b * m, (size_t)m * sizeof(double));
        sp->good_weight[a] = all - pareto_hypervolume(others, sp->n_good - 1, m, ref);
        wmax = fmax(wmax, sp->good_weight[a]);
        free(others);
    }
    for (int a = 0; a < sp->n_good; a++)
        sp->good_weight[a] = wmax > 0 ? fmax(1e-12, sp->good_weight[a] / wmax) : 1.0;
    free(pts);
    free(chosen);
    free(assigned);
    free(rank);
}

// One objective's good group: the n_good best of done[0..n_done) (compare_single, a total
// order), kept sorted in sp->good by insertion: O(n_done · n_good) at worst, about
// O(n_done) as most are no better than the worst kept.
static void best_single(const Tpe *t, const long *done, int n_done, int n_good, Split *sp) {
    for (int a = 0; a < n_done; a++) {
        int k = sp->n_good;
        if (k == n_good && (k == 0 || compare_single(&t->obs[done[a]], &t->obs[sp->good[k - 1]]) > 0)) continue;
        if (k == n_good) k--;  // the worst kept makes way
        for (; k > 0 && compare_single(&t->obs[done[a]], &t->obs[sp->good[k - 1]]) < 0; k--) sp->good[k] = sp->good[k - 1];
        sp->good[k] = done[a];
        if (sp->n_good < n_good) sp->n_good++;
    }
    sort_base = t->obs;
    qsort(sp->good, (size_t)sp->n_good, sizeof(long), cmp_order);
}

// The observations that have parameter j (every one for j < 0): the best γ of those
// finished good (chosen among all of them); the rest bad, chronological, with every
// pending one under the constant liar. The bad group's finished ones are bounded: only the
// most recent `history` of them are kept (the older ones, which weigh least, are counted
// in sp->older), so a proposal costs O(history) kernels and O(n) of bookkeeping. A
// conditional parameter is so judged among the trials that have it (Optuna 3.1 splits all
// trials and then drops those without it, which can leave its good group empty;
// scripts/bench/sampler_vs_optuna.sh measured this way the better).
static void split_observations(const Tpe *t, int j, Split *sp) {
    long *done = xmalloc((size_t)t->n_configs * sizeof(long) + 1);
    int n_done = 0, n_pending = 0;
    for (long i = 0; i < t->n_configs; i++) {
        const Obs *o = &t->obs[i];
        if (!o->gene || (j >= 0 && !o->applies[j])) continue;
        if (o->state == OBS_PENDING) n_pending++;
        else if (t->m == 1 || o->state == OBS_COMPLETE) done[n_done++] = i;  // MOTPE: completed ones only
    }
    int n_good = (int)ceil(t->s->tpe.gamma * n_done);
    if (n_good > GAMMA_CAP) n_good = GAMMA_CAP;
    const int keep = t->s->tpe.history > 0 && t->s->tpe.history < n_done - n_good ? t->s->tpe.history : n_done - n_good;
    memset(sp, 0, sizeof *sp);
    sp->good = xmalloc((size_t)(n_good + 1) * sizeof(long));
    sp->bad = xmalloc((size_t)(keep + n_pending + 1) * sizeof(long));
    if (t->m == 1)
        best_single(t, done, n_done, n_good, sp);
    else
        split_multi(t, done, n_done, n_good, sp);
    unsigned char *good = xcalloc((size_t)t->n_configs + 1, 1);
    for (int a = 0; a < sp->n_good; a++) good[sp->good[a]] = 1;
    int kept = 0;
    for (long k = t->clock - 1; k >= 0; k--) {  // newest first
        const long i = t->chron[k];
        const Obs *o = &t->obs[i];
        if (!o->gene || o->order != k || (j >= 0 && !o->applies[j]) || good[i]) continue;  // forgotten, or not bad
        if (o->state == OBS_PENDING) {
            if (t->s->tpe.constant_liar) sp->bad[sp->n_bad++] = i;  // the pending ones as the worst: bad
        } else if (t->m == 1 || o->state == OBS_COMPLETE) {
            if (kept < keep) sp->bad[sp->n_bad++] = i, kept++;
            else sp->older++;
        }
    }
    for (int a = 0, b = sp->n_bad - 1; a < b; a++, b--) {  // oldest first
        const long x = sp->bad[a];
        sp->bad[a] = sp->bad[b], sp->bad[b] = x;
    }
    free(good);
    free(done);
}

// ---------------------------------------------------------------- Parzen estimators

// log(Φ(b) − Φ(a)), a < b, exact also in the tails.
static double log_gauss_mass(double a, double b) {
    if (a >= 0.0) {  // upper tail: Q(a) − Q(b), Q(x) = erfc(x/√2)/2
        const double la = gsl_sf_log_erfc(a / M_SQRT2), lb = gsl_sf_log_erfc(b / M_SQRT2);
        return la - M_LN2 + log1p(-exp(lb - la));
    }
    if (b <= 0.0) return log_gauss_mass(-b, -a);
    return log1p(-0.5 * erfc(-a / M_SQRT2) - 0.5 * erfc(b / M_SQRT2));  // around the centre
}

// One parameter's mixture: k kernels (the observations, then the prior), weights w
// (normalised) and their logs lw. Numerical: centres mu, widths sigma, log normaliser lz
// over [low, high], and the log of a continuous kernel's density factor at its centre
// (lc = −log(√(2π) σ) − lz); categorical: per kernel a distribution over the choices p
// (k × count) and its logs lp.
typedef struct {
    int k, kind;
    double low, high;
    long count;
    double *w, *lw, *mu, *sigma, *lz, *lc, *p, *lp;
} Parzen;

static void parzen_free(Parzen *z) {
    free(z->w);
    free(z->lw);
    free(z->mu);
    free(z->sigma);
    free(z->lz);
    free(z->lc);
    free(z->p);
    free(z->lp);
}

// Optuna's default weights: 1 each, the oldest all − 25 ramped from 1/all up when all >
// 25, all = n + older (the n kept the most recent of all: each weighs what it would in
// the whole history); or the given ones; the prior kernel last.
static void parzen_weights(Parzen *z, int n, int older, const double *given, double prior) {
    const int all = n + older;
    double sum = 0.0;
    for (int a = 0; a < n; a++) {
        const int at = a + older;
        double w = 1.0;
        if (given)
            w = given[a];
        else if (all > RECENT && at < all - RECENT)
            w = 1.0 / all + (1.0 - 1.0 / all) * (all - RECENT > 1 ? (double)at / (all - RECENT - 1) : 0.0);
        z->w[a] = w;
        sum += w;
    }
    z->w[n] = prior;
    sum += prior;
    for (int a = 0; a <= n; a++) z->w[a] /= sum;
}

static int cmp_double(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// The estimator of parameter j from observations obs[0..n) (those that have it, after
// `older` left out), with sigma0 > 0 for a multivariate estimator's fixed width (a
// fraction of the range).
static void parzen_build(Parzen *z, const Tpe *t, int j, const long *obs, int n, int older, const double *given,
                         double sigma0) {
    const double prior = t->s->tpe.prior_weight;
    memset(z, 0, sizeof *z);
    z->k = n + 1, z->kind = t->kind[j], z->low = t->low[j], z->high = t->high[j], z->count = t->count[j];
    z->w = xmalloc((size_t)z->k * sizeof(double));
    z->lw = xmalloc((size_t)z->k * sizeof(double));
    parzen_weights(z, n, older, given, prior);
    for (int a = 0; a < z->k; a++) z->lw[a] = log(z->w[a]);
    if (z->kind == KIND_CATEGORICAL) {
        z->p = xmalloc((size_t)z->k * z->count * sizeof(double));
        const double base = prior / (n + 1);
        for (int a = 0; a < z->k; a++) {
            double *row = z->p + (size_t)a * z->count, sum = 0.0;
            for (long c = 0; c < z->count; c++) row[c] = base;
            if (a < n) row[(long)t->obs[obs[a]].gene[j]] += 1.0;
            for (long c = 0; c < z->count; c++) sum += row[c];
            for (long c = 0; c < z->count; c++) row[c] /= sum;
        }
        z->lp = xmalloc((size_t)z->k * z->count * sizeof(double));
        for (long i = 0; i < (long)z->k * z->count; i++) z->lp[i] = log(z->p[i]);
        return;
    }
    const double range = z->high - z->low;
    z->mu = xmalloc((size_t)z->k * sizeof(double));
    z->sigma = xmalloc((size_t)z->k * sizeof(double));
    z->lz = xmalloc((size_t)z->k * sizeof(double));
    z->lc = xmalloc((size_t)z->k * sizeof(double));
    for (int a = 0; a < n; a++) z->mu[a] = to_space(t, j, t->obs[obs[a]].gene[j]);
    z->mu[n] = 0.5 * (z->low + z->high);
    if (sigma0 > 0) {
        for (int a = 0; a < n; a++) z->sigma[a] = sigma0 * range;
    } else {  // the larger gap to the sorted neighbours (the ends: the inner gap)
        double *sorted = xmalloc((size_t)(z->k + 2) * sizeof(double));
        for (int a = 0; a < z->k; a++) sorted[a + 1] = z->mu[a];
        qsort(sorted + 1, (size_t)z->k, sizeof(double), cmp_double);
        sorted[0] = z->low, sorted[z->k + 1] = z->high;
        for (int a = 0; a < n; a++) {
            // its place among the sorted centres (the first of equal ones)
            int lo = 1, hi = z->k;
            while (lo < hi) {
                const int mid = (lo + hi) / 2;
                if (sorted[mid] < z->mu[a]) lo = mid + 1;
                else hi = mid;
            }
            double left = sorted[lo] - sorted[lo - 1], right = sorted[lo + 1] - sorted[lo];
            if (z->k + 2 >= 4 && lo == 1) left = 0.0;           // the lowest: its inner gap only
            if (z->k + 2 >= 4 && lo == z->k) right = 0.0;       // the highest likewise
            z->sigma[a] = fmax(left, right);
        }
        free(sorted);
    }
    const double smin = range / fmin(100.0, 1.0 + z->k);
    for (int a = 0; a < n; a++) z->sigma[a] = fmin(range, fmax(smin, z->sigma[a]));
    z->sigma[n] = range;
    for (int a = 0; a < z->k; a++) {
        z->lz[a] = log_gauss_mass((z->low - z->mu[a]) / z->sigma[a], (z->high - z->mu[a]) / z->sigma[a]);
        z->lc[a] = -0.5 * log(2.0 * M_PI) - log(z->sigma[a]) - z->lz[a];
    }
}

// log of kernel a's density (numerical: in the kernels' space; discrete: the mass of the
// index's unit interval) or probability (categorical) at x.
static double kernel_log(const Parzen *z, int a, double x) {
    if (z->kind == KIND_CATEGORICAL) return z->lp[(size_t)a * z->count + (long)x];
    const double mu = z->mu[a], s = z->sigma[a];
    if (z->kind == KIND_DISCRETE) {
        const double lo = fmax(z->low, x - 0.5), hi = fmin(z->high, x + 0.5);
        return log_gauss_mass((lo - mu) / s, (hi - mu) / s) - z->lz[a];
    }
    const double u = (x - mu) / s;
    return -0.5 * u * u + z->lc[a];
}

// A draw of kernel a, in the gene's terms (an index, or the value).
static double kernel_draw(const Parzen *z, int a, gsl_rng *rng) {
    if (z->kind == KIND_CATEGORICAL) {
        const double *row = z->p + (size_t)a * z->count, u = gsl_rng_uniform(rng);
        double cum = 0.0;
        for (long c = 0; c + 1 < z->count; c++)
            if (u < (cum += row[c])) return (double)c;
        return (double)(z->count - 1);
    }
    const double mu = z->mu[a], s = z->sigma[a];
    const double pa = gsl_cdf_ugaussian_P((z->low - mu) / s), pb = gsl_cdf_ugaussian_P((z->high - mu) / s);
    double x = mu + s * gsl_cdf_ugaussian_Pinv(pa + gsl_rng_uniform_pos(rng) * (pb - pa));
    if (!isfinite(x)) x = mu;  // a kernel far outside [low, high] (rounding): its centre
    x = fmin(z->high, fmax(z->low, x));
    if (z->kind == KIND_DISCRETE) {
        const double k = floor(x + 0.5);
        return fmin((double)(z->count - 1), fmax(0.0, k));
    }
    return x;
}

static int draw_kernel(const Parzen *z, gsl_rng *rng) {
    const double u = gsl_rng_uniform(rng);
    double cum = 0.0;
    for (int a = 0; a + 1 < z->k; a++)
        if (u < (cum += z->w[a])) return a;
    return z->k - 1;
}

// log Σ_a w_a exp(terms[a]), from lw = log w; terms is overwritten.
static double log_mixture(const double *lw, double *terms, int k) {
    double top = -HUGE_VAL;
    for (int a = 0; a < k; a++) top = fmax(top, terms[a] += lw[a]);
    if (!isfinite(top)) return top;
    double sum = 0.0;
    for (int a = 0; a < k; a++) sum += exp(terms[a] - top);
    return top + log(sum);
}

// ---------------------------------------------------------------- proposals

// The observations among group[0..n) that have parameter j (all of them with NULL).
static int with_param(const Tpe *t, int j, const long *group, int n, long *out, const double *weight, double *w_out) {
    int k = 0;
    for (int a = 0; a < n; a++)
        if (j < 0 || t->obs[group[a]].applies[j]) {
            if (weight) w_out[k] = weight[a];
            out[k++] = group[a];
        }
    return k;
}

// Parameter j alone: the candidate of largest log l − log g, from the split of the
// observations that have it (all's when they all do).
static double propose_one(const Tpe *t, int j, const Split *all, gsl_rng *rng) {
    const int C = t->s->tpe.candidates;
    Split own;
    const Split *sp = all;
    if (t->s->params[j].n_when > 0) split_observations(t, j, &own), sp = &own;
    long *gi = xmalloc((size_t)(sp->n_good + 1) * sizeof(long)), *bi = xmalloc((size_t)(sp->n_bad + 1) * sizeof(long));
    double *gw = sp->good_weight ? xmalloc((size_t)(sp->n_good + 1) * sizeof(double)) : NULL;
    const int ng = with_param(t, j, sp->good, sp->n_good, gi, sp->good_weight, gw);
    const int nb = with_param(t, j, sp->bad, sp->n_bad, bi, NULL, NULL);
    Parzen l, g;
    parzen_build(&l, t, j, gi, ng, 0, gw, 0.0);
    parzen_build(&g, t, j, bi, nb, sp->older, NULL, 0.0);
    double *terms = xmalloc((size_t)(l.k > g.k ? l.k : g.k) * sizeof(double));
    double best = 0.0, best_score = -HUGE_VAL;
    for (int c = 0; c < C; c++) {
        const double x = kernel_draw(&l, draw_kernel(&l, rng), rng);
        for (int a = 0; a < l.k; a++) terms[a] = kernel_log(&l, a, x);
        const double ll = log_mixture(l.lw, terms, l.k);
        for (int a = 0; a < g.k; a++) terms[a] = kernel_log(&g, a, x);
        const double score = ll - log_mixture(g.lw, terms, g.k);
        if (c == 0 || score > best_score) best_score = score, best = x;
    }
    free(terms);
    parzen_free(&l);
    parzen_free(&g);
    free(gw);
    free(bi);
    free(gi);
    if (sp == &own) split_free(&own);
    return from_space(t, j, best);
}

// The parameters in `joint` drawn together from product kernels (multivariate TPE): the
// observations that have all of them; each kernel a product over the parameters.
static void propose_joint(const Tpe *t, const unsigned char *joint, const Split *sp, gsl_rng *rng, double *gene) {
    const int C = t->s->tpe.candidates, n = t->n;
    int d = 0;
    for (int j = 0; j < n; j++) d += joint[j];
    long *gi = xmalloc((size_t)(sp->n_good + 1) * sizeof(long)), *bi = xmalloc((size_t)(sp->n_bad + 1) * sizeof(long));
    double *gw = sp->good_weight ? xmalloc((size_t)(sp->n_good + 1) * sizeof(double)) : NULL;
    const int ng = with_param(t, -1, sp->good, sp->n_good, gi, sp->good_weight, gw);
    const int nb = with_param(t, -1, sp->bad, sp->n_bad, bi, NULL, NULL);
    Parzen *l = xcalloc((size_t)n + 1, sizeof(Parzen)), *g = xcalloc((size_t)n + 1, sizeof(Parzen));
    const double s_good = 0.2 * pow(fmax(1, ng), -1.0 / (d + 4)), s_bad = 0.2 * pow(fmax(1, nb), -1.0 / (d + 4));
    for (int j = 0; j < n; j++)
        if (joint[j]) {
            parzen_build(&l[j], t, j, gi, ng, 0, gw, s_good);
            parzen_build(&g[j], t, j, bi, nb, sp->older, NULL, s_bad);
        }
    double *cand = xmalloc((size_t)n * sizeof(double) + 1), *lt = xmalloc((size_t)(ng + 1) * sizeof(double));
    double *gt = xmalloc((size_t)(nb + 1) * sizeof(double)), best_score = -HUGE_VAL;
    int first = -1;
    for (int j = 0; j < n && first < 0; j++)
        if (joint[j]) first = j;
    for (int c = 0; c < C; c++) {
        const int a0 = draw_kernel(&l[first], rng);  // one kernel for every parameter
        memset(lt, 0, (size_t)(ng + 1) * sizeof(double));
        memset(gt, 0, (size_t)(nb + 1) * sizeof(double));
        for (int j = 0; j < n; j++) {
            if (!joint[j]) continue;
            cand[j] = kernel_draw(&l[j], a0, rng);
            for (int a = 0; a < l[j].k; a++) lt[a] += kernel_log(&l[j], a, cand[j]);
            for (int a = 0; a < g[j].k; a++) gt[a] += kernel_log(&g[j], a, cand[j]);
        }
        const double score = log_mixture(l[first].lw, lt, ng + 1) - log_mixture(g[first].lw, gt, nb + 1);
        if (c == 0 || score > best_score) {
            best_score = score;
            for (int j = 0; j < n; j++)
                if (joint[j]) gene[j] = from_space(t, j, cand[j]);
        }
    }
    for (int j = 0; j < n; j++)
        if (joint[j]) parzen_free(&l[j]), parzen_free(&g[j]);
    free(gt);
    free(lt);
    free(cand);
    free(g);
    free(l);
    free(gw);
    free(bi);
    free(gi);
}

void tpe_propose(Tpe *t, const double *base_gene, gsl_rng *rng, double *gene) {
    const SweepSpec *s = t->s;
    Split sp;
    split_observations(t, -1, &sp);
    memcpy(gene, base_gene, (size_t)t->n * sizeof(double));
    unsigned char *joint = xcalloc((size_t)t->n + 1, 1);
    int n_joint = 0;
    if (s->tpe.multivariate)
        for (int j = 0; j < t->n; j++)
            if (t->kind[j] != KIND_FIXED && s->params[j].n_when == 0) joint[j] = 1, n_joint++;
    if (n_joint) propose_joint(t, joint, &sp, rng, gene);
    for (int j = 0; j < t->n; j++) {  // in file order: a condition reads only earlier parameters
        if (t->kind[j] == KIND_FIXED || joint[j]) continue;
        TrialConfig c;
        space_render(s, gene, &c);
        if (!space_condition_holds(&s->params[j], &c)) continue;
        gene[j] = propose_one(t, j, &sp, rng);
    }
    free(joint);
    split_free(&sp);
}
