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

// A sweep's metrics (METRIC_DECIDES) are reward and val_accuracy, which go up, and the
// validation losses, which go down.
double sweep_eval_metric(const Metric *m, const CurvePoint *pt) {
    return m->maximize ? pt->val_accuracy : -pt->val_loss;
}

double sweep_final_metric(const Metric *m, const TrialResult *r) {
    if (r->status == TRIAL_FAILED) return NAN;
    const double v = metric_value(r, m);
    return m->maximize ? v : -v;
}
