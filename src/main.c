// main.c: the attnsweep command line; one function per verb lives in src/cmds/.
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "cmds/man.h"
#include "common/util.h"
#include "invariants/grid.h"

static const Verb verbs[] = {
    {"run", cmd_run, "run a sweep from a YAML search space (--workers N, or under mpirun or Slurm)", 1},
    {"validate", cmd_validate, "check a search space and show its first configurations", 1},
    {"train", cmd_train, "train one configuration and report its metrics", 0},
    {"score", cmd_score, "score a trial's or a checkpoint's attention tensors (under mpirun)", 0},
    {"report", cmd_report, "summarise a sweep's results file: leaderboard, variants, ablations", 0},
    {"probe", cmd_probe, "probe a trained trial: CKA, input noise, attention maps, a transformed twin", 0},
    {"rerun", cmd_rerun, "run one trial of a results file again (--trial N or --best) with its seed", 0},
    {"slurm", cmd_slurm, "write (and submit) a Slurm batch script for a sweep", 0},
    {"schema", cmd_schema, "print the results file's vocabulary: columns, units, statuses, format", 0},
};
enum { N_VERBS = sizeof verbs / sizeof verbs[0] };
static const char synopsis[] = "attnsweep <command> [options]";
static const char about[] = "a distributed experiment-sweep runner for attention-architecture search";

static void usage(FILE *f) {
    fprintf(f, "usage: %s\n\nattnsweep: %s.\n\ncommands:\n", synopsis, about);
    for (int i = 0; i < N_VERBS; i++) fprintf(f, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nRun 'attnsweep <command> --help' for a command's options (its manual page: man attnsweep-<command>).\n");
}

// The verb named name; an unknown name ends the program with the list of the known ones.
static const Verb *find_verb(const char *name) {
    for (int i = 0; i < N_VERBS; i++)
        if (!strcmp(name, verbs[i].name)) return &verbs[i];
    char names[256] = "";
    for (int i = 0; i < N_VERBS; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", verbs[i].name);
    die(EXIT_BADINPUT, "unknown command '%s' (allowed: %s; see attnsweep --help)", name, names);
}

// attnsweep help --man [VERB]: a manual page in roff on stdout (the build writes them all).
static int print_man(int argc, char **argv) {
    if (argc > 1) die(EXIT_BADINPUT, "help: --man takes one command at most (got '%s' and '%s')", argv[0], argv[1]);
    if (argc == 0) {
        man_top(synopsis, about, verbs, N_VERBS, stdout);
        return 0;
    }
    const Verb *v = find_verb(argv[0]);
    man_request(v);
    char *args[] = {argv[0], NULL};
    return v->run(1, args);  // prints the page from the verb's option table and exits
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_BADINPUT;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "help") && argc > 2 && !strcmp(argv[2], "--man")) return print_man(argc - 3, argv + 3);
    if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(verb, "--version")) {
        printf("attnsweep %s\n", ATTNSWEEP_VERSION);
        return 0;
    }
    const Verb *v = find_verb(verb);
    int rc = v->run(argc - 1, argv + 1);
    grid_mpi_stop();
    return rc;
}
