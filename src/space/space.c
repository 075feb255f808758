// space.c: a sweep's YAML file -> SweepSpec, with every check `attnsweep validate` makes.
//
// libyaml's document API gives a node tree with positions (space_yaml.c); each section of
// the file is read against a table of its keys (unknown keys get the closest known one):
// the top level and every section but the parameters here, the parameters and their
// conditions in space_params.c. Every parameter value goes through config_set
// (space_values.c) and the cross-parameter rules through config_check, over every
// combination the sweep can produce (space_check.c). Errors are one line
// "FILE:LINE:COL: message" (1-based).
#define _POSIX_C_SOURCE 200809L
#include "space/space.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"
#include "space/space_impl.h"
#include "space/space_read.h"
#include "trial/metrics.h"

enum {
    MAX_REPEATS = 1000,
    MAX_SEED = 2147482,      // so trial seeds seed*1000 + repeat stay below 2^31
};

// ---- the keys of each section, in the order they are read (TOP_*, SCHED_*: space_read.h)
static const char *const top_keys[TOP_N] = {
    "name",   "method",    "program",   "command",         "metric", "objectives", "seed",       "repeats",
    "trials", "run_cap",   "task",      "budget",          "evolution", "tpe",     "scheduler",  "early_terminate",
    "reward", "resources", "parameters", "project",        "entity", "description"};
// W&B's keys that say nothing to attnsweep: accepted, and listed by validate.
static const int ignored_top[] = {TOP_PROJECT, TOP_ENTITY, TOP_DESCRIPTION};
enum { TPE_N_STARTUP, TPE_GAMMA, TPE_CANDIDATES, TPE_MULTIVARIATE, TPE_CONSTANT_LIAR, TPE_PRIOR_WEIGHT, TPE_HISTORY,
       TPE_N };
static const char *const tpe_keys[TPE_N] = {"n_startup", "gamma", "candidates", "multivariate", "constant_liar",
                                            "prior_weight", "history"};
enum { METRIC_NAME, METRIC_GOAL, METRIC_TARGET, METRIC_N };
static const char *const metric_keys[METRIC_N] = {"name", "goal", "target"};
enum { BUDGET_STEPS, BUDGET_EPOCHS, BUDGET_EVAL_EVERY, BUDGET_TIME_LIMIT, BUDGET_GRACE, BUDGET_MAX_OUTPUT,
       BUDGET_CHECKPOINT_EVERY, BUDGET_MAX_DEATHS, BUDGET_MAX_FAILURES, BUDGET_N };
static const char *const budget_keys[BUDGET_N] = {"steps",      "epochs", "eval_every",    "time_limit",
                                                  "grace",      "max_output_mb",          "checkpoint_every",
                                                  "max_deaths", "max_failures"};
enum { ET_TYPE, ET_MIN_ITER, ET_MAX_ITER, ET_S, ET_ETA, ET_STRICT, ET_N };
static const char *const early_keys[ET_N] = {"type", "min_iter", "max_iter", "s", "eta", "strict"};
enum { RES_MEM, RES_GPUS, RES_CPUS, RES_N };
static const char *const resource_keys[RES_N] = {"mem", "gpus", "cpus"};
static const char *const sched_keys[SCHED_N] = {"name", "min_steps", "eta", "max_steps", "per"};
static const char *const asha_per_names[] = {"configuration", "trial", NULL};  // SweepSpec.asha_per_trial
enum { EVO_POPULATION, EVO_SAMPLE_SIZE, EVO_N };
static const char *const evo_keys[EVO_N] = {"population", "sample_size"};
enum { REWARD_TENSOR, REWARD_BETA, REWARD_GAMMA, REWARD_MODES, REWARD_IDEAL_RANKS, REWARD_ENERGY, REWARD_ACCURACY,
       REWARD_N };
static const char *const reward_keys[REWARD_N] = {"tensor", "beta", "gamma", "modes", "ideal_ranks", "energy",
                                                  "accuracy"};

// ---- the words each choice allows (NULL-terminated)
static const char *const goal_names[] = {"maximize", "minimize", NULL};
static const char *const scheduler_names[] = {"asha", NULL};

// ---- reading the sections

// A {name, goal} mapping naming a metric of use `most` or lower (trial/metrics.h) into
// name (32 bytes) and its goal; what names it in messages ("metric", "objective").
static int read_goal_metric(Loader *L, yaml_node_t *map, const char *what, MetricUse most, char *name, int *maximize) {
    yaml_node_t *v[METRIC_N];
    Mark k_at[METRIC_N];
    if (space_read_section(L, map, what, metric_keys, METRIC_N, v, k_at)) return -1;
    const char *names[METRIC_NAMES];
    metric_names(most, names);
    char allowed[256];
    metric_names_text(most, allowed, sizeof allowed);
    if (!v[METRIC_NAME]) return space_fail(L, space_mark(map), "%s needs name (%s)", what, allowed);
    const char *t = space_text(v[METRIC_NAME]);
    char why[512];
    if (v[METRIC_TARGET]) space_note(L, "%s target: a Weights & Biases key attnsweep does not use (ignored)", what);
    if (t && metric_refusal(t, most, why, sizeof why))
        return space_fail(L, space_mark(v[METRIC_NAME]), "%s %s", what, why);
    int k, goal;
    if (space_read_choice(L, v[METRIC_NAME], what, names, &k)) return -1;
    snprintf(name, 32, "%s", names[k]);
    *maximize = metric_find(names[k])->maximize;
    if (v[METRIC_GOAL]) {
        if (space_read_choice(L, v[METRIC_GOAL], "goal", goal_names, &goal)) return -1;
        *maximize = goal == 0;
    }
    return 0;
}

