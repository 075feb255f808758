// test_decisions.c: every decision of a sweep reads the validation metrics, never the test
// ones. A sweep decides through two functions: sweep_final_metric (the best trial so far,
// and what evolution's tournaments compare) and sweep_eval_metric (what an ASHA rung
// compares). Here the trials' test metrics rank them the opposite way from their
// validation metrics, and both functions, and the parent evolution picks through them,
// follow validation for every metric a sweep may optimise. (tests/test_sweep.sh replays
// a real ASHA sweep's decisions from the validation column of its curves.)
// modules: sweep
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "space/space.h"
#include "sweep/sweep_internal.h"
#include "trial/metrics.h"

enum { POPULATION = 4 };

// Trial i of a population: validation improves with i, test worsens with i.
static TrialResult made_up(int i, const TrialConfig *c) {
    TrialResult r = {.config = *c, .id = i};
    r.status = TRIAL_OK;
    r.val_accuracy = 0.2 + 0.1 * i, r.test_accuracy = 0.9 - 0.1 * i;
    r.val_loss = 2.0 - 0.25 * i, r.test_loss = 1.0 + 0.25 * i;
    r.val_bits_per_byte = r.val_loss / log(2.0), r.test_bits_per_byte = r.test_loss / log(2.0);
    r.rank_deviation = 0.1, r.correlation = 0.2;
    r.reward = r.val_accuracy - 0.1 * r.rank_deviation - 0.1 * r.correlation;
    return r;
}

// The parameters in which a and b differ.
static int differences(const TrialConfig *a, const TrialConfig *b) {
    int n = 0;
    for (int i = 0; i < config_nparams; i++) {
        if (!strcmp(config_params[i].name, "seed")) continue;
        char x[CONFIG_TEXT + 8], y[CONFIG_TEXT + 8];
        config_format(a, &config_params[i], x, sizeof x);
        config_format(b, &config_params[i], y, sizeof y);
        n += strcmp(x, y) != 0;
    }
    return n;
}

static void test_metrics_follow_validation(const Metric *m) {
    const TrialConfig c = {0};
    const SweepGoal g = {m, m->maximize};
    double last = -INFINITY;
    for (int i = 0; i < POPULATION; i++) {
        TrialResult r = made_up(i, &c);
        const double v = sweep_final_metric(&g, &r);
        CHECK(v == (m->maximize ? 1 : -1) * metric_value(&r, m), "%s: trial %d: final metric %g", m->name, i, v);
        CHECK(v > last, "%s: trial %d is better on validation, but its final metric %g is not above %g", m->name, i,
              v, last);
        last = v;
        // Whatever the test metrics say, the decision stays.
        r.test_accuracy = r.test_loss = r.test_bits_per_byte = NAN;
        CHECK(sweep_final_metric(&g, &r) == v, "%s: the final metric moved with the test metrics", m->name);
        r.test_accuracy = 1e9, r.test_loss = r.test_bits_per_byte = -1e9;
        CHECK(sweep_final_metric(&g, &r) == v, "%s: the final metric moved with the test metrics", m->name);
        r.status = TRIAL_FAILED;
        CHECK(isnan(sweep_final_metric(&g, &r)), "%s: a failed trial's final metric is not NaN", m->name);
    }
    // A rung compares the sweep's own metric at the evaluation (each a different number
    // here), turned by its goal; one not known there ranks last. An evaluation holds no
    // test metric at all.
    const EvalPoint e = {.step = 10, .val_accuracy = 0.75, .val_loss = 1.25, .val_bits_per_byte = 1.75,
                         .terms = {.rank_deviation_excess = 0.5, .correlation_excess = 0.25}, .reward = 0.625};
    const double own = !strcmp(m->name, "reward") ? 0.625 : !strcmp(m->name, "val_accuracy") ? 0.75
                       : !strcmp(m->name, "val_loss")  ? 1.25 : 1.75;
    CHECK(sweep_eval_metric(&g, &e) == (m->maximize ? own : -own), "%s: rung metric %g, want %g", m->name,
          sweep_eval_metric(&g, &e), m->maximize ? own : -own);
    EvalPoint unknown = e;
    unknown.reward = unknown.val_accuracy = unknown.val_loss = unknown.val_bits_per_byte = NAN;
    CHECK(sweep_eval_metric(&g, &unknown) == -HUGE_VAL, "%s: an unknown rung metric is %g, not last", m->name,
          sweep_eval_metric(&g, &unknown));
}

// The YAML's goal decides, not the metric table's usual one: `goal: minimize` on reward
// turns the final and the rung metrics around.
static void test_yaml_goal_decides(const Metric *m) {
    const TrialConfig c = {0};
    const SweepGoal usual = {m, m->maximize}, turned = {m, !m->maximize};
    const TrialResult r = made_up(3, &c);
    const EvalPoint e = {.step = 10, .val_accuracy = 0.75, .val_loss = 1.25, .val_bits_per_byte = 1.75, .reward = 0.625};
    CHECK(sweep_final_metric(&turned, &r) == -sweep_final_metric(&usual, &r) &&
              sweep_eval_metric(&turned, &e) == -sweep_eval_metric(&usual, &e),
          "%s: the goal %s does not turn the decisions", m->name, m->maximize ? "minimize" : "maximize");
}

