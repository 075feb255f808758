// space_check.c: the checks `attnsweep validate` makes over the whole space once the file is
// read: config_check over every combination of the parameters it reads, the metric and
// the data files for every task swept, the grid's size against trials and run_cap, the
// scheduler against the budget, a program's command and columns; and the notes on
// regularisers that minimise a term of the reward they are judged by.
#define _POSIX_C_SOURCE 200809L
#include "space/space_read.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "space/space_impl.h"
#include "trial/interpreter.h"
#include "trial/metrics.h"

enum {
    SOBOL_MAX_DIM = 40,      // gsl_qrng_sobol's limit
    CHECK_LIMIT = 2000000,   // combinations the cross-parameter checks visit
};

// Where the data live when data_dir is "" (the Debian packages dataset-fashion-mnist, fortunes).
#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define FORTUNES_DIR "/usr/share/games/fortunes"

// The parameters config_check reads: their combinations are checked exhaustively.
static const char *const checked_params[] = {"task",         "attention",    "d_model", "heads",  "layers",
                                             "core_rank",    "grassmann_offsets", "recall_pairs", "recall_vocab",
                                             "steps",        "epochs"};

// ---- checks over the whole space

// The position of the last place (in the file) that sets one of the used parameters.
static Mark last_place(Loader *L, const unsigned char *use) {
    Mark m = L->root;
    for (size_t i = 0; i < sizeof checked_params / sizeof checked_params[0]; i++) {
        Mark a = L->set_at[space_param_index(space_param_named(checked_params[i]))];
        if (a.line > m.line || (a.line == m.line && a.col > m.col)) m = a;
    }
    for (int j = 0; j < L->s->n_params; j++) {
        Mark a = {L->s->params[j].line, L->s->params[j].col};
        if (use[j] && (a.line > m.line || (a.line == m.line && a.col > m.col))) m = a;
    }
    return m;
}

// use[j] for the swept parameters named in names, and every parameter their conditions refer to.
static void mark_used(const SweepSpec *s, const char *const *names, int n, unsigned char *use) {
    for (int j = 0; j < s->n_params; j++) use[j] = space_find_name(s->params[j].param->name, names, n) >= 0;
    for (int j = s->n_params - 1; j >= 0; j--)  // conditions refer to earlier parameters
        for (int i = 0; use[j] && i < s->params[j].n_when; i++) {
            int src = space_swept_index(s, s->params[j].when[i].param);
            if (src >= 0) use[src] = 1;
        }
}

typedef struct {
    const SweepSpec *s;
    const unsigned char *use;
    char msg[TEXT_MAX];
    char combination[TEXT_MAX + 32];
} Found;

// " (in the combination a=1, b=2)" for the used swept parameters that apply in c.
static void describe_combination(Found *f, const TrialConfig *c, const double *gene) {
    char list[TEXT_MAX] = "";
    for (int j = 0; j < f->s->n_params; j++) {
        if (!f->use[j] || gene[j] < 0 || f->s->params[j].dist == DIST_VALUE) continue;
        char v[TEXT_MAX];
        config_format(c, f->s->params[j].param, v, sizeof v);
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s=%.64s", used ? ", " : "", f->s->params[j].param->name, v);
    }
    if (list[0]) snprintf(f->combination, sizeof f->combination, " (in the combination %s)", list);
}

static int visit_check(void *ctx, const TrialConfig *c, const double *gene) {
    Found *f = ctx;
    if (config_check(c, f->msg, sizeof f->msg) == 0) return 0;
    describe_combination(f, c, gene);
    return 1;
}

static int check_combinations(Loader *L) {
    const SweepSpec *s = L->s;
    int n = (int)(sizeof checked_params / sizeof checked_params[0]);
    unsigned char *use = xcalloc((size_t)s->n_params + 1, 1);
    mark_used(s, checked_params, n, use);
    Found f = {s, use, "", ""};
    int rc = space_enumerate(s, use, 1, CHECK_LIMIT, visit_check, &f);
    Mark at = last_place(L, use);
    free(use);
    if (rc == 1) return space_fail(L, at, "%s%s", f.msg, f.combination);
    if (rc == 2)
        return space_fail(L, at,
                          "more than %d combinations of task, attention, d_model, heads, layers, core_rank, "
                          "grassmann_offsets, recall_pairs, recall_vocab, steps and epochs to check: list fewer values",
                          CHECK_LIMIT);
    return 0;
}

