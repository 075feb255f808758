// test_space.c: the search space (space.c) and its samplers (sampler.c).
//
// Every example in sweeps/ and the example in space.h's header comment load; a grid
// with a condition has the right size and order; random and Sobol trials depend only
// on (seed, trial); distributions keep their promises (probabilities, log-uniform
// spread, q multiples, inclusive integer ends) and every W&B distribution passes a
// Kolmogorov–Smirnov test against its law; evolution mutates one parameter;
// repeats share a configuration and differ in seed; ASHA rungs.
// modules: space
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "params/config_json.h"
#include "space/asha.h"
#include "space/space.h"

// A finished trial of configuration c whose reward (the sweep's metric) is `reward`
// (NaN: it failed), reported to the sampler.
static void report_reward(Sampler *sm, int id, const TrialConfig *c, double reward) {
    TrialResult r = {.id = id, .config = *c, .reward = reward};
    r.status = isnan(reward) ? TRIAL_FAILED : TRIAL_OK;
    sampler_report(sm, &r);
}

static int parse(SweepSpec *s, const char *text) {
    char err[1024];
    int rc = space_parse(s, "mem.yaml", text, strlen(text), err, sizeof err);
    CHECK(rc == 0, "parse failed: %s\n%s", err, text);
    return rc;
}

// The value of a parameter in c, as text.
static const char *value_of(const TrialConfig *c, const char *name) {
    static char buf[8][CONFIG_TEXT + 8];
    static int next;
    char *out = buf[next++ % 8];
    config_format(c, config_find(name), out, CONFIG_TEXT + 8);
    return out;
}

static int same_config(const TrialConfig *a, const TrialConfig *b) {
    for (int i = 0; i < config_nparams; i++) {
        char x[CONFIG_TEXT + 8], y[CONFIG_TEXT + 8];
        config_format(a, &config_params[i], x, sizeof x);
        config_format(b, &config_params[i], y, sizeof y);
        if (strcmp(x, y)) return 0;
    }
    return 1;
}

// Every trial the sampler gives passes config_check.
static void check_trials_valid(const SweepSpec *s, const char *what) {
    Sampler *sm = sampler_create(s);
    for (int id = 0; id < s->trials && id < 64; id++) {
        TrialConfig c;
        char err[256];
        if (sampler_config(sm, id, &c)) break;  // evolution waiting for results
        CHECK(config_check(&c, err, sizeof err) == 0, "%s trial %d: %s", what, id, err);
    }
    sampler_free(sm);
}

static void test_examples_load(void) {
    DIR *d = opendir("sweeps");
    CHECK(d != NULL, "sweeps/ not found (run from the repository root)");
    if (!d) return;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml")) continue;
        char path[512], err[1024];
        snprintf(path, sizeof path, "sweeps/%s", e->d_name);
        SweepSpec s;
        int rc = space_load(&s, path, err, sizeof err);
        CHECK(rc == 0, "%s: %s", path, err);
        if (rc) continue;
        CHECK(s.trials >= 1 && s.n_params >= 1, "%s: %d trials, %d parameters", path, s.trials, s.n_params);
        check_trials_valid(&s, path);
        space_free(&s);
        n++;
    }
    closedir(d);
    CHECK(n >= 5, "only %d examples in sweeps/", n);
    SweepSpec demo;
    char err[1024];
    if (space_load(&demo, "sweeps/demo.yaml", err, sizeof err) == 0) {
        CHECK(demo.method == METHOD_GRID && demo.trials == 12 && demo.base.steps == 300,
              "demo: method %d, %d trials of %d steps", demo.method, demo.trials, demo.base.steps);
        space_free(&demo);
    }
}

// The example in space.h's header comment: the indented comment lines after "feel at home:".
static void test_header_example(void) {
    FILE *f = fopen("src/space/space.h", "r");
    CHECK(f != NULL, "src/space/space.h not found");
    if (!f) return;
    char line[512], text[8192] = "";
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "feel at home:")) {
            in = 1;
            continue;
        }
        if (!in) continue;
        if (strncmp(line, "//   ", 5)) {
            if (text[0]) break;  // the blank comment line after the example
            continue;            // the one before it
        }
        strncat(text, line + 5, sizeof text - strlen(text) - 1);
    }
    fclose(f);
    CHECK(strstr(text, "parameters:") != NULL, "no example found in space.h:\n%s", text);
    SweepSpec s;
    if (parse(&s, text)) return;
    CHECK(!strcmp(s.name, "fashion_variants") && s.method == METHOD_RANDOM && s.trials == 24 && s.repeats == 2 &&
              s.seed == 7 && s.asha && s.min_steps == 100 && s.eta == 3 && s.max_steps == s.base.steps &&
              s.base.steps == 600 && s.base.eval_every == 100 && s.time_limit == 600 && s.population == 8 &&
              s.sample_size == 3,
          "header example: fields read wrong");
    CHECK(s.reward.beta == 0.1 && s.reward.use_mode[0] && !s.reward.use_mode[1] && s.reward.ideal_rank[0] == 4 &&
              s.energy == 0.99,
          "header example: reward read wrong");
    CHECK(s.base.d_model == 64 && s.n_params == 4, "header example: d_model %d, %d swept", s.base.d_model, s.n_params);
    check_trials_valid(&s, "header example");
    space_free(&s);
}

// reward: {tensor: ...} chooses the tensor scored, and the mode names are that tensor's.
static void test_reward_tensor(void) {
    SweepSpec s;
    if (parse(&s, "method: grid\nreward: {tensor: parameters, modes: [heads, model_dim], ideal_ranks: {model_dim: 32}}\n"
                  "parameters: {attention: {value: mha}}\n"))
        return;
    CHECK(s.reward.tensor == TENSOR_PARAMETERS && s.reward.use_mode[0] && s.reward.use_mode[2] && !s.reward.use_mode[1] &&
              s.reward.ideal_rank[2] == 32,
          "reward {tensor: parameters, modes: [heads, model_dim]} read wrong");
    space_free(&s);
    if (parse(&s, "method: grid\nreward: {modes: [heads, src_dim]}\nparameters: {attention: {value: mha}}\n")) return;
    CHECK(s.reward.tensor == TENSOR_FUNCTION && s.reward.use_mode[0] && s.reward.use_mode[2],
          "reward {modes: [heads, src_dim]}: the function tensor by default");
    space_free(&s);
}

