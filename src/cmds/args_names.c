// args_names.c: an option's and a trial parameter's names and help as --help and the
// manual pages show them (args.h). Apart from args.c, so that args.c (which prints a
// manual page when one is requested) and man.c (which lays the page out with these) do
// not call each other.
#include <stdio.h>

#include "cmds/args.h"
#include "params/config.h"

void args_param_flag(const char *name, char *out, size_t len) {
    snprintf(out, len, "--%s", name);
    for (char *s = out; *s; s++)
        if (*s == '_') *s = '-';
}

void args_param_help(const ParamSpec *p, char *flag, size_t flag_len, char *help, size_t help_len) {
    TrialConfig def;
    config_defaults(&def);
    char val[64];
    args_param_flag(p->name, flag, flag_len);
    config_format(&def, p, val, sizeof val);
    snprintf(help, help_len, "%s [%s]", p->help, val[0] ? val : "\"\"");
}

void args_option_names(const Option *o, char *out, size_t len) {
    snprintf(out, len, "%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name, o->arg ? " " : "",
             o->arg ? o->arg : "");
}