// Visits the combinations of the swept parameters named in names (and of those their
// conditions refer to) until visit reports one in *f; returns space_enumerate's code.
static int find_combination(const SweepSpec *s, const char *const *names, int n, SpaceVisit visit, Found *f) {
    unsigned char *use = xcalloc((size_t)s->n_params + 1, 1);
    mark_used(s, names, n, use);
    *f = (Found){s, use, "", ""};
    const int rc = space_enumerate(s, use, 0, CHECK_LIMIT, visit, f);
    free(use);
    f->use = NULL;
    return rc;
}

// A metric measured for some tasks only (bits per byte: charlm) is one every trial has.
static int visit_metric(void *ctx, const TrialConfig *c, const double *gene) {
    Found *f = ctx;
    if (metric_applies(metric_find(f->s->metric), c->task)) return 0;
    snprintf(f->msg, sizeof f->msg, "%s", task_names[c->task]);
    describe_combination(f, c, gene);
    return 1;
}

static int check_metric(Loader *L) {
    static const char *const names[] = {"task"};
    Found f;
    return find_combination(L->s, names, 1, visit_metric, &f)
               ? space_fail(L, L->metric_at,
                            "metric %s is measured for task charlm only (use val_loss): this sweep trains %s%s",
                            L->s->metric, f.msg, f.combination)
               : 0;
}

