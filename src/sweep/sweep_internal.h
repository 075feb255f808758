// sweep_internal.h: what the coordinator, the workers and the entry point share: the
// communicators, the stop signals, the metric every decision reads, with the YAML's goal,
// and waiting on MPI without spinning a core (sweep_internal.c).
// Neither side calls the other or the entry point.
#ifndef ATTN_SWEEP_INTERNAL_H
#define ATTN_SWEEP_INTERNAL_H

#include <mpi.h>

#include "trial/external.h"
#include "trial/metrics.h"
#include "trial/runner.h"
#include "trial/trial.h"

// What the sweep optimises: reward, a validation metric or a program's own, with the YAML's goal (its
// `goal:`, which may differ from the metric table's usual one).
typedef struct {
    const Metric *metric;
    int maximize;
} SweepGoal;

typedef struct {
    int world_rank, world_size;
    int group_size, n_groups;
    int group_index;        // this rank's group (-1 on the coordinator)
    MPI_Comm group;         // this rank's group (MPI_COMM_NULL on the coordinator)
    int group_rank;         // rank in the group (0 = its leader)
    SweepGoal goal;         // what the sweep optimises, and which way: reward, a validation
                            // metric, or a program's own metric (metrics.h metric_program)
    const ProgramSpec *program;  // the sweep's program (n_command 0: the built-in engine)
    int device_slot;        // this rank's group among the groups of its node (a program's GPUs)
} SweepComms;

// The world rank of group k's leader.
static inline int group_leader(const SweepComms *sc, int k) { return 1 + k * sc->group_size; }

// The sweep's own metric at an evaluation, for ASHA, turned by the goal so that larger
// is better (the reward from the invariants traced there: trial/metrics.h EvalPoint);
// -HUGE_VAL where it is not known, which ranks last.
double sweep_eval_metric(const SweepGoal *g, const EvalPoint *e);
// A finished trial's metric, turned by the goal so that larger is better; NaN for a
// failed trial.
double sweep_final_metric(const SweepGoal *g, const TrialResult *r);

// Handlers for SIGTERM, SIGINT and SIGUSR1, which stop the sweep (exit code 3, resumable).
void sweep_catch_signals(void);
// SIGTERM, SIGINT or SIGUSR1 arrived.
int sweep_signalled(void);
// A stop signal while a trial is a worker's is a stop, not a death of the trial: armed with
// the trial's directory and its hand-out time, the signal handler appends the time to
// DIR/stopped (trial/trialdir.h), which a resume reads (sweep/recovery.h). The worker keeps
// it armed from the trial's arrival until the next trial's (or the end): a trial that
// finished while its coordinator died has a result that was never journaled, and its
// worker lived. The kernel's SIGKILL of a worker out of memory leaves no mark, so that
// trial alone counts a death; the job's other workers get SIGTERM from mpirun and mark
// theirs. trial_dir NULL disarms.
void sweep_stop_marker(const char *trial_dir, double handout_time);

// Polling back-off while nothing arrives: sleeps from SWEEP_POLL_MIN_NS doubling to
// SWEEP_POLL_MAX_NS. Each idle poll (MPI_Iprobe, which yields under mpi_yield_when_idle,
// then nanosleep) costs about 15-30 us of CPU here. The cap: 1 ms cost 1.5-2 % of a core
// all sweep long, taken from the workers on an oversubscribed node; 5 ms costs about
// 0.5 %. A message that ends a quiet spell waits up to the cap (measured on the
// coordinator: a worker's result hand-over took about 13 ms with 5 ms, 10-20 ms with 1 ms,
// 20-30 ms with 10 ms). The start: Linux's default timer slack (50 us) makes any shorter
// sleep last about as long, so starting lower only added polls. In busy spells the
// back-off restarts. (scripts/bench/sweep_scaling.sh and coordinator_overhead.sh measure
// both sides.)
enum { SWEEP_POLL_MIN_NS = 50000, SWEEP_POLL_MAX_NS = 5000000 };
// Sleep *ns, and double it up to the cap.
void sweep_nap(long *ns);
// MPI_Probe and MPI_Wait without spinning a core: Open MPI's blocking calls poll (and
// yield between polls under mpi_yield_when_idle), so a worker that waited in them through
// the rest of a sweep, or for a trial another job holds, kept a core busy all that while
// (a worker done 6 s before the sweep: 6.1 s of CPU). These test with the back-off above.
void sweep_probe(int source, MPI_Comm comm, MPI_Status *st);
void sweep_wait(MPI_Request *req);

#endif
