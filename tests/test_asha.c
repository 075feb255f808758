// test_asha: ASHA's decisions from the order-statistics tree (src/space/asha.c) are those
// of the rule it replaced, which copied and insertion-sorted every value at the rung on
// every decision (kept in asha_old_rule.h, verbatim but for names, as the oracle). Generated
// asynchronous sweeps (per trial and per configuration with repeats 2 and 3, η 2, 3 and
// 4, metrics on a coarse grid so that ties are common, unknown metrics as −inf, ±inf, a
// resume's replayed reports mixed in) go through both, and every decision must agree.
// Then the documented NaN order: a NaN mean (a +inf and a −inf repeat) is the lowest.
// modules: space
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asha_old_rule.h"
#include "check.h"
#include "common/util.h"
#include "space/asha.h"
#include "splitmix.h"

// ---------------------------------------------------------------- generated sweeps

static int parse(SweepSpec *s, const char *yaml) {
    char err[1024];
    if (space_parse(s, "mem.yaml", yaml, strlen(yaml), err, sizeof err) == 0) return 0;
    CHECK(0, "space_parse: %s", err);
    return -1;
}

static double uniform(uint64_t *rng) { return (double)(splitmix64(rng) >> 11) * 0x1p-53; }

enum { WORKERS = 16 };

// One sweep of `trials` trials, WORKERS running at once, each reporting its rungs in
// turn until stopped or at its last; a report is a resume's replay (with a recorded
// decision) one time in ten. Returns the number of decisions compared (go: how many went on).
static int replay_sweep(int trials, int repeats, int per_trial, int eta, int infinities, uint64_t seed, int *go) {
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "method: random\ntrials: %d\nrepeats: %d\nbudget: {steps: 200}\n"
             "scheduler: {name: asha, min_steps: 2, eta: %d%s}\nparameters:\n  lr: {min: 0.001, max: 0.01}\n",
             trials, repeats, eta, per_trial ? ", per: trial" : "");
    SweepSpec s;
    if (parse(&s, yaml)) return 0;
    Asha a;
    OldAsha o;
    asha_init(&a, &s);
    old_init(&o, &a);
    uint64_t rng = seed;
    double *quality = xmalloc((size_t)a.n_units * sizeof(double));
    for (int u = 0; u < a.n_units; u++) quality[u] = uniform(&rng);
    int running[WORKERS], rung[WORKERS], next = 0, n_running = 0, decisions = 0, failed = 0;
    while (next < trials || n_running > 0) {
        while (n_running < WORKERS && next < trials) running[n_running] = next++, rung[n_running++] = 0;
        const int w = (int)(uniform(&rng) * n_running), id = running[w];
        // a coarse grid of values (ties), improving with the rung; sometimes unknown (−inf)
        double metric = floor(8.0 * (quality[id / a.per] + 0.3 * uniform(&rng) + 0.1 * rung[w])) / 8.0;
        const double r = uniform(&rng);
        if (r < 0.03) metric = -HUGE_VAL;
        else if (infinities && r < 0.05) metric = HUGE_VAL;  // no NaN means: only where a unit is one trial
        int go_on;
        if (uniform(&rng) < 0.1) {
            go_on = uniform(&rng) < 0.5;
            asha_replay(&a, id, rung[w], metric, go_on);
            old_replay(&o, id, rung[w], metric, go_on);
        } else {
            go_on = asha_continue(&a, id, rung[w], metric);
            const int want = old_continue(&o, id, rung[w], metric);
            if (go_on != want && failed++ < 5)
                CHECK(0, "η %d, %s, repeats %d: trial %d at rung %d (value %g): decided %d, the old rule %d", eta,
                      per_trial ? "per trial" : "per configuration", repeats, id, rung[w], metric, go_on, want);
            decisions++;
            *go += go_on;
        }
        if (!go_on || ++rung[w] == a.n_rungs) running[w] = running[--n_running], rung[w] = rung[n_running];
    }
    free(quality);
    old_free(&o);
    asha_free(&a);
    space_free(&s);
    return decisions;
}

static void test_same_decisions_as_the_old_rule(void) {
    int decisions = 0, go = 0, sweeps = 0;
    for (int eta = 2; eta <= 4; eta++) {
        decisions += replay_sweep(600, 1, 0, eta, 1, 100 + eta, &go), sweeps++;
        for (int repeats = 2; repeats <= 3; repeats++)
            for (int per_trial = 0; per_trial <= 1; per_trial++)
                decisions += replay_sweep(600, repeats, per_trial, eta, per_trial, 10 * eta + repeats + per_trial, &go),
                    sweeps++;
    }
    printf("%d sweeps, %d decisions (%d go on), each the old rule's\n", sweeps, decisions, go);
    CHECK(decisions > 5000 && go > decisions / 10 && go < decisions - decisions / 10,
          "the sweeps decided too little to compare: %d decisions, %d went on", decisions, go);
}

// A NaN mean orders below every value: configuration 0's repeats +inf and −inf at a rung
// of {1, 2, 3}, then configuration 4 at 1.6: the median of {NaN, 1, 1.6, 2, 3} is 1.6
// (NaN highest would make it 2; the old insertion sort left the NaN where it blocked it,
// [1, 2, 3, NaN, 1.6], and took 3).
static void test_nan_is_lowest(void) {
    SweepSpec s;
    if (parse(&s, "method: random\ntrials: 10\nrepeats: 2\nbudget: {steps: 40}\n"
                  "scheduler: {name: asha, min_steps: 10, eta: 2}\nparameters:\n  lr: {min: 0.001, max: 0.01}\n"))
        return;
    Asha a;
    asha_init(&a, &s);
    asha_replay(&a, 2, 0, 1.0, 1), asha_replay(&a, 4, 0, 2.0, 1), asha_replay(&a, 6, 0, 3.0, 1);
    const int first = asha_continue(&a, 0, 0, HUGE_VAL);    // {1, 2, 3, +inf}: the median 2.5
    const int second = asha_continue(&a, 1, 0, -HUGE_VAL);  // decided by the first; the mean now NaN
    const int after = asha_continue(&a, 8, 0, 1.6);
    CHECK(first && second && after, "NaN lowest: decisions %d %d %d (want 1 1 1)", first, second, after);
    asha_free(&a);
    space_free(&s);
}

int main(void) {
    test_same_decisions_as_the_old_rule();
    test_nan_is_lowest();
    return check_report("test_asha");
}