// A regulariser searched against a reward holding the term it minimises is named, with
// where the file sets it; not when the term's weight is 0, the metric is another, or the
// regulariser is not searched.
static void test_regularised_terms_noted(void) {
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"method: grid\nparameters:\n  lambda_orth: {values: [0, 0.1]}\n  lambda_stability: {values: [0, 1]}\n",
         "mem.yaml:3:3: lambda_orth pushes apart the heads whose mean |cos| is the reward's Correlation term (gamma "
         "= 0.1)|mem.yaml:4:3: lambda_stability holds still the heads' singular values the reward's RankDeviation "
         "reads (beta = 0.1)"},
        {"method: grid\nreward: {gamma: 0}\nparameters:\n  lambda_orth: {values: [0, 0.1]}\n", ""},
        {"method: grid\nmetric: {name: val_accuracy, goal: maximize}\nparameters:\n  lambda_orth: {values: [0, 0.1]}\n",
         ""},
        {"method: grid\nparameters:\n  lambda_orth: {value: 0.1}\n  lr: {values: [0.001, 0.01]}\n", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        SweepSpec s;
        if (parse(&s, cases[i].text)) continue;
        char got[2048] = "";
        for (int k = 0; k < s.n_notes; k++)
            if (strstr(s.notes[k], "by construction"))
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%.*s", got[0] ? "|" : "",
                         (int)(strstr(s.notes[k], ": what it gains") - s.notes[k]), s.notes[k]);
        CHECK(!strcmp(got, cases[i].want), "case %zu: notes '%s', want '%s'", i, got, cases[i].want);
        space_free(&s);
    }
}

// A program's own metric is said to be unchecked until the program runs (issue 29: a
// mistyped name); one attnsweep measures is not.
static void test_program_metric_noted(void) {
    static const struct {
        const char *metric;
        int noted;
    } cases[] = {{"objectiv", 1}, {"val_loss", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "program: tests/programs/protocol_program.py\nmethod: grid\nmetric: {name: %s, goal: minimize}\n"
                 "parameters:\n  x: {values: [1, 2]}\n",
                 cases[i].metric);
        SweepSpec s;
        if (parse(&s, text)) continue;
        int noted = 0;
        for (int k = 0; k < s.n_notes; k++) noted |= strstr(s.notes[k], "is the program's own, not a name") != NULL;
        CHECK(noted == cases[i].noted, "metric %s: %s", cases[i].metric, noted ? "noted" : "not noted");
        space_free(&s);
    }
}

// attention x lambda_orth, core_rank only for tucker: 2 + 2*2 = 6 configurations, in
// file order with the last parameter fastest.
static void test_grid_condition(void) {
    SweepSpec s;
    if (parse(&s, "method: grid\n"
                  "parameters:\n"
                  "  attention: {values: [mha, tucker]}\n"
                  "  lambda_orth: {values: [0, 0.1]}\n"
                  "  core_rank: {values: [1, 2], when: {attention: tucker}}\n"
                  "  heads: {value: 4}\n"))
        return;
    CHECK(space_size(&s) == 6 && s.trials == 6, "grid size %ld, trials %d", space_size(&s), s.trials);
    static const char *const want[6][3] = {{"mha", "0", "2"},      {"mha", "0.1", "2"},      {"tucker", "0", "1"},
                                           {"tucker", "0", "2"},   {"tucker", "0.1", "1"},   {"tucker", "0.1", "2"}};
    Sampler *sm = sampler_create(&s);
    for (int id = 0; id < 6; id++) {
        TrialConfig c;
        CHECK(sampler_config(sm, id, &c) == 0, "grid trial %d", id);
        const char *a = value_of(&c, "attention"), *l = value_of(&c, "lambda_orth"), *r = value_of(&c, "core_rank");
        CHECK(!strcmp(a, want[id][0]) && !strcmp(l, want[id][1]) && !strcmp(r, want[id][2]),
              "grid trial %d: %s %s %s, want %s %s %s", id, a, l, r, want[id][0], want[id][1], want[id][2]);
        CHECK(c.heads == 4 && c.seed == 1000, "grid trial %d: heads %d seed %d", id, c.heads, c.seed);
    }
    sampler_free(sm);
    space_free(&s);

    // The parameter conditions refer to varies slowest even when defined later.
    if (parse(&s, "method: grid\nrepeats: 2\nseed: 3\n"
                  "parameters:\n"
                  "  lambda_orth: {values: [0, 0.1]}\n"
                  "  attention: {values: [linear, tucker]}\n"
                  "  core_rank: {values: [1, 2], when: {attention: tucker}}\n"))
        return;
    CHECK(space_size(&s) == 6 && s.trials == 12, "grid size %ld, trials %d", space_size(&s), s.trials);
    static const char *const want2[6][3] = {{"linear", "0", "2"}, {"linear", "0.1", "2"}, {"tucker", "0", "1"},
                                            {"tucker", "0", "2"}, {"tucker", "0.1", "1"}, {"tucker", "0.1", "2"}};
    sm = sampler_create(&s);
    for (int id = 0; id < 12; id++) {
        TrialConfig c;
        sampler_config(sm, id, &c);
        const char *a = value_of(&c, "attention"), *l = value_of(&c, "lambda_orth"), *r = value_of(&c, "core_rank");
        int k = id / 2;
        CHECK(!strcmp(a, want2[k][0]) && !strcmp(l, want2[k][1]) && !strcmp(r, want2[k][2]) &&
                  c.seed == 3000 + id % 2,
              "grid trial %d: %s %s %s seed %d", id, a, l, r, c.seed);
    }
    sampler_free(sm);
    space_free(&s);

    // Integer ranges enumerate in a grid; sizes multiply.
    if (parse(&s, "method: grid\nparameters:\n  layers: {min: 1, max: 3}\n"
                  "  batch: {distribution: q_uniform, min: 32, max: 128, q: 32}\n"))
        return;
    CHECK(space_size(&s) == 12, "int grid size %ld", space_size(&s));
    space_free(&s);
}

static void test_random_sobol_reproducible(void) {
    static const char *const methods[] = {"random", "sobol"};
    for (int m = 0; m < 2; m++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "method: %s\ntrials: 40\nseed: 9\n"
                 "parameters:\n"
                 "  attention: {values: [mha, tucker, linear, grassmann]}\n"
                 "  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.01}\n"
                 "  layers: {min: 1, max: 4}\n"
                 "  core_rank: {values: [1, 2], when: {attention: tucker}}\n",
                 methods[m]);
        SweepSpec s, t;
        if (parse(&s, text)) return;
        CHECK(space_size(&s) == -1, "%s: size %ld, want infinite", methods[m], space_size(&s));
        Sampler *a = sampler_create(&s), *b = sampler_create(&s);
        TrialConfig first[40];
        for (int id = 0; id < 40; id++) sampler_config(a, id, &first[id]);
        for (int id = 39; id >= 0; id -= 3) {  // out of order, from a fresh sampler
            TrialConfig c;
            sampler_config(b, id, &c);
            CHECK(same_config(&c, &first[id]), "%s: trial %d differs when asked out of order", methods[m], id);
        }
        int distinct = 0;
        for (int id = 1; id < 40; id++) distinct += !same_config(&first[id], &first[id - 1]);
        CHECK(distinct >= 35, "%s: only %d of 39 neighbours differ", methods[m], distinct);
        for (int id = 0; id < 40; id++) {
            CHECK(first[id].attention == ATTN_TUCKER || first[id].core_rank == 2,
                  "%s trial %d: core_rank %d applies only to tucker", methods[m], id, first[id].core_rank);
            CHECK(first[id].lr >= 0.0001 && first[id].lr <= 0.01, "%s: lr %g", methods[m], first[id].lr);
        }
        sampler_free(a);
        sampler_free(b);

        char *seed = strstr(text, "seed: 9");
        seed[6] = '8';
        if (parse(&t, text)) return;
        Sampler *c8 = sampler_create(&t);
        int same = 0;
        for (int id = 0; id < 40; id++) {
            TrialConfig c;
            sampler_config(c8, id, &c);
            same += first[id].lr == c.lr;
        }
        CHECK(same == 0, "%s: seed 8 repeats %d of seed 9's learning rates", methods[m], same);
        sampler_free(c8);
        space_free(&t);
        space_free(&s);
    }
}

