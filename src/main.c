// main.c: the attnsweep command line; one function per verb lives in src/cmds/.
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "common/util.h"
#include "invariants/grid.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} verbs[] = {
    {"run", cmd_run, "run a sweep from a YAML search space (--workers N, or under mpirun or Slurm)"},
    {"validate", cmd_validate, "check a search space and show its first configurations"},
    {"train", cmd_train, "train one configuration and report its metrics"},
    {"score", cmd_score, "score a trial's or a checkpoint's attention tensors (under mpirun)"},
    {"report", cmd_report, "summarise a sweep's results file: leaderboard, variants, ablations"},
    {"probe", cmd_probe, "probe a trained trial: CKA, input noise, attention maps, a transformed twin"},
    {"rerun", cmd_rerun, "run one trial of a results file again (--trial N or --best) with its seed"},
    {"slurm", cmd_slurm, "write (and submit) a Slurm batch script for a sweep"},
    {"schema", cmd_schema, "print the results file's vocabulary: columns, units, statuses, format"},
};
enum { N_VERBS = sizeof verbs / sizeof verbs[0] };

static void usage(FILE *f) {
    fprintf(f, "usage: attnsweep <command> [options]\n\ncommands:\n");
    for (int i = 0; i < N_VERBS; i++) fprintf(f, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nRun 'attnsweep <command> --help' for a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_BADINPUT;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(verb, "--version")) {
        printf("attnsweep %s\n", ATTNSWEEP_VERSION);
        return 0;
    }
    for (int i = 0; i < N_VERBS; i++)
        if (!strcmp(verb, verbs[i].name)) {
            int rc = verbs[i].run(argc - 1, argv + 1);
            grid_mpi_stop();
            return rc;
        }
    char names[256] = "";
    for (int i = 0; i < N_VERBS; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", verbs[i].name);
    die(EXIT_BADINPUT, "unknown command '%s' (allowed: %s; see attnsweep --help)", verb, names);
}
