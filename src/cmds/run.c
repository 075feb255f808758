// attnsweep run: the distributed sweep (under mpirun or Slurm).
#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "invariants/grid.h"
#include "sweep/sweep.h"

int cmd_run(int argc, char **argv) {
    RunOptions o = {.group_size = 1, .gpus_per_group = -1};
    const Option options[] = {
        OPT_STRING("--output", "-o", &o.output, "FILE", "results file (default results/NAME.h5; the journal is FILE.journal)"),
        OPT_FLAG("--resume", NULL, &o.resume, 1, "continue from the journal; a sweep not started yet simply starts"),
        OPT_FLAG("--retry-failed", NULL, &o.retry_failed, 1,
                 "with --resume: run the failed trials again (the journal keeps\nevery attempt, the results file the latest)"),
        OPT_INT("--group-size", &o.group_size, 1, SWEEP_MAX_GROUP_SIZE, "G", "ranks per worker group"),
        OPT_INT("--gpus-per-group", &o.gpus_per_group, 0, 1024, "K",
                "a program's sweep: GPUs per worker group (CUDA_VISIBLE_DEVICES),\nover the YAML's resources.gpus"),
        OPT_FLAG("--quiet", "-q", &o.quiet, 1, "no progress lines"),
        OPT_END,
    };
    const Command cmd = {"run",
                         "mpirun -np N attnsweep run SWEEP.yaml [-o results/NAME.h5] [--resume [--retry-failed]]\n"
                         "                  [--group-size G] [--gpus-per-group K] [--quiet]",
                         "Rank 0 coordinates; the other N-1 ranks form worker groups of G (default 1) that\n"
                         "train trials as they become free (G > 1: data-parallel within a group).\n",
                         options,
                         "SIGTERM, SIGINT or SIGUSR1 to the ranks (SIGUSR1 to mpirun) stop the sweep within\n"
                         "seconds (exit code 3); --resume continues it.\n",
                         {1, "one sweep file only",
                          "which sweep? (attnsweep run SWEEP.yaml)"}};
    args_parse(&cmd, argc, argv, &o.spec_path);
    if (o.retry_failed && !o.resume)
        die(EXIT_BADINPUT, "run: --retry-failed runs a sweep's failed trials again: pass it with --resume");
    grid_mpi_start();
    return sweep_run(&o);
}
