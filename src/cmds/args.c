#include "cmds/args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void args_begin(Args *a, const char *verb, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->argc = argc, a->argv = argv, a->i = 0, a->verb = verb;
}

int args_next(Args *a) {
    if (++a->i >= a->argc) return 0;
    const char *s = a->argv[a->i], *eq = strchr(s, '=');
    a->inline_value = NULL;
    a->arg = s;
    if (s[0] == '-' && s[1] == '-' && eq && (size_t)(eq - s) < sizeof a->name) {
        snprintf(a->name, sizeof a->name, "%.*s", (int)(eq - s), s);
        a->arg = a->name;
        a->inline_value = eq + 1;
    }
    return 1;
}

int args_option(const Args *a, const char *opt) { return strcmp(a->arg, opt) == 0; }

int args_flag(Args *a, const char *flag) {
    if (!args_option(a, flag)) return 0;
    if (a->inline_value) die(EXIT_BADINPUT, "%s: %s takes no value", a->verb, flag);
    return 1;
}

const char *args_value(Args *a) {
    if (a->inline_value) return a->inline_value;
    if (a->i + 1 >= a->argc) die(EXIT_BADINPUT, "%s: %s needs a value", a->verb, a->arg);
    return a->argv[++a->i];
}

double args_parse_number(const char *verb, const char *opt, const char *text, double lo, double hi) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < lo || v > hi)
        die(EXIT_BADINPUT, "%s: %s must be a number in [%g, %g], got '%s'", verb, opt, lo, hi, text);
    return v;
}

double args_number(Args *a, double lo, double hi) {
    const char *opt = a->arg;
    return args_parse_number(a->verb, opt, args_value(a), lo, hi);
}

int args_int(Args *a, int lo, int hi) {
    const char *opt = a->arg, *text = args_value(a);
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);  // "1.5" is an error, not 1
    if (end == text || *end || errno || v < lo || v > hi)
        die(EXIT_BADINPUT, "%s: %s must be an integer in [%d, %d], got '%s'", a->verb, opt, lo, hi, text);
    return (int)v;
}

int args_positional(const Args *a) {
    if (a->arg[0] == '-' && a->arg[1])
        die(EXIT_BADINPUT, "%s: unknown option '%s' (see attnsweep %s --help)", a->verb, a->arg, a->verb);
    return 1;
}
