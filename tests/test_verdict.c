// test_verdict: the report's verdict (src/report/verdict.h) and its paired ablation tests on
// results whose answer is known by construction.
//
//   1. Kendall's τ-b and the paired t-test against scipy 1.10.1 (kendalltau, ttest_rel); τ-b of a
//      sample given as multiplicities (the bootstrap's resamples) against a pair-by-pair count.
//   2. Results files written by h5store (real HDF5, read back by summary_read) of 2 variants
//      × 8 configurations × 2 seeds, evaluations at steps 10..40, where the final
//      val_accuracy is planted: (a) from the early val_accuracy and the early Correlation,
//      RankDeviation pure noise; (b) from the early val_accuracy alone, both invariant terms
//      noise; plus a sweep without invariants and one with too few configurations. The
//      verdict must say which term adds information and which does not, and
//      tests/check_verdict.py recomputes every τ, interval, regret and fit from the file
//      (h5py, scipy, numpy; the same bootstrap draws) and compares it with the report's JSON.
//      `attnsweep report` runs in a child process (cmd_report, as main calls it): JSON, CSV
//      and text carry the verdict, and --suggest-reward writes γ ≈ 0.5 (planted) or fails
//      with one line.
//   3. Paired against Welch: two arms that share seeds with a large per-seed offset (the
//      noise a seed brings to both); the paired test finds the difference Welch's cannot,
//      the report says which test each row used, and a NaN in an arm is skipped with a note.
// modules: cmds
#define _POSIX_C_SOURCE 200809L  // fdopen, mkstemp
#include <fcntl.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "report_tables.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "report/report.h"
#include "report/stats.h"
#include "report/verdict.h"
#include "store/h5store.h"
#include "store/summary.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// ---------------------------------------------------------------- statistics

static void test_kendall(void) {
    static const struct {
        const char *what;
        double x[40], y[40];
        int n;
        double tau;  // scipy.stats.kendalltau(x, y).correlation
    } cases[] = {
        {"ties in both", {1, 2, 2, 3, 4, 4, 4, 5}, {2, 1, 3, 3, 5, 4, 4, 6}, 8, 0.8406728074767076},
        {"reversed", {5, 4, 3, 2, 1}, {1, 2, 3, 4, 5}, 5, -0.9999999999999999},
        {"independent with ties", {1, 1, 2, 2}, {1, 2, 1, 2}, 4, 0.0},
        {"40 values, many ties (numpy RandomState(3))",
         {2, 0, 1, 3, 0, 0, 0, 3, 2, 3, 1, 1, 2, 0, 4, 4, 0, 2, 1, 2, 2, 2, 4, 1, 3, 2, 0, 1, 2, 0, 3, 0, 3, 1, 3, 0, 4, 1, 4, 4},
         {5, 2, 1, 3, 1, 2, 0, 6, 3, 3, 1, 4, 3, 1, 6, 5, 1, 3, 2, 3, 5, 4, 7, 1, 3, 5, 3, 1, 5, 0, 3, 0, 5, 3, 6, 3, 4, 4, 5, 5},
         40, 0.6467350980595339},
    };
    for (size_t i = 0; i < COUNT(cases); i++)
        CHECK_CLOSE(kendall_tau_b(cases[i].x, cases[i].y, cases[i].n), cases[i].tau, 0, 1e-14, "τ-b: %s", cases[i].what);
    const double flat[] = {3, 3, 3}, up[] = {1, 2, 3};
    CHECK(isnan(kendall_tau_b(flat, up, 3)) && isnan(kendall_tau_b(up, flat, 3)) && isnan(kendall_tau_b(up, up, 1)),
          "τ-b: NaN for a constant variable or one pair");
}

// τ-b of the list that holds pair i w[i] times, counted pair by pair: the reference the
// verdict's bootstrap (one sort, then a multiplicity vector per resample) must equal.
static double tau_b_by_pairs(const double *x, const double *y, const int *w, int n) {
    long total = 0, n1 = 0, n2 = 0, n3 = 0, discordant = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) continue;
        total += w[i];
        const long self = (long)w[i] * (w[i] - 1) / 2;  // copies of one pair tie in both
        n1 += self, n2 += self, n3 += self;
        for (int j = i + 1; j < n; j++) {
            if (!isfinite(x[j]) || !isfinite(y[j])) continue;
            const long both = (long)w[i] * w[j];
            n1 += x[i] == x[j] ? both : 0;
            n2 += y[i] == y[j] ? both : 0;
            n3 += x[i] == x[j] && y[i] == y[j] ? both : 0;
            discordant += (x[i] - x[j]) * (y[i] - y[j]) < 0 ? both : 0;
        }
    }
    const long n0 = total * (total - 1) / 2;
    if (total < 2 || n1 == n0 || n2 == n0) return NAN;
    return (double)(n0 - n1 - n2 + n3 - 2 * discordant) / sqrt((double)(n0 - n1) * (double)(n0 - n2));
}