// Draws of trials 0..n-1 of a random sweep with one swept parameter.
static void draw(const char *param_yaml, int n, TrialConfig *out) {
    char text[1024];
    snprintf(text, sizeof text, "method: random\ntrials: %d\nseed: 4\nparameters:\n  %s\n", n, param_yaml);
    SweepSpec s;
    if (parse(&s, text)) return;
    Sampler *sm = sampler_create(&s);
    for (int id = 0; id < n; id++) sampler_config(sm, id, &out[id]);
    sampler_free(sm);
    space_free(&s);
}

enum { DRAWS = 2000 };

static void test_distributions(void) {
    static TrialConfig c[DRAWS];

    // probabilities: chi-square with 2 degrees of freedom below 13.8 (p = 0.001)
    draw("lambda_orth: {values: [0, 0.01, 0.1], probabilities: [0.5, 0.3, 0.2]}", DRAWS, c);
    double p[3] = {0.5, 0.3, 0.2}, v[3] = {0, 0.01, 0.1};
    int count[3] = {0};
    for (int i = 0; i < DRAWS; i++)
        for (int k = 0; k < 3; k++) count[k] += c[i].lambda_orth == v[k];
    double chi2 = 0;
    for (int k = 0; k < 3; k++) chi2 += pow(count[k] - DRAWS * p[k], 2) / (DRAWS * p[k]);
    CHECK(count[0] + count[1] + count[2] == DRAWS && chi2 < 13.8, "probabilities: counts %d %d %d, chi2 %.2f",
          count[0], count[1], count[2], chi2);

    // log_uniform_values: within range, a third of the draws in each decade
    draw("lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}", DRAWS, c);
    int decade[3] = {0}, inside = 0;
    for (int i = 0; i < DRAWS; i++) {
        inside += c[i].lr >= 0.0001 && c[i].lr <= 0.1;
        int k = (int)floor(log10(c[i].lr) + 4);
        if (k >= 0 && k < 3) decade[k]++;
    }
    chi2 = 0;
    for (int k = 0; k < 3; k++) chi2 += pow(decade[k] - DRAWS / 3.0, 2) / (DRAWS / 3.0);
    CHECK(inside == DRAWS && chi2 < 13.8, "log_uniform: %d inside, decades %d %d %d (chi2 %.2f)", inside, decade[0],
          decade[1], decade[2], chi2);

    // q_uniform: multiples of q, every multiple in [min, max] reached, reals and integers
    draw("lambda_l2: {distribution: q_uniform, min: 0.1, max: 1, q: 0.25}", DRAWS, c);
    int seen[5] = {0}, multiples = 0;
    for (int i = 0; i < DRAWS; i++) {
        double k = c[i].lambda_l2 / 0.25;
        multiples += fabs(k - round(k)) < 1e-12 && c[i].lambda_l2 >= 0.1 && c[i].lambda_l2 <= 1;
        if (k >= 0 && k < 5) seen[(int)round(k)]++;
    }
    CHECK(multiples == DRAWS && !seen[0] && seen[1] && seen[2] && seen[3] && seen[4],
          "q_uniform: %d multiples, seen %d %d %d %d %d", multiples, seen[0], seen[1], seen[2], seen[3], seen[4]);
    draw("batch: {distribution: q_uniform, min: 16, max: 128, q: 16}", DRAWS, c);
    int ok = 1, lo = 0, hi = 0;
    for (int i = 0; i < DRAWS; i++) {
        ok &= c[i].batch % 16 == 0 && c[i].batch >= 16 && c[i].batch <= 128;
        lo += c[i].batch == 16;
        hi += c[i].batch == 128;
    }
    CHECK(ok && lo && hi, "q_uniform integers: ok %d, ends %d %d", ok, lo, hi);

    // int_uniform: inclusive ends, nothing outside, roughly even
    draw("layers: {distribution: int_uniform, min: 1, max: 3}", DRAWS, c);
    int per[4] = {0};
    ok = 1;
    for (int i = 0; i < DRAWS; i++) {
        ok &= c[i].layers >= 1 && c[i].layers <= 3;
        if (c[i].layers >= 1 && c[i].layers <= 3) per[c[i].layers]++;
    }
    CHECK(ok && per[1] > 550 && per[3] > 550 && per[2] > 550, "int_uniform: %d %d %d", per[1], per[2], per[3]);

    // uniform reals and log_uniform_values on an integer parameter
    draw("warmup_frac: {distribution: uniform, min: 0.2, max: 0.4}", DRAWS, c);
    double mean = 0;
    ok = 1;
    for (int i = 0; i < DRAWS; i++) {
        ok &= c[i].warmup_frac >= 0.2 && c[i].warmup_frac <= 0.4;
        mean += c[i].warmup_frac / DRAWS;
    }
    CHECK(ok, "uniform: a draw outside [0.2, 0.4]");
    CHECK_CLOSE(mean, 0.3, 0.01, 0.0, "uniform: mean of %d draws", DRAWS);
    draw("batch: {distribution: log_uniform_values, min: 16, max: 256}", DRAWS, c);
    int below64 = 0;
    ok = 1;
    for (int i = 0; i < DRAWS; i++) {
        ok &= c[i].batch >= 16 && c[i].batch <= 256;
        below64 += c[i].batch < 64;
    }
    CHECK(ok && below64 > 850 && below64 < 1150, "log_uniform integers: ok %d, %d below 64 (want ~1000)", ok,
          below64);
}

