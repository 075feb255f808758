// test_space_fuzz.c: a mutation fuzz run of the sweep loader (plain gcc; ASan in the
// sanitizer build).
//
// Seeds are the examples in sweeps/, the error corpus in tests/bad_yaml/ and a few
// texts below. Each round applies one to four mutations to a seed (byte flips,
// YAML-significant bytes, deletions, truncation, dictionary tokens, duplicated and
// swapped lines, deep nesting, huge numbers, anchors and aliases, tabs) and loads the
// result with space_parse. Every outcome must be either a valid spec, whose first
// trials sample and pass config_check, or exactly one error line
// "fuzz.yaml:LINE:COL: message" with the spec left empty. A crash fails the run.
// modules: space
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "space/asha.h"
#include "space/space.h"

// A finished trial of configuration c whose reward (the sweep's metric) is `reward`
// (NaN: it failed), reported to the sampler.
static void report_reward(Sampler *sm, int id, const TrialConfig *c, double reward) {
    TrialResult r = {.id = id, .config = *c, .reward = reward};
    r.status = isnan(reward) ? TRIAL_FAILED : TRIAL_OK;
    sampler_report(sm, &r);
}

enum { ROUNDS = 20000, MAX_SEEDS = 128, MAX_TEXT = 1 << 16 };

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t next_random(void) {  // xorshift64*
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Du;
}

static size_t below(size_t n) { return n ? (size_t)(next_random() % n) : 0; }

typedef struct {
    char *p;
    size_t len;
} Text;

static char *seeds[MAX_SEEDS];
static int n_seeds, n_valid_seeds;  // the valid ones first

static void add_seed(const char *text, size_t len) {
    if (n_seeds == MAX_SEEDS || len >= MAX_TEXT / 2) return;
    seeds[n_seeds] = malloc(len + 1);
    memcpy(seeds[n_seeds], text, len);
    seeds[n_seeds++][len] = 0;
}

static void add_seed_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".yaml")) continue;
        char path[512], buf[MAX_TEXT];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        add_seed(buf, len);
    }
    closedir(d);
}

// Replace [at, at + del) of t with ins[0..n).
static void splice(Text *t, size_t at, size_t del, const char *ins, size_t n) {
    if (at > t->len) at = t->len;
    if (del > t->len - at) del = t->len - at;
    if (t->len - del + n >= MAX_TEXT) return;
    memmove(t->p + at + n, t->p + at + del, t->len - at - del);
    memcpy(t->p + at, ins, n);
    t->len = t->len - del + n;
}

// Start and length of a random line.
static void pick_line(const Text *t, size_t *start, size_t *len) {
    size_t at = below(t->len + 1);
    while (at > 0 && t->p[at - 1] != '\n') at--;
    size_t end = at;
    while (end < t->len && t->p[end] != '\n') end++;
    *start = at;
    *len = end < t->len ? end - at + 1 : end - at;
}

static const char special[] = ":{}[],-&*!|>'\"#\t\n %@`?~\\";

static const char *const tokens[] = {
    "values: ", "value: ", "min: ", "max: ", "q: ", "when: {attention: tucker}", "distribution: q_uniform",
    "distribution: int_uniform", "distribution: log_uniform_values", "distribution: categorical",
    "probabilities: [1]", "probabilities: [0.5, 0.5]", "&a ", "*a", "<<: *a", "1e308", "-1", "0", "0.5",
    "99999999999999999999999", "0x10", "nan", ".inf", "~", "null", "true", "[", "]", "{", "}", "\t", "\n  ", "- ",
    "? ", "!!str ", "!!binary ", "%YAML 1.1\n", "---\n", "...\n", "'", "\"", "\"\\0\"", "\"\\u0000\"",
    "method: grid\n", "method: sobol\n", "method: evolution\n", "trials: 1000\n", "repeats: 1000\n", "seed: 0\n",
    "scheduler: {name: asha, min_steps: 1, eta: 2}\n", "budget: {steps: 10}\n", "evolution: {population: 2}\n",
    "reward: {modes: [roles], ideal_ranks: {roles: 3}}\n", "  d_model: {min: 1, max: 4096}\n",
    "  heads: {values: [1, 2, 3]}\n", "  core_rank: {values: [1, 9], when: {attention: tucker}}\n",
    "  task: {values: [recall, charlm]}\n", "  recall_vocab: {min: 4, max: 9}\n",
    "  grassmann_offsets: {values: [[1, 2], '3,4']}\n", "  data_dir: {value: /nonexistent}\n",
    "  lr: {distribution: q_uniform, min: 0, max: 1, q: 1e-300}\n", "attention", "tucker", "core_rank", "d_model",
    "heads", "lambda_orth", "parameters", "when", "steps", "épsilon", "\xff\xfe", "\xef\xbb\xbf"};