// kendall_tau_b_weighted over random samples of 60 pairs with ties in x, in y and in both,
// NaN and infinite values left out, and multiplicities 0..3 (a resample): bit for bit the
// pair-by-pair count, so the report's intervals are what sorting every resample gave.
static void test_kendall_weighted(void) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    enum { N = 60 };
    double x[N], y[N];
    int w[N], ones[N];
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < N; i++) {
            x[i] = (double)gsl_rng_uniform_int(rng, 1 + round % 12);
            y[i] = round % 3 ? (double)gsl_rng_uniform_int(rng, 8) : gsl_rng_uniform(rng);
            w[i] = (int)gsl_rng_uniform_int(rng, 4), ones[i] = 1;
        }
        x[round % N] = NAN, y[(round * 7) % N] = INFINITY;
        KendallSample k;
        kendall_prepare(&k, x, y, N);
        const double got = kendall_tau_b_weighted(&k, w), want = tau_b_by_pairs(x, y, w, N);
        const double got1 = kendall_tau_b_weighted(&k, NULL), want1 = tau_b_by_pairs(x, y, ones, N);
        kendall_free(&k);
        CHECK(got == want || (isnan(got) && isnan(want)), "round %d: weighted τ-b %.17g, pair by pair %.17g", round,
              got, want);
        CHECK(got1 == want1 || (isnan(got1) && isnan(want1)), "round %d: τ-b %.17g, pair by pair %.17g", round, got1,
              want1);
    }
    gsl_rng_free(rng);
}

static void test_paired(void) {
    const double d[] = {0.5, 1, 3};  // scipy.stats.ttest_rel([1, 2, 4], [0.5, 1, 1])
    PairedTest t;
    CHECK(paired_t_test(d, 3, &t) == 0, "paired test of 3 differences");
    CHECK_CLOSE(t.p, 0.18849732879931091, 0, 1e-12, "paired p against scipy");
    CHECK(t.df == 2, "paired df: %g", t.df);
    const double same[] = {0.2, 0.2, 0.2};
    CHECK(paired_t_test(same, 3, &t) == 0 && isnan(t.p), "differences without spread: p NaN, got %g", t.p);
    CHECK(paired_t_test(d, 1, &t) == -1, "one difference: no test");
}

// ---------------------------------------------------------------- planted results files

static void set(TrialConfig *c, const char *name, const char *value) {
    char err[256];
    if (config_set(c, config_find(name), value, err, sizeof err) != 0) die(EXIT_RUNTIME, "test setup: %s", err);
}

typedef enum {
    PLANT_CORRELATION,  // final = early val_accuracy − 0.5·early Correlation; RankDeviation noise
    PLANT_NOTHING,      // final = early val_accuracy; both invariant terms noise
    PLANT_UNTRACED,     // no invariants at all (a sweep without scoring)
    PLANT_FEW,          // 4 configurations of one variant: too few for any verdict
} Plant;

enum { STEPS = 4, EVERY = 10, HEADS = 2, D_K = 4, D_MODEL = 8, ROLES = 3 };
static const double CHANCE = 0.01;  // the Correlation's rotation null's mean in the trials made here