// A program's sweep: a {name, goal} mapping (what: "metric" or "objective") naming one of
// the table's metrics of use `most` or lower, or any other name the program reports, but a
// test metric or a result column attnsweep fills itself; the goal of one of the program's
// own (*own set) is minimize unless given (W&B's default).
static int read_program_goal(Loader *L, yaml_node_t *map, const char *what, MetricUse most, char *name, int *maximize,
                             int *own) {
    yaml_node_t *v[METRIC_N];
    Mark k_at[METRIC_N];
    char b[64];
    *own = 0;
    if (space_read_section(L, map, what, metric_keys, METRIC_N, v, k_at)) return -1;
    if (!v[METRIC_NAME]) return space_fail(L, space_mark(map), "%s needs name (a metric the program reports)", what);
    const char *t = space_text(v[METRIC_NAME]);
    const Metric *m = t ? metric_find(t) : NULL;
    if (m && m->use <= most) return read_goal_metric(L, map, what, most, name, maximize);
    const Mark at = space_mark(v[METRIC_NAME]);
    if (!t || !t[0] || strlen(t) >= PROGRAM_KEY || strpbrk(t, "\t\n\r\"\\"))
        return space_fail(L, at,
                          "%s name must be 1 to %d characters without quotes, backslashes or line breaks, got %s", what,
                          PROGRAM_KEY - 1, space_describe(v[METRIC_NAME], b, sizeof b));
    if (!strncmp(t, "test_", 5))
        return space_fail(L, at,
                          "%s '%s' is a test metric, and test metrics never drive decisions (the program's "
                          "metric must be measured on validation data)",
                          what, t);
    if (metric_column_taken(t))
        return space_fail(L, at,
                          "%s '%s' is a result attnsweep records itself, not one a sweep optimises (a program's "
                          "own metric needs another name)",
                          what, t);
    if (v[METRIC_TARGET]) space_note(L, "%s target: a Weights & Biases key attnsweep does not use (ignored)", what);
    snprintf(name, 32, "%s", t);
    *maximize = 0;
    *own = 1;
    int goal;
    if (v[METRIC_GOAL]) {
        if (space_read_choice(L, v[METRIC_GOAL], "goal", goal_names, &goal)) return -1;
        *maximize = goal == 0;
    }
    return 0;
}

static int read_program_metric(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    int own;
    if (read_program_goal(L, map, "metric", METRIC_DECIDES, s->metric, &s->maximize, &own)) return -1;
    if (own) {
        snprintf(s->program.metric, sizeof s->program.metric, "%s", s->metric);
        space_note(L,
                   "metric %s is the program's own, not a name attnsweep measures: it cannot be checked before the "
                   "program runs (a trial whose lines never hold it fails, naming the keys they held)",
                   s->metric);
    }
    return 0;
}

static int read_metric(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    if (map->type == YAML_MAPPING_NODE)  // where its name is, for the checks made once the parameters are read
        for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
            const char *k = space_text(space_node(L, pr->key));
            if (k && !strcmp(k, "name")) L->metric_at = space_mark(space_node(L, pr->value));
        }
    if (space_is_program(s)) return read_program_metric(L, map);
    return read_goal_metric(L, map, "metric", METRIC_DECIDES, s->metric, &s->maximize);
}

// motpe's objectives: a list of 2 to SPACE_MAX_OBJECTIVES {name, goal} mappings, any metric
// the report may rank by (the validation metrics, the reward, the scores).
static int read_objectives(Loader *L, yaml_node_t *list) {
    SweepSpec *s = L->s;
    char b[64];
    const int n = list->type == YAML_SEQUENCE_NODE
                      ? (int)(list->data.sequence.items.top - list->data.sequence.items.start)
                      : -1;
    if (n < 2 || n > SPACE_MAX_OBJECTIVES)
        return space_fail(L, space_mark(list), "objectives must be a list of 2 to %d {name, goal} mappings; got %s",
                          SPACE_MAX_OBJECTIVES, space_describe(list, b, sizeof b));
    for (int k = 0; k < n; k++) {
        yaml_node_t *o = space_node(L, list->data.sequence.items.start[k]);
        int own = 0;
        if (space_is_program(s) ? read_program_goal(L, o, "objective", METRIC_RANKS, s->objective[k],
                                                    &s->objective_maximize[k], &own)
                                : read_goal_metric(L, o, "objective", METRIC_RANKS, s->objective[k],
                                                   &s->objective_maximize[k]))
            return -1;
        if (own && s->program.metric[0] && strcmp(s->program.metric, s->objective[k]))
            return space_fail(L, space_mark(o),
                              "objectives name %s and %s, both the program's own: a trial records one "
                              "metric of the program's own (the others may be val_loss, val_accuracy, n_params, ...)",
                              s->program.metric, s->objective[k]);
        if (own) snprintf(s->program.metric, sizeof s->program.metric, "%s", s->objective[k]);
        for (int q = 0; q < k; q++)
            if (!strcmp(s->objective[q], s->objective[k]))
                return space_fail(L, space_mark(o), "objectives lists %s twice", s->objective[k]);
    }
    s->n_objectives = n;
    return 0;
}