// Grid axes in a sampled sweep: with every method, each sample of the other parameters
// is crossed with every combination of the axes (the last axis fastest), its repeats
// share it, and the samples are new draws; random and sobol give a fresh sampler (a
// resume) the same trials, evolution and tpe the same trials once told the same results.
static void test_grid_axes(void) {
    const char *methods[] = {"random", "sobol", "evolution", "tpe", "motpe"};
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "method: %s\ntrials: 8\nrepeats: 2\nseed: 3\n%s%s"
                 "parameters:\n"
                 "  attention: {values: [mha, tucker], grid: true}\n"
                 "  core_rank: {values: [1, 2], when: {attention: tucker}, grid: true}\n"
                 "  lambda_orth: {values: [0, 0.1], grid: true}\n"
                 "  lr: {distribution: log_uniform_values, min: 0.0005, max: 0.005}\n"
                 "  layers: {min: 1, max: 3}\n",
                 methods[m], m == 2 ? "evolution: {population: 2, sample_size: 2}\n" : "",
                 m == 4 ? "objectives: [{name: val_accuracy, goal: maximize}, {name: correlation, goal: minimize}]\n"
                        : "");
        SweepSpec s;
        if (parse(&s, text)) continue;
        // axes: mha ×2 λ, tucker × 2 ranks × 2 λ = 6 combinations; 4 samples × 6 × 2 repeats
        CHECK(s.grid_points == 6 && s.trials == 48, "%s: %d grid points, %d trials (want 6, 48)", methods[m],
              s.grid_points, s.trials);
        Sampler *a = sampler_create(&s), *b = sampler_create(&s);
        static TrialConfig ca[48], cb[48];
        for (int id = 0; id < s.trials; id++) {
            CHECK(sampler_config(a, id, &ca[id]) == 0, "%s: trial %d not given", methods[m], id);
            report_reward(a, id, &ca[id], ca[id].lr * 100 + ca[id].layers);
        }
        for (int id = 0; id < s.trials; id++) {  // the second sampler: the same reports, in the same order
            CHECK(sampler_config(b, id, &cb[id]) == 0, "%s: trial %d not given again", methods[m], id);
            report_reward(b, id, &cb[id], cb[id].lr * 100 + cb[id].layers);
            CHECK(same_config(&ca[id], &cb[id]), "%s: trial %d differs when regenerated", methods[m], id);
        }
        const char *want[6] = {"mha 2 0", "mha 2 0.1", "tucker 1 0", "tucker 1 0.1", "tucker 2 0", "tucker 2 0.1"};
        for (int k = 0; k < 4; k++)
            for (int g = 0; g < 6; g++)
                for (int r = 0; r < 2; r++) {
                    const TrialConfig *c = &ca[(k * 6 + g) * 2 + r], *first = &ca[k * 12];
                    char got[64];
                    snprintf(got, sizeof got, "%s %s %s", value_of(c, "attention"), value_of(c, "core_rank"),
                             value_of(c, "lambda_orth"));
                    CHECK(!strcmp(got, want[g]) && c->lr == first->lr && c->layers == first->layers &&
                              c->seed == 3000 + r,
                          "%s: sample %d, combination %d, repeat %d: %s lr %g layers %d seed %d (want %s, lr %g, "
                          "layers %d)",
                          methods[m], k, g, r, got, c->lr, c->layers, c->seed, want[g], first->lr, first->layers);
                }
        for (int k = 1; k < 4; k++)  // evolution's mutations change one of the two
            CHECK(ca[k * 12].lr != ca[k * 12 - 12].lr || ca[k * 12].layers != ca[k * 12 - 12].layers,
                  "%s: sample %d is sample %d again", methods[m], k, k - 1);
        sampler_free(a);
        sampler_free(b);
        space_free(&s);
    }
}

// ---- every W&B distribution against its law: a Kolmogorov–Smirnov test over KS_DRAWS
// draws of the random sampler. The laws are written here from W&B's definitions with
// GSL's distribution functions, apart from distribution.c; a quantised law's function is
// that of its continuous law at v + q/2 (round(x/q)·q ≤ v exactly when x < v + q/2).
enum { KS_DRAWS = 20000 };

typedef struct {
    const char *yaml;  // the parameter's line
    const char *name;
    double (*cdf)(double x);
    double q;          // > 0: the draws are multiples of q (quantised or a grid)
} KsCase;

static double ks_unif(double x, double a, double b) { return x <= a ? 0 : x >= b ? 1 : (x - a) / (b - a); }
static double cdf_constant(double x) { return x >= 0.3; }
static double cdf_categorical(double x) { return x < 0 ? 0 : x >= 0.3 ? 1 : 0.25 * (1 + floor(x / 0.1 + 1e-9)); }
static double cdf_int_uniform(double x) { return x < 1 ? 0 : x >= 6 ? 1 : floor(x) / 6; }
static double cdf_uniform(double x) { return ks_unif(x, 0.2, 0.4); }
static double cdf_q_uniform(double x) { return ks_unif(x + 0.125, 0.1, 1.0); }
static double cdf_log_uniform(double x) { return ks_unif(log(x), -9, -2); }
static double cdf_log_uniform_values(double x) { return ks_unif(log(x), log(1e-4), log(0.1)); }
static double cdf_q_log_uniform(double x) { return ks_unif(log(x + 4), log(16), log(256)); }
static double cdf_inv_log_uniform(double x) { return 1 - ks_unif(-log(x), 2, 9); }   // log(1/x) ~ U(2, 9)
static double cdf_inv_log_uniform_values(double x) { return 1 - ks_unif(log(1 / x), log(1 / 0.1), log(1 / 1e-4)); }
static double cdf_normal(double x) { return gsl_cdf_gaussian_P(x - 50, 10); }
static double cdf_normal_shifted(double x) { return gsl_cdf_gaussian_P(x - 51, 10); }
static double cdf_q_normal(double x) { return gsl_cdf_gaussian_P(x + 2.5 - 50, 10); }
static double cdf_log_normal(double x) { return gsl_cdf_lognormal_P(x, log(1e-3), 1); }
static double cdf_q_log_normal(double x) { return gsl_cdf_lognormal_P(x + 2, log(100), 0.5); }
static double cdf_beta(double x) { return x <= 0 ? 0 : x >= 1 ? 1 : gsl_cdf_beta_P(x, 2, 5); }
static double cdf_q_beta(double x) { return cdf_beta(x + 0.025); }

