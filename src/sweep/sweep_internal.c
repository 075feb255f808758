// sweep_internal.c: the stop signals, the metric helpers and the waits that do not spin (sweep_internal.h).
#define _POSIX_C_SOURCE 200809L  // sigaction
#include "sweep/sweep_internal.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "trial/trialdir.h"

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t marker_armed;
static char marker_path[4096], marker_text[40];
static size_t marker_len;

// The armed mark, once; only async-signal-safe calls (open, write, close).
static void write_marker(void) {
    if (!marker_armed) return;
    marker_armed = 0;
    const int fd = open(marker_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    if (write(fd, marker_text, marker_len) < 0) {}  // nothing more a handler can do
    close(fd);
}

static void on_signal(int sig) {
    stop_signal = sig;
    write_marker();
}

void sweep_stop_marker(const char *trial_dir, double handout_time) {
    marker_armed = 0;
    if (!trial_dir || trial_dir_stopped(marker_path, sizeof marker_path, trial_dir) != 0) return;
    const int n = snprintf(marker_text, sizeof marker_text, "%.17g\n", handout_time);
    marker_len = n > 0 && (size_t)n < sizeof marker_text ? (size_t)n : 0;
    marker_armed = marker_len > 0;
}

void sweep_catch_signals(void) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    // A rank whose launcher dies is stopped, not killed: Open MPI 4.1's ranks _exit by
    // themselves, with no signal, once their mpirun is gone (kill -9), and each such exit
    // counted a death of the trial in hand (two such kills failed it: found by
    // scripts/redteam/kill_campaign.sh). The kernel's SIGTERM at the launcher's death marks
    // the trial first.
    const pid_t launcher = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != launcher) raise(SIGTERM);  // it died before the line above
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

void sweep_nap(long *ns) {
    nanosleep(&(struct timespec){0, *ns}, NULL);
    *ns = *ns < SWEEP_POLL_MAX_NS / 2 ? 2 * *ns : SWEEP_POLL_MAX_NS;
}

void sweep_probe(int source, MPI_Comm comm, MPI_Status *st) {
    long ns = SWEEP_POLL_MIN_NS;
    for (int flag = 0;; sweep_nap(&ns)) {
        MPI_Iprobe(source, MPI_ANY_TAG, comm, &flag, st);
        if (flag) return;
    }
}

void sweep_wait(MPI_Request *req) {
    long ns = SWEEP_POLL_MIN_NS;
    for (int done = 0;; sweep_nap(&ns)) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
    }
}
