// sweep.c: the entry point of `attnsweep run`: load the space on rank 0, tell the workers
// what they need of it (the metric, a program's spec), split the world into the
// coordinator and worker groups, install the stop signals, run.
#define _POSIX_C_SOURCE 200809L
#include "sweep/sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

// results/NAME.h5 → results/NAME.trials: the directory of a program's trials.
static char *trials_dir(const char *output) {
    size_t n = strlen(output);
    if (n > 3 && !strcmp(output + n - 3, ".h5")) n -= 3;
    char *d = xmalloc(n + sizeof ".trials");
    memcpy(d, output, n);
    memcpy(d + n, ".trials", sizeof ".trials");
    return d;
}

// Rank 0's program spec (with its trials' directory) to every rank.
static void share_program(ProgramSpec *p, int rank) {
    Bytes b = {0};
    if (rank == 0) program_spec_pack(&b, p);
    long len = (long)b.len;
    MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank != 0) bytes_extend(&b, (size_t)len);
    MPI_Bcast(b.data, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank != 0 && program_spec_unpack(p, b.data, b.len) != 0) die(EXIT_RUNTIME, "internal error: a program spec");
    bytes_free(&b);
}

// The node-local rank: Open MPI's or Slurm's variable, else the rank on MPI's shared-memory
// communicator.
static int local_rank(void) {
    const char *v = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!v) v = getenv("SLURM_LOCALID");
    if (v) return atoi(v);
    MPI_Comm node;
    int r;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    return r;
}

// A group's place among its node's groups, for its GPUs: its leader's node-local rank,
// less one on the coordinator's node (rank 0 there), divided by the group size.
// Collective over MPI_COMM_WORLD.
static int device_slot(const SweepComms *sc) {
    char host[MPI_MAX_PROCESSOR_NAME] = "", coordinator[MPI_MAX_PROCESSOR_NAME] = "";
    int n;
    MPI_Get_processor_name(host, &n);
    memcpy(coordinator, host, sizeof host);
    MPI_Bcast(coordinator, sizeof coordinator, MPI_CHAR, 0, MPI_COMM_WORLD);
    const int local = local_rank(), on_coordinator_node = !strcmp(host, coordinator) && local > 0;
    return (local - on_coordinator_node) / sc->group_size;
}

int sweep_run(const RunOptions *o) {
    SweepComms sc = {.group_size = o->group_size};
    MPI_Comm_rank(MPI_COMM_WORLD, &sc.world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &sc.world_size);

    // Rank 0 reads and checks the space; the others learn only whether to go on.
    SweepSpec spec;
    char out[4096] = "";
    // exit code (0: go on), the metric's index in the metric table (-1: the program's own), its YAML goal
    int status[3] = {0, 0, 0};
    ProgramSpec program = {0};
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
        } else if (o->gpus_per_group >= 0 && !space_is_program(&spec)) {
            warnf("run: --gpus-per-group applies to a sweep of a program (the built-in engine trains on CPUs)");
            status[0] = EXIT_BADINPUT;
            space_free(&spec);
        } else {
            const Metric *m = space_metric(&spec);  // a metric of the table, or the program's own
            status[1] = metric_is_program(m) ? -1 : (int)(m - metrics);
            status[2] = spec.maximize;
            output_path(out, sizeof out, o, &spec);
            if (o->gpus_per_group >= 0) spec.program.gpus = o->gpus_per_group;
            program = spec.program;  // a copy of the pointers: spec keeps them
            program.trials_dir = trials_dir(out);
        }
    }
    MPI_Bcast(status, 3, MPI_INT, 0, MPI_COMM_WORLD);
    if (status[0] != 0) return status[0];
    share_program(&program, sc.world_rank);
    Metric program_metric;
    metric_program(&program_metric, program.metric, status[2]);
    sc.goal = (SweepGoal){status[1] >= 0 ? &metrics[status[1]] : &program_metric, status[2]};
    sc.program = &program;
    sc.n_groups = (sc.world_size - 1) / sc.group_size;
    sc.group_index = sc.world_rank == 0 ? -1 : (sc.world_rank - 1) / sc.group_size;
    MPI_Comm_split(MPI_COMM_WORLD, sc.world_rank == 0 ? MPI_UNDEFINED : sc.group_index, sc.world_rank, &sc.group);
    sc.group_rank = 0;
    if (sc.group != MPI_COMM_NULL) MPI_Comm_rank(sc.group, &sc.group_rank);
    if (program.gpus > 0) sc.device_slot = device_slot(&sc);

    sweep_catch_signals();

    int rc = 0;
    if (sc.world_rank == 0) {
        if (!o->quiet)
            fprintf(stderr, "sweep %s: %s%d trials (%s) on %d worker group(s) of %d rank(s); results in %s\n", spec.name,
                    spec.until_stopped ? "until stopped, at most " : "", spec.trials, o->spec_path, sc.n_groups,
                    sc.group_size, out);
        rc = sweep_coordinate(&spec, &sc, out, o);
        free(program.trials_dir);  // the rest is spec's
        space_free(&spec);
    } else {
        sweep_worker(&sc);
        MPI_Comm_free(&sc.group);
        program_spec_free(&program);
    }
    // Every rank leaves with the coordinator's verdict (a worker done early waits for it
    // without spinning a core for the rest of the sweep).
    MPI_Request verdict;
    MPI_Ibcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD, &verdict);
    sweep_wait(&verdict);
    return rc;
}
