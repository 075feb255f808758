// attnsweep train: train one configuration, print its metrics, optionally write the
// trial's HDF5 file in the results layout.
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmds/cmds.h"
#include "common/config.h"
#include "common/config_json.h"
#include "common/util.h"
#include "model/train.h"
#include "store/h5store.h"

static void train_usage(FILE *f) {
    fprintf(f,
            "usage: attnsweep train [--PARAMETER VALUE ...] [-o TRIAL.h5] [--json] [--quiet]\n"
            "\n"
            "Train one configuration and report held-out metrics. Parameters (YAML names\n"
            "with '_' written '-'; defaults in brackets):\n");
    TrialConfig def;
    config_defaults(&def);
    for (int i = 0; i < config_nparams; i++) {
        const ParamSpec *p = &config_params[i];
        char flag[64], val[64];
        snprintf(flag, sizeof flag, "--%s", p->name);
        for (char *s = flag; *s; s++)
            if (*s == '_') *s = '-';
        config_format(&def, p, val, sizeof val);
        fprintf(f, "  %-22s %s [%s]\n", flag, p->help, val[0] ? val : "\"\"");
    }
    fprintf(f,
            "  %-22s write the trial (config, curves, final attention tensors) to an HDF5 file\n"
            "  %-22s print the final metrics as one JSON object on stdout\n"
            "  %-22s no progress lines on stderr\n",
            "-o, --output FILE", "--json", "-q, --quiet");
}

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

// Write through PATH.partial and rename, so an interrupted run leaves no half file.
static void write_trial_file(const char *path, const TrialResult *r) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.partial", path);
    char *yaml = config_yaml(&r->config);
    StoreMeta meta = {.sweep = "train", .yaml = yaml, .seed = r->config.seed, .start_time = r->start_time};
    H5Store *s = h5store_create(tmp, &meta);
    h5store_write_trial(s, r);
    h5store_close(s, r->end_time);
    free(yaml);
    if (rename(tmp, path) != 0) die(EXIT_RUNTIME, "%s: cannot rename to %s", tmp, path);
}

// Before training: make sure the results file can be written, so a typo in -o does not
// cost a whole run. Creates and removes PATH.partial (where the file is written first).
static void check_output(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        die(EXIT_BADINPUT, "train: cannot write %s: it is a directory", path);
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.partial", path) >= (int)sizeof tmp)
        die(EXIT_BADINPUT, "train: output path is too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f) die(EXIT_BADINPUT, "train: cannot write %s: %s", path, strerror(errno));
    fclose(f);
    remove(tmp);
}

// The flags that take no value: "--json=1" gets "takes no value", not a guess.
static int is_flag(const char *arg, const char *flag) {
    size_t n = strlen(flag);
    if (strncmp(arg, flag, n) != 0) return 0;
    if (arg[n] == '=') die(EXIT_BADINPUT, "train: %s takes no value", flag);
    return arg[n] == 0;
}

int cmd_train(int argc, char **argv) {
    TrialConfig c;
    config_defaults(&c);
    const char *output = NULL;
    int json = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (is_flag(arg, "--help") || !strcmp(arg, "-h")) {
            train_usage(stdout);
            return 0;
        }
        if (is_flag(arg, "--json")) {
            json = 1;
            continue;
        }
        if (is_flag(arg, "--quiet") || !strcmp(arg, "-q")) {
            quiet = 1;
            continue;
        }
        if (!strncmp(arg, "--output=", 9)) {
            output = arg + 9;
            if (!output[0]) die(EXIT_BADINPUT, "train: --output needs a file name");
            continue;
        }
        if (!strcmp(arg, "-o") || !strcmp(arg, "--output")) {
            if (i + 1 >= argc) die(EXIT_BADINPUT, "train: %s needs a file name", arg);
            output = argv[++i];
            continue;
        }
        if (strncmp(arg, "--", 2) != 0) die(EXIT_BADINPUT, "train: unexpected argument '%s' (see attnsweep train --help)", arg);
        char name[64];
        const char *eq = strchr(arg, '='), *value;
        size_t nlen = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        snprintf(name, sizeof name, "%.*s", (int)nlen, arg + 2);
        const ParamSpec *p = config_find(name);
        if (!p) {
            const char *hint = config_closest(name);
            if (hint) {
                char flag[64];
                snprintf(flag, sizeof flag, "%s", hint);
                for (char *s = flag; *s; s++)
                    if (*s == '_') *s = '-';
                die(EXIT_BADINPUT, "train: unknown option '--%s' (did you mean --%s?)", name, flag);
            }
            die(EXIT_BADINPUT, "train: unknown option '--%s' (see attnsweep train --help)", name);
        }
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else
            die(EXIT_BADINPUT, "train: --%s needs a value", name);
        char err[512];
        if (config_set(&c, p, value, err, sizeof err) != 0) die(EXIT_BADINPUT, "train: --%s: %s", name, err);
    }
    char err[512];
    if (config_check(&c, err, sizeof err) != 0) die(EXIT_BADINPUT, "train: %s", err);
    if (output) check_output(output);

    TrainHooks hooks = {.progress = quiet ? NULL : stderr};
    TrialResult r;
    int rc = train_trial(&c, &hooks, &r);
    if (output) write_trial_file(output, &r);

    double peak_mb = (double)peak_rss_bytes() / (1024.0 * 1024.0);
    if (json) {
        cJSON *o = trial_result_to_json(&r);
        cJSON_AddNumberToObject(o, "peak_rss_mb", peak_mb);
        cJSON_AddNumberToObject(o, "train_seconds", r.train_seconds);
        cJSON_AddNumberToObject(o, "steps_per_second", r.train_seconds > 0 ? r.steps / r.train_seconds : 0.0);
        cJSON_AddNumberToObject(o, "gflop_per_step", r.flops_per_step * 1e-9);
        char *text = cJSON_PrintUnformatted(o);
        puts(text);
        free(text);
        cJSON_Delete(o);
    } else {
        printf("status %s%s%s\n", r.status, r.reason[0] ? ": " : "", r.reason);
        printf("accuracy %.4f  loss %.4f nats", r.accuracy, r.loss);
        if (c.task == TASK_CHARLM) printf("  bits/byte %.4f", r.bits_per_byte);
        double sps = r.train_seconds > 0 ? r.steps / r.train_seconds : 0.0;
        printf("\nsteps %d  parameters %ld  time %.1f s  %.1f steps/s  %.1f GFLOP/s  peak memory %.0f MB\n", r.steps,
               r.n_params, r.seconds, sps, sps * r.flops_per_step * 1e-9, peak_mb);
        if (output) printf("wrote %s\n", output);
    }
    if (rc != 0) warnf("train: trial %s: %s", r.status, r.reason[0] ? r.reason : "no reason recorded");
    trial_result_free(&r);
    return rc != 0 ? EXIT_RUNTIME : 0;
}
