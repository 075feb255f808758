// test_tpe: the TPE and MOTPE samplers (src/space/tpe.c) through the sampler interface a
// sweep uses: they find what random search does not on objectives of every parameter
// kind (log and linear ranges, integers, q-grids, categoricals, conditional
// parameters; W&B's normal, log_normal, q_log_uniform_values and beta), are reproducible from the seed, keep away from pending configurations
// with the constant liar, rebuild their state from reported trials (a resume), and
// MOTPE's front covers more hypervolume than random's; the hypervolume itself against
// known values.
// modules: space
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/pareto.h"
#include "common/util.h"
#include "space/space.h"
#include "space/tpe.h"

static int parse(SweepSpec *s, const char *yaml) {
    char err[1024];
    if (space_parse(s, "mem.yaml", yaml, strlen(yaml), err, sizeof err) == 0) return 0;
    CHECK(0, "space_parse: %s", err);
    return -1;
}

// A sweep of method over these parameters, maximising val_accuracy.
static const char *sweep_yaml(const char *parameters, const char *method, int trials, int seed) {
    static char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "method: %s\ntrials: %d\nseed: %d\nmetric: {name: val_accuracy, goal: maximize}\nparameters:\n%s",
             method, trials, seed, parameters);
    return yaml;
}

// A space of every kind: lr log-uniform, warmup_frac uniform, layers an integer range,
// eval_every a q-grid, attention categorical, core_rank only for tucker.
static const char *space_yaml(const char *method, int trials, int seed) {
    return sweep_yaml("  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}\n"
                      "  warmup_frac: {min: 0.0, max: 0.5}\n"
                      "  layers: {min: 1, max: 8}\n"
                      "  eval_every: {distribution: q_uniform, min: 10, max: 200, q: 10}\n"
                      "  attention: {values: [mha, tucker, linear, grassmann]}\n"
                      "  core_rank: {values: [1, 2, 3, 4], when: {attention: tucker}}\n",
                      method, trials, seed);
}

// The objective (larger is better, at most 1): a narrow optimum at lr = 3e-3,
// warmup_frac 0.1, 3 layers, eval_every 50, tucker with core rank 3.
static double objective(const TrialConfig *c) {
    const double dl = log10(c->lr / 3e-3), dw = c->warmup_frac - 0.1, dn = c->layers - 3, de = (c->eval_every - 50) / 50.0;
    double v = 1.0 - dl * dl - 4.0 * dw * dw - 0.05 * dn * dn - 0.2 * de * de;
    if (c->attention != ATTN_TUCKER) v -= 0.3;
    else v -= 0.1 * abs(c->core_rank - 3);
    return v;
}

static void report(Sampler *sm, int id, const TrialConfig *c, double value, TrialStatus status) {
    TrialResult r = {.id = id, .config = *c, .val_accuracy = value, .status = status};
    sampler_report(sm, &r);
}

// W&B's other kinds: lambda_orth normal, lr log-normal, batch q_log_uniform_values,
// min_lr_ratio beta.
static const char *law_yaml(const char *method, int trials, int seed) {
    return sweep_yaml("  lambda_orth: {distribution: normal, mu: 1, sigma: 0.5}\n"
                      "  lr: {distribution: log_normal, mu: -6.9, sigma: 1.5}\n"
                      "  batch: {distribution: q_log_uniform_values, min: 16, max: 512, q: 16}\n"
                      "  min_lr_ratio: {distribution: beta, a: 2, b: 2}\n",
                      method, trials, seed);
}

// Its objective: an optimum at lambda_orth 1.4, lr 3e-3, batch 64, min_lr_ratio 0.8.
static double law_objective(const TrialConfig *c) {
    const double dk = c->lambda_orth - 1.4, dl = log10(c->lr / 3e-3), db = log2(c->batch / 64.0),
                 dm = c->min_lr_ratio - 0.8;
    return 1.0 - dk * dk - dl * dl - 0.1 * db * db - 2 * dm * dm;
}

typedef const char *(*SpaceYaml)(const char *method, int trials, int seed);
typedef double (*Objective)(const TrialConfig *c);