static const KsCase ks_cases[] = {
    {"lambda_orth: {distribution: constant, value: 0.3}", "lambda_orth", cdf_constant, 0.1},
    {"lambda_orth: {distribution: categorical, values: [0, 0.1, 0.2, 0.3]}", "lambda_orth", cdf_categorical, 0.1},
    {"layers: {distribution: int_uniform, min: 1, max: 6}", "layers", cdf_int_uniform, 1},
    {"warmup_frac: {distribution: uniform, min: 0.2, max: 0.4}", "warmup_frac", cdf_uniform, 0},
    {"lambda_l2: {distribution: q_uniform, min: 0.1, max: 1, q: 0.25}", "lambda_l2", cdf_q_uniform, 0.25},
    {"lr: {distribution: log_uniform, min: -9, max: -2}", "lr", cdf_log_uniform, 0},
    {"lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}", "lr", cdf_log_uniform_values, 0},
    {"batch: {distribution: q_log_uniform, min: 2.772588722239781, max: 5.545177444479562, q: 8}", "batch",
     cdf_q_log_uniform, 8},
    {"batch: {distribution: q_log_uniform_values, min: 16, max: 256, q: 8}", "batch", cdf_q_log_uniform, 8},
    {"lr: {distribution: inv_log_uniform, min: 2, max: 9}", "lr", cdf_inv_log_uniform, 0},
    {"lr: {distribution: inv_log_uniform_values, min: 0.0001, max: 0.1}", "lr", cdf_inv_log_uniform_values, 0},
    {"lambda_orth: {distribution: normal, mu: 50, sigma: 10}", "lambda_orth", cdf_normal, 0},
    {"lambda_orth: {distribution: q_normal, mu: 50, sigma: 10, q: 5}", "lambda_orth", cdf_q_normal, 5},
    {"lr: {distribution: log_normal, mu: -6.907755278982137, sigma: 1}", "lr", cdf_log_normal, 0},
    {"batch: {distribution: q_log_normal, mu: 4.605170185988092, sigma: 0.5, q: 4}", "batch", cdf_q_log_normal, 4},
    {"warmup_frac: {distribution: beta, a: 2, b: 5}", "warmup_frac", cdf_beta, 0},
    {"warmup_frac: {distribution: q_beta, a: 2, b: 5, q: 0.05}", "warmup_frac", cdf_q_beta, 0.05},
};

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The KS distance of the sorted draws x[n] from cdf: over every draw for a continuous law;
// for a discrete one, at each distinct value, where both functions step.
static double ks_distance(const double *x, int n, double (*cdf)(double), int discrete) {
    double d = 0;
    for (int i = 0; i < n; i++) {
        if (discrete) {
            if (i + 1 < n && x[i + 1] == x[i]) continue;  // the last of equal draws: F_n(x) = (i + 1) / n
            d = fmax(d, fabs((i + 1.0) / n - cdf(x[i] + 1e-9 * fmax(1, fabs(x[i])))));
        } else {
            const double f = cdf(x[i]);
            d = fmax(d, fmax((i + 1.0) / n - f, f - (double)i / n));
        }
    }
    return d;
}

static void test_wandb_distributions_ks(void) {
    static TrialConfig c[KS_DRAWS];
    static double x[KS_DRAWS];
    const double critical = 1.949 / sqrt(KS_DRAWS);  // the KS test's p = 0.001
    for (size_t k = 0; k < sizeof ks_cases / sizeof ks_cases[0]; k++) {
        const KsCase *t = &ks_cases[k];
        draw(t->yaml, KS_DRAWS, c);
        const ParamSpec *p = config_find(t->name);
        int on_grid = 1;
        for (int i = 0; i < KS_DRAWS; i++) {
            const char *b = (const char *)&c[i] + p->offset;
            x[i] = p->type == PT_INT ? *(const int *)b : *(const double *)b;
            if (t->q > 0) on_grid &= fabs(x[i] / t->q - round(x[i] / t->q)) < 1e-9;
        }
        qsort(x, KS_DRAWS, sizeof x[0], cmp_double);
        const double d = ks_distance(x, KS_DRAWS, t->cdf, t->q > 0);
        CHECK(on_grid && d < critical, "%s: KS distance %.4f over %d draws (p = 0.001 at %.4f)%s", t->yaml, d,
              KS_DRAWS, critical, on_grid ? "" : "; a draw is not a multiple of q");
        if (k == 11) {  // the test has power: the normal's draws are far from a law shifted by 0.1 sigma
            const double off = ks_distance(x, KS_DRAWS, cdf_normal_shifted, 0);
            CHECK(off > critical, "normal against normal(51, 10): KS distance %.4f, want > %.4f", off, critical);
        }
    }
}

// How many of the swept parameters differ between a and b.
static int differences(const SweepSpec *s, const TrialConfig *a, const TrialConfig *b) {
    int n = 0;
    for (int j = 0; j < s->n_params; j++) {
        char x[CONFIG_TEXT + 8], y[CONFIG_TEXT + 8];
        config_format(a, s->params[j].param, x, sizeof x);
        config_format(b, s->params[j].param, y, sizeof y);
        n += strcmp(x, y) != 0;
    }
    return n;
}

static void test_evolution(void) {
    SweepSpec s;
    if (parse(&s, "method: evolution\ntrials: 60\nseed: 2\n"
                  "evolution: {population: 6, sample_size: 3}\n"
                  "parameters:\n"
                  "  attention: {values: [mha, tucker, linear, grassmann]}\n"
                  "  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.01}\n"
                  "  layers: {min: 1, max: 4}\n"
                  "  lambda_orth: {values: [0, 0.01, 0.1]}\n"))
        return;
    Sampler *sm = sampler_create(&s);
    TrialConfig c[60];
    for (int id = 0; id < 6; id++) CHECK(sampler_config(sm, id, &c[id]) == 0, "evolution: initial trial %d", id);
    CHECK(sampler_config(sm, 6, &c[6]) == -1, "evolution: trial 6 before any result");
    // The metric: larger lr is better, so the population drifts up.
    for (int id = 0; id < 6; id++) report_reward(sm, id, &c[id], log(c[id].lr));
    int one_change = 1;
    for (int id = 6; id < 60; id++) {
        CHECK(sampler_config(sm, id, &c[id]) == 0, "evolution: trial %d", id);
        // Its parent is among the last 6 reported: some member differs in exactly one parameter.
        int found = 0;
        for (int k = id - 6; k < id; k++) found |= differences(&s, &c[id], &c[k]) == 1;
        one_change &= found;
        report_reward(sm, id, &c[id], log(c[id].lr));
    }
    CHECK(one_change, "evolution: a child differs from every population member in other than one parameter");
    double first = 0, last = 0;
    for (int id = 0; id < 6; id++) first += log(c[id].lr) / 6, last += log(c[54 + id].lr) / 6;
    CHECK(last > first, "evolution: mean log lr went from %.3f to %.3f", first, last);

    // A resumed sweep: a fresh sampler learns the population from reported configurations.
    Sampler *again = sampler_create(&s);
    for (int id = 0; id < 30; id++) report_reward(again, id, &c[id], log(c[id].lr));
    TrialConfig next;
    CHECK(sampler_config(again, 30, &next) == 0, "evolution after resume: trial 30");
    int found = 0;
    for (int k = 24; k < 30; k++) found |= differences(&s, &next, &c[k]) == 1;
    CHECK(found, "evolution after resume: trial 30 is not one mutation from the population");
    sampler_free(again);
    sampler_free(sm);
    space_free(&s);

    // With repeats, a configuration joins the population when all its repeats are in.
    if (parse(&s, "method: evolution\ntrials: 20\nrepeats: 2\nevolution: {population: 2, sample_size: 1}\n"
                  "parameters:\n  lambda_orth: {values: [0, 0.01, 0.1]}\n  layers: {min: 1, max: 4}\n"))
        return;
    sm = sampler_create(&s);
    for (int id = 0; id < 4; id++) sampler_config(sm, id, &c[id]);
    CHECK(same_config(&c[0], &c[0]) && c[0].seed != c[1].seed && c[0].layers == c[1].layers,
          "evolution repeats share a configuration");
    report_reward(sm, 0, &c[0], 1.0);
    CHECK(sampler_config(sm, 4, &c[4]) == -1, "evolution: one repeat of one configuration is not a member yet");
    report_reward(sm, 1, &c[1], NAN);  // a failed repeat counts as the worst
    CHECK(sampler_config(sm, 4, &c[4]) == 0 && c[4].seed == c[0].seed, "evolution: member after both repeats");
    sampler_free(sm);
    space_free(&s);
}

