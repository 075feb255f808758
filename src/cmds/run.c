// attnsweep run: the distributed sweep (under mpirun or Slurm).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/cmds.h"
#include "common/util.h"
#include "invariants/grid.h"
#include "sweep/sweep.h"

static void run_usage(FILE *f) {
    fprintf(f,
            "usage: mpirun -np N attnsweep run SWEEP.yaml [-o results/NAME.h5] [--resume] [--group-size G] [--quiet]\n"
            "\n"
            "Rank 0 coordinates; the other N-1 ranks form worker groups of G (default 1) that\n"
            "train trials as they become free (G > 1: data-parallel within a group).\n"
            "  -o FILE          results file (default results/NAME.h5; the journal is FILE.journal)\n"
            "  --resume         continue from the journal; a sweep not started yet simply starts\n"
            "  --group-size G   ranks per worker group\n"
            "  --quiet          no progress lines\n"
            "SIGTERM or SIGUSR1 stop the sweep within seconds (exit code 3); --resume continues it.\n");
}

int cmd_run(int argc, char **argv) {
    RunOptions o = {.group_size = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--resume")) {
            o.resume = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o.quiet = 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--group-size")) {
            if (i + 1 >= argc) die(EXIT_BADINPUT, "run: %s needs a value", a);
            const char *v = argv[++i];
            if (a[1] == 'o' || !strcmp(a, "--output")) {
                o.output = v;
            } else {
                char *end;
                long g = strtol(v, &end, 10);
                if (*end || end == v || g < 1 || g > 4096)
                    die(EXIT_BADINPUT, "run: --group-size must be an integer in [1, 4096], got '%s'", v);
                o.group_size = (int)g;
            }
        } else if (a[0] == '-') {
            die(EXIT_BADINPUT, "run: unknown option '%s' (see attnsweep run --help)", a);
        } else if (o.spec_path) {
            die(EXIT_BADINPUT, "run: one sweep file only (got '%s' and '%s')", o.spec_path, a);
        } else {
            o.spec_path = a;
        }
    }
    if (!o.spec_path) die(EXIT_BADINPUT, "run: which sweep? (attnsweep run SWEEP.yaml)");
    grid_mpi_start();
    return sweep_run(&o);
}