// The best objective found in `trials` sequential trials of method, every one a valid
// configuration (the q_ kinds on their grid).
static double best_of(SpaceYaml yaml, Objective f, const char *method, int trials, int seed) {
    SweepSpec s;
    if (parse(&s, yaml(method, trials, seed))) return NAN;
    Sampler *sm = sampler_create(&s);
    double best = -HUGE_VAL;
    for (int id = 0; id < trials; id++) {
        TrialConfig c;
        CHECK(sampler_config(sm, id, &c) == 0, "%s: trial %d", method, id);
        char err[256];
        CHECK(config_check(&c, err, sizeof err) == 0, "%s: trial %d is not a valid configuration: %s", method, id, err);
        CHECK(c.batch % 16 == 0 && c.lambda_orth >= 0 && c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1,
              "%s: trial %d: batch %d, lambda_orth %g, min_lr_ratio %g", method, id, c.batch, c.lambda_orth,
              c.min_lr_ratio);
        const double v = f(&c);
        best = fmax(best, v);
        report(sm, id, &c, v, TRIAL_OK);
    }
    sampler_free(sm);
    space_free(&s);
    return best;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void beats_random(SpaceYaml yaml, Objective f, const char *what, const char *method) {
    enum { SEEDS = 11, TRIALS = 80 };
    double tpe[SEEDS], rnd[SEEDS];
    for (int k = 0; k < SEEDS; k++)
        tpe[k] = best_of(yaml, f, method, TRIALS, 1 + k), rnd[k] = best_of(yaml, f, "random", TRIALS, 1 + k);
    qsort(tpe, SEEDS, sizeof(double), cmp_double);
    qsort(rnd, SEEDS, sizeof(double), cmp_double);
    CHECK(tpe[SEEDS / 2] > rnd[SEEDS / 2], "%s: TPE's median best %.4f is not above random's %.4f", what,
          tpe[SEEDS / 2], rnd[SEEDS / 2]);
    printf("  %s, %d trials, %d seeds: median best TPE %.4f, random %.4f (optimum 1)\n", what, TRIALS, SEEDS,
           tpe[SEEDS / 2], rnd[SEEDS / 2]);
}

static void test_beats_random(void) {
    beats_random(space_yaml, objective, "every kind of parameter", "tpe");
    beats_random(law_yaml, law_objective, "normal, log_normal, q_log_uniform_values, beta", "tpe");
}

// The configurations a sweep of method proposes for `trials` sequential trials of the
// objective.
static void proposals(const char *method, int trials, int seed, TrialConfig *out) {
    SweepSpec s;
    if (parse(&s, space_yaml(method, trials, seed))) return;
    Sampler *sm = sampler_create(&s);
    for (int id = 0; id < trials; id++) {
        CHECK(sampler_config(sm, id, &out[id]) == 0, "%s: trial %d", method, id);
        report(sm, id, &out[id], objective(&out[id]), TRIAL_OK);
    }
    sampler_free(sm);
    space_free(&s);
}

// The bounded history (tpe: {history: N}, the bad group's most recent N finished ones): a
// bound above every bad observation proposes bit for bit as the whole history (0); one
// that bites proposes otherwise, from the seed alone (twice the same), and still beats
// random search.
static void test_bounded_history(void) {
    enum { TRIALS = 60 };
    static TrialConfig whole[TRIALS], wide[TRIALS], tight[TRIALS], again[TRIALS];
    proposals("tpe\ntpe: {history: 0}", TRIALS, 3, whole);
    proposals("tpe\ntpe: {history: 100}", TRIALS, 3, wide);
    proposals("tpe\ntpe: {history: 10}", TRIALS, 3, tight);
    proposals("tpe\ntpe: {history: 10}", TRIALS, 3, again);
    int first_apart = -1;
    for (int id = 0; id < TRIALS && first_apart < 0; id++)
        if (memcmp(&whole[id], &tight[id], sizeof whole[id])) first_apart = id;
    CHECK(!memcmp(whole, wide, sizeof whole), "history 100 > the trials: not the whole history's proposals");
    CHECK(first_apart > 10, "history 10: the proposals part from the whole history's at trial %d, want after "
          "n_startup and 10 bad ones, and before %d", first_apart, TRIALS);
    CHECK(!memcmp(tight, again, sizeof tight), "history 10: the same seed gave other proposals");
    beats_random(space_yaml, objective, "every kind of parameter, history 10", "tpe\ntpe: {history: 10}");
}

// The same reports give the same proposals; a fresh sampler told the first 30 results
// (a resume) proposes trial 30 as the one that saw them happen.
static void test_reproducible_and_resume(void) {
    SweepSpec s;
    if (parse(&s, space_yaml("tpe", 40, 5))) return;
    Sampler *a = sampler_create(&s), *b = sampler_create(&s);
    TrialConfig ca[40], cb[40];
    int same = 1;
    for (int id = 0; id < 40; id++) {
        sampler_config(a, id, &ca[id]);
        sampler_config(b, id, &cb[id]);
        same &= !memcmp(&ca[id], &cb[id], sizeof ca[id]);
        report(a, id, &ca[id], objective(&ca[id]), TRIAL_OK);
        report(b, id, &cb[id], objective(&cb[id]), TRIAL_OK);
    }
    CHECK(same, "two TPE samplers given the same reports proposed different configurations");
    Sampler *again = sampler_create(&s);
    for (int id = 0; id < 30; id++) report(again, id, &ca[id], objective(&ca[id]), TRIAL_OK);
    Sampler *live = sampler_create(&s);
    TrialConfig c;
    for (int id = 0; id < 30; id++) {
        sampler_config(live, id, &c);
        report(live, id, &c, objective(&c), TRIAL_OK);
    }
    TrialConfig x, y;
    sampler_config(again, 30, &x);
    sampler_config(live, 30, &y);
    CHECK(!memcmp(&x, &y, sizeof x), "after a resume trial 30 differs from the one an unbroken sweep proposes");
    sampler_free(live);
    sampler_free(again);
    sampler_free(b);
    sampler_free(a);
    space_free(&s);
}

// Asynchronous workers: with the constant liar, a configuration proposed while others are
// pending differs from the pending ones; failed and pruned trials are taken as the YAML says.
static void test_constant_liar(void) {
    SweepSpec s;
    if (parse(&s, space_yaml("tpe", 60, 9))) return;
    Sampler *sm = sampler_create(&s);
    TrialConfig c[60];
    for (int id = 0; id < 20; id++) {
        sampler_config(sm, id, &c[id]);
        report(sm, id, &c[id], id == 3 ? NAN : objective(&c[id]), id == 3 ? TRIAL_FAILED : id == 4 ? TRIAL_PRUNED : TRIAL_OK);
    }
    for (int id = 20; id < 24; id++) sampler_config(sm, id, &c[id]);  // four pending at once
    int distinct = 1;
    for (int i = 20; i < 24; i++)
        for (int j = 20; j < i; j++) distinct &= c[i].lr != c[j].lr;
    CHECK(distinct, "with the constant liar, four configurations proposed together share an lr");
    sampler_free(sm);
    space_free(&s);
}

static void test_hypervolume(void) {
    const double two[] = {1, 2, 2, 1}, ref2[] = {0, 0};
    CHECK_CLOSE(pareto_hypervolume(two, 2, 2, ref2), 3.0, 1e-12, 0.0, "2-d hypervolume of (1,2), (2,1)");
    const double dominated[] = {1, 2, 2, 1, 0.5, 0.5, -1, 5}, ref[] = {0, 0};
    CHECK_CLOSE(pareto_hypervolume(dominated, 4, 2, ref), 3.0, 1e-12, 0.0, "dominated and outside points add nothing");
    // three boxes from the origin: inclusion–exclusion
    const double p3[] = {3, 1, 1, 1, 3, 1, 1, 1, 3}, r3[] = {0, 0, 0};
    CHECK_CLOSE(pareto_hypervolume(p3, 3, 3, r3), 3 * 3.0 - 3 * 1.0 + 1.0, 1e-12, 0.0, "3-d hypervolume of three boxes");
    const double p4[] = {2, 1, 1, 1, 1, 2, 1, 1}, r4[] = {0, 0, 0, 0};
    CHECK_CLOSE(pareto_hypervolume(p4, 2, 4, r4), 2 + 2 - 1, 1e-12, 0.0, "4-d hypervolume of two boxes");
    // random points (ties on a coarse grid included) against inclusion–exclusion over
    // every subset: the measure of a union of boxes [0, p], Σ_S (−1)^(|S|+1) Π_c min_S p_c
    unsigned long long state = 12345;
    for (int trial = 0; trial < 60; trial++) {
        const int d = 2 + trial % 3, n = 1 + trial % 9;
        double pts[9 * 4], zero[4] = {0};
        for (int i = 0; i < n * d; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            pts[i] = (double)(1 + (state >> 33) % 8) / 8;  // eighths: ties are common
        }
        double want = 0.0;
        for (unsigned set = 1; set < 1u << n; set++) {
            double box = 1.0;
            for (int c = 0; c < d; c++) {
                double lo = INFINITY;
                for (int i = 0; i < n; i++)
                    if (set >> i & 1) lo = fmin(lo, pts[i * d + c]);
                box *= lo;
            }
            want += (__builtin_popcount(set) % 2 ? 1 : -1) * box;
        }
        CHECK_CLOSE(pareto_hypervolume(pts, n, d, zero), want, 1e-12, 0.0, "hypervolume of random points");
    }
    // a front of 600 points in 4 objectives (on the unit sphere's positive part): the
    // report's case that took 29 s before the sweep in two dimensions; its time is printed
    enum { FRONT = 600 };
    double *front = xmalloc((size_t)FRONT * 4 * sizeof(double)), ref0[4] = {0};
    for (int i = 0; i < FRONT; i++) {
        double norm = 0.0;
        for (int c = 0; c < 4; c++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            front[i * 4 + c] = 0.05 + (double)(state >> 11) / 9007199254740992.0;
            norm += front[i * 4 + c] * front[i * 4 + c];
        }
        for (int c = 0; c < 4; c++) front[i * 4 + c] /= sqrt(norm);
    }
    const double t0 = now_seconds(), hv = pareto_hypervolume(front, FRONT, 4, ref0);
    CHECK(hv > 0.0 && hv < 1.0, "hypervolume of a 4-d front of 600 points: %g", hv);
    printf("  hypervolume of a front of %d points in 4 objectives: %.6f in %.3f s\n", FRONT, hv, now_seconds() - t0);
    free(front);
}

// MOTPE on two objectives that pull apart (val_accuracy: lr near 3e-3; correlation, to
// minimise: small lr), against random: the hypervolume of the front found.
static double front_hypervolume(const char *method, int seed) {
    char yaml[1024];
    const int mo = !strcmp(method, "motpe");
    snprintf(yaml, sizeof yaml,
             "method: %s\ntrials: 60\nseed: %d\n%s"
             "parameters:\n"
             "  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}\n"
             "  warmup_frac: {min: 0.0, max: 0.5}\n",
             method, seed,
             mo ? "objectives: [{name: val_accuracy, goal: maximize}, {name: correlation, goal: minimize}]\n" : "");
    SweepSpec s;
    if (parse(&s, yaml)) return NAN;
    Sampler *sm = sampler_create(&s);
    double pts[2 * 60];
    for (int id = 0; id < 60; id++) {
        TrialConfig c;
        sampler_config(sm, id, &c);
        const double dl = log10(c.lr / 3e-3), dw = c.warmup_frac - 0.2;
        TrialResult r = {.id = id, .config = c, .val_accuracy = 1 - dl * dl - 4 * dw * dw,
                         .correlation = log10(c.lr / 1e-4) / 3 + dw * dw};
        sampler_report(sm, &r);
        pts[2 * id] = r.val_accuracy, pts[2 * id + 1] = -r.correlation;
    }
    const double ref[2] = {-3, -2};
    sampler_free(sm);
    space_free(&s);
    return pareto_hypervolume(pts, 60, 2, ref);
}

static void test_motpe(void) {
    enum { SEEDS = 9 };
    double mo[SEEDS], rnd[SEEDS];
    for (int k = 0; k < SEEDS; k++) mo[k] = front_hypervolume("motpe", 1 + k), rnd[k] = front_hypervolume("random", 1 + k);
    qsort(mo, SEEDS, sizeof(double), cmp_double);
    qsort(rnd, SEEDS, sizeof(double), cmp_double);
    CHECK(mo[SEEDS / 2] > rnd[SEEDS / 2], "MOTPE's median hypervolume %.4f is not above random's %.4f",
          mo[SEEDS / 2], rnd[SEEDS / 2]);
    printf("  two objectives, 60 trials, %d seeds: median hypervolume MOTPE %.4f, random %.4f\n", SEEDS,
           mo[SEEDS / 2], rnd[SEEDS / 2]);
}

int main(void) {
    test_beats_random();
    test_reproducible_and_resume();
    test_bounded_history();
    test_constant_liar();
    test_hypervolume();
    test_motpe();
    return check_report("test_tpe");
}