static void test_repeats(void) {
    SweepSpec s;
    if (parse(&s, "method: random\ntrials: 12\nrepeats: 3\nseed: 42\n"
                  "parameters:\n  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.01}\n"))
        return;
    Sampler *sm = sampler_create(&s);
    TrialConfig c[12];
    for (int id = 0; id < 12; id++) sampler_config(sm, id, &c[id]);
    for (int id = 0; id < 12; id++) {
        const TrialConfig *first = &c[id - id % 3];
        CHECK(c[id].lr == first->lr, "repeat %d of configuration %d: lr %g vs %g", id % 3, id / 3, c[id].lr, first->lr);
        CHECK(c[id].seed == 42000 + id % 3, "trial %d: seed %d, want %d", id, c[id].seed, 42000 + id % 3);
    }
    CHECK(c[0].lr != c[3].lr, "configurations 0 and 1 share a learning rate");
    sampler_free(sm);
    space_free(&s);
}

static void test_asha(void) {
    SweepSpec s;
    if (parse(&s, "method: random\ntrials: 4\nbudget: {steps: 900}\nscheduler: {name: asha, min_steps: 100}\n"
                  "parameters:\n  lr: {min: 0.001, max: 0.01}\n"))
        return;
    int r[8];
    int n = asha_rungs(&s, r, 8);
    CHECK(s.max_steps == 900 && n == 2 && r[0] == 100 && r[1] == 300, "asha: %d rungs %d %d (max %d)", n, r[0], r[1],
          s.max_steps);
    space_free(&s);
    if (parse(&s, "method: random\ntrials: 4\nscheduler: {name: asha, min_steps: 1, eta: 2, max_steps: 17}\n"
                  "parameters:\n  lr: {min: 0.001, max: 0.01}\n"))
        return;
    n = asha_rungs(&s, r, 3);
    CHECK(s.base.steps == 17 && n == 5 && r[0] == 1 && r[1] == 2 && r[2] == 4,
          "asha from max_steps: steps %d, %d rungs %d %d %d", s.base.steps, n, r[0], r[1], r[2]);
    space_free(&s);
    if (parse(&s, "method: random\ntrials: 4\nparameters:\n  lr: {min: 0.001, max: 0.01}\n")) return;
    CHECK(asha_rungs(&s, r, 8) == 0 && !s.asha, "no scheduler, no rungs");
    space_free(&s);
}

// ASHA per configuration (repeats 2, η 2: the top half goes on): configuration 0's first
// repeat decides for both, the second only moves the mean; per trial each decides alone;
// a resume's replay of recorded trials keeps their configurations' decisions.
static void test_asha_per_configuration(void) {
    const char *yaml = "method: random\ntrials: 8\nrepeats: 2\nbudget: {steps: 40}\n"
                       "scheduler: {name: asha, min_steps: 10, eta: 2%s}\nparameters:\n  lr: {min: 0.001, max: 0.01}\n";
    char text[512];
    for (int per_trial = 0; per_trial <= 1; per_trial++) {
        SweepSpec s;
        snprintf(text, sizeof text, yaml, per_trial ? ", per: trial" : "");
        if (parse(&s, text)) return;
        Asha a;
        asha_init(&a, &s);
        // trials 0, 1: configuration 0; 2, 3: configuration 1; 4, 5: configuration 2
        const int go0 = asha_continue(&a, 0, 0, 0.5);  // the first at the rung goes on
        const int go2 = asha_continue(&a, 2, 0, 0.8);  // configuration 1 in the top half
        const int go1 = asha_continue(&a, 1, 0, 0.1);  // configuration 0's second repeat: mean 0.3
        const int go4 = asha_continue(&a, 4, 0, 0.2);  // per configuration: 0.2 below the median of 0.3, 0.8
        const int go5 = asha_continue(&a, 5, 0, 0.9);  // configuration 2 already stopped: mean 0.55 stops too
        if (!per_trial)
            CHECK(go0 && go2 && go1 && !go4 && !go5, "per configuration: decisions %d %d %d %d %d (want 1 1 1 0 0)",
                  go0, go2, go1, go4, go5);
        else
            CHECK(go0 && go2 && !go1 && !go4 && go5, "per trial: decisions %d %d %d %d %d (want 1 1 0 0 1)", go0, go2,
                  go1, go4, go5);
        CHECK(!asha_continue(&a, 0, 5, 1.0), "a rung that does not exist stops");
        asha_free(&a);
        // A resume: configuration 0 was pruned at rung 0 by its first repeat; the other goes with it.
        asha_init(&a, &s);
        asha_replay(&a, 0, 0, 0.9, 0);
        asha_replay(&a, 2, 0, 0.1, 1);
        const int go = asha_continue(&a, 1, 0, 0.95);
        CHECK(go == per_trial, "after a replay, %s: the second repeat of a pruned configuration %s", per_trial ? "per trial" : "per configuration",
              go ? "goes on" : "stops");
        asha_free(&a);
        space_free(&s);
    }
}

// Layer l's offsets, as text, from the schedule the sampler gives trial 0.
static void layer_offsets_text(const TrialConfig *c, int l, char *out, size_t len) {
    int n;
    const int *off = config_layer_offsets(c, l, &n);
    out[0] = 0;
    for (int i = 0; i < n; i++) snprintf(out + strlen(out), len - strlen(out), "%s%d", i ? "," : "", off[i]);
}

