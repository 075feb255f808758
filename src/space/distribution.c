// distribution.c: the continuous distributions of a search space, with W&B's meaning
// (space_impl.h). Each is a law with a distribution function F and its inverse, both
// GSL's where GSL has them:
//   uniform                        uniform on [min, max]
//   log_uniform_values             log x uniform on [log min, log max]
//   log_uniform                    log x uniform on [min, max] (min, max are exponents)
//   inv_log_uniform                log(1/x) uniform on [min, max]: log x on [−max, −min]
//   inv_log_uniform_values         log(1/x) uniform on [log(1/max), log(1/min)], which is
//                                  the law of log_uniform_values on [min, max]
//   normal, log_normal             x (or log x) normal with mean mu and deviation sigma
//   beta                           beta(a, b) on [0, 1]
//   q_...                          round(x / q) · q of the law without q_
// A value is drawn as F⁻¹ of a uniform number (MT19937 or a Sobol point), so every sampler
// draws from the same law. Every law is truncated to the parameter's range (F⁻¹ on
// [F(range min), F(range max)]), which changes nothing where the range holds the whole
// law; the unbounded ones (normal, log_normal) also to their central 1 − 2·10⁻⁹, so that
// the extremes the space's checks see are finite (μ ± 6σ or less, in log x for log_normal).
// TPE models a continuous parameter in the space of its distribution function, u = F(x)
// on [u_lo, u_hi], as W&B's bayes search does: for uniform and the log-uniform kinds an
// affine map of x or log x, for normal, log_normal and beta the law itself is the prior.
#include <gsl/gsl_cdf.h>
#include <math.h>

#include "space/space_impl.h"

static const double TAIL = 1e-9;  // mass cut from each side of an unbounded law

int space_dist_has_law(Distribution d) {
    return d == DIST_NORMAL || d == DIST_Q_NORMAL || d == DIST_LOG_NORMAL || d == DIST_Q_LOG_NORMAL ||
           d == DIST_BETA || d == DIST_Q_BETA;
}

int space_dist_quantised(Distribution d) {
    return d == DIST_Q_LOG_UNIFORM || d == DIST_Q_LOG_UNIFORM_VALUES || d == DIST_Q_NORMAL || d == DIST_Q_LOG_NORMAL ||
           d == DIST_Q_BETA;
}

// Whether a bounded law is uniform in log x (the log-uniform kinds).
static int log_scale(const SpaceParam *p) {
    switch (p->dist) {
    case DIST_LOG_UNIFORM_VALUES:
    case DIST_LOG_UNIFORM:
    case DIST_Q_LOG_UNIFORM:
    case DIST_Q_LOG_UNIFORM_VALUES:
    case DIST_INV_LOG_UNIFORM:
    case DIST_INV_LOG_UNIFORM_VALUES: return 1;
    default: return 0;
    }
}

// A bounded law's interval of values [*A, *B].
static void law_interval(const SpaceParam *p, double *A, double *B) {
    switch (p->dist) {
    case DIST_LOG_UNIFORM:
    case DIST_Q_LOG_UNIFORM: *A = exp(p->min), *B = exp(p->max); break;
    case DIST_INV_LOG_UNIFORM: *A = exp(-p->max), *B = exp(-p->min); break;
    default: *A = p->min, *B = p->max;
    }
}

static double law_cdf(const SpaceParam *p, double x) {
    switch (p->dist) {
    case DIST_NORMAL:
    case DIST_Q_NORMAL: return gsl_cdf_gaussian_P(x - p->mu, p->sigma);
    case DIST_LOG_NORMAL:
    case DIST_Q_LOG_NORMAL: return x > 0 ? gsl_cdf_lognormal_P(x, p->mu, p->sigma) : 0.0;
    case DIST_BETA:
    case DIST_Q_BETA: return x <= 0 ? 0.0 : x >= 1 ? 1.0 : gsl_cdf_beta_P(x, p->a, p->b);
    default: break;
    }
    double A, B;
    law_interval(p, &A, &B);
    if (x <= A) return x < A ? 0.0 : (A == B);
    if (x >= B) return 1.0;
    return log_scale(p) ? (log(x) - log(A)) / (log(B) - log(A)) : (x - A) / (B - A);
}

static double law_quantile(const SpaceParam *p, double u) {
    switch (p->dist) {
    case DIST_NORMAL:
    case DIST_Q_NORMAL: return p->mu + gsl_cdf_gaussian_Pinv(u, p->sigma);
    case DIST_LOG_NORMAL:
    case DIST_Q_LOG_NORMAL: return gsl_cdf_lognormal_Pinv(u, p->mu, p->sigma);
    case DIST_BETA:
    case DIST_Q_BETA: return u <= 0 ? 0.0 : u >= 1 ? 1.0 : gsl_cdf_beta_Pinv(u, p->a, p->b);
    default: break;
    }
    double A, B;
    law_interval(p, &A, &B);
    const double x = log_scale(p) ? exp(log(A) + u * (log(B) - log(A))) : A + u * (B - A);
    return x < A ? A : x > B ? B : x;
}

double space_truncate(SpaceParam *p, double pmin, double pmax) {
    const double f_lo = law_cdf(p, pmin), f_hi = law_cdf(p, pmax);
    const int unbounded = p->dist == DIST_NORMAL || p->dist == DIST_Q_NORMAL || p->dist == DIST_LOG_NORMAL ||
                          p->dist == DIST_Q_LOG_NORMAL;
    p->u_lo = unbounded && f_lo < TAIL ? TAIL : f_lo;
    p->u_hi = unbounded && f_hi > 1 - TAIL ? 1 - TAIL : f_hi;
    if (p->u_hi < p->u_lo) p->u_hi = p->u_lo;
    p->lo = fmax(law_quantile(p, p->u_lo), pmin);
    p->hi = fmin(law_quantile(p, p->u_hi), pmax);
    if (p->hi < p->lo) p->hi = p->lo;
    return f_hi - f_lo;
}

// round(x / q)·q, moved one q inwards when that leaves [lo, hi] (the loader checks that
// [lo, hi] holds a multiple of q).
static double quantise(const SpaceParam *p, double x) {
    double v = round(x / p->q) * p->q;
    if (v > p->hi) v -= p->q;
    if (v < p->lo) v += p->q;
    return v;
}

static double finish(const SpaceParam *p, double x) {
    if (space_dist_quantised(p->dist)) return quantise(p, x);
    return x < p->lo ? p->lo : x > p->hi ? p->hi : x;
}

double space_draw(const SpaceParam *p, double u) {
    return finish(p, law_quantile(p, p->u_lo + u * (p->u_hi - p->u_lo)));
}

double space_to_model(const SpaceParam *p, double value) {
    return law_cdf(p, value < p->lo ? p->lo : value > p->hi ? p->hi : value);
}

double space_from_model(const SpaceParam *p, double u) {
    return finish(p, law_quantile(p, u < p->u_lo ? p->u_lo : u > p->u_hi ? p->u_hi : u));
}
