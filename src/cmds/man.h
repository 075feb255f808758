// man.h: the manual pages, attnsweep(1) and one attnsweep-VERB(1) a verb, written in roff
// from the tables that drive parsing and --help: the verb table of main.c, each verb's
// Command (its synopsis, text and options) and, for the trial parameters, config_params.
// `attnsweep help --man [VERB]` prints one; the build writes them all (CMakeLists.txt).
#ifndef ATTN_MAN_H
#define ATTN_MAN_H

#include <stdio.h>

#include "cmds/args.h"
#include "cmds/cmds.h"

// The page of attnsweep itself: its synopsis, what it is (one line) and every verb with
// its summary.
void man_top(const char *synopsis, const char *about, const Verb *verbs, int n, FILE *f);
// From now on args_parse prints v's page (man_command) instead of parsing: run v's
// function with no arguments after this to print it.
void man_request(const Verb *v);
int man_requested(void);
// The page of the requested verb, made from cmd.
void man_command(const Command *cmd, FILE *f);

#endif