static void mutate(Text *t) {
    char buf[512];
    size_t at = below(t->len + 1), start, len;
    switch (below(12)) {
    case 0:  // flip a bit
        if (t->len) t->p[below(t->len)] ^= (char)(1u << below(8));
        break;
    case 1:  // a byte YAML cares about
        if (t->len) t->p[below(t->len)] = special[below(sizeof special - 1)];
        break;
    case 2:  // delete a few bytes
        splice(t, at, 1 + below(16), "", 0);
        break;
    case 3:  // truncate
        t->len = at;
        break;
    case 4: {  // a dictionary token
        const char *tok = tokens[below(sizeof tokens / sizeof tokens[0])];
        splice(t, at, below(3) ? 0 : below(8), tok, strlen(tok));
        break;
    }
    case 5:  // duplicate a line (duplicate keys)
        pick_line(t, &start, &len);
        if (len < sizeof buf) {
            memcpy(buf, t->p + start, len);
            splice(t, start, 0, buf, len);
        }
        break;
    case 6: {  // move a line elsewhere
        pick_line(t, &start, &len);
        if (len < sizeof buf) {
            memcpy(buf, t->p + start, len);
            splice(t, start, len, "", 0);
            splice(t, below(t->len + 1), 0, buf, len);
        }
        break;
    }
    case 7: {  // deep nesting
        size_t depth = 1 + below(120);
        const char *open = below(2) ? "[" : "{a: ";
        for (size_t i = 0; i < depth && t->len + 8 < MAX_TEXT; i++) splice(t, at, 0, open, strlen(open));
        break;
    }
    case 8: {  // a huge number where a digit was
        size_t i = below(t->len + 1);
        while (i < t->len && (t->p[i] < '0' || t->p[i] > '9')) i++;
        size_t n = 1 + below(400);
        memset(buf, '9', n < sizeof buf ? n : sizeof buf - 1);
        if (i < t->len) splice(t, i, 1, buf, n < sizeof buf ? n : sizeof buf - 1);
        break;
    }
    case 9: {  // an anchor on one value, aliases to it elsewhere
        const char *a = below(2) ? "&x " : "&x [1, *x] ";
        splice(t, at, 0, a, strlen(a));
        for (size_t k = below(4); k-- > 0;) splice(t, below(t->len + 1), 0, " *x", 3);
        break;
    }
    case 10:  // a tab in an indentation
        pick_line(t, &start, &len);
        if (len && t->p[start] == ' ') t->p[start] = '\t';
        break;
    case 11:  // copy a stretch elsewhere
        len = 1 + below(64);
        if (at + len <= t->len && len < sizeof buf) {
            memcpy(buf, t->p + at, len);
            splice(t, below(t->len + 1), 0, buf, len);
        }
        break;
    }
}

// "fuzz.yaml:LINE:COL: message" and nothing else.
static int clean_error(const char *err) {
    const char *p = err;
    if (strncmp(p, "fuzz.yaml:", 10)) return 0;
    p += 10;
    for (int part = 0; part < 2; part++) {
        if (*p < '1' || *p > '9') return 0;
        while (*p >= '0' && *p <= '9') p++;
        if (*p++ != ':') return 0;
    }
    return *p == ' ' && p[1] && !strchr(err, '\n');
}

