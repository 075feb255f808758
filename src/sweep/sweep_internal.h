// sweep_internal.h: what the coordinator, the workers and the entry point share: the
// communicators, the stop signals and the metric every decision reads, with the YAML's goal
// (sweep_internal.c).
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

#endif