// The offset schedule: a nested YAML list and the ';' text are the same schedule, one
// group a layer; a flat list is one group for every layer; JSON and the text form
// give it back unchanged.
static void test_offset_schedule(void) {
    static const char *const spellings[] = {"[[1, 2], [4, 8], [12]]", "'1,2;4,8;12'", "\"1 2; 4 8; 12\""};
    for (int k = 0; k < 3; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "method: grid\nparameters:\n  attention: {value: grassmann}\n  layers: {value: 3}\n"
                 "  grassmann_offsets: {value: %s}\n",
                 spellings[k]);
        SweepSpec s;
        if (parse(&s, text)) continue;
        TrialConfig c;
        Sampler *sm = sampler_create(&s);
        sampler_config(sm, 0, &c);
        sampler_free(sm);
        char got[64], fmt[CONFIG_TEXT];
        static const char *const want[] = {"1,2", "4,8", "12"};
        for (int l = 0; l < 3; l++) {
            layer_offsets_text(&c, l, got, sizeof got);
            CHECK(!strcmp(got, want[l]), "%s: layer %d has offsets %s, want %s", spellings[k], l, got, want[l]);
        }
        config_format(&c, config_find("grassmann_offsets"), fmt, sizeof fmt);
        CHECK(!strcmp(fmt, "1,2;4,8;12"), "%s formats as %s", spellings[k], fmt);
        cJSON *json = config_to_json(&c);
        char *js = cJSON_PrintUnformatted(cJSON_GetObjectItem(json, "grassmann_offsets"));
        CHECK(!strcmp(js, "[[1,2],[4,8],[12]]"), "%s as JSON: %s", spellings[k], js);
        TrialConfig back;
        char err[256] = "";
        CHECK(config_from_json(&back, json, err, sizeof err) == 0 && !memcmp(&back, &c, sizeof c),
              "%s: JSON round trip differs (%s)", spellings[k], err);
        cJSON_free(js);
        cJSON_Delete(json);
        space_free(&s);
    }
    // One group serves every layer; its JSON stays a flat array.
    SweepSpec s;
    if (parse(&s, "method: grid\nparameters:\n  attention: {value: grassmann}\n  layers: {value: 4}\n"
                  "  grassmann_offsets: {value: [1, 3]}\n"))
        return;
    TrialConfig c;
    Sampler *sm = sampler_create(&s);
    sampler_config(sm, 0, &c);
    sampler_free(sm);
    char got[64];
    layer_offsets_text(&c, 3, got, sizeof got);
    CHECK(c.n_groups == 1 && !strcmp(got, "1,3"), "one group: %d groups, layer 3 has %s", c.n_groups, got);
    cJSON *json = config_to_json(&c);
    char *js = cJSON_PrintUnformatted(cJSON_GetObjectItem(json, "grassmann_offsets"));
    CHECK(!strcmp(js, "[1,3]"), "one group as JSON: %s", js);
    cJSON_free(js);
    cJSON_Delete(json);
    space_free(&s);
}

// Errors come back as one "mem.yaml:LINE:COL: message" line; the spec is left empty.
// config_set_number, which a replay uses for every number of every trial's configuration,
// sets exactly what config_set of the number's JSON text ("%.0f" for an integer below
// 1e15, else "%.17g": config_json.c) sets, and leaves to it what it refuses.
static void test_number_path(void) {
    static const double values[] = {0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 2e-3, 1e-300, 64.0, 4096.0, 4097.0, 1e9,
                                    1e9 + 1, 2147483647.0, 1e15, -1e15, 1e300, 123456.789, 1.0 / 3.0, -7.0};
    ParamSpec program_int, program_real;
    config_program_param(&program_int, "n", NULL, PT_INT, 0);
    config_program_param(&program_real, "x", NULL, PT_REAL, 1);
    int taken = 0, compared = 0;
    for (int i = -2; i < config_nparams; i++) {
        const ParamSpec *p = i == -2 ? &program_int : i == -1 ? &program_real : &config_params[i];
        if (p->type != PT_INT && p->type != PT_REAL) continue;
        for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
            const double v = values[k];
            TrialConfig a, b;
            config_defaults(&a);
            config_defaults(&b);
            char text[64], err[256];
            snprintf(text, sizeof text, v == trunc(v) && fabs(v) < 1e15 ? "%.0f" : "%.17g", v);
            const int fast = config_set_number(&a, p, v) == 0, slow = config_set(&b, p, text, err, sizeof err) == 0;
            CHECK(!fast || slow, "%s = %s: set as a number, refused as text (%s)", p->name, text, err);
            if (!fast) {
                config_defaults(&b);
                CHECK(!memcmp(&a, &b, sizeof a), "%s = %s: refused as a number, but the configuration changed",
                      p->name, text);
                continue;
            }
            CHECK(!memcmp(&a, &b, sizeof a), "%s = %s: set as a number differs from set as text", p->name, text);
            taken++, compared++;
        }
    }
    CHECK(taken > 100, "only %d of the values were set as numbers", taken);
    printf("test_space: %d numbers set without their text, each as config_set of the text sets it\n", compared);
}

// One change to configuration c, the k-th of a list that runs through every parameter:
// a real moved by a unit in the last place, by 1e-15 of itself or by one; an integer or a
// choice by one; the text; the offsets' groups; a program value's number by a unit in the
// last place or by one, its type, whether it is set, its text. 0 when k is past the list.
static int perturb(TrialConfig *c, int k) {
    for (int i = 0; i < config_nparams; i++) {
        const ParamSpec *p = &config_params[i];
        char *base = (char *)c + p->offset;
        const int n = p->type == PT_REAL ? 3 : 1;
        if (k >= n) {
            k -= n;
            continue;
        }
        switch (p->type) {
        case PT_REAL: {
            double *v = (double *)base;
            *v = k == 0 ? nextafter(*v, INFINITY) : k == 1 ? *v * (1 + 1e-15) : *v + 1;
            break;
        }
        case PT_INT:
        case PT_CHOICE: *(int *)base = !*(int *)base; break;
        case PT_TEXT: strcat(base, "x"); break;
        case PT_INTLIST:
            if (c->n_groups == 1) c->group_len[1] = c->group_len[0] - 1, c->group_len[0] = 1, c->n_groups = 2;
            else c->n_groups = 1;
            break;
        }
        return 1;
    }
    for (int i = 0; i < c->n_program; i++, k -= 6) {
        ProgramValue *v = &c->program[i];
        if (k >= 6) continue;
        if (k == 0) v->number = nextafter(v->number, -INFINITY);
        if (k == 1) v->number += 1;
        if (k == 2) v->type = v->type == PT_INT ? PT_REAL : PT_INT;
        if (k == 3) v->set = !v->set;
        if (k == 4) v->type = PT_TEXT;
        if (k == 5) v->name[0] ^= 1;
        return 1;
    }
    return 0;
}

// config_same_json, which a resume asks of every trial, says what comparing the two
// configurations' JSON texts says, also where two reals a unit in the last place apart
// print alike.
static void test_same_json(void) {
    static const char *const spaces[] = {
        "method: random\ntrials: 20\nseed: 3\nparameters:\n  attention: {values: [mha, grassmann]}\n"
        "  lr: {min: 0.0001, max: 0.01, distribution: log_uniform_values}\n  lambda_orth: {min: 0.0, max: 1.0}\n"
        "  layers: {value: 2}\n  grassmann_offsets: {value: [[1, 2], [4]]}\n",
        "method: random\ntrials: 20\nseed: 5\nprogram: /bin/true\ncommand: [\"${program}\", \"${args}\"]\n"
        "metric: {name: loss, goal: minimize}\nparameters:\n  x: {min: 0.0, max: 1.0}\n  n: {values: [1, 2, 3]}\n"
        "  name: {values: [a, b]}\n"};
    int agree = 0, same = 0, alike_apart = 0;
    for (size_t sp = 0; sp < sizeof spaces / sizeof *spaces; sp++) {
        SweepSpec s;
        if (parse(&s, spaces[sp])) continue;
        Sampler *sm = sampler_create(&s);
        for (int id = 0; id < 20; id++) {
            TrialConfig a;
            sampler_config(sm, id, &a);
            for (int k = -1; k == -1 || k < 200; k++) {
                TrialConfig b = a;
                if (k >= 0 && !perturb(&b, k)) break;
                char *ta = config_to_json_text(&a), *tb = config_to_json_text(&b);
                const int texts = !strcmp(ta, tb), ours = config_same_json(&a, &b);
                CHECK(ours == texts, "space %zu trial %d change %d: config_same_json %d, the texts %s\n%s\n%s", sp, id,
                      k, ours, texts ? "alike" : "differ", ta, tb);
                agree += ours == texts;
                same += texts;
                alike_apart += texts && memcmp(&a, &b, sizeof a);
                cJSON_free(ta);
                cJSON_free(tb);
            }
        }
        sampler_free(sm);
        space_free(&s);
    }
    CHECK(same > 40 && agree - same > 400 && alike_apart > 0,
          "only %d alike (%d of them with different bytes) and %d different pairs tried", same, alike_apart, agree - same);
    printf("test_space: config_same_json agrees with the JSON texts on %d pairs (%d alike, %d of them with different "
           "bytes)\n", agree, same, alike_apart);
}

