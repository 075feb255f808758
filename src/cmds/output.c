// output.c: writing results files from the verbs, the same way for all of them.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds/cmds.h"
#include "common/outfile.h"
#include "common/util.h"
#include "store/h5store.h"

// A parameter's value as YAML: the offset schedule as a flow sequence, [1,2,4] for one
// group, [[1,2],[4,8]] for one a layer.
static void yaml_value(const TrialConfig *c, const ParamSpec *p, char *out, size_t outlen) {
    char val[CONFIG_TEXT];
    config_format(c, p, val, sizeof val);
    if (p->type != PT_INTLIST) {
        snprintf(out, outlen, "%s", val);
        return;
    }
    const int nested = c->n_groups > 1;
    size_t n = 0;
    out[n++] = '[';
    if (nested) out[n++] = '[';
    for (const char *v = val; *v && n + 6 < outlen; v++) {
        if (*v != ';') out[n++] = *v;
        else out[n++] = ']', out[n++] = ',', out[n++] = '[';
    }
    if (nested) out[n++] = ']';
    out[n++] = ']';
    out[n] = 0;
}

// The configuration as YAML lines, stored in the file's root "yaml" attribute.
static char *config_yaml(const TrialConfig *c) {
    size_t cap = 4096, len = 0;
    char *s = xmalloc(cap);
    s[0] = 0;
    for (int i = 0; i < config_nparams; i++) {
        char val[2 * CONFIG_TEXT];
        yaml_value(c, &config_params[i], val, sizeof val);
        size_t need = strlen(config_params[i].name) + strlen(val) + 8;
        if (len + need >= cap) s = xrealloc(s, cap = 2 * (len + need));
        len += (size_t)snprintf(s + len, cap - len, "%s: %s\n", config_params[i].name, val);
    }
    return s;
}

void write_trial_file_yaml(const char *path, const TrialResult *r, const char *sweep, const char *yaml,
                           const char *metric, int maximize) {
    StoreMeta meta = {.sweep = sweep, .yaml = yaml, .seed = r->config.seed, .start_time = r->start_time,
                      .metric = metric, .maximize = maximize};
    H5Store *s = h5store_create(path, &meta);  // a temporary file, renamed over path when closed
    h5store_write_trial(s, r);
    h5store_close(s, r->end_time);
}

void write_trial_file(const char *path, const TrialResult *r, const char *sweep) {
    char *yaml = config_yaml(&r->config);
    write_trial_file_yaml(path, r, sweep, yaml, NULL, 1);
    free(yaml);
}

void check_output(const char *verb, const char *path) {
    char err[4200], tmp[4200];
    if (outfile_check(path, err, sizeof err) != 0) die(EXIT_BADINPUT, "%s: cannot write %s", verb, err);
    const int fd = outfile_create(path, tmp, sizeof tmp);
    if (fd < 0) die(EXIT_BADINPUT, "%s: cannot write %s: %s", verb, path, strerror(errno));
    close(fd);
    outfile_discard(tmp);
}