// One trial of the planted sweep: id, variant, configuration c (lambda_orth = 0.01·c),
// repeat r (seed 5000 + r).
static void planted_trial(TrialResult *t, Plant plant, gsl_rng *rng, int id, const char *variant, int c, int r) {
    memset(t, 0, sizeof *t);
    config_defaults(&t->config);
    char text[32];
    set(&t->config, "attention", variant);
    snprintf(text, sizeof text, "%g", 0.01 * c);
    set(&t->config, "lambda_orth", text);
    snprintf(text, sizeof text, "%d", 5000 + r);
    set(&t->config, "seed", text);
    t->id = id;
    t->status = TRIAL_OK;
    reward_spec_default(&t->reward_spec);  // β = γ = 0.1, RankDeviation of the heads mode, ideal 2
    const double early = 0.3 + 0.2 * gsl_rng_uniform(rng), corr = 0.05 + 0.45 * gsl_rng_uniform(rng);
    const double final = 0.4 + (early - 0.3) - (plant == PLANT_CORRELATION ? 0.5 * corr : 0) +
                         0.004 * (gsl_rng_uniform(rng) - 0.5);
    t->n_curve = STEPS;
    t->curve = xcalloc(STEPS, sizeof *t->curve);
    const int traced = plant != PLANT_UNTRACED;
    InvariantTrace *tr = &t->trace;
    if (traced) {
        *tr = (InvariantTrace){.n = STEPS, .cap = STEPS, .layers = 1, .groups = HEADS};
        tr->step = xcalloc(STEPS, sizeof *tr->step);
        tr->correlation = xcalloc(STEPS, sizeof *tr->correlation);
        tr->eff_rank = xcalloc(STEPS * 4, sizeof *tr->eff_rank);
        tr->head_sv = xcalloc(STEPS * HEADS, sizeof *tr->head_sv);
        tr->chance = xcalloc(STEPS * 4, sizeof *tr->chance);
    }
    for (int s = 0; s < STEPS; s++) {
        const double acc = early + (final - early) * s / (STEPS - 1);  // the planted early value, then on to the final
        t->curve[s] = (CurvePoint){.step = EVERY * (s + 1), .lr = 1e-3, .train_loss = 1, .val_loss = 1 - acc,
                                   .val_accuracy = acc, .seconds = s};
        if (!traced) continue;
        tr->step[s] = EVERY * (s + 1);
        // the planted Correlation stays; the noise is new at every evaluation
        tr->correlation[s] = plant == PLANT_CORRELATION ? corr : 0.05 + 0.45 * gsl_rng_uniform(rng);
        tr->eff_rank[4 * s] = 1 + gsl_rng_uniform(rng);  // heads: RankDeviation |r − 2|/2 in [0, 0.5], noise
        for (int k = 1; k < 4; k++) tr->eff_rank[4 * s + k] = 4;
        for (int h = 0; h < HEADS; h++) tr->head_sv[s * HEADS + h] = 1.0 / (h + 1);
        // the nulls: Correlation's chance CHANCE (so its term is the planted value less a
        // constant), the heads' effective rank's 2 (RankDeviation's chance 0)
        memcpy(tr->chance + 4 * s, (double[4]){CHANCE, 0.005, 2, 0.1}, 4 * sizeof(double));
    }
    t->val_accuracy = final, t->val_loss = 1 - final;
    t->test_accuracy = final - 0.01 + 0.02 * gsl_rng_uniform(rng), t->test_loss = 1 - t->test_accuracy;
    t->val_bits_per_byte = t->test_bits_per_byte = NAN;  // not charlm
    const double rd = traced ? fabs(tr->eff_rank[4 * (STEPS - 1)] - 2) / 2 : NAN;
    t->rank_deviation = t->rank_deviation_excess = rd, t->correlation = traced ? tr->correlation[STEPS - 1] : NAN;
    t->correlation_chance = traced ? CHANCE : NAN, t->correlation_excess = t->correlation - CHANCE;
    t->correlation_z = t->correlation_excess / 0.005, t->eff_rank_z = traced ? (tr->eff_rank[4 * (STEPS - 1)] - 2) / 0.1 : NAN;
    t->reward = final - 0.1 * rd - 0.1 * t->correlation_excess;
    t->steps = EVERY * STEPS, t->n_params = 1000, t->seconds = 1;
    // the weights' shapes are what the trace's RankDeviation is scored by
    t->n_layers = 1;
    memcpy(t->dims, (int[4]){HEADS, D_K, D_MODEL, ROLES}, sizeof t->dims);
    memcpy(t->out_dims, (int[2]){D_MODEL, HEADS * D_K}, sizeof t->out_dims);
    t->weights = xcalloc(1, sizeof *t->weights);
    t->weights_out = xcalloc(1, sizeof *t->weights_out);
    t->weights[0] = xcalloc(HEADS * D_K * D_MODEL * ROLES, sizeof(float));
    t->weights_out[0] = xcalloc(D_MODEL * HEADS * D_K, sizeof(float));
}

