// coordinator.h: rank 0's side of the sweep.
#ifndef ATTN_COORDINATOR_H
#define ATTN_COORDINATOR_H

#include "space/space.h"
#include "sweep/sweep.h"
#include "sweep/sweep_internal.h"

// Runs the sweep to the end (or to a stop) with the results in output; returns the
// process exit code (sweep.h sweep_run's).
int sweep_coordinate(const SweepSpec *spec, const SweepComms *sc, const char *output, const RunOptions *o);

#endif
