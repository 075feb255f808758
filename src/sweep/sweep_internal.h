// sweep_internal.h: what the coordinator, the workers and the entry point share: the
// communicators, the stop signals and the metric every decision reads (sweep_internal.c).
// Neither side calls the other or the entry point.
#ifndef ATTN_SWEEP_INTERNAL_H
#define ATTN_SWEEP_INTERNAL_H

#include <mpi.h>

#include "trial/metrics.h"
#include "trial/trial.h"

typedef struct {
    int world_rank, world_size;
    int group_size, n_groups;
    int group_index;        // this rank's group (-1 on the coordinator)
    MPI_Comm group;         // this rank's group (MPI_COMM_NULL on the coordinator)
    int group_rank;         // rank in the group (0 = its leader)
    const Metric *metric;   // what the sweep optimises: reward or a validation metric
} SweepComms;

// The world rank of group k's leader.
static inline int group_leader(const SweepComms *sc, int k) { return 1 + k * sc->group_size; }

// The metric at an evaluation, for ASHA, turned so that larger is better: the validation
// accuracy for reward and val_accuracy (the reward needs final scores), minus the
// validation loss for val_loss and val_bits_per_byte.
double sweep_eval_metric(const Metric *m, const CurvePoint *pt);
// A finished trial's metric, turned so that larger is better; NaN for a failed trial.
double sweep_final_metric(const Metric *m, const TrialResult *r);

// Handlers for SIGTERM, SIGINT and SIGUSR1, which stop the sweep (exit code 3, resumable).
void sweep_catch_signals(void);
// SIGTERM, SIGINT or SIGUSR1 arrived.
int sweep_signalled(void);

#endif
