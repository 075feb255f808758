// sweep_internal.h: what the coordinator, the workers and the entry point share.
#ifndef ATTN_SWEEP_INTERNAL_H
#define ATTN_SWEEP_INTERNAL_H

#include <mpi.h>

#include "common/trial.h"

// What a sweep optimises; every value is turned so that larger is better.
typedef enum { METRIC_REWARD, METRIC_ACCURACY, METRIC_LOSS, METRIC_BITS_PER_BYTE } MetricKind;

typedef struct {
    int world_rank, world_size;
    int group_size, n_groups;
    int group_index;        // this rank's group (-1 on the coordinator)
    MPI_Comm group;         // this rank's group (MPI_COMM_NULL on the coordinator)
    int group_rank;         // rank in the group (0 = its leader)
    MetricKind metric_kind;
} SweepComms;

// The world rank of group k's leader.
static inline int group_leader(const SweepComms *sc, int k) { return 1 + k * sc->group_size; }

// The metric at an evaluation, for ASHA: held-out accuracy for reward and accuracy
// (the reward needs final scores), minus the held-out loss for loss and bits per byte.
double sweep_eval_metric(int task, MetricKind kind, const CurvePoint *pt);
// A finished trial's metric (larger is better); NaN for a failed trial.
double sweep_final_metric(MetricKind kind, const TrialResult *r);

// SIGTERM or SIGUSR1 arrived (handlers installed by sweep_run).
int sweep_signalled(void);

void sweep_worker(const SweepComms *sc);

#endif