static int read_tpe(Loader *L, yaml_node_t *map) {
    yaml_node_t *v[TPE_N];
    Mark k_at[TPE_N];
    TpeOptions *t = &L->s->tpe;
    int yes;
    if (space_read_section(L, map, "tpe", tpe_keys, TPE_N, v, k_at)) return -1;
    if ((v[TPE_N_STARTUP] && space_read_int(L, v[TPE_N_STARTUP], "n_startup", 1, 100000, &t->n_startup)) ||
        (v[TPE_GAMMA] && space_read_number(L, v[TPE_GAMMA], "gamma", 0, 0, 1, 1, &t->gamma)) ||
        (v[TPE_CANDIDATES] && space_read_int(L, v[TPE_CANDIDATES], "candidates", 1, 10000, &t->candidates)) ||
        (v[TPE_PRIOR_WEIGHT] &&
         space_read_number(L, v[TPE_PRIOR_WEIGHT], "prior_weight", 0, 0, 1e6, 1, &t->prior_weight)) ||
        (v[TPE_HISTORY] && space_read_int(L, v[TPE_HISTORY], "history", 0, 100000000, &t->history)))
        return -1;
    if (v[TPE_MULTIVARIATE]) {
        if (space_read_choice(L, v[TPE_MULTIVARIATE], "multivariate", space_bool_names, &yes)) return -1;
        t->multivariate = yes;
    }
    if (v[TPE_CONSTANT_LIAR]) {
        if (space_read_choice(L, v[TPE_CONSTANT_LIAR], "constant_liar", space_bool_names, &yes)) return -1;
        t->constant_liar = yes;
    }
    return 0;
}

// The budget. For the built-in engine steps, epochs and eval_every are trial parameters,
// checkpoint_every its checkpoints; a program's trials are as long as its parameters make
// them, and there steps (optional) is only the end of ASHA's rungs, grace and
// max_output_mb how it is stopped. time_limit, max_deaths and max_failures apply to both.
static int read_budget(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    yaml_node_t *v[BUDGET_N];
    Mark k_at[BUDGET_N];
    if (space_read_section(L, map, "budget", budget_keys, BUDGET_N, v, k_at)) return -1;
    if (v[BUDGET_STEPS] && v[BUDGET_EPOCHS])
        return space_fail(L, k_at[BUDGET_EPOCHS], "budget gives steps and epochs: give one of them");
    const int program = space_is_program(s);
    for (int k = BUDGET_EPOCHS; k <= BUDGET_CHECKPOINT_EVERY; k++) {
        const int for_program = k == BUDGET_GRACE || k == BUDGET_MAX_OUTPUT,
                  for_engine = k != BUDGET_TIME_LIMIT && !for_program;
        if (v[k] && program && for_engine)
            return space_fail(L, k_at[k], "budget %s is %s of the built-in engine; %s", budget_keys[k],
                              k == BUDGET_CHECKPOINT_EVERY ? "the checkpointing" : "a trial parameter",
                              k == BUDGET_CHECKPOINT_EVERY ? "a program checkpoints itself (and continues from "
                                                             "ATTNSWEEP_RESUME_DIR)"
                                                           : "a program's trials last as its own parameters say");
        if (v[k] && !program && for_program)
            return space_fail(L, k_at[k],
                              "budget %s applies to a sweep of a program (its stop after SIGTERM, its output)",
                              budget_keys[k]);
    }
    if (program) {
        double mb = 0;
        if ((v[BUDGET_STEPS] && space_read_int(L, v[BUDGET_STEPS], "steps", 1, 1000000000, &L->budget_steps)) ||
            (v[BUDGET_GRACE] &&
             space_read_number(L, v[BUDGET_GRACE], "grace (seconds)", 0, 0, 3600, 0, &s->program.grace)) ||
            (v[BUDGET_MAX_OUTPUT] && space_read_number(L, v[BUDGET_MAX_OUTPUT], "max_output_mb", 0, 0, 1e7, 1, &mb)))
            return -1;
        if (v[BUDGET_MAX_OUTPUT]) s->program.max_output = mb * 1048576.0;
    } else {
        for (int k = BUDGET_STEPS; k <= BUDGET_EVAL_EVERY; k++) {  // trial parameters
            if (!v[k]) continue;
            const ParamSpec *p = space_param_named(budget_keys[k]);
            if (space_claim(L, p, k_at[k], "budget") || space_set_value(L, &s->base, p, v[k], NULL)) return -1;
        }
    }
    if (v[BUDGET_CHECKPOINT_EVERY] &&
        space_read_int(L, v[BUDGET_CHECKPOINT_EVERY], "checkpoint_every (steps; 0: only when stopped)", 0, INT_MAX,
                       &L->s->checkpoint_every))
        return -1;
    if (v[BUDGET_MAX_DEATHS] && space_read_int(L, v[BUDGET_MAX_DEATHS], "max_deaths", 1, 1000, &L->s->max_deaths))
        return -1;
    if (v[BUDGET_MAX_FAILURES] &&
        space_read_int(L, v[BUDGET_MAX_FAILURES], "max_failures (0: never stop)", 0, 1000000, &L->s->max_failures))
        return -1;
    return v[BUDGET_TIME_LIMIT]
               ? space_read_number(L, v[BUDGET_TIME_LIMIT], "time_limit (seconds)", 0, 0, 1e9, 0, &s->time_limit)
               : 0;
}

