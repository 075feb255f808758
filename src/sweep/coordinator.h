// coordinator.h: rank 0's side of the sweep.
#ifndef ATTN_COORDINATOR_H
#define ATTN_COORDINATOR_H

#include "space/space.h"
#include "sweep/sweep_internal.h"

// Runs the sweep to the end (or to a signal); returns the process exit code (0, or 3
// when stopped by a signal with trials left).
int sweep_coordinate(const SweepSpec *spec, const SweepComms *sc, const char *output, int resume, int quiet);

#endif
