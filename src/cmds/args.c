// args.c: the option walker and the usage printer of the verbs (args.h).
#include "cmds/args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/man.h"
#include "common/util.h"
#include "params/config.h"

enum { USAGE_COLUMN = 22 };  // width of the option column in --help

// The option named arg (its long name or its alias), or NULL.
static const Option *find(const Command *cmd, const char *arg) {
    for (const Option *o = cmd->options; o->name || o->value; o++)
        if (o->name && (!strcmp(arg, o->name) || (o->alias && !strcmp(arg, o->alias)))) return o;
    return NULL;
}

// The OPT_PARAMS entry, or NULL.
static const Option *params_of(const Command *cmd) {
    for (const Option *o = cmd->options; o->name || o->value; o++)
        if (o->type == OPT_PARAMS) return o;
    return NULL;
}

double args_number(const char *verb, const char *opt, const char *text, double lo, double hi) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < lo || v > hi)
        die(EXIT_BADINPUT, "%s: %s must be a number in [%g, %g], got '%s'", verb, opt, lo, hi, text);
    return v;
}

static int parse_int(const char *verb, const char *opt, const char *text, double lo, double hi) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);  // "1.5" is an error, not 1
    if (end == text || *end || errno || v < lo || v > hi || isspace((unsigned char)text[0]))
        die(EXIT_BADINPUT, "%s: %s must be an integer in [%.0f, %.0f], got '%s'", verb, opt, lo, hi, text);
    return (int)v;
}

// "a, b or c"
static void list_choices(const char *const *choices, char *out, size_t len) {
    out[0] = 0;
    for (int i = 0; choices[i]; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i == 0 ? "" : choices[i + 1] ? ", " : " or ",
                 choices[i]);
}

static int parse_choice(const char *verb, const Option *o, const char *text) {
    for (int i = 0; o->choices[i]; i++)
        if (!strcmp(text, o->choices[i])) return i;
    char allowed[256];
    list_choices(o->choices, allowed, sizeof allowed);
    die(EXIT_BADINPUT, "%s: %s must be %s, got '%s'", verb, o->name, allowed, text);
}

static void unknown(const Command *cmd, const char *name) {
    const char *hint = params_of(cmd) && !strncmp(name, "--", 2) ? config_closest(name + 2) : NULL;
    if (hint) {
        char flag[64];
        args_param_flag(hint, flag, sizeof flag);
        die(EXIT_BADINPUT, "%s: unknown option '%s' (did you mean %s?)", cmd->verb, name, flag);
    }
    die(EXIT_BADINPUT, "%s: unknown option '%s' (see attnsweep %s --help)", cmd->verb, name, cmd->verb);
}

int args_parse(const Command *cmd, int argc, char **argv, const char **pos) {
    if (man_requested()) {  // attnsweep help --man VERB: the verb's page, made from this table
        man_command(cmd, stdout);
        exit(0);
    }
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] != '-' || !s[1]) {  // a positional argument ("-": standard input or output)
            if (n == cmd->positional.max) {
                if (!n) die(EXIT_BADINPUT, "%s: unexpected argument '%s' (see attnsweep %s --help)", cmd->verb, s, cmd->verb);
                die(EXIT_BADINPUT, "%s: %s (got '%s' and '%s')", cmd->verb, cmd->positional.too_many, pos[0], s);
            }
            pos[n++] = s;
            continue;
        }
        char name[64];
        const char *eq = strchr(s, '='), *inline_value = NULL;
        snprintf(name, sizeof name, "%s", s);
        if (s[1] == '-' && eq && (size_t)(eq - s) < sizeof name) {
            name[eq - s] = 0;
            inline_value = eq + 1;
        }
        if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
            if (inline_value) die(EXIT_BADINPUT, "%s: %s takes no value", cmd->verb, name);
            args_usage(cmd, stdout);
            exit(0);
        }
        const Option *o = find(cmd, name);
        const ParamSpec *p = !o && params_of(cmd) && !strncmp(name, "--", 2) ? config_find(name + 2) : NULL;
        if (!o && !p) unknown(cmd, name);
        if (o && o->type == OPT_FLAG) {
            if (inline_value) die(EXIT_BADINPUT, "%s: %s takes no value", cmd->verb, name);
            *(int *)o->value = o->set_to;
            continue;
        }
        if (!inline_value && i + 1 >= argc) die(EXIT_BADINPUT, "%s: %s needs a value", cmd->verb, name);
        const char *v = inline_value ? inline_value : argv[++i];
        if (p) {
            char err[512];
            if (config_set(params_of(cmd)->value, p, v, err, sizeof err) != 0)
                die(EXIT_BADINPUT, "%s: %s: %s", cmd->verb, name, err);
            continue;
        }
        switch (o->type) {
        case OPT_INT: *(int *)o->value = parse_int(cmd->verb, name, v, o->lo, o->hi); break;
        case OPT_NUMBER: *(double *)o->value = args_number(cmd->verb, name, v, o->lo, o->hi); break;
        case OPT_STRING: *(const char **)o->value = v; break;
        case OPT_LIST: {
            ArgList *l = o->value;
            if (l->n == ARGS_LIST_MAX) die(EXIT_BADINPUT, "%s: %s given more than %d times", cmd->verb, name, ARGS_LIST_MAX);
            l->item[l->n++] = v;
            break;
        }
        case OPT_CHOICE: *(int *)o->value = parse_choice(cmd->verb, o, v); break;
        case OPT_FLAG:
        case OPT_PARAMS: break;
        }
    }
    if (n == 0 && cmd->positional.missing) die(EXIT_BADINPUT, "%s: %s", cmd->verb, cmd->positional.missing);
    return n;
}

// One entry of the option list: the left column, then the help, its lines aligned.
static void usage_line(FILE *f, const char *left, const char *help) {
    fprintf(f, "  %-*s", USAGE_COLUMN, left);
    if (strlen(left) > USAGE_COLUMN) fprintf(f, "\n  %-*s", USAGE_COLUMN, "");
    for (const char *h = help; *h;) {
        const size_t len = strcspn(h, "\n");
        fprintf(f, " %.*s\n", (int)len, h);
        h += len;
        if (*h == '\n' && *++h) fprintf(f, "  %-*s", USAGE_COLUMN, "");
    }
}

void args_usage(const Command *cmd, FILE *f) {
    fprintf(f, "usage: %s\n\n%s", cmd->usage, cmd->about);
    for (const Option *o = cmd->options; o->name || o->value; o++) {
        char left[64], help[512];
        if (o->type == OPT_PARAMS) {
            fprintf(f, "%s", o->help);
            for (int i = 0; i < config_nparams; i++) {
                args_param_help(&config_params[i], left, sizeof left, help, sizeof help);
                usage_line(f, left, help);
            }
            continue;
        }
        args_option_names(o, left, sizeof left);
        usage_line(f, left, o->help);
    }
    if (cmd->footer) fprintf(f, "%s", cmd->footer);
}
