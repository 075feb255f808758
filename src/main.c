// main.c: the attnsweep command line; one function per verb lives in src/cmds/.
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "common/util.h"
#include "invariants/grid.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attnsweep <command> [options]\n"
            "\n"
            "commands:\n"
            "  train     train one configuration and report its metrics\n"
            "  score     score a trial's or a checkpoint's attention tensors (under mpirun)\n"
            "\n"
            "Run 'attnsweep <command> --help' for a command's options.\n");
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
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } verbs[] = {{"train", cmd_train}, {"score", cmd_score}};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(verb, verbs[i].name)) {
            int rc = verbs[i].run(argc - 1, argv + 1);
            grid_mpi_stop();
            return rc;
        }
    die(EXIT_BADINPUT, "unknown command '%s' (allowed: train, score; see attnsweep --help)", verb);
}