static void test_errors(void) {
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"method: grid\nparameters:\n  lr: {values: [0.1, 0.1]}\n", "mem.yaml:3:22: values of lr lists 0.1 twice"},
        {"method: grid\nparameters:\n  heads: {values: [2, 3]}\n  d_model: {value: 64}\n",
         "mem.yaml:4:3: heads (3) must divide d_model (64) (in the combination heads=3)"},
        {"method: grid\nparameters:\n  attention: {values: [mha, tucker]}\n  task: {values: [recall]}\n"
         "  recall_vocab: {values: [64, 65], when: {attention: tucker}}\n",
         "mem.yaml:5:3: recall_vocab (65) must be even (half keys, half values) (in the combination attention=tucker, "
         "task=recall, recall_vocab=65)"},
        {"method: random\ntrials: 3\nparameters:\n  core_rank: {values: [1], when: {core_rank: 1}}\n",
         "mem.yaml:4:35: core_rank cannot depend on itself"},
        {"method: grid\nparameters:\n  core_rank: {values: [1, 2], when: {attention: tucker}}\n"
         "  attention: {values: [mha, tucker]}\n",
         "mem.yaml:3:38: when refers to attention, which must be defined before core_rank in parameters"},
        {"method: grid\ntask: charlm\nparameters:\n  data_dir: {values: [/nonexistent/fortunes]}\n",
         "mem.yaml:4:3: charlm data directory /nonexistent/fortunes: No such file or directory (install the Debian "
         "package fortunes or set data_dir)"},
        {"method: grid\nparameters:\n  grassmann_offsets: {values: [[1, 2], [1, 2, 4], '1,2']}\n",
         "mem.yaml:3:51: values of grassmann_offsets lists 1,2 twice"},
        {"method: grid\nparameters:\n  attention: {value: grassmann}\n  layers: {values: [2, 3]}\n"
         "  grassmann_offsets: {value: [[1], [2, 4]]}\n",
         "mem.yaml:5:3: grassmann_offsets has 2 groups for 3 layers (one group for all layers, or one for each) (in "
         "the combination layers=3)"},
        {"method: grid\nparameters:\n  grassmann_offsets: {value: [[1, 2], []]}\n",
         "mem.yaml:3:39: grassmann_offsets needs at least one offset in every layer's group"},
        {"method: grid\nparameters:\n  grassmann_offsets: {value: '1,2;2,2'}\n",
         "mem.yaml:3:30: grassmann_offsets lists 2 twice in one layer"},
        {"method: grid\nparameters:\n  grassmann_offsets: {value: [[1, 2], 3]}\n",
         "mem.yaml:3:39: grassmann_offsets lists groups of integers, got '3'"},
        {"method: grid\n---\nmethod: random\n", "mem.yaml:3:1: a second YAML document: a sweep file holds one"},
        // Decisions read validation: the old names say their val_ spelling; no test metric decides.
        {"method: grid\nmetric: {name: loss}\nparameters: {attention: {value: mha}}\n",
         "mem.yaml:2:16: metric 'loss' is now called 'val_loss' (every decision reads the validation split)"},
        {"method: grid\nmetric:\n  name: bits_per_byte\nparameters: {attention: {value: mha}}\n",
         "mem.yaml:3:9: metric 'bits_per_byte' is now called 'val_bits_per_byte' (every decision reads the "
         "validation split)"},
        {"method: grid\nmetric: {name: test_loss, goal: minimize}\nparameters: {attention: {value: mha}}\n",
         "mem.yaml:2:16: metric 'test_loss' is a test metric, and test metrics never drive decisions (use "
         "'val_loss')"},
        {"method: grid\nmetric: {name: test_reward}\nparameters: {attention: {value: mha}}\n",
         "mem.yaml:2:16: metric 'test_reward' is a test metric, and test metrics never drive decisions (use one of "
         "val_accuracy, val_loss, val_bits_per_byte, reward)"},
        {"method: grid\nmetric: {name: rank_deviation}\nparameters: {attention: {value: mha}}\n",
         "mem.yaml:2:16: unknown metric 'rank_deviation' (allowed: val_accuracy, val_loss, val_bits_per_byte, "
         "reward)"},
        {"method: grid\ntask: fashion_mnist\nmetric: {name: val_bits_per_byte}\nparameters: {attention: {value: mha}}\n",
         "mem.yaml:3:16: metric val_bits_per_byte is measured for task charlm only (use val_loss): this sweep trains "
         "fashion_mnist"},
        {"method: grid\nparameters: {a: [1}\n", "mem.yaml:2:19: YAML syntax error: did not find expected ',' or ']' "
                                               "(while parsing a flow sequence at 2:17)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        SweepSpec s;
        char err[1024];
        int rc = space_parse(&s, "mem.yaml", cases[i].text, strlen(cases[i].text), err, sizeof err);
        CHECK(rc == -1 && !strcmp(err, cases[i].want), "case %zu:\n  got  %s\n  want %s", i, rc ? err : "(no error)",
              cases[i].want);
        CHECK(s.params == NULL && s.text == NULL, "case %zu: spec not emptied", i);
        space_free(&s);  // harmless after a failure
    }
    char err[256];
    SweepSpec s;
    CHECK(space_load(&s, "/nonexistent/x.yaml", err, sizeof err) == -1 &&
              !strcmp(err, "/nonexistent/x.yaml: No such file or directory"),
          "missing file: %s", err);
}

int main(void) {
    test_examples_load();
    test_header_example();
    test_reward_tensor();
    test_regularised_terms_noted();
    test_program_metric_noted();
    test_grid_condition();
    test_random_sobol_reproducible();
    test_distributions();
    test_wandb_distributions_ks();
    test_grid_axes();
    test_evolution();
    test_repeats();
    test_asha();
    test_asha_per_configuration();
    test_offset_schedule();
    test_number_path();
    test_same_json();
    test_errors();
    return check_report("test_space");
}