// Evolution with every member in the tournament: the parent is the validation winner,
// trial POPULATION - 1, though the test metrics make trial 0 the best; with the YAML's
// goal turned around (turned = 1) it is the validation loser, trial 0.
static void test_evolution_picks_by_validation(const Metric *m, int turned) {
    char yaml[512];
    const int maximize = turned ? !m->maximize : m->maximize;
    snprintf(yaml, sizeof yaml,
             "method: evolution\ntrials: 8\nseed: 4\ntask: %s\nmetric: {name: %s, goal: %s}\n"
             "evolution: {population: %d, sample_size: %d}\n"
             "parameters:\n"
             "  attention: {values: [mha, tucker, linear, grassmann]}\n"
             "  lr: {values: [0.0005, 0.001, 0.002, 0.004, 0.008]}\n"
             "  layers: {values: [1, 2, 3, 4]}\n"
             "  lambda_orth: {values: [0, 0.01, 0.1, 1]}\n"
             "  mlp_ratio: {values: [1, 2, 4, 8]}\n",
             m->charlm_only ? "charlm" : "recall", m->name, maximize ? "maximize" : "minimize", POPULATION, POPULATION);
    SweepSpec s;
    char err[1024];
    if (space_parse(&s, "mem.yaml", yaml, strlen(yaml), err, sizeof err) != 0) {
        CHECK(0, "%s: %s", m->name, err);
        return;
    }
    Sampler *sm = sampler_create(&s);
    TrialConfig c[POPULATION + 1];
    for (int i = 0; i < POPULATION; i++) sampler_config(sm, i, &c[i]);
    // The check tells the two winners apart: they differ in more than one parameter.
    CHECK(differences(&c[0], &c[POPULATION - 1]) >= 3, "%s: test setup: trials 0 and %d differ in %d parameters only",
          m->name, POPULATION - 1, differences(&c[0], &c[POPULATION - 1]));
    for (int i = 0; i < POPULATION; i++) {
        const TrialResult r = made_up(i, &c[i]);
        sampler_report(sm, &r);
    }
    CHECK(sampler_config(sm, POPULATION, &c[POPULATION]) == 0, "%s: no child after a full population", m->name);
    const int winner = turned ? 0 : POPULATION - 1, loser = turned ? POPULATION - 1 : 0;
    CHECK(differences(&c[POPULATION], &c[winner]) == 1,
          "%s, goal %s: the child is not one mutation from the winner (trial %d): %d differences", m->name,
          maximize ? "maximize" : "minimize", winner, differences(&c[POPULATION], &c[winner]));
    CHECK(differences(&c[POPULATION], &c[loser]) > 1, "%s, goal %s: the child is one mutation from trial %d", m->name,
          maximize ? "maximize" : "minimize", loser);
    sampler_free(sm);
    space_free(&s);
}

// A program's own metric (a name of its metric lines, metrics.h metric_program): a rung
// reads the value its line gave, the final metric the trial's last; the goal turns both;
// a line without it ranks last. The validation metrics beside it decide nothing.
static void test_program_metric_decides(void) {
    Metric m;
    metric_program(&m, "val_bleu", 1);
    const SweepGoal up = {&m, 1}, down = {&m, 0};
    EvalPoint e = {.step = 10, .val_accuracy = 0.75, .val_loss = 1.25, .reward = NAN, .program_metric = 0.375};
    CHECK(sweep_eval_metric(&up, &e) == 0.375 && sweep_eval_metric(&down, &e) == -0.375,
          "program metric at a rung: %g and %g, want 0.375 and -0.375", sweep_eval_metric(&up, &e),
          sweep_eval_metric(&down, &e));
    e.program_metric = NAN;
    CHECK(sweep_eval_metric(&up, &e) == -HUGE_VAL, "a line without the program's metric ranks %g, not last",
          sweep_eval_metric(&up, &e));
    const TrialConfig c = {0};
    TrialResult r = made_up(2, &c);
    r.program_metric = 0.625;
    CHECK(sweep_final_metric(&up, &r) == 0.625 && sweep_final_metric(&down, &r) == -0.625,
          "program metric of a trial: %g and %g, want 0.625 and -0.625", sweep_final_metric(&up, &r),
          sweep_final_metric(&down, &r));
}

int main(void) {
    test_program_metric_decides();
    const char *names[METRIC_NAMES];
    const int n = metric_names(METRIC_DECIDES, names);
    CHECK(n == 4, "a sweep may optimise %d metrics, want reward and the three validation ones", n);
    for (int k = 0; k < n; k++) {
        const Metric *m = metric_find(names[k]);
        CHECK(m->use == METRIC_DECIDES && strncmp(m->name, "test_", 5) != 0, "%s decides", m->name);
        test_metrics_follow_validation(m);
        test_yaml_goal_decides(m);
        test_evolution_picks_by_validation(m, 0);
        test_evolution_picks_by_validation(m, 1);
    }
    return check_report("test_decisions");
}