// The task's data files: cheap existence checks, naming the first missing file.
static int data_missing(const TrialConfig *c, char *msg, size_t len) {
    static const char *const fashion_files[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    char path[TEXT_MAX + 64];
    if (c->task == TASK_FASHION_MNIST) {
        const char *dir = c->data_dir[0] ? c->data_dir : FASHION_MNIST_DIR;
        for (size_t i = 0; i < sizeof fashion_files / sizeof fashion_files[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, fashion_files[i]);
            if (access(path, R_OK) != 0) {
                snprintf(msg, len, "fashion_mnist data file %.300s: %s (install the Debian package "
                         "dataset-fashion-mnist or set data_dir)", path, strerror(errno));
                return 1;
            }
        }
    } else if (c->task == TASK_CHARLM) {
        const char *dir = c->data_dir[0] ? c->data_dir : FORTUNES_DIR;
        snprintf(path, sizeof path, "%s/.", dir);
        if (access(path, R_OK | X_OK) != 0) {
            snprintf(msg, len, "charlm data directory %.300s: %s (install the Debian package fortunes or set data_dir)",
                     dir, strerror(errno));
            return 1;
        }
    }
    return 0;
}

static int visit_data(void *ctx, const TrialConfig *c, const double *gene) {
    Found *f = ctx;
    if (!data_missing(c, f->msg, sizeof f->msg)) return 0;
    describe_combination(f, c, gene);
    return 1;
}

static int check_data(Loader *L) {
    static const char *const names[] = {"task", "data_dir"};
    Found f;
    const int rc = find_combination(L->s, names, 2, visit_data, &f);
    Mark at = L->set_at[space_param_index(space_param_named("data_dir"))];
    if (!at.line) at = L->set_at[space_param_index(space_param_named("task"))];
    if (!at.line) at = L->root;
    return rc ? space_fail(L, at, "%s", f.msg) : 0;
}

static int count_point(void *ctx, const TrialConfig *c, const double *gene) {
    (*(long *)ctx)++;
    return 0;
}

// The grid axes of a sampled sweep (`grid: true`): their conditions refer only to axes
// (and, with a sampler that learns from results, no sampled parameter's to an axis); the
// number of their combinations in *points (1 without axes).
static int grid_axes(Loader *L, long *points) {
    SweepSpec *s = L->s;
    unsigned char *axis = xcalloc((size_t)s->n_params + 1, 1);
    int rc = 0;
    for (int j = 0; j < s->n_params && !rc; j++) {
        axis[j] = (unsigned char)s->params[j].grid;
        for (int i = 0; i < s->params[j].n_when && !rc; i++) {
            const int src = space_swept_index(s, s->params[j].when[i].param);
            if (src < 0 || s->params[src].grid == s->params[j].grid) continue;
            if (s->params[j].grid)
                rc = space_fail(L, space_mark(L->when[j]),
                                "%s is a grid axis, so its when can refer only to other grid axes, "
                                "but %s is sampled",
                                s->params[j].param->name, s->params[src].param->name);
            else if (space_adaptive(s))
                rc = space_fail(
                    L, space_mark(L->when[j]),
                    "with method %s the sampled %s cannot depend on the grid axis %s (make %s a grid axis too, or "
                    "use method random or sobol)",
                    space_method_names[s->method], s->params[j].param->name, s->params[src].param->name,
                    s->params[j].param->name);
        }
    }
    *points = 0;
    if (!rc && space_enumerate(s, axis, 0, MAX_TRIALS, count_point, points) == 2)
        rc = space_fail(L, L->top_at[TOP_PARAMETERS], "the grid axes have more than %d combinations", MAX_TRIALS);
    free(axis);
    return rc;
}

// W&B's grid order (sweeps' grid_search.py: itertools.product over the parameters sorted
// by name, the last fastest) for a grid that run_cap cuts short, where no condition
// orders the parameters; 1 when they were sorted.
static int wandb_grid_order(Loader *L) {
    SweepSpec *s = L->s;
    for (int j = 0; j < s->n_params; j++)
        if (s->params[j].n_when || L->when[j]) return 0;
    for (int j = 1; j < s->n_params; j++)
        for (int i = j; i > 0 && strcmp(s->params[i - 1].param->name, s->params[i].param->name) > 0; i--) {
            const SpaceParam t = s->params[i];
            s->params[i] = s->params[i - 1], s->params[i - 1] = t;
        }
    return 1;
}

// Every conditional parameter applies in some combination; the grid's size and trials.
static int check_size(Loader *L) {
    SweepSpec *s = L->s;
    unsigned char *active = xcalloc((size_t)s->n_params + 1, 1);
    long size;
    int rc = space_count(s, &size, active);
    int j = 0;
    while (j < s->n_params && (!s->params[j].n_when || active[j])) j++;
    free(active);
    if (rc == 2)
        return space_fail(L, L->top_at[TOP_PARAMETERS], "conditions refer to more than %d combinations of values",
                          SOURCE_LIMIT);
    if (j < s->n_params)
        return space_fail(L, space_mark(L->when[j]), "the conditions of %s never hold together in any combination",
                          s->params[j].param->name);
    s->grid_points = 1;
    if (s->method != METHOD_GRID) {
        char as[64] = "";
        if (s->method_alias) snprintf(as, sizeof as, "%s (runs as %s)", s->method_alias, space_method_names[s->method]);
        if (L->top[TOP_TRIALS] && s->trials % s->repeats)
            return space_fail(L, space_mark(L->top[TOP_TRIALS]), "trials (%d) must be a multiple of repeats (%d)",
                              s->trials, s->repeats);
        long points;
        if (grid_axes(L, &points)) return -1;
        if (!L->top[TOP_TRIALS]) {  // W&B's sampled sweep without run_cap: until it is stopped
            s->until_stopped = 1;
            s->trials = (int)(MAX_TRIALS / points / s->repeats * s->repeats);
            space_note(L,
                       "no %s: method %s runs until stopped (SIGTERM or SIGUSR1 to mpirun, Slurm's time limit, "
                       "budget.max_failures), at most %ld trials",
                       space_is_program(s) ? "run_cap or trials" : "trials", as[0] ? as : space_method_names[s->method],
                       (long)s->trials * points);
        }
        if (points > MAX_TRIALS / s->trials)
            return space_fail(L, space_mark(L->top[TOP_TRIALS]),
                              "trials times the grid axes' combinations, %d x %ld, is more than %d trials", s->trials,
                              points, MAX_TRIALS);
        s->grid_points = (int)points;
        s->trials *= (int)points;
    } else {
        if (size == LONG_MAX)  // the count saturated
            return space_fail(L, L->top_at[TOP_PARAMETERS], "the grid has more than 9.2e18 points (at most %d trials)",
                              MAX_TRIALS);
        if (size > MAX_TRIALS / s->repeats)
            return space_fail(L, L->top_at[TOP_PARAMETERS],
                              "the grid's size times repeats, %ld x %d, is more than %d trials", size, s->repeats,
                              MAX_TRIALS);
        long want = size * s->repeats;
        if (L->top[TOP_RUN_CAP] && s->trials < want) {  // W&B's grid stops at run_cap
            if (s->trials % s->repeats)
                return space_fail(L, space_mark(L->top[TOP_RUN_CAP]), "run_cap (%d) must be a multiple of repeats (%d)",
                                  s->trials, s->repeats);
            const int sorted = wandb_grid_order(L);
            space_note(L, "run_cap: %d of the grid's %ld trials run, the first in %s", s->trials, want,
                       sorted
                           ? "W&B's order (the parameters by name, the last fastest)"
                           : "the file's order (the last parameter fastest; conditions keep W&B's by-name order out)");
            want = s->trials;
        } else if (L->top[TOP_RUN_CAP] && s->trials > want) {
            space_note(L, "run_cap: %d is more than the grid's %ld trials: the grid ends first, as W&B's", s->trials,
                       want);
        } else if (L->top[TOP_TRIALS] && s->trials != want)
            return space_fail(L, space_mark(L->top[TOP_TRIALS]),
                              "trials (%d) must equal the grid's size times repeats, %ld x %d = %ld (or be left out)",
                              s->trials, size, s->repeats, want);
        s->trials = (int)want;
    }
    int dims = 0;
    for (int i = 0; i < s->n_params; i++) dims += s->params[i].dist != DIST_VALUE && !s->params[i].grid;
    if (s->method == METHOD_SOBOL && dims > SOBOL_MAX_DIM)
        return space_fail(L, L->top_at[TOP_METHOD],
                          "method sobol handles at most %d swept parameters, this sweep has %d", SOBOL_MAX_DIM, dims);
    return 0;
}

// ASHA rungs are steps: the budget must be a fixed number of steps, max_steps equal to it.
// A program's sweep has no such budget: its rungs end at max_steps, or at the budget's
// steps, or go on as long as the program's steps do.
static int check_scheduler(Loader *L) {
    SweepSpec *s = L->s;
    if (!s->asha) return 0;
    const char *what = L->sched_what, *section = L->sched_section, *min = L->sched_min, *max = L->sched_max;
    if (space_is_program(s)) {
        // The reward needs the scored checkpoint, which a program has only at its end: at
        // every rung all trials would rank alike, and ASHA would stop them at random.
        if (!strcmp(s->metric, "reward"))
            return space_fail(
                L, L->top_at[L->top[TOP_SCHEDULER] ? TOP_SCHEDULER : TOP_EARLY_TERMINATE],
                "%s cannot decide on reward in a program's sweep: the reward is known only once the final "
                "checkpoint is scored, not at the rungs (decide on a metric the program reports, e.g. "
                "metric: {name: val_loss, goal: minimize}, or leave the %s out)",
                what, section);
        if (L->budget_steps && L->sched[SCHED_MAX_STEPS] && s->max_steps != L->budget_steps)
            return space_fail(L, space_mark(L->sched[SCHED_MAX_STEPS]),
                              "%s %s (%d) must equal the budget's steps (%d) (or be "
                              "left out)",
                              section, max, s->max_steps, L->budget_steps);
        if (!L->sched[SCHED_MAX_STEPS]) s->max_steps = L->budget_steps ? L->budget_steps : INT_MAX;
    } else {
        const ParamSpec *steps = space_param_named("steps"), *epochs = space_param_named("epochs");
        int j = space_swept_index(s, steps);
        if (j >= 0) {
            Mark m = {s->params[j].line, s->params[j].col};
            return space_fail(L, m, "%s needs a fixed number of steps, so steps cannot be swept", what);
        }
        if (L->set_at[space_param_index(epochs)].line)
            return space_fail(L, L->set_at[space_param_index(epochs)], "%s counts steps: give steps instead of epochs",
                              what);
        if (L->sched[SCHED_MAX_STEPS]) {
            Mark m = L->set_at[space_param_index(steps)];
            if (m.line && s->base.steps != s->max_steps)
                return space_fail(L, space_mark(L->sched[SCHED_MAX_STEPS]),
                                  "%s %s (%d) must equal the budget's steps (%d) (or be left out)", section, max,
                                  s->max_steps, s->base.steps);
            char text[32];
            snprintf(text, sizeof text, "%d", s->max_steps);
            space_set_text(&s->base, steps, text);
        } else if (s->base.steps == 0) {
            return space_fail(L, L->top_at[L->top[TOP_SCHEDULER] ? TOP_SCHEDULER : TOP_EARLY_TERMINATE],
                              "%s needs budget steps (its rungs are counted in steps)", what);
        }
        s->max_steps = s->base.steps;
    }
    if (s->min_steps >= s->max_steps)
        return space_fail(L, space_mark(L->sched[SCHED_MIN_STEPS]), "%s %s (%d) must be less than %s (%d)", section,
                          min, s->min_steps, max, s->max_steps);
    return 0;
}

// Where PATH's directories hold an executable file named word (or word itself, with a '/').
static int executable(const char *word) {
    char full[4096];
    return program_on_path(word, full, sizeof full);
}

// A program's sweep: the program and the command's executable exist here (paths from
// the working directory, as the workers run it), parameter columns and the metric are
// distinct, and whether the trials' weights are scored.
static int check_program(Loader *L) {
    SweepSpec *s = L->s;
    ProgramSpec *ps = &s->program;
    const Mark at = L->top[TOP_PROGRAM] ? space_mark(L->top[TOP_PROGRAM]) : space_mark(L->top[TOP_COMMAND]);
    if (ps->program && access(ps->program, R_OK) != 0)
        return space_fail(L, at, "program %s: %s (its path is relative to the directory attnsweep runs in)",
                          ps->program, strerror(errno));
    char err[256];
    char **argv;
    int argc;
    if (program_command(ps, &s->base, "args.json", &argv, &argc, err, sizeof err))
        return space_fail(L, at, "command: %s", err);
    const int found = executable(argv[0]);
    char exe[256];
    snprintf(exe, sizeof exe, "%s", argv[0]);
    int env_ok = 1;
    if (found && !strcmp(argv[0], "/usr/bin/env") && argc > 1)
        env_ok = executable(argv[1]), snprintf(exe, sizeof exe, "%s", argv[1]);
    program_argv_free(argv);
    if (!found || !env_ok)
        return space_fail(
            L, at, "command: %s is not %s", exe,
            strchr(exe, '/') ? "an executable file" : "an executable on PATH (load what the program needs first)");
    for (int k = 0; k < s->n_program_params; k++) {
        const ParamSpec *p = &s->program_params[k];
        for (int j = 0; j < s->n_program_params; j++)
            if (j != k && !strcmp(config_column(p), s->program_params[j].name))
                return space_fail(L, L->top_at[TOP_PARAMETERS],
                                  "parameters %s and %s would share the /summary column %s "
                                  "(%s is a result column): rename one",
                                  p->name, s->program_params[j].name, config_column(p), p->name);
        if (ps->metric[0] && !strcmp(ps->metric, p->name))
            return space_fail(L, L->metric_at,
                              "metric %s is also the name of a parameter: they would share a /summary column",
                              ps->metric);
    }
    if (!L->top[TOP_METRIC] && !L->top[TOP_REWARD] && s->method == METHOD_MOTPE) {  // the first objective
        snprintf(s->metric, sizeof s->metric, "%s", s->objective[0]);
        s->maximize = s->objective_maximize[0];
    } else if (!L->top[TOP_METRIC] && !L->top[TOP_REWARD]) {  // W&B's metric is optional
        snprintf(s->metric, sizeof s->metric, "val_loss");
        s->maximize = 0;
        space_note(L, "no metric and no reward section: the program's val_loss ranks the trials (minimize), no scores");
    }
    int own = -1;  // motpe's objective that is the program's own
    for (int k = 0; s->method == METHOD_MOTPE && k < s->n_objectives; k++)
        if (!strcmp(s->objective[k], ps->metric)) own = k;
    if (own >= 0) metric_program(&s->program_metric, s->objective[own], s->objective_maximize[own]);
    else metric_program(&s->program_metric, s->metric, s->maximize);
    int scores = !strcmp(s->metric, "reward") || L->top[TOP_REWARD] != NULL;
    for (int k = 0; s->method == METHOD_MOTPE && k < s->n_objectives; k++)
        scores |= space_objective_metric(s, k)->use == METRIC_RANKS || !strcmp(s->objective[k], "reward");
    ps->needs_checkpoint = scores;
    return 0;
}

// A regulariser the sweep searches that minimises a term of its own reward: its gain in
// reward is partly by construction (lambda_orth pushes apart the very heads whose mean
// |cos| is the Correlation term; lambda_stability holds still the heads' singular values
// that RankDeviation reads), so the note says to judge it by the validation metrics.
static void note_regularised_terms(Loader *L) {
    const SweepSpec *s = L->s;
    if (strcmp(s->metric, "reward") != 0) return;
    static const struct {
        const char *param, *term, *what;
    } minimised[] = {
        {"lambda_orth", "Correlation", "pushes apart the heads whose mean |cos| is the reward's Correlation term"},
        {"lambda_stability", "RankDeviation",
         "holds still the heads' singular values the reward's RankDeviation reads"},
    };
    for (size_t k = 0; k < sizeof minimised / sizeof minimised[0]; k++) {
        const double weight = k == 0 ? s->reward.gamma : s->reward.beta;
        for (int j = 0; weight > 0 && j < s->n_params; j++)
            if (!strcmp(s->params[j].param->name, minimised[k].param))
                space_note(L,
                           "%s:%d:%d: %s %s (%s = %g): what it gains in reward is partly by construction; judge it "
                           "by val_accuracy, as the report's ablations and verdict do",
                           L->path, s->params[j].line, s->params[j].col, minimised[k].param, minimised[k].what,
                           k == 0 ? "gamma" : "beta", weight);
    }
}

int space_check(Loader *L) {
    const SweepSpec *s = L->s;
    if (check_size(L) || check_scheduler(L)) return -1;
    if (space_is_program(s) ? check_program(L) : check_combinations(L) || check_metric(L) || check_data(L)) return -1;
    if (!space_is_program(s)) note_regularised_terms(L);
    return 0;
}
