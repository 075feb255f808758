// sweep.c: the entry point of `attnsweep run`: load the space on rank 0, split the
// world into the coordinator and worker groups, install the stop signals, run.
#define _POSIX_C_SOURCE 200809L
#include "sweep/sweep.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "space/space.h"
#include "sweep/coordinator.h"
#include "sweep/sweep_internal.h"
#include "sweep/worker.h"

// results/NAME.h5 unless -o says otherwise; makes results/ if needed.
static void output_path(char *out, size_t len, const RunOptions *o, const SweepSpec *s) {
    if (o->output) {
        snprintf(out, len, "%s", o->output);
        return;
    }
    if (mkdir("results", 0777) != 0 && errno != EEXIST) die(EXIT_RUNTIME, "results: %s", strerror(errno));
    snprintf(out, len, "results/%s.h5", s->name);
}

int sweep_run(const RunOptions *o) {
    SweepComms sc = {.group_size = o->group_size};
    MPI_Comm_rank(MPI_COMM_WORLD, &sc.world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &sc.world_size);

    // Rank 0 reads and checks the space; the others learn only whether to go on.
    SweepSpec spec;
    int status[2] = {0, 0};  // exit code (0: go on), the metric's index in the metric table
    if (sc.world_rank == 0) {
        char err[1024];
        if (space_load(&spec, o->spec_path, err, sizeof err) != 0) {
            warnf("%s", err);
            status[0] = EXIT_BADINPUT;
        } else if (sc.world_size < 1 + o->group_size || (sc.world_size - 1) % o->group_size != 0) {
            warnf("run: %d rank%s cannot form a coordinator and groups of %d (need 1 + a multiple of %d, at least "
                  "%d: mpirun -np %d attnsweep run ...)",
                  sc.world_size, sc.world_size == 1 ? "" : "s", o->group_size, o->group_size, 1 + o->group_size,
                  1 + 2 * o->group_size);
            status[0] = EXIT_BADINPUT;
            space_free(&spec);
        } else {
            status[1] = (int)(metric_find(spec.metric) - metrics);  // space_load allows only known names
        }
    }
    MPI_Bcast(status, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (status[0] != 0) return status[0];
    sc.metric = &metrics[status[1]];
    sc.n_groups = (sc.world_size - 1) / sc.group_size;
    sc.group_index = sc.world_rank == 0 ? -1 : (sc.world_rank - 1) / sc.group_size;
    MPI_Comm_split(MPI_COMM_WORLD, sc.world_rank == 0 ? MPI_UNDEFINED : sc.group_index, sc.world_rank, &sc.group);
    sc.group_rank = 0;
    if (sc.group != MPI_COMM_NULL) MPI_Comm_rank(sc.group, &sc.group_rank);

    sweep_catch_signals();

    int rc = 0;
    if (sc.world_rank == 0) {
        char out[4096];
        output_path(out, sizeof out, o, &spec);
        if (!o->quiet)
            fprintf(stderr, "sweep %s: %d trials (%s) on %d worker group(s) of %d rank(s); results in %s\n", spec.name,
                    spec.trials, o->spec_path, sc.n_groups, sc.group_size, out);
        rc = sweep_coordinate(&spec, &sc, out, o->resume, o->quiet);
        space_free(&spec);
    } else {
        sweep_worker(&sc);
        MPI_Comm_free(&sc.group);
    }
    // Every rank leaves with the coordinator's verdict.
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}
