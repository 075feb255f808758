// test_decisions.c: every decision of a sweep reads the validation metrics, never the test
// ones. A sweep decides through two functions: sweep_final_metric (the best trial so far,
// and what evolution's tournaments compare) and sweep_eval_metric (what an ASHA rung
// compares). Here the trials' test metrics rank them the opposite way from their
// validation metrics, and both functions, and the parent evolution picks through them,
// follow validation for every metric a sweep may optimise. (tests/test_sweep.sh replays
// a real ASHA sweep's decisions from the validation column of its curves.)
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
    double last = -INFINITY;
    for (int i = 0; i < POPULATION; i++) {
        TrialResult r = made_up(i, &c);
        const double v = sweep_final_metric(m, &r);
        CHECK(v == (m->maximize ? 1 : -1) * metric_value(&r, m), "%s: trial %d: final metric %g", m->name, i, v);
        CHECK(v > last, "%s: trial %d is better on validation, but its final metric %g is not above %g", m->name, i,
              v, last);
        last = v;
        // Whatever the test metrics say, the decision stays.
        r.test_accuracy = r.test_loss = r.test_bits_per_byte = NAN;
        CHECK(sweep_final_metric(m, &r) == v, "%s: the final metric moved with the test metrics", m->name);
        r.test_accuracy = 1e9, r.test_loss = r.test_bits_per_byte = -1e9;
        CHECK(sweep_final_metric(m, &r) == v, "%s: the final metric moved with the test metrics", m->name);
        r.status = TRIAL_FAILED;
        CHECK(isnan(sweep_final_metric(m, &r)), "%s: a failed trial's final metric is not NaN", m->name);
    }
    // A rung compares the validation accuracy (reward, val_accuracy) or minus the validation
    // loss (the losses): a curve holds no test metric at all.
    const CurvePoint pt = {.step = 10, .val_loss = 1.25, .val_accuracy = 0.75};
    CHECK(sweep_eval_metric(m, &pt) == (m->maximize ? 0.75 : -1.25), "%s: rung metric %g", m->name,
          sweep_eval_metric(m, &pt));
}

// Evolution with every member in the tournament: the parent is the validation winner,
// trial POPULATION - 1, though the test metrics make trial 0 the best.
static void test_evolution_picks_by_validation(const Metric *m) {
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "method: evolution\ntrials: 8\nseed: 4\ntask: %s\nmetric: {name: %s}\n"
             "evolution: {population: %d, sample_size: %d}\n"
             "parameters:\n"
             "  attention: {values: [mha, tucker, linear, grassmann]}\n"
             "  lr: {values: [0.0005, 0.001, 0.002, 0.004, 0.008]}\n"
             "  layers: {values: [1, 2, 3, 4]}\n"
             "  lambda_orth: {values: [0, 0.01, 0.1, 1]}\n"
             "  mlp_ratio: {values: [1, 2, 4, 8]}\n",
             m->charlm_only ? "charlm" : "recall", m->name, POPULATION, POPULATION);
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
    CHECK(differences(&c[POPULATION], &c[POPULATION - 1]) == 1,
          "%s: the child is not one mutation from the validation winner (trial %d): %d differences", m->name,
          POPULATION - 1, differences(&c[POPULATION], &c[POPULATION - 1]));
    CHECK(differences(&c[POPULATION], &c[0]) > 1, "%s: the child is one mutation from the test winner", m->name);
    sampler_free(sm);
    space_free(&s);
}

int main(void) {
    const char *names[METRIC_NAMES];
    const int n = metric_names(METRIC_DECIDES, names);
    CHECK(n == 4, "a sweep may optimise %d metrics, want reward and the three validation ones", n);
    for (int k = 0; k < n; k++) {
        const Metric *m = metric_find(names[k]);
        CHECK(m->use == METRIC_DECIDES && strncmp(m->name, "test_", 5) != 0, "%s decides", m->name);
        test_metrics_follow_validation(m);
        test_evolution_picks_by_validation(m);
    }
    return check_report("test_decisions");
}