static void write_planted(const char *path, Plant plant) {
    H5Store *st = h5store_create(path, &(StoreMeta){.sweep = "planted", .yaml = "metric: {name: val_accuracy}\n",
                                                    .seed = 5, .start_time = 1.7e9});
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11 + plant);
    static const char *const variants[] = {"mha", "linear"};
    const int n_variants = plant == PLANT_FEW ? 1 : 2, n_configs = plant == PLANT_FEW ? 4 : 8;
    int id = 0;
    for (int v = 0; v < n_variants; v++)
        for (int c = 0; c < n_configs; c++)
            for (int r = 0; r < 2; r++) {
                TrialResult t;
                planted_trial(&t, plant, rng, id++, variants[v], c, r);
                h5store_write_trial(st, &t);
                trial_result_free(&t);
            }
    // A failed trial: in no statistic.
    TrialResult t;
    planted_trial(&t, plant, rng, id, "mha", 0, 7);
    t.status = TRIAL_FAILED;
    snprintf(t.reason, sizeof t.reason, "diverged: non-finite training loss at step 10");
    t.val_accuracy = t.reward = NAN;
    h5store_write_trial(st, &t);
    trial_result_free(&t);
    gsl_rng_free(rng);
    h5store_close(st, 1.7e9 + 10);
}

// attnsweep report ARGS in a child process (cmd_report with argv as main passes it), its
// stdout into out and its stderr into err; returns its exit status.
static int run_report(const char *const *args, int n, const char *out, const char *err) {
    fflush(stdout), fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(99);
        char *argv[16] = {"report"};
        for (int i = 0; i < n && i < 14; i++) argv[i + 1] = (char *)args[i];
        exit(cmd_report(n + 1, argv));
    }
    int status = -1;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return xcalloc(1, 1);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = xcalloc((size_t)n + 1, 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    fclose(f);
    return s;
}

// The row of verdict.tau for group, predictor and step (-1: none).
static int tau_row(const Table *t, const char *group, const char *predictor, int step) {
    for (int i = 0; i < t->n_rows; i++)
        if (!strcmp(at(t, i, "attention")->text, group) && at(t, i, "predictor")->text &&
            !strcmp(at(t, i, "predictor")->text, predictor) && at(t, i, "step")->value == step)
            return i;
    return -1;
}

static int fit_row_of(const Table *t, const char *group) {
    for (int i = 0; i < t->n_rows; i++)
        if (!strcmp(at(t, i, "attention")->text, group)) return i;
    return -1;
}

