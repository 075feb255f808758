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

// The configuration as YAML lines, stored in the file's root "yaml" attribute.
static char *config_yaml(const TrialConfig *c) {
    size_t cap = 4096, len = 0;
    char *s = xmalloc(cap);
    s[0] = 0;
    for (int i = 0; i < config_nparams; i++) {
        char val[CONFIG_TEXT + 8];
        config_format(c, &config_params[i], val, sizeof val);
        size_t need = strlen(config_params[i].name) + strlen(val) + 8;
        if (len + need >= cap) s = xrealloc(s, cap = 2 * (len + need));
        len += (size_t)snprintf(s + len, cap - len, "%s: %s%s%s\n", config_params[i].name,
                                config_params[i].type == PT_INTLIST ? "[" : "", val,
                                config_params[i].type == PT_INTLIST ? "]" : "");
    }
    return s;
}

void write_trial_file(const char *path, const TrialResult *r, const char *sweep) {
    char *yaml = config_yaml(&r->config);
    StoreMeta meta = {.sweep = sweep, .yaml = yaml, .seed = r->config.seed, .start_time = r->start_time};
    H5Store *s = h5store_create(path, &meta);  // a temporary file, renamed over path when closed
    h5store_write_trial(s, r);
    h5store_close(s, r->end_time);
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