static int read_evolution(Loader *L, yaml_node_t *map) {
    yaml_node_t *v[EVO_N];
    Mark k_at[EVO_N];
    SweepSpec *s = L->s;
    if (space_read_section(L, map, "evolution", evo_keys, EVO_N, v, k_at)) return -1;
    if (v[EVO_POPULATION] && space_read_int(L, v[EVO_POPULATION], "population", 2, 100000, &s->population)) return -1;
    if (v[EVO_SAMPLE_SIZE]) {
        if (space_read_int(L, v[EVO_SAMPLE_SIZE], "sample_size", 1, 100000, &s->sample_size)) return -1;
        if (s->sample_size > s->population)
            return space_fail(L, space_mark(v[EVO_SAMPLE_SIZE]), "sample_size (%d) must be at most population (%d)",
                              s->sample_size, s->population);
    } else if (s->sample_size > s->population) {
        s->sample_size = s->population;
    }
    return 0;
}

// The scheduler's keys; checked against the budget once the whole file is read.
static int read_scheduler(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    Mark k_at[SCHED_N];
    if (space_read_section(L, map, "scheduler", sched_keys, SCHED_N, L->sched, k_at)) return -1;
    L->sched_what = "scheduler asha", L->sched_section = "scheduler", L->sched_min = "min_steps",
    L->sched_max = "max_steps";
    int k;
    if (!L->sched[SCHED_NAME]) return space_fail(L, space_mark(map), "scheduler needs name (allowed: asha)");
    if (space_read_choice(L, L->sched[SCHED_NAME], "scheduler", scheduler_names, &k)) return -1;
    s->asha = 1;
    if (!L->sched[SCHED_MIN_STEPS])
        return space_fail(L, space_mark(map), "scheduler asha needs min_steps (the first rung, in steps)");
    if (space_read_int(L, L->sched[SCHED_MIN_STEPS], "min_steps", 1, 1000000000, &s->min_steps)) return -1;
    if (L->sched[SCHED_ETA] && space_read_int(L, L->sched[SCHED_ETA], "eta", 2, 1000, &s->eta)) return -1;
    if (L->sched[SCHED_PER] && space_read_choice(L, L->sched[SCHED_PER], "per", asha_per_names, &s->asha_per_trial))
        return -1;
    return L->sched[SCHED_MAX_STEPS]
               ? space_read_int(L, L->sched[SCHED_MAX_STEPS], "max_steps", 1, 1000000000, &s->max_steps)
               : 0;
}

// W&B's early_terminate: {type: hyperband, min_iter | max_iter and s, eta [3], strict},
// run as ASHA: min_steps = min_iter, or max_iter / eta^s with max_steps = max_iter; its
// iterations are steps (of the program's metric lines, in a program's sweep).
static int read_early_terminate(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    yaml_node_t *v[ET_N];
    Mark k_at[ET_N];
    static const char *const types[] = {"hyperband", NULL};
    int k, brackets = 0;
    if (space_read_section(L, map, "early_terminate", early_keys, ET_N, v, k_at)) return -1;
    if (L->top[TOP_SCHEDULER])
        return space_fail(L, L->top_at[TOP_EARLY_TERMINATE],
                          "early_terminate and scheduler both stop trials early: give one");
    if (!v[ET_TYPE]) return space_fail(L, space_mark(map), "early_terminate needs type (allowed: hyperband)");
    if (space_read_choice(L, v[ET_TYPE], "early_terminate type", types, &k)) return -1;
    if (v[ET_ETA] && space_read_int(L, v[ET_ETA], "eta", 2, 1000, &s->eta)) return -1;
    if (v[ET_MIN_ITER] && v[ET_MAX_ITER])
        return space_fail(L, k_at[ET_MAX_ITER],
                          "early_terminate gives min_iter and max_iter: give min_iter, or max_iter and s");
    if (v[ET_MIN_ITER]) {
        if (v[ET_S]) return space_fail(L, k_at[ET_S], "s goes with max_iter, not min_iter");
        if (space_read_int(L, v[ET_MIN_ITER], "min_iter", 1, 1000000000, &s->min_steps)) return -1;
        L->sched[SCHED_MIN_STEPS] = v[ET_MIN_ITER];
    } else if (v[ET_MAX_ITER]) {
        if (!v[ET_S])
            return space_fail(L, k_at[ET_MAX_ITER], "early_terminate max_iter needs s (the number of brackets)");
        if (space_read_int(L, v[ET_MAX_ITER], "max_iter", 1, 1000000000, &s->max_steps) ||
            space_read_int(L, v[ET_S], "s", 1, 30, &brackets))
            return -1;
        long long lowest = s->max_steps;
        for (int b = 0; b < brackets; b++) lowest /= s->eta;
        if (lowest < 1)
            return space_fail(L, space_mark(v[ET_S]), "max_iter %d / eta^s = %d / %d^%d is below 1 iteration",
                              s->max_steps, s->max_steps, s->eta, brackets);
        s->min_steps = (int)lowest;
        L->sched[SCHED_MIN_STEPS] = v[ET_S];
        L->sched[SCHED_MAX_STEPS] = v[ET_MAX_ITER];
    } else {
        return space_fail(L, space_mark(map), "early_terminate needs min_iter, or max_iter and s");
    }
    if (v[ET_STRICT]) space_note(L, "early_terminate strict: a Weights & Biases key attnsweep does not use (ignored)");
    L->sched_what = "early_terminate hyperband", L->sched_section = "early_terminate";
    L->sched_min = v[ET_MIN_ITER] ? "min_iter" : "max_iter / eta^s",
    L->sched_max = "max_iter";
    s->asha = 1;
    char from[128];
    if (v[ET_MIN_ITER])
        snprintf(from, sizeof from, "min_iter: %d", s->min_steps);
    else
        snprintf(from, sizeof from, "max_iter: %d, s: %d", s->max_steps, brackets);
    // W&B's iteration is a value of the metric in the run's history (sweeps'
    // hyperband_stopping.py: run.metric_history(metric)[band - 1]): a program's lines that
    // hold the metric are counted, whatever their step.
    s->program.count_reports = space_is_program(s);
    space_note(
        L,
        "early_terminate {type: hyperband, %s, eta: %d} runs as scheduler {name: asha, min_steps: %d, eta: %d%s}, "
        "counting %s",
        from, s->eta, s->min_steps, s->eta, v[ET_MAX_ITER] ? ", max_steps: max_iter" : "",
        space_is_program(s) ? "the program's lines that report the metric (W&B's iterations)" : "optimizer steps");
    return 0;
}