// A loaded spec must be usable: trials, size, samples that pass config_check.
static void check_spec(SweepSpec *s, const Text *t) {
    CHECK(s->trials >= 1 && s->repeats >= 1 && s->trials % s->repeats == 0 && s->n_params >= 0,
          "valid spec with %d trials, %d repeats:\n%.*s", s->trials, s->repeats, (int)t->len, t->p);
    long size = space_size(s);
    CHECK(s->method != METHOD_GRID || (size >= 1 && s->trials == size * s->repeats),
          "grid of %ld configurations with %d trials", size, s->trials);
    Sampler *sm = sampler_create(s);
    for (int k = 0; k < 12; k++) {
        int id = k < 6 ? k : (int)below((size_t)s->trials);
        TrialConfig c;
        char err[256];
        if (id >= s->trials || sampler_config(sm, id, &c)) continue;  // evolution may wait for results
        CHECK(config_check(&c, err, sizeof err) == 0, "trial %d fails config_check: %s\n%.*s", id, err, (int)t->len,
              t->p);
        report_reward(sm, id, &c, (double)below(100));
    }
    sampler_free(sm);
    int rungs[16];
    CHECK(asha_rungs(s, rungs, 16) >= 0, "asha rungs");
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : ROUNDS;  // test_space_fuzz [ROUNDS [SEED]] for longer runs
    if (argc > 2) rng_state = strtoull(argv[2], NULL, 10) * 2 + 1;  // odd: never the stuck state 0
    add_seed_files("sweeps");
    static const char *const builtin[] = {
        "method: grid\nparameters:\n  attention: {values: [mha, tucker]}\n"
        "  core_rank: {values: [1, 2], when: {attention: [tucker]}}\n  heads: {values: [2, 4]}\n",
        "method: evolution\ntrials: 20\nrepeats: 2\nevolution: {population: 3, sample_size: 2}\n"
        "parameters:\n  lr: {distribution: log_uniform_values, min: 1e-4, max: 1e-2}\n"
        "  batch: {distribution: q_uniform, min: 16, max: 64, q: 16}\n  task: {values: [recall]}\n",
        "base: &b {values: [0, 0.1]}\nmethod: random\ntrials: 4\nparameters:\n  lambda_orth: *b\n  lambda_l2: *b\n",
    };
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) add_seed(builtin[i], strlen(builtin[i]));
    n_valid_seeds = n_seeds;
    add_seed_files("tests/bad_yaml");
    CHECK(n_seeds >= 10, "only %d seeds (run from the repository root)", n_seeds);
    if (!n_seeds) return check_report("test_space_fuzz");

    Text t = {malloc(MAX_TEXT), 0};
    int valid = 0, errors = 0;
    double slowest = 0, start = (double)clock() / CLOCKS_PER_SEC;
    for (int r = 0; r < rounds; r++) {
        // Three rounds in four start from a valid file, so mutants reach the samplers.
        const char *seed = seeds[below(4) ? below((size_t)n_valid_seeds) : below((size_t)n_seeds)];
        t.len = strlen(seed);
        memcpy(t.p, seed, t.len);
        for (size_t m = 1 + below(4); m-- > 0;) mutate(&t);
        SweepSpec s;
        char err[1024] = "";
        double t0 = (double)clock() / CLOCKS_PER_SEC;
        if (space_parse(&s, "fuzz.yaml", t.p, t.len, err, sizeof err) == 0) {
            valid++;
            check_spec(&s, &t);
            space_free(&s);
        } else {
            errors++;
            CHECK(clean_error(err), "round %d: not one clean error line: '%s'\n%.*s", r, err, (int)t.len, t.p);
            CHECK(s.params == NULL && s.text == NULL && s.name == NULL, "round %d: spec not emptied", r);
        }
        double dt = (double)clock() / CLOCKS_PER_SEC - t0;
        if (dt > slowest) slowest = dt;
    }
    CHECK(valid >= rounds / 40 && errors >= rounds / 2, "only %d valid and %d rejected of %d", valid, errors, rounds);
    printf("test_space_fuzz: %d rounds, %d valid, %d clean errors, %.2f s (slowest %.3f s)\n", rounds, valid, errors,
           (double)clock() / CLOCKS_PER_SEC - start, slowest);
    free(t.p);
    for (int i = 0; i < n_seeds; i++) free(seeds[i]);
    return check_report("test_space_fuzz");
}
