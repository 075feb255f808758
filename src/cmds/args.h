// args.h: one declarative option table per verb, as git's parse-options. A verb declares
// its options once (name, the variable each sets, its range or choices, its help line)
// in a Command; args_parse walks argv by that table, and --help prints the usage made
// from it, so the usage never drifts from the parser. Options are --name VALUE or
// --name=VALUE (a short alias: -o FILE); flags take no value ("--json=1" is an error);
// anything else is a positional argument. Errors end with one line
// "attnsweep: VERB: ..." and exit code 2.
#ifndef ATTN_ARGS_H
#define ATTN_ARGS_H

#include <stdio.h>

#include "params/config.h"

typedef enum {
    OPT_FLAG,    // sets *(int *)value to set_to
    OPT_INT,     // *(int *)value: an integer in [lo, hi]
    OPT_NUMBER,  // *(double *)value: a finite number in [lo, hi]
    OPT_STRING,  // *(const char **)value: the argument as it is
    OPT_LIST,    // *(ArgList *)value: the argument appended, the option repeatable
    OPT_CHOICE,  // *(int *)value: the index of the argument in choices
    OPT_PARAMS,  // every trial parameter (params/config.h) as --name VALUE into *(TrialConfig *)value
} OptType;

// The values of a repeatable option, in the order given.
enum { ARGS_LIST_MAX = 64 };
typedef struct {
    const char *item[ARGS_LIST_MAX];
    int n;
} ArgList;

typedef struct {
    const char *name;            // "--top" (NULL for OPT_PARAMS)
    const char *alias;           // "-o", or NULL
    OptType type;
    void *value;
    const char *arg;             // the value's name in the usage ("K", "FILE"); NULL for flags
    const char *help;            // its text in --help; "\n" starts another line
    double lo, hi;               // OPT_INT, OPT_NUMBER
    int set_to;                  // OPT_FLAG
    const char *const *choices;  // OPT_CHOICE: NULL-terminated
} Option;

#define OPT_FLAG(name_, alias_, var, to, help_) \
    {.name = name_, .alias = alias_, .type = OPT_FLAG, .value = var, .help = help_, .set_to = to}
#define OPT_INT(name_, var, lo_, hi_, arg_, help_) \
    {.name = name_, .type = OPT_INT, .value = var, .arg = arg_, .help = help_, .lo = lo_, .hi = hi_}
#define OPT_NUMBER(name_, var, lo_, hi_, arg_, help_) \
    {.name = name_, .type = OPT_NUMBER, .value = var, .arg = arg_, .help = help_, .lo = lo_, .hi = hi_}
#define OPT_STRING(name_, alias_, var, arg_, help_) \
    {.name = name_, .alias = alias_, .type = OPT_STRING, .value = var, .arg = arg_, .help = help_}
#define OPT_LIST(name_, var, arg_, help_) \
    {.name = name_, .type = OPT_LIST, .value = var, .arg = arg_, .help = help_}
#define OPT_CHOICE(name_, var, names, arg_, help_) \
    {.name = name_, .type = OPT_CHOICE, .value = var, .arg = arg_, .help = help_, .choices = names}
#define OPT_PARAMS(config, help_) {.type = OPT_PARAMS, .value = config, .help = help_}
#define OPT_END {.name = NULL}

typedef struct {
    int max;               // positional arguments allowed
    const char *too_many;  // what one beyond them is told ("one results file only")
    const char *missing;   // the error when none is given, or NULL when none is needed
} Positionals;

typedef struct {
    const char *verb;
    const char *usage;       // the synopsis after "usage: " ("attnsweep report RESULTS.h5 [options]")
    const char *about;       // what the verb does, printed between the synopsis and the options
    const Option *options;   // ends with OPT_END
    const char *footer;      // printed after the options, or NULL
    Positionals positional;
} Command;

// Parse argv[1..] (argv[0] is the verb) by cmd: sets the variable of every option given
// and puts the positional arguments in pos[0..positional.max); returns how many. --help
// or -h prints the usage to stdout and exits 0; after man_request (cmds/man.h) it prints
// the verb's manual page instead of parsing and exits 0.
int args_parse(const Command *cmd, int argc, char **argv, const char **pos);
void args_usage(const Command *cmd, FILE *f);
// A YAML name as an option: "lambda_orth" → "--lambda-orth" (args_names.c, as the two below).
void args_param_flag(const char *name, char *out, size_t len);
// An option's names as the option list shows them: "-o, --output FILE".
void args_option_names(const Option *o, char *out, size_t len);
// Trial parameter p as an option: its flag ("--lambda-orth") and its help with its
// default in brackets.
void args_param_help(const ParamSpec *p, char *flag, size_t flag_len, char *help, size_t help_len);
// text as a number in [lo, hi] (an option's value read in parts); errors name opt.
double args_number(const char *verb, const char *opt, const char *text, double lo, double hi);

#endif