// resources.mem: the memory of one worker group, Slurm's way: a number of megabytes, or
// with a suffix K, M, G or T (powers of 1024).
static int read_mem(Loader *L, yaml_node_t *n) {
    char b[64];
    const char *t = space_text(n);
    char *end = NULL;
    errno = 0;
    const double x = t ? strtod(t, &end) : NAN;
    static const char units[] = "KMGT";
    const char *u = end && *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    double scale = 1024.0 * 1024.0;
    if (u && end[1] == 0) scale = pow(1024.0, (double)(u - units + 1));
    if (!t || end == t || errno || !isfinite(x) || x <= 0 || (*end && (!u || end[1])) || x * scale < 1 << 20 ||
        x * scale > 1e18)
        return space_fail(
            L, space_mark(n),
            "mem must be the memory of a worker group, at least 1M: megabytes, or a number with K, M, G or T "
            "(e.g. 4G), got %s",
            space_describe(n, b, sizeof b));
    L->s->mem_bytes = x * scale;
    return 0;
}

// resources: {mem: 4G} for the built-in engine's worker groups (a trial whose estimated
// peak exceeds it fails before it starts); {gpus: K, cpus: C} for each worker group of a
// program's sweep.
static int read_resources(Loader *L, yaml_node_t *map) {
    SweepSpec *s = L->s;
    yaml_node_t *v[RES_N];
    Mark k_at[RES_N];
    if (space_read_section(L, map, "resources", resource_keys, RES_N, v, k_at)) return -1;
    if (space_is_program(s) && v[RES_MEM])
        return space_fail(L, k_at[RES_MEM],
                          "resources mem is for the built-in engine (the peak it estimates for a trial); "
                          "a program's memory is its own");
    if (!space_is_program(s) && (v[RES_GPUS] || v[RES_CPUS]))
        return space_fail(
            L, k_at[v[RES_GPUS] ? RES_GPUS : RES_CPUS],
            "resources %s is for a sweep of a program (the built-in engine trains on one CPU core per rank)",
            resource_keys[v[RES_GPUS] ? RES_GPUS : RES_CPUS]);
    return (v[RES_MEM] && read_mem(L, v[RES_MEM])) ||
                   (v[RES_GPUS] && space_read_int(L, v[RES_GPUS], "gpus", 0, 1024, &s->program.gpus)) ||
                   (v[RES_CPUS] && space_read_int(L, v[RES_CPUS], "cpus", 1, 4096, &s->program.cpus))
               ? -1
               : 0;
}

// A word of the command: a plain word, or one macro as a whole word.
static int read_command_word(Loader *L, yaml_node_t *n, char **out) {
    char b[64], why[256];
    const char *t = space_text(n);
    if (!t || !t[0])
        return space_fail(L, space_mark(n), "command words are texts, got %s", space_describe(n, b, sizeof b));
    if (!program_macro_known(t, why, sizeof why)) return space_fail(L, space_mark(n), "command: %s", why);
    *out = xstrdup(t);
    return 0;
}

