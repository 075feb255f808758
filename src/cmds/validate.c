// attnsweep validate: load a sweep file with every check `run` makes, then print what it
// describes: the method, the swept parameters, the size of the space and the first trials.
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "params/config_json.h"
#include "space/asha.h"
#include "space/space.h"
#include "trial/interpreter.h"

enum { FIRST_TRIALS = 5 };

static const char *plural(double n) { return n == 1 ? "" : "s"; }

// "values [mha, tucker]", "values ['1,2;4,8', '1,2,4']", "log_uniform_values [0.0005, 0.005]", "... when attention=tucker"
static void describe_param(const SpaceParam *p, char *out, size_t len) {
    size_t used = (size_t)snprintf(out, len, "%s", space_distribution_name(p->dist));
    if (p->dist == DIST_VALUE || p->dist == DIST_VALUES || p->dist == DIST_CATEGORICAL) {
        const char *q = p->param->type == PT_INTLIST ? "'" : "";  // a schedule holds commas: quote it
        for (int k = 0; k < p->n_values && used < len; k++)
            used += (size_t)snprintf(out + used, len - used, "%s%s%s%s", k ? ", " : " [", q, p->values[k], q);
        if (used < len) used += (size_t)snprintf(out + used, len - used, "]");
        for (int k = 0; p->probabilities && k < p->n_values && used < len; k++)
            used += (size_t)snprintf(out + used, len - used, "%s%g", k ? ", " : " probabilities [", p->probabilities[k]);
        if (p->probabilities && used < len) used += (size_t)snprintf(out + used, len - used, "]");
    } else if (used < len) {
        if (p->dist == DIST_BETA || p->dist == DIST_Q_BETA)
            used += (size_t)snprintf(out + used, len - used, " a %g b %g", p->a, p->b);
        else if (p->dist == DIST_NORMAL || p->dist == DIST_Q_NORMAL || p->dist == DIST_LOG_NORMAL || p->dist == DIST_Q_LOG_NORMAL)
            used += (size_t)snprintf(out + used, len - used, " mu %g sigma %g", p->mu, p->sigma);
        else
            used += (size_t)snprintf(out + used, len - used, " [%g, %g]", p->min, p->max);
        if (p->q > 0 && used < len) used += (size_t)snprintf(out + used, len - used, " q %g", p->q);
    }
    if (p->grid && used < len) used += (size_t)snprintf(out + used, len - used, " (grid axis)");
    for (int i = 0; i < p->n_when && used < len; i++) {
        const Condition *c = &p->when[i];
        used += (size_t)snprintf(out + used, len - used, "%s%s=", i ? ", " : " when ", c->param->name);
        for (int k = 0; k < c->n_values && used < len; k++)
            used += (size_t)snprintf(out + used, len - used, "%s%s", k ? "|" : "", c->values[k]);
    }
}

// "attention=tucker core_rank=2": the swept parameters that apply to c.
static void describe_trial(const SweepSpec *s, const TrialConfig *c, char *out, size_t len) {
    size_t used = 0;
    out[0] = 0;
    for (int j = 0; j < s->n_params && used < len; j++) {
        const SpaceParam *p = &s->params[j];
        if (!space_condition_holds(p, c)) continue;
        char v[CONFIG_TEXT + 8];
        config_format(c, p->param, v, sizeof v);
        used += (size_t)snprintf(out + used, len - used, "%s%s=%s", used ? " " : "", p->param->name, v);
    }
}

// The command trial c runs, as one line of shell words.
static void command_line(const SweepSpec *s, const TrialConfig *c, char *out, size_t len) {
    char **argv, err[256];
    int argc;
    out[0] = 0;
    if (program_command(&s->program, c, "TRIAL_DIR/args.json", &argv, &argc, err, sizeof err)) {
        snprintf(out, len, "(%s)", err);
        return;
    }
    for (int k = 0; k < argc; k++) {
        const size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", k ? " " : "", argv[k]);
    }
    program_argv_free(argv);
}