static void test_planted(void) {
    char path[64], json[80], out[80], err[80];
    snprintf(path, sizeof path, "/tmp/test_verdict_XXXXXX");
    const int fd = mkstemp(path);
    if (fd < 0) die(EXIT_RUNTIME, "cannot create a temporary file");
    close(fd);
    snprintf(json, sizeof json, "%s.json", path);
    snprintf(out, sizeof out, "%s.out", path);
    snprintf(err, sizeof err, "%s.err", path);
    static const char *const names[] = {"correlation planted", "nothing planted", "untraced", "too few"};
    for (int plant = 0; plant < 4; plant++) {
        const char *what = names[plant];
        write_planted(path, (Plant)plant);
        SweepSummary s;
        char why[512];
        CHECK(summary_read(path, SUMMARY_REPORT, &s, why, sizeof why) == 0, "%s: summary_read: %s", what, why);
        Report r;
        report_build(&s, &(ReportOptions){.metric = s.metric, .maximize = 1, .top = 5}, &r);
        const Table *tau = find_table(&r, "verdict.tau"), *fit = find_table(&r, "verdict.fit");
        CHECK(r.n > 2 && r.tables[1] == tau && r.tables[2] == fit, "%s: the verdict follows the leaderboard", what);
        const int all = fit_row_of(fit, "all");
        CHECK(all == 0, "%s: the whole sweep's fit first", what);
        const char *answer = all >= 0 ? at(fit, all, "answer")->text : "";
        if (plant == PLANT_CORRELATION || plant == PLANT_NOTHING) {
            // 16 configurations, 32 trials; each variant a group of 8 configurations
            CHECK(fit->n_rows == 3 && fit_row_of(fit, "mha") == 1 && fit_row_of(fit, "linear") == 2, "%s: fit rows",
                  what);
            const int early = tau_row(tau, "all", "val_accuracy", EVERY), corr = tau_row(tau, "all", "correlation", EVERY);
            const int rd = tau_row(tau, "all", "rank_deviation", EVERY);
            CHECK(early >= 0 && corr >= 0 && rd >= 0 && at(tau, early, "n")->value == 32 &&
                      at(tau, early, "configurations")->value == 16,
                  "%s: τ rows at the first evaluation", what);
            if (early < 0 || corr < 0 || rd < 0) continue;
            // RankDeviation is noise in both: its interval holds 0, the fit finds nothing.
            CHECK(at(tau, rd, "tau_lo")->value < 0 && at(tau, rd, "tau_hi")->value > 0, "%s: RankDeviation's τ [%g, %g]",
                  what, at(tau, rd, "tau_lo")->value, at(tau, rd, "tau_hi")->value);
            CHECK(!strstr(answer, "RankDeviation adds information"), "%s: answer '%s'", what, answer);
            CHECK(at(tau, early, "tau_lo")->value > 0, "%s: the early val_accuracy predicts (τ lo %g)", what,
                  at(tau, early, "tau_lo")->value);
            CHECK(at(fit, all, "b_early_lo")->value > 0, "%s: b's interval above 0", what);
            if (plant == PLANT_CORRELATION) {
                // lower Correlation, higher final accuracy: τ oriented > 0, d < 0, γ ≈ 0.5
                CHECK(at(tau, corr, "tau_lo")->value > 0, "%s: Correlation predicts (τ lo %g)", what,
                      at(tau, corr, "tau_lo")->value);
                CHECK(strstr(answer, "Correlation adds information") && !strstr(answer, "add nothing"),
                      "%s: answer '%s'", what, answer);
                CHECK(at(fit, all, "d_correlation_hi")->value < 0, "%s: d's interval below 0", what);
                CHECK_CLOSE(at(fit, all, "gamma")->value, 0.5, 0, 0.02, "%s: γ planted 0.5", what);
                CHECK(at(fit, all, "gamma_lo")->value < 0.5 && at(fit, all, "gamma_hi")->value > 0.5,
                      "%s: γ's interval [%g, %g] holds 0.5", what, at(fit, all, "gamma_lo")->value,
                      at(fit, all, "gamma_hi")->value);
                CHECK(at(fit, all, "r2_cv_both")->value > at(fit, all, "r2_cv_early")->value + 0.1,
                      "%s: the invariant terms raise R² cv: %g against %g", what, at(fit, all, "r2_cv_both")->value,
                      at(fit, all, "r2_cv_early")->value);
            } else {
                CHECK(at(tau, corr, "tau_lo")->value < 0 && at(tau, corr, "tau_hi")->value > 0,
                      "%s: Correlation's τ [%g, %g] holds 0", what, at(tau, corr, "tau_lo")->value,
                      at(tau, corr, "tau_hi")->value);
                CHECK(strstr(answer, "the invariant terms add nothing this sweep can detect") == answer,
                      "%s: answer '%s'", what, answer);
                CHECK(at(fit, all, "gamma_lo")->value < 0 && at(fit, all, "gamma_hi")->value > 0, "%s: γ's interval", what);
            }
        } else if (plant == PLANT_UNTRACED) {
            CHECK(tau->n_rows > 0 && tau_row(tau, "all", "correlation", EVERY) < 0 && tau->note &&
                      strstr(tau->note, "no trial has invariants traced"),
                  "%s: only val_accuracy, and a note", what);
            CHECK(strstr(answer, "no invariants traced") == answer && isnan(at(fit, all, "b_early")->value),
                  "%s: answer '%s'", what, answer);
        } else {
            CHECK(tau->n_rows == 1 && strstr(at(tau, 0, "reason")->text, "4 configurations with a finished trial, "
                                                                          "fewer than the 5 τ needs"),
                  "%s: one reason row", what);
            CHECK(strstr(answer, "fewer than the 5 the fit needs") != NULL, "%s: answer '%s'", what, answer);
        }
        report_free(&r);
        summary_free(&s);

        // the command: JSON (every number recomputed by check_verdict.py), CSV, text, --suggest-reward
        const char *json_args[] = {path, "--format", "json"};
        CHECK(run_report(json_args, 3, json, err) == 0, "%s: report --format json", what);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "PYTHONPATH=tests /usr/bin/python3 tests/check_verdict.py %s %s", path, json);
        const int status = system(cmd);
        CHECK(status == 0, "%s: tests/check_verdict.py disagrees (above)", what);
        if (plant == PLANT_CORRELATION) {  // the fit at another step
            const char *early_args[] = {path, "--format", "json", "--early-step", "30"};
            CHECK(run_report(early_args, 5, json, err) == 0, "%s: report --early-step 30", what);
            snprintf(cmd, sizeof cmd, "PYTHONPATH=tests /usr/bin/python3 tests/check_verdict.py %s %s 30", path, json);
            CHECK(system(cmd) == 0, "%s, --early-step 30: tests/check_verdict.py disagrees (above)", what);
            char *text = slurp(json);
            CHECK(strstr(text, "\"fit\":[{\"attention\":\"all\",\"step\":30,") != NULL, "%s: --early-step 30", what);
            free(text);
        }
        const char *csv_args[] = {path, "--format", "csv"}, *text_args[] = {path};
        CHECK(run_report(csv_args, 3, out, err) == 0, "%s: report --format csv", what);
        char *text = slurp(out);
        CHECK(strstr(text, "# verdict.tau\nattention,predictor,step,n,configurations,tau,tau_lo,tau_hi,regret,tau_test,"
                           "reason\n") &&
                  strstr(text, "# verdict.fit\n"),
              "%s: CSV sections", what);
        free(text);
        CHECK(run_report(text_args, 1, out, err) == 0, "%s: report", what);
        text = slurp(out);
        CHECK(strstr(text, "Verdict: does the reward add information?") && strstr(text, "Verdict: β and γ estimated"),
              "%s: text sections", what);
        free(text);
        const char *suggest_args[] = {path, "--suggest-reward"};
        const int rc = run_report(suggest_args, 2, out, err);
        text = slurp(out);
        char *error = slurp(err);
        if (plant == PLANT_CORRELATION) {
            const char *line = strstr(text, "\nreward: {tensor: function, beta: ");
            double beta = NAN, gamma = NAN;
            CHECK(rc == 0 && line && sscanf(line, "\nreward: {tensor: function, beta: %lf, gamma: %lf, modes: [heads]}",
                                            &beta, &gamma) == 2,
                  "%s: --suggest-reward: exit %d, '%s'", what, rc, text);
            CHECK(text[0] == '#' && strstr(text, "Correlation adds information"), "%s: the comment says why: '%s'", what,
                  text);
            CHECK_CLOSE(gamma, 0.5, 0, 0.02, "%s: suggested γ", what);
            CHECK(beta >= 0 && beta < 0.1, "%s: suggested β %g (RankDeviation is noise)", what, beta);
        } else if (plant == PLANT_UNTRACED) {
            CHECK(rc == 1 && !text[0] && strstr(error, "attnsweep: report: ") == error &&
                      strstr(error, ": no β and γ to suggest: no invariants traced") && !strchr(error, '\n')[1],
                  "%s: --suggest-reward: exit %d, stderr '%s'", what, rc, error);
        }
        free(text);
        free(error);
    }
    remove(path), remove(json), remove(out), remove(err);
}

