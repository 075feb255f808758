// sampler_bench: attnsweep's samplers on objectives evaluated in process (built and run
// by scripts/bench/sampler_vs_optuna.sh; sampler_vs_optuna.py runs Optuna on the same).
//
//   sampler_bench METHOD OBJECTIVE SEEDS TRIALS [TABLE.csv]
//
// METHOD: random | sobol | evolution | tpe | tpe-univariate | motpe | motpe-univariate
// (tpe and motpe with their defaults, multivariate; -univariate: multivariate false, the
// classic TPE and Optuna's default), followed by :KEY=VALUE,... for more of the YAML's
// tpe options (tpe:history=0,n_startup=2000: the whole history, random until 2000
// finished; scripts/bench/tpe_history.sh). OBJECTIVE:
//   mixed        every parameter kind: lr log-uniform, warmup_frac uniform, layers an
//                integer range, eval_every a q-grid, attention categorical, core_rank
//                conditional on tucker; a narrow optimum of value 1 (as tests/test_tpe.c)
//   conditional  attention picks which parameter matters: core_rank for tucker,
//                grassmann_rank for grassmann, lambda_orth (log) for mha, nothing for
//                linear; the best branch reaches 1
//   tabular      the recorded grid of sweeps/tabular_fashion.yaml (TABLE.csv: mean
//                val_accuracy and correlation of each of its 576 configurations), replayed
//   tabular-mo   the same, two objectives: maximise val_accuracy, minimise correlation;
//                the hypervolume is of both scaled to [0, 1] by their range over the
//                table (1: best), against (0, 0): 1 would be one configuration best at both
// The same objectives, distributions and conditions are in sampler_vs_optuna.py. Prints
// one JSON line per seed: the objective value of every trial in order (single
// objective), or the hypervolume of the front after every trial (two objectives); the
// sampler's mean proposal CPU time per trial and that of the last 10 trials (with
// TRIALS-10 finished before them).
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/pareto.h"
#include "common/util.h"
#include "space/space.h"
#include "space/tpe.h"

// This process's CPU time: the proposal's cost without the other jobs of a shared machine.
static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *space_of(const char *objective) {
    if (!strcmp(objective, "mixed"))
        return "  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}\n"
               "  warmup_frac: {min: 0.0, max: 0.5}\n"
               "  layers: {min: 1, max: 8}\n"
               "  eval_every: {distribution: q_uniform, min: 10, max: 200, q: 10}\n"
               "  attention: {values: [mha, tucker, linear, grassmann]}\n"
               "  core_rank: {values: [1, 2, 3, 4], when: {attention: tucker}}\n";
    if (!strcmp(objective, "conditional"))
        return "  attention: {values: [mha, tucker, linear, grassmann]}\n"
               "  lambda_orth: {distribution: log_uniform_values, min: 0.00001, max: 1, when: {attention: mha}}\n"
               "  core_rank: {values: [1, 2, 3, 4], when: {attention: tucker}}\n"
               "  grassmann_rank: {min: 2, max: 64, when: {attention: grassmann}}\n"
               "  warmup_frac: {min: 0.0, max: 0.5}\n";
    return "  attention: {values: [mha, tucker, linear, grassmann]}\n"
           "  lambda_orth: {values: [0, 0.001, 0.01, 0.1]}\n"
           "  lr: {values: [0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008]}\n"
           "  d_model: {values: [16, 32, 64]}\n"
           "  layers: {values: [1, 2]}\n"
           "  core_rank: {value: 2, when: {attention: tucker}}\n";
}

static double mixed(const TrialConfig *c) {
    const double dl = log10(c->lr / 3e-3), dw = c->warmup_frac - 0.1, dn = c->layers - 3, de = (c->eval_every - 50) / 50.0;
    double v = 1.0 - dl * dl - 4.0 * dw * dw - 0.05 * dn * dn - 0.2 * de * de;
    return c->attention != ATTN_TUCKER ? v - 0.3 : v - 0.1 * abs(c->core_rank - 3);
}

static double conditional(const TrialConfig *c) {
    const double dw = c->warmup_frac - 0.25;
    switch (c->attention) {
    case ATTN_MHA: {
        const double d = log10(c->lambda_orth / 1e-3);
        return 0.9 - 0.05 * d * d - dw * dw;
    }
    case ATTN_TUCKER: return 0.8 - 0.1 * abs(c->core_rank - 2) - dw * dw;
    case ATTN_GRASSMANN: {
        const double d = (c->grassmann_rank - 40) / 20.0;
        return 1.0 - 0.5 * d * d - dw * dw;
    }
    default: return 0.7 - dw * dw;
    }
}

// The recorded table: "attention,lambda_orth,lr,d_model,layers,val_accuracy,correlation" rows.
typedef struct {
    int attention, d_model, layers;
    double lambda_orth, lr, acc, corr;
} Row;
static Row table[1024];
static int n_table;
static double acc_lo = HUGE_VAL, acc_hi = -HUGE_VAL, corr_lo = HUGE_VAL, corr_hi = -HUGE_VAL;  // over the table

