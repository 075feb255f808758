// recall.c: multi-query associative recall (MQAR, as in Zoology: Arora et al. 2023).
//
// Vocabulary V (even): keys are tokens [0, V/2), values [V/2, V). A sequence of
// T = 4P tokens is P key-value pairs (distinct keys, values drawn with replacement)
// followed by the P keys again in random order, each followed by its value:
//
//   k0 v0 k1 v1 ... k(P-1) v(P-1)  q0 a0 q1 a1 ... q(P-1) a(P-1)
//
// The only targets are at the query keys qj, where the target is the paired value
// aj (the next token), so every sequence asks exactly P questions; all other
// targets are -1. Training sequences come from the trial's generator; the validation
// and the test set are 2000 sequences each, generated once from a fixed seed of their
// own, the same for every trial.
#include "data/tasks.h"

#include <stdint.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

#include "common/util.h"

enum { N_HELD_OUT = 2000, N_TRAIN = 10000, MAX_VOCAB = 65536 };
// Seeds of the validation and the test generator: distinct, and above INT_MAX, so no
// --seed value (an int in [0, 2^31 - 1]) is either of them. The validation set is the
// one held-out set of the versions before the split.
#define VAL_SEED 0xA77E5EEDUL
#define TEST_SEED 0xA77E7E57UL

struct Recall {
    int P, V;
    uint16_t *val, *test;  // (N_HELD_OUT, 4P) tokens each; V <= 65536 so a token fits 16 bits
    int *pool;       // (V/2) the identity 0..V/2-1 between draws; scratch for drawing keys
    int *swaps;      // (P) where each key was drawn from, to undo the draw
    int *order;      // (P) query order
};

static void swap_int(int *a, int *b) {
    int t = *a;
    *a = *b;
    *b = t;
}

// One sequence (4P tokens) from rng.
static void generate(Recall *r, int *tokens, gsl_rng *rng) {
    int P = r->P, K = r->V / 2;
    // partial Fisher-Yates: pool[0..P) becomes P distinct keys in random order
    for (int i = 0; i < P; i++) {
        int j = i + (int)gsl_rng_uniform_int(rng, (unsigned long)(K - i));
        swap_int(&r->pool[i], &r->pool[j]);
        r->swaps[i] = j;
        tokens[2 * i] = r->pool[i];
        tokens[2 * i + 1] = K + (int)gsl_rng_uniform_int(rng, (unsigned long)K);
    }
    // undo the swaps, so a sequence depends on the rng alone and not on earlier draws
    for (int i = P - 1; i >= 0; i--) swap_int(&r->pool[i], &r->pool[r->swaps[i]]);

    for (int i = 0; i < P; i++) r->order[i] = i;
    gsl_ran_shuffle(rng, r->order, (size_t)P, sizeof(int));
    int *query = tokens + 2 * P;
    for (int j = 0; j < P; j++) {
        query[2 * j] = tokens[2 * r->order[j]];
        query[2 * j + 1] = tokens[2 * r->order[j] + 1];
    }
}

// N_HELD_OUT sequences from a generator seeded with seed.
static uint16_t *generate_fixed(Recall *r, unsigned long seed) {
    const int T = 4 * r->P;
    uint16_t *set = xmalloc((size_t)N_HELD_OUT * T * sizeof(uint16_t));
    int *tokens = xmalloc((size_t)T * sizeof(int));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (long k = 0; k < N_HELD_OUT; k++) {
        generate(r, tokens, rng);
        for (int t = 0; t < T; t++) set[k * T + t] = (uint16_t)tokens[t];
    }
    gsl_rng_free(rng);
    free(tokens);
    return set;
}

// targets (4P): the value after each query key, -1 elsewhere.
static void set_targets(const int *tokens, int *targets, int P) {
    for (int t = 0; t < 4 * P; t++) targets[t] = -1;
    for (int t = 2 * P; t < 4 * P; t += 2) targets[t] = tokens[t + 1];
}

Recall *recall_open(const TrialConfig *c, DatasetInfo *info) {
    int P = c->recall_pairs, V = c->recall_vocab;
    if (V < 2 || V > MAX_VOCAB || V % 2 != 0)
        die(EXIT_BADINPUT, "recall: recall_vocab must be even and in [2, %d], got %d", MAX_VOCAB, V);
    if (P < 1 || P > V / 2)
        die(EXIT_BADINPUT, "recall: recall_pairs must be in [1, recall_vocab/2 = %d], got %d", V / 2, P);

    Recall *r = xcalloc(1, sizeof *r);
    r->P = P;
    r->V = V;
    r->pool = xmalloc((size_t)(V / 2) * sizeof(int));
    for (int i = 0; i < V / 2; i++) r->pool[i] = i;
    r->swaps = xmalloc((size_t)P * sizeof(int));
    r->order = xmalloc((size_t)P * sizeof(int));

    r->val = generate_fixed(r, VAL_SEED);
    r->test = generate_fixed(r, TEST_SEED);

    info->seq_len = 4 * P;
    info->vocab = V;
    info->n_classes = V;
    info->n_train = N_TRAIN;
    info->n_val = N_HELD_OUT;
    info->n_test = N_HELD_OUT;
    return r;
}

void recall_free(Recall *r) {
    if (!r) return;
    free(r->val);
    free(r->test);
    free(r->pool);
    free(r->swaps);
    free(r->order);
    free(r);
}

void recall_train_batch(Recall *r, Batch *b, gsl_rng *rng) {
    int T = 4 * r->P;
    for (int row = 0; row < b->B; row++) {
        int *x = b->tokens + (size_t)row * T;
        generate(r, x, rng);
        set_targets(x, b->targets + (size_t)row * T, r->P);
    }
}

void recall_eval_rows(const Recall *r, EvalSplit split, Batch *b, long start, int rows) {
    int T = 4 * r->P;
    for (int row = 0; row < rows; row++) {
        const uint16_t *src = (split == SPLIT_VAL ? r->val : r->test) + (size_t)(start + row) * T;
        int *x = b->tokens + (size_t)row * T;
        for (int t = 0; t < T; t++) x[t] = src[t];
        set_targets(x, b->targets + (size_t)row * T, r->P);
    }
}