// ---------------------------------------------------------------- paired against Welch

// An ablation of lambda_orth: arm (0.1) against control (0) on four seeds; each seed moves
// both arms alike (0.50 … 0.83), the arm is 0.01 better. ctl_seed_base: the control's
// seeds (5000: shared with the arm; 6000: none shared).
static void make_ablation(TrialResult *trials, int ctl_seed_base) {
    static const double base[4] = {0.50, 0.62, 0.71, 0.83}, noise[4] = {0.001, -0.002, 0.0015, 0.0};
    for (int i = 0; i < 8; i++) {
        TrialResult *t = &trials[i];
        *t = (TrialResult){0};
        const int arm = i < 4, r = i % 4;
        config_defaults(&t->config);
        set(&t->config, "lambda_orth", arm ? "0.1" : "0");
        char seed[16];
        snprintf(seed, sizeof seed, "%d", (arm ? 5000 : ctl_seed_base) + r);
        set(&t->config, "seed", seed);
        t->id = i;
        t->status = TRIAL_OK;
        t->val_accuracy = base[r] + (arm ? 0.01 + noise[r] : 0);
        t->reward = t->val_accuracy - 0.02;
        t->test_accuracy = t->val_accuracy;
        t->val_loss = t->test_loss = 1 - t->val_accuracy;
        t->val_bits_per_byte = t->test_bits_per_byte = NAN;
        t->rank_deviation = t->correlation = 0.1;
    }
}

