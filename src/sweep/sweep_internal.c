// sweep_internal.c: the stop signals and the metric helpers (sweep_internal.h).
#define _POSIX_C_SOURCE 200809L  // sigaction
#include "sweep/sweep_internal.h"

#include <math.h>
#include <signal.h>

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

void sweep_catch_signals(void) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

int sweep_signalled(void) { return stop_signal != 0; }

double sweep_eval_metric(const SweepGoal *g, const EvalPoint *e) {
    const double v = eval_point_value(e, g->metric);
    if (isnan(v)) return -HUGE_VAL;  // not known (a runner that traces nothing: no reward): last
    return g->maximize ? v : -v;
}

double sweep_final_metric(const SweepGoal *g, const TrialResult *r) {
    if (r->status == TRIAL_FAILED) return NAN;
    const double v = metric_value(r, g->metric);
    return g->maximize ? v : -v;
}
