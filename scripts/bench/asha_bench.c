// asha_bench: the CPU time of one ASHA decision against the trials finished before it,
// the order-statistics rungs of src/space/asha.c beside the rule they replaced (which
// sorted every value at the rung on every decision: tests/asha_old_rule.h).
//
//   asha_bench [FINISHED...]          (default 500 2000 10000)
//
// A sweep of 10 rungs, η 2 (min_steps 1, 1024 steps), per trial, as the issue measured it.
// For each FINISHED: that many trials report their rungs (each going on while ASHA says
// so; metrics uniform in [0, 1)), told to the new rule by asha_continue and to the old one
// by replay; then the next trials report live through both, timed separately (the old
// rule on fewer of them, as it is slow), and every decision of the two must agree. Prints
// the mean CPU time per decision of each and old/new.
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asha_old_rule.h"
#include "common/util.h"
#include "space/asha.h"
#include "space/space.h"

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double metric_of(int id, int rung) {  // deterministic, uniform-ish in [0, 1)
    unsigned long long z = (unsigned long long)id * 0x9e3779b97f4a7c15ull + (unsigned long long)rung * 0xbf58476d1ce4e5b9ull;
    z ^= z >> 31, z *= 0x94d049bb133111ebull, z ^= z >> 29;
    return (double)(z >> 11) * 0x1p-53;
}

// Trials [from, to) reporting rung after rung while told to go on, through the new rule
// (asha != NULL) or the old one; returns the decisions made, their go-ons added to *go.
static long run_trials(Asha *a, OldAsha *o, int n_rungs, int from, int to, long *go) {
    long decisions = 0;
    for (int id = from; id < to; id++)
        for (int r = 0; r < n_rungs; r++) {
            const int on = a ? asha_continue(a, id, r, metric_of(id, r)) : old_continue(o, id, r, metric_of(id, r));
            decisions++;
            *go += on;
            if (!on) break;
        }
    return decisions;
}

int main(int argc, char **argv) {
    int finished[16] = {500, 2000, 10000}, n_points = 3;
    if (argc > 1) {
        n_points = argc - 1 < 16 ? argc - 1 : 16;
        for (int i = 0; i < n_points; i++) finished[i] = atoi(argv[i + 1]);
    }
    printf("asha_bench: 10 rungs, eta 2, per trial; CPU ms per decision with FINISHED trials before it\n");
    printf("%9s %8s %10s %10s %9s\n", "finished", "timed", "old_ms", "new_ms", "old/new");
    for (int p = 0; p < n_points; p++) {
        const int n = finished[p], timed_new = 2000, timed_old = n > 4000 ? 20 : n > 1000 ? 100 : 500;
        char yaml[512], err[1024];
        snprintf(yaml, sizeof yaml,
                 "method: random\ntrials: %d\nbudget: {steps: 1024}\n"
                 "scheduler: {name: asha, min_steps: 1, eta: 2, per: trial}\nparameters:\n  lr: {min: 0.001, max: 0.01}\n",
                 n + timed_new);
        SweepSpec s;
        if (space_parse(&s, "bench.yaml", yaml, strlen(yaml), err, sizeof err)) die(EXIT_BADINPUT, "%s", err);
        Asha a;
        OldAsha o;
        asha_init(&a, &s);
        old_init(&o, &a);
        for (int id = 0; id < n; id++)  // the history: decided by the new rule, replayed into the old
            for (int r = 0; r < a.n_rungs; r++) {
                const int on = asha_continue(&a, id, r, metric_of(id, r));
                old_replay(&o, id, r, metric_of(id, r), on);
                if (!on) break;
            }
        long go_old = 0, go_new = 0;
        double t0 = cpu_seconds();
        const long d_old = run_trials(NULL, &o, a.n_rungs, n, n + timed_old, &go_old);
        const double old_s = cpu_seconds() - t0;
        t0 = cpu_seconds();
        long d_new = run_trials(&a, NULL, a.n_rungs, n, n + timed_old, &go_new);
        if (d_new != d_old || go_new != go_old)
            die(EXIT_RUNTIME, "asha_bench: the rules disagree at %d finished: %ld/%ld decisions, %ld/%ld go on", n, d_new,
                d_old, go_new, go_old);
        d_new += run_trials(&a, NULL, a.n_rungs, n + timed_old, n + timed_new, &go_new);
        const double new_s = cpu_seconds() - t0;
        const double old_ms = 1e3 * old_s / d_old, new_ms = 1e3 * new_s / d_new;
        printf("%9d %4ld/%-4ld %10.4f %10.5f %9.0f\n", n, d_old, d_new, old_ms, new_ms, old_ms / new_ms);
        fflush(stdout);
        asha_free(&a);
        old_free(&o);
        space_free(&s);
    }
    return 0;
}
