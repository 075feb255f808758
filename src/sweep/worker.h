// worker.h: a worker group's side of the sweep (every rank but the coordinator).
#ifndef ATTN_WORKER_H
#define ATTN_WORKER_H

#include "sweep/sweep_internal.h"

// Asks for trials, runs each with the group's ranks and sends the results until the
// coordinator says DONE. Collective over sc->group.
void sweep_worker(const SweepComms *sc);

#endif