static void load_table(const char *path) {
    FILE *f = xfopen(path, "r");
    char line[512], name[32];
    if (!fgets(line, sizeof line, f)) die(EXIT_BADINPUT, "%s: empty", path);
    while (fgets(line, sizeof line, f) && n_table < (int)(sizeof table / sizeof table[0])) {
        Row *r = &table[n_table];
        if (sscanf(line, "%31[^,],%lf,%lf,%d,%d,%lf,%lf", name, &r->lambda_orth, &r->lr, &r->d_model, &r->layers,
                   &r->acc, &r->corr) != 7)
            die(EXIT_BADINPUT, "%s: bad row '%s'", path, line);
        r->attention = -1;
        for (int a = 0; a < ATTN_COUNT; a++)
            if (!strcmp(attention_names[a], name)) r->attention = a;
        acc_lo = fmin(acc_lo, r->acc), acc_hi = fmax(acc_hi, r->acc);
        corr_lo = fmin(corr_lo, r->corr), corr_hi = fmax(corr_hi, r->corr);
        n_table++;
    }
    fclose(f);
}

static const Row *lookup(const TrialConfig *c) {
    for (int i = 0; i < n_table; i++) {
        const Row *r = &table[i];
        if (r->attention == c->attention && r->d_model == c->d_model && r->layers == c->layers &&
            fabs(r->lambda_orth - c->lambda_orth) < 1e-12 &&
            fabs(r->lr / c->lr - 1) < 1e-9)
            return r;
    }
    die(EXIT_RUNTIME, "no table row for this configuration");
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) die(EXIT_BADINPUT, "usage: sampler_bench METHOD OBJECTIVE SEEDS TRIALS [TABLE.csv]");
    const char *method = argv[1], *objective = argv[2];
    const int seeds = atoi(argv[3]), trials = atoi(argv[4]);
    const int tabular = !strncmp(objective, "tabular", 7), mo = !strcmp(objective, "tabular-mo");
    if (tabular) load_table(argc == 6 ? argv[5] : "scripts/bench/data/tabular_fashion.csv");
    char base[128], tpe[256] = "";
    snprintf(base, sizeof base, "%s", method);
    char *options = strchr(base, ':');
    if (options) *options++ = 0;
    char *suffix = strstr(base, "-univariate");
    if (suffix) *suffix = 0;
    if (suffix || options) {  // tpe: {multivariate: false, KEY: VALUE, ...}
        snprintf(tpe, sizeof tpe, "tpe: {%s%s", suffix ? "multivariate: false" : "", suffix && options ? ", " : "");
        for (const char *c = options; c && *c; c++)
            snprintf(tpe + strlen(tpe), sizeof tpe - strlen(tpe), "%s", *c == '=' ? ": " : *c == ',' ? ", " : (char[]){*c, 0});
        snprintf(tpe + strlen(tpe), sizeof tpe - strlen(tpe), "}\n");
    }
    for (int seed = 1; seed <= seeds; seed++) {
        char yaml[2048], err[1024];
        snprintf(yaml, sizeof yaml,
                 "method: %s\ntrials: %d\nseed: %d\nmetric: {name: val_accuracy, goal: maximize}\n%s%s%sparameters:\n%s",
                 base, trials, seed,
                 mo && !strcmp(base, "motpe")
                     ? "objectives: [{name: val_accuracy, goal: maximize}, {name: correlation, goal: minimize}]\n"
                     : "",
                 tpe,
                 !strcmp(base, "evolution") ? "evolution: {population: 10, sample_size: 3}\n" : "", space_of(objective));
        SweepSpec s;
        if (space_parse(&s, "bench.yaml", yaml, strlen(yaml), err, sizeof err)) die(EXIT_BADINPUT, "%s", err);
        Sampler *sm = sampler_create(&s);
        double *value = xmalloc((size_t)trials * sizeof(double)), *pts = xmalloc((size_t)2 * trials * sizeof(double));
        double propose = 0.0, propose_last = 0.0;
        for (int id = 0; id < trials; id++) {
            TrialConfig c;
            const double t0 = cpu_seconds();
            if (sampler_config(sm, id, &c)) die(EXIT_RUNTIME, "%s: no configuration for trial %d", method, id);
            const double dt = cpu_seconds() - t0;
            propose += dt;
            if (id >= trials - 10) propose_last += dt;
            TrialResult r = {.id = id, .config = c, .status = TRIAL_OK};
            if (tabular) {
                const Row *row = lookup(&c);
                r.val_accuracy = row->acc, r.correlation = row->corr;
            } else {
                r.val_accuracy = !strcmp(objective, "mixed") ? mixed(&c) : conditional(&c);
            }
            sampler_report(sm, &r);
            pts[2 * id] = (r.val_accuracy - acc_lo) / (acc_hi - acc_lo);
            pts[2 * id + 1] = (corr_hi - r.correlation) / (corr_hi - corr_lo);
            const double ref[2] = {0.0, 0.0};
            value[id] = mo ? pareto_hypervolume(pts, id + 1, 2, ref) : r.val_accuracy;
        }
        printf("{\"method\": \"%s\", \"objective\": \"%s\", \"seed\": %d, \"propose_ms\": %.4f, "
               "\"propose_last_ms\": %.4f, \"values\": [",
               method, objective, seed, 1e3 * propose / trials, 1e3 * propose_last / (trials < 10 ? trials : 10));
        for (int id = 0; id < trials; id++) printf("%s%.9g", id ? ", " : "", value[id]);
        printf("]}\n");
        free(pts);
        free(value);
        sampler_free(sm);
        space_free(&s);
    }
    return 0;
}