int cmd_validate(int argc, char **argv) {
    const char *path = NULL;
    int json = 0;
    const Option options[] = {
        OPT_FLAG("--json", NULL, &json, 1, "print the summary as one JSON object"),
        OPT_END,
    };
    char about[512];
    snprintf(about, sizeof about,
             "Check a sweep file (YAML syntax, keys, types and ranges of every value, every\n"
             "combination of the swept values, conditions, the scheduler, the task's data files)\n"
             "and print the size of its space and its first %d trials; for a program's sweep, the\n"
             "interpreter ${interpreter} finds (W&B's: python on PATH), with a warning when it cannot\n"
             "import the program's first imports. Errors are one line FILE:LINE:COL: message, exit\n"
             "code 2.\n",
             FIRST_TRIALS);
    const Command cmd = {"validate", "attnsweep validate SWEEP.yaml [--json]",
                         about,
                         options, NULL,
                         {1, "one sweep file at a time",
                          "expected a sweep file (attnsweep validate SWEEP.yaml)"}};
    args_parse(&cmd, argc, argv, &path);

    SweepSpec s;
    char err[1024];
    if (space_load(&s, path, err, sizeof err)) die(EXIT_BADINPUT, "%s", err);
    long size = space_size(&s);
    Sampler *sm = sampler_create(&s);
    int rungs[64], n_rungs = asha_rungs(&s, rungs, 64);

    if (json) {
        cJSON *o = cJSON_CreateObject(), *params = cJSON_CreateArray(), *first = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "file", path);
        cJSON_AddStringToObject(o, "name", s.name);
        cJSON_AddStringToObject(o, "method", space_method_name(s.method));
        cJSON_AddStringToObject(o, "metric", s.metric);
        cJSON_AddStringToObject(o, "goal", s.maximize ? "maximize" : "minimize");
        cJSON_AddNumberToObject(o, "seed", s.seed);
        cJSON_AddNumberToObject(o, "trials", s.trials);
        cJSON_AddBoolToObject(o, "until_stopped", s.until_stopped);
        cJSON_AddNumberToObject(o, "repeats", s.repeats);
        cJSON_AddNumberToObject(o, "grid_points", s.grid_points);
        if (size < 0)
            cJSON_AddStringToObject(o, "space_size", "infinite");
        else if (size == LONG_MAX)
            cJSON_AddStringToObject(o, "space_size", "more than 9.2e18");
        else
            cJSON_AddNumberToObject(o, "space_size", (double)size);
        for (int j = 0; j < s.n_params; j++) cJSON_AddItemToArray(params, cJSON_CreateString(s.params[j].param->name));
        cJSON_AddItemToObject(o, "parameters", params);
        if (space_is_program(&s)) {
            cJSON_AddItemToObject(o, "program", s.program.program ? cJSON_CreateString(s.program.program) : cJSON_CreateNull());
            cJSON_AddItemToObject(o, "command", cJSON_CreateStringArray((const char *const *)s.program.command,
                                                                        s.program.n_command));
            cJSON_AddBoolToObject(o, "scores_checkpoint", s.program.needs_checkpoint);
            char found[4096], warning[2048];
            if (interpreter_check(&s.program, found, sizeof found, warning, sizeof warning)) {
                cJSON_AddStringToObject(o, "interpreter", found);
                if (warning[0]) cJSON_AddStringToObject(o, "interpreter_warning", warning);
            }
        }
        cJSON *notes = cJSON_AddArrayToObject(o, "notes");
        for (int k = 0; k < s.n_notes; k++) cJSON_AddItemToArray(notes, cJSON_CreateString(s.notes[k]));
        cJSON *r = cJSON_AddArrayToObject(o, "asha_rungs");
        for (int k = 0; k < n_rungs && k < 64; k++) cJSON_AddItemToArray(r, cJSON_CreateNumber(rungs[k]));
        for (int id = 0; id < s.trials && id < FIRST_TRIALS; id++) {
            TrialConfig c;
            if (sampler_config(sm, id, &c)) break;
            cJSON *t = cJSON_CreateObject();
            cJSON_AddNumberToObject(t, "trial", id);
            cJSON_AddItemToObject(t, "config", config_to_json(&c));
            if (space_is_program(&s)) {
                char line[8192];
                command_line(&s, &c, line, sizeof line);
                cJSON_AddStringToObject(t, "command", line);
            }
            cJSON_AddItemToArray(first, t);
        }
        cJSON_AddItemToObject(o, "first_trials", first);
        char *text = cJSON_Print(o);
        if (!text) die(EXIT_RUNTIME, "validate: out of memory");
        printf("%s\n", text);
        free(text);
        cJSON_Delete(o);
    } else {
        printf("%s: valid sweep '%s'\n", path, s.name);
        printf("  method     %s, metric %s (%s), seed %d\n", space_method_name(s.method), s.metric,
               s.maximize ? "maximize" : "minimize", s.seed);
        if (size < 0)
            printf("  space      infinite (continuous parameters)\n");
        else if (size == LONG_MAX)
            printf("  space      more than 9.2e18 configurations\n");
        else
            printf("  space      %ld configuration%s\n", size, plural((double)size));
        int configs = s.trials / s.repeats;
        printf("  trials     %s%d (%d configuration%s x %d repeat%s", s.until_stopped ? "until stopped, at most " : "",
               s.trials, configs, plural(configs), s.repeats, plural(s.repeats));
        if (s.grid_points > 1)
            printf("; %d sample%s x %d combinations of the grid axes", configs / s.grid_points,
                   plural(configs / s.grid_points), s.grid_points);
        printf(")\n");
        char budget[128];
        if (space_is_program(&s)) {
            printf("  program    %s, %s", s.program.program ? s.program.program : "(none: the command runs)",
                   s.program.needs_checkpoint ? "its attention weights scored (a checkpoint is required)"
                                              : "no scores (a hyperparameter sweep: no checkpoint needed)");
            if (s.program.gpus || s.program.cpus)
                printf(", %d GPU%s and %d CPU%s per group", s.program.gpus, plural(s.program.gpus), s.program.cpus,
                       plural(s.program.cpus));
            printf("\n  budget     ");
            if (s.time_limit > 0) printf("time limit %g s, ", s.time_limit);
            printf("SIGKILL %g s after SIGTERM, at most %.0f MiB of each output\n", s.program.grace,
                   s.program.max_output / 1048576.0);
            char found[4096], warning[2048];
            if (interpreter_check(&s.program, found, sizeof found, warning, sizeof warning)) {
                printf("  interpreter %s\n", found);
                if (warning[0]) printf("  warning    %s\n", warning);
            }
        } else {
            if (s.base.steps)
                snprintf(budget, sizeof budget, "%d steps", s.base.steps);
            else
                snprintf(budget, sizeof budget, "%g epoch%s", s.base.epochs, plural(s.base.epochs));
            printf("  budget     %s per trial, task %s", budget, task_names[s.base.task]);
            if (s.time_limit > 0) printf(", time limit %g s", s.time_limit);
            printf("\n");
        }
        if (s.asha) {
            printf("  scheduler  asha, eta %d, rungs at", s.eta);
            const int open_ended = s.max_steps == INT_MAX;  // a program's sweep without max_steps
            for (int k = 0; k < n_rungs && k < (open_ended ? 6 : 64); k++) printf("%s%d", k ? ", " : " ", rungs[k]);
            if (open_ended)
                printf(", ... steps (times %d as long as the program's steps go)\n", s.eta);
            else
                printf(" of %d steps\n", s.max_steps);
        }
        if (s.method == METHOD_EVOLUTION)
            printf("  evolution  population %d, sample size %d\n", s.population, s.sample_size);
        if (s.method_alias)
            printf("  note       method %s is Weights & Biases' name; attnsweep runs it as %s\n", s.method_alias,
                   space_method_name(s.method));
        for (int k = 0; k < s.n_notes; k++) printf("  note       %s\n", s.notes[k]);
        if (s.method == METHOD_TPE || s.method == METHOD_MOTPE)
            printf("  tpe        %d random configurations first, gamma %g, %d candidates, %s, constant liar %s\n",
                   s.tpe.n_startup, s.tpe.gamma, s.tpe.candidates, s.tpe.multivariate ? "multivariate" : "univariate",
                   s.tpe.constant_liar ? "on" : "off");
        for (int k = 0; s.method == METHOD_MOTPE && k < s.n_objectives; k++)
            printf("  objective  %s (%s)\n", s.objective[k], s.objective_maximize[k] ? "maximize" : "minimize");
        for (int j = 0; j < s.n_params; j++) {
            char d[2048];
            describe_param(&s.params[j], d, sizeof d);
            printf("  %-16s %s\n", s.params[j].param->name, d);
        }
        int shown = s.trials < FIRST_TRIALS ? s.trials : FIRST_TRIALS;
        printf("first %d trials:\n", shown);
        for (int id = 0; id < shown; id++) {
            TrialConfig c;
            if (sampler_config(sm, id, &c)) break;
            char line[2048];
            describe_trial(&s, &c, line, sizeof line);
            printf("  %-4d seed %-10d %s\n", id, c.seed, line[0] ? line : "(nothing swept)");
            if (space_is_program(&s) && id == 0) {
                char words[8192];
                command_line(&s, &c, words, sizeof words);
                printf("       runs %s\n", words);
            }
        }
    }
    sampler_free(sm);
    space_free(&s);
    return 0;
}