// The sweep of the 8 trials, ranked by val_accuracy, as a report reads it.
static void summarise(SweepSummary *s, const TrialResult *trials) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 8; i++) summary_append(s, &trials[i]);
    snprintf(s->metric, sizeof s->metric, "val_accuracy");
    s->maximize = 1;
}

static void test_paired_ablation(void) {
    static const struct {
        const char *what;
        int ctl_seeds;
        const char *test;
        double p;  // scipy: ttest_rel(arm, ctl) and ttest_ind(arm, ctl, equal_var=False)
        const char *verdict;
    } cases[] = {
        {"shared seeds", 5000, "paired t, 4 pairs", 0.0009645406203556576, "raises val_accuracy"},
        {"no seed shared", 6000, "Welch", 0.9216667581291461, "no significant difference in val_accuracy"},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        TrialResult trials[8];
        make_ablation(trials, cases[i].ctl_seeds);
        SweepSummary s;
        summarise(&s, trials);
        Report r;
        report_build(&s, &(ReportOptions){.metric = "val_accuracy", .maximize = 1, .top = 5}, &r);
        const Table *ab = find_table(&r, "ablations.lambda_orth");
        CHECK(ab->n_rows == 1, "%s: one comparison, got %d", cases[i].what, ab->n_rows);
        if (ab->n_rows == 1) {
            CHECK(!strcmp(at(ab, 0, "test")->text, cases[i].test), "%s: test '%s'", cases[i].what, at(ab, 0, "test")->text);
            CHECK_CLOSE(at(ab, 0, "p_val_accuracy")->value, cases[i].p, 0, 1e-10, "%s: p", cases[i].what);
            CHECK_CLOSE(at(ab, 0, "p_reward")->value, cases[i].p, 0, 1e-10, "%s: p of the reward", cases[i].what);
            CHECK_CLOSE(at(ab, 0, "d_val_accuracy")->value, 0.010125, 0, 1e-12, "%s: difference", cases[i].what);
            CHECK(strstr(at(ab, 0, "verdict")->text, cases[i].verdict) != NULL, "%s: verdict '%s'", cases[i].what,
                  at(ab, 0, "verdict")->text);
        }
        report_free(&r);
        // A reward not measured in one trial (NaN): that metric is skipped with a note, the other tested.
        trials[2].reward = NAN;
        summary_free(&s);
        summarise(&s, trials);
        report_build(&s, &(ReportOptions){.metric = "val_accuracy", .maximize = 1, .top = 5}, &r);
        ab = find_table(&r, "ablations.lambda_orth");
        CHECK(ab->n_rows == 1 && isnan(at(ab, 0, "p_reward")->value) && isfinite(at(ab, 0, "p_val_accuracy")->value) &&
                  strstr(at(ab, 0, "verdict")->text, "reward: NaN in a trial of an arm, no test") &&
                  strstr(at(ab, 0, "verdict")->text, cases[i].verdict),
              "%s, a NaN reward: verdict '%s'", cases[i].what, ab->n_rows ? at(ab, 0, "verdict")->text : "");
        report_free(&r);
        trials[2].val_accuracy = NAN;  // nothing left to test
        summary_free(&s);
        summarise(&s, trials);
        report_build(&s, &(ReportOptions){.metric = "val_accuracy", .maximize = 1, .top = 5}, &r);
        ab = find_table(&r, "ablations.lambda_orth");
        CHECK(ab->n_rows == 1 && !strcmp(at(ab, 0, "verdict")->text, "val_accuracy and reward: NaN in a trial of an arm, no test"),
              "%s, NaN in both: verdict '%s'", cases[i].what, ab->n_rows ? at(ab, 0, "verdict")->text : "");
        report_free(&r);
        summary_free(&s);
    }
}

int main(void) {
    test_kendall();
    test_kendall_weighted();
    test_paired();
    test_planted();
    test_paired_ablation();
    return check_report("test_verdict");
}