// program: the training script (${program}); command: the words to run, W&B's macros in
// them [PROGRAM_DEFAULT_COMMAND].
static int read_program(Loader *L, yaml_node_t *prog, yaml_node_t *cmd) {
    ProgramSpec *ps = &L->s->program;
    char b[64];
    if (prog) {
        const char *t = space_text(prog);
        if (!t || !t[0] || prog->type != YAML_SCALAR_NODE)
            return space_fail(L, space_mark(prog), "program must be the path of the training script, got %s",
                              space_describe(prog, b, sizeof b));
        ps->program = xstrdup(t);
    }
    if (cmd) {
        const long n =
            cmd->type == YAML_SEQUENCE_NODE ? cmd->data.sequence.items.top - cmd->data.sequence.items.start : 0;
        if (n == 0 || n > 1000)
            return space_fail(L, space_mark(cmd),
                              "command must be a list of 1 to 1000 words (W&B's form: [${env}, "
                              "${interpreter}, ${program}, ${args}]), got %s",
                              space_describe(cmd, b, sizeof b));
        ps->command = xcalloc((size_t)n, sizeof *ps->command);
        for (long k = 0; k < n; k++) {
            yaml_node_t *w = space_node(L, cmd->data.sequence.items.start[k]);
            if (read_command_word(L, w, &ps->command[k])) return -1;
            ps->n_command = (int)k + 1;
            if (!ps->program && !strcmp(ps->command[k], "${program}"))
                return space_fail(L, space_mark(w), "command uses ${program}, but the sweep names no program");
        }
    } else {
        if (!ps->program) return 0;
        char words[] = PROGRAM_DEFAULT_COMMAND;
        ps->command = xcalloc(4, sizeof *ps->command);
        for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
            ps->command[ps->n_command++] = xstrdup(w);
    }
    snprintf(ps->accuracy, sizeof ps->accuracy, "val_accuracy");
    ps->grace = 10;
    ps->max_output = 1024.0 * 1048576.0;
    L->s->program_params = xcalloc(MAX_PROGRAM_PARAMS, sizeof *L->s->program_params);
    return 0;
}

static int read_reward(Loader *L, yaml_node_t *map) {
    yaml_node_t *v[REWARD_N];
    Mark k_at[REWARD_N];
    RewardSpec *r = &L->s->reward;
    char b[64];
    if (space_read_section(L, map, "reward", reward_keys, REWARD_N, v, k_at)) return -1;
    int view = TENSOR_FUNCTION;
    if (v[REWARD_TENSOR] && space_read_choice(L, v[REWARD_TENSOR], "tensor", tensor_view_names, &view)) return -1;
    r->tensor = view == TENSOR_PARAMETERS ? TENSOR_PARAMETERS : TENSOR_FUNCTION;
    const char *const *m4 = tensor_mode_names[r->tensor];  // the modes of the tensor scored
    const char *const mode_names[] = {m4[0], m4[1], m4[2], m4[3], NULL};
    if ((v[REWARD_BETA] && space_read_number(L, v[REWARD_BETA], "beta", 0, 0, REWARD_WEIGHT_MAX, 0, &r->beta)) ||
        (v[REWARD_GAMMA] && space_read_number(L, v[REWARD_GAMMA], "gamma", 0, 0, REWARD_WEIGHT_MAX, 0, &r->gamma)) ||
        (v[REWARD_ENERGY] &&
         space_read_number(L, v[REWARD_ENERGY], "energy", 0, REWARD_ENERGY_MIN, 1, 0, &L->s->energy)))
        return -1;
    if (v[REWARD_ACCURACY]) {  // the key of the program's lines that is its validation accuracy
        const char *t = space_text(v[REWARD_ACCURACY]);
        if (!space_is_program(L->s))
            return space_fail(L, k_at[REWARD_ACCURACY],
                              "reward accuracy names a key of a program's metric lines; the "
                              "built-in engine's reward reads val_accuracy");
        if (!t || !t[0] || strlen(t) >= PROGRAM_KEY || !strncmp(t, "test_", 5))
            return space_fail(L, space_mark(v[REWARD_ACCURACY]),
                              "reward accuracy must name a validation metric of the "
                              "program (1 to %d characters, not test_*), got %s",
                              PROGRAM_KEY - 1, space_describe(v[REWARD_ACCURACY], b, sizeof b));
        snprintf(L->s->program.accuracy, sizeof L->s->program.accuracy, "%s", t);
    }
    if (v[REWARD_MODES]) {
        yaml_node_t *n = v[REWARD_MODES];
        if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.start == n->data.sequence.items.top)
            return space_fail(L, space_mark(n), "modes must be a non-empty list of %s, %s, %s, %s; got %s", m4[0],
                              m4[1], m4[2], m4[3], space_describe(n, b, sizeof b));
        for (int m = 0; m < 4; m++) r->use_mode[m] = 0;
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
            int m;
            if (space_read_choice(L, space_node(L, *it), "mode", mode_names, &m)) return -1;
            if (r->use_mode[m])
                return space_fail(L, space_mark(space_node(L, *it)), "modes lists %s twice", mode_names[m]);
            r->use_mode[m] = 1;
        }
    }
    if (!v[REWARD_IDEAL_RANKS]) return 0;
    yaml_node_t *ideal = v[REWARD_IDEAL_RANKS];
    if (ideal->type != YAML_MAPPING_NODE)
        return space_fail(L, space_mark(ideal),
                          "ideal_ranks must be a mapping of mode to rank, e.g. {heads: 2}; got %s",
                          space_describe(ideal, b, sizeof b));
    int seen[4] = {0};
    for (yaml_node_pair_t *pr = ideal->data.mapping.pairs.start; pr < ideal->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = space_node(L, pr->key);
        int m;
        if (space_read_choice(L, kn, "mode", mode_names, &m)) return -1;
        if (seen[m]++) return space_fail(L, space_mark(kn), "duplicate key '%s'", mode_names[m]);
        if (!r->use_mode[m])
            return space_fail(L, space_mark(kn), "ideal_ranks gives %s, but modes does not include it", mode_names[m]);
        char what[64];
        snprintf(what, sizeof what, "ideal rank of %s", mode_names[m]);
        if (space_read_number(L, space_node(L, pr->value), what, 0, 1,
                              m == 3 ? (r->tensor == TENSOR_FUNCTION ? 2 : 3) : 1e6, 0, &r->ideal_rank[m]))
            return -1;
    }
    return 0;
}

