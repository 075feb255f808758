// args.h: the one command-line walker of the verbs. Options are --name VALUE or
// --name=VALUE; flags take no value ("--json=1" is an error); anything else is a
// positional argument. Errors end with one line "attnsweep: VERB: ..." and exit 2.
#ifndef ATTN_ARGS_H
#define ATTN_ARGS_H

typedef struct {
    int argc;
    char **argv;
    int i;                     // index of the current argument
    const char *verb;          // for messages
    char name[64];             // the current option's name (the part before '=')
    const char *arg;           // the current argument: an option's name, or a positional
    const char *inline_value;  // the part after '=', or NULL
} Args;

// Walk argv[1..]: args_next returns 0 at the end, else 1 with a->arg set.
void args_begin(Args *a, const char *verb, int argc, char **argv);
int args_next(Args *a);
// Whether the current argument is the flag `flag` (refusing a value) or the option `opt`.
int args_flag(Args *a, const char *flag);
int args_option(const Args *a, const char *opt);
// The current option's value (inline or the next argument).
const char *args_value(Args *a);
// text as a number in [lo, hi]; errors name opt.
double args_parse_number(const char *verb, const char *opt, const char *text, double lo, double hi);
// The current option's value as a number in [lo, hi] (errors name the option).
double args_number(Args *a, double lo, double hi);
int args_int(Args *a, int lo, int hi);
// A positional argument (does not start with '-'); an unknown option ends the program.
int args_positional(const Args *a);

#endif