// Sweep name: it names results/NAME.h5, so letters, digits, '_', '-', '.'.
static int name_ok(const char *t) {
    if (!t[0] || t[0] == '.' || strlen(t) > 64) return 0;
    return strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == strlen(t);
}

// A name as W&B takes it (any text, "my sweep #2"): its file name, each other byte and a
// leading '.' made '_' ("my_sweep__2").
static char *safe_name(const char *t) {
    char *out = xstrdup(t);
    for (char *c = out; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && (*c != '.' || c == out)) *c = '_';
    return out;
}

// The file's stem ("sweeps/demo.yaml" -> "demo"), other characters made '_'.
static void default_name(SweepSpec *s) {
    const char *base = strrchr(s->path, '/');
    base = base ? base + 1 : s->path;
    int n = (int)strcspn(base, ".");
    char name[65];
    snprintf(name, sizeof name, "%.*s", n, base);
    for (char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-') *c = '_';
    s->name = xstrdup(name[0] ? name : "sweep");
}

static int read_top(Loader *L, yaml_node_t *root) {
    SweepSpec *s = L->s;
    yaml_node_t **v = L->top;
    char b[64];
    if (space_read_section(L, root, NULL, top_keys, TOP_N, v, L->top_at)) return -1;
    if (!v[TOP_METHOD])
        return space_fail(L, L->root, "missing method (allowed: grid, random, sobol, evolution, tpe, motpe)");
    if (!v[TOP_PARAMETERS])
        return space_fail(L, L->root,
                          "missing parameters (a mapping of parameter names to value, values, or min and max)");
    if (v[TOP_NAME]) {
        const char *t = space_text(v[TOP_NAME]);
        if (!t || !t[0] || strlen(t) > 64 || strpbrk(t, "\n\r\t"))
            return space_fail(L, space_mark(v[TOP_NAME]),
                              "name must be a text of 1-64 characters on one line (it names "
                              "results/NAME.h5), got %s",
                              space_describe(v[TOP_NAME], b, sizeof b));
        s->name = name_ok(t) ? xstrdup(t) : safe_name(t);
        if (!name_ok(t)) space_note(L, "name '%s' names its files %s (results/%s.h5)", t, s->name, s->name);
    } else {
        default_name(s);
    }
    int k;
    const char *method = space_text(v[TOP_METHOD]);
    if (method && !strcmp(method, "bayes")) {  // W&B's model-based method: attnsweep's is TPE
        k = METHOD_TPE;
        s->method_alias = "bayes";
    } else if (space_read_choice(L, v[TOP_METHOD], "method", space_method_names, &k)) {
        return -1;
    }
    s->method = (SweepMethod)k;
    if ((v[TOP_PROGRAM] || v[TOP_COMMAND]) && read_program(L, v[TOP_PROGRAM], v[TOP_COMMAND])) return -1;
    for (size_t i = 0; i < sizeof ignored_top / sizeof ignored_top[0]; i++)
        if (v[ignored_top[i]])
            space_note(L, "%s: a Weights & Biases key attnsweep does not use (ignored)", top_keys[ignored_top[i]]);
    if (v[TOP_METRIC] && read_metric(L, v[TOP_METRIC])) return -1;
    if (v[TOP_OBJECTIVES] && s->method != METHOD_MOTPE)
        return space_fail(L, L->top_at[TOP_OBJECTIVES],
                          "objectives are for method motpe (method %s optimises the metric)",
                          space_method_names[s->method]);
    if (s->method == METHOD_MOTPE && !v[TOP_OBJECTIVES])
        return space_fail(L, L->top_at[TOP_METHOD], "method motpe needs objectives (a list of {name, goal})");
    if (v[TOP_OBJECTIVES] && read_objectives(L, v[TOP_OBJECTIVES])) return -1;
    if (v[TOP_TPE] && read_tpe(L, v[TOP_TPE])) return -1;
    if (v[TOP_SEED] && space_read_int(L, v[TOP_SEED], "seed", 0, MAX_SEED, &s->seed)) return -1;
    if (v[TOP_REPEATS] && space_read_int(L, v[TOP_REPEATS], "repeats", 1, MAX_REPEATS, &s->repeats)) return -1;
    if (v[TOP_TRIALS] && v[TOP_RUN_CAP])
        return space_fail(L, L->top_at[TOP_RUN_CAP], "run_cap is W&B's name for trials: give one of them");
    if (v[TOP_RUN_CAP]) {
        if (space_read_int(L, v[TOP_RUN_CAP], "run_cap", 1, MAX_TRIALS, &s->trials)) return -1;
        v[TOP_TRIALS] = v[TOP_RUN_CAP];  // the checks of trials apply
        space_note(L, "run_cap: %d runs as trials: %d", s->trials, s->trials);
    } else if (v[TOP_TRIALS] && space_read_int(L, v[TOP_TRIALS], "trials", 1, MAX_TRIALS, &s->trials)) {
        return -1;
    }
    if (v[TOP_TASK] && space_is_program(s))
        return space_fail(L, L->top_at[TOP_TASK],
                          "task is a trial parameter of the built-in engine; a sweep of a program "
                          "passes its parameters to the program");
    if (v[TOP_TASK]) {
        const ParamSpec *p = space_param_named("task");
        if (space_claim(L, p, L->top_at[TOP_TASK], "the top level") ||
            space_set_value(L, &s->base, p, v[TOP_TASK], NULL))
            return -1;
    }
    if ((v[TOP_BUDGET] && read_budget(L, v[TOP_BUDGET])) || (v[TOP_EVOLUTION] && read_evolution(L, v[TOP_EVOLUTION])) ||
        (v[TOP_SCHEDULER] && read_scheduler(L, v[TOP_SCHEDULER])) ||
        (v[TOP_EARLY_TERMINATE] && read_early_terminate(L, v[TOP_EARLY_TERMINATE])) ||
        (v[TOP_REWARD] && read_reward(L, v[TOP_REWARD])) || (v[TOP_RESOURCES] && read_resources(L, v[TOP_RESOURCES])))
        return -1;
    return space_read_parameters(L, v[TOP_PARAMETERS], NULL);
}

static int read_sweep(Loader *L) {
    SweepSpec *s = L->s;
    if (space_load_yaml(L)) return -1;
    yaml_node_t *root = yaml_document_get_root_node(&L->doc);
    if (!root) return space_fail(L, (Mark){1, 1}, "empty file (a sweep needs method and parameters)");
    L->root = space_mark(root);
    if (read_top(L, root) || space_resolve_conditions(L) || space_check(L)) return -1;
    char text[32];
    snprintf(text, sizeof text, "%d", s->seed * 1000);  // repeat 0's seed (sampler.c)
    space_set_text(&s->base, space_param_named("seed"), text);
    return 0;
}

int space_parse(SweepSpec *s, const char *path, const char *text, size_t len, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->path = xstrdup(path);
    s->text = xmalloc(len + 1);
    memcpy(s->text, text, len);
    s->text[len] = 0;
    config_defaults(&s->base);
    snprintf(s->metric, sizeof s->metric, "reward");
    s->maximize = 1;
    s->repeats = 1;
    s->seed = 1;
    s->eta = 3;
    s->population = 8;
    s->sample_size = 3;
    s->tpe = (TpeOptions){.n_startup = 10, .gamma = 0.1, .candidates = 24, .multivariate = 1, .constant_liar = 1,
                          .prior_weight = 1.0, .history = 500};
    s->n_objectives = 1;
    reward_spec_default(&s->reward);
    s->energy = 0.99;
    s->checkpoint_every = -1;
    s->max_deaths = 2;
    s->max_failures = 5;  // W&B's agent: WANDB_AGENT_MAX_INITIAL_FAILURES, 5

    Loader L = {.s = s, .path = path, .text = s->text, .len = len, .err = err, .errlen = errlen};
    L.set_at = xcalloc((size_t)config_nparams, sizeof *L.set_at);
    L.set_in = xcalloc((size_t)config_nparams, sizeof *L.set_in);
    int rc = read_sweep(&L);
    if (L.have_doc) yaml_document_delete(&L.doc);
    free(L.set_at);
    free(L.set_in);
    free(L.when);
    if (rc) space_free(s);
    return rc ? -1 : 0;
}

int space_load(SweepSpec *s, const char *path, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = xmalloc((size_t)MAX_FILE_BYTES + 2);
    size_t len = fread(text, 1, (size_t)MAX_FILE_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    int rc = -1;
    if (bad)
        snprintf(err, errlen, "%s: read error", path);
    else
        rc = space_parse(s, path, text, len, err, errlen);
    free(text);
    return rc;
}

void space_free(SweepSpec *s) {
    for (int j = 0; j < s->n_params; j++) {
        SpaceParam *p = &s->params[j];
        for (int k = 0; k < p->n_values; k++) free(p->values[k]);
        free(p->values);
        free(p->probabilities);
        for (int i = 0; i < p->n_when; i++) {
            for (int k = 0; k < p->when[i].n_values; k++) free(p->when[i].values[k]);
            free(p->when[i].values);
        }
        free(p->when);
    }
    free(s->params);
    for (int k = 0; k < s->n_program_params; k++) {
        free((char *)s->program_params[k].name);
        free((char *)s->program_params[k].column);
    }
    free(s->program_params);
    program_spec_free(&s->program);
    for (int k = 0; k < s->n_notes; k++) free(s->notes[k]);
    free(s->notes);
    free(s->path);
    free(s->name);
    free(s->text);
    memset(s, 0, sizeof *s);
}
