// recall.c: multi-query associative recall (MQAR, as in Zoology: Arora et al. 2023).
//
// Vocabulary V (even): keys are tokens [0, V/2), values [V/2, V). A sequence of
// T = 4P tokens is P key-value pairs (distinct keys, distinct values: both drawn without
// replacement), then the P keys again in random order, each followed by a random token
// of the whole vocabulary (Zoology's random_non_queries) instead of its value:
//
//   k0 v0 k1 v1 ... k(P-1) v(P-1)  q0 r0 q1 r1 ... q(P-1) r(P-1)
//
// The only targets are at the query keys qj, where the target is qj's value, so every
// sequence asks exactly P questions and no answer is ever in the input (a model cannot
// narrow a later query down by the answers of earlier ones); all other targets are -1.
// Baselines: chance 2/V (a value at random), and 1/P for a model that only knows which
// values this sequence holds (recall_baselines). Training sequences come from the
// trial's generator; the validation and the test set are 2000 sequences each, generated
// once from a fixed seed of their own, the same for every trial.
#include "data/tasks.h"

#include <stdint.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

#include "common/util.h"

// An epoch: 384 000 generated sequences, 3000 steps at the default batch of 128 (the budget in
// which the default mha learns 8 pairs; docs/tasks.md).
enum { N_HELD_OUT = 2000, N_TRAIN = 384000, MAX_VOCAB = 65536 };
// Seeds of the validation and the test generator: distinct, and above INT_MAX, so no
// --seed value (an int in [0, 2^31 - 1]) is either of them. The validation set is the
// one held-out set of the versions before the split.
#define VAL_SEED 0xA77E5EEDUL
#define TEST_SEED 0xA77E7E57UL

struct Recall {
    int P, V;
    uint16_t *val, *test;  // (N_HELD_OUT, 4P) tokens each; V <= 65536 so a token fits 16 bits
    uint16_t *val_answers, *test_answers;  // (N_HELD_OUT, P): query j's value
    int *pool;       // (V/2) the identity 0..V/2-1 between draws; scratch for drawing P of them
    int *swaps;      // (P) where each draw came from, to undo it
    int *keys, *values;  // (P) this sequence's pairs
    int *order;      // (P) query order
};

static void swap_int(int *a, int *b) {
    int t = *a;
    *a = *b;
    *b = t;
}

// P distinct numbers of [0, V/2) into out, in random order (a partial Fisher-Yates on the
// pool, undone after, so a sequence depends on the rng alone and not on earlier draws).
static void draw_distinct(Recall *r, int *out, gsl_rng *rng) {
    const int P = r->P, K = r->V / 2;
    for (int i = 0; i < P; i++) {
        int j = i + (int)gsl_rng_uniform_int(rng, (unsigned long)(K - i));
        swap_int(&r->pool[i], &r->pool[j]);
        r->swaps[i] = j;
        out[i] = r->pool[i];
    }
    for (int i = P - 1; i >= 0; i--) swap_int(&r->pool[i], &r->pool[r->swaps[i]]);
}

// One sequence (4P tokens) and its answers (P: query j's value) from rng.
static void generate(Recall *r, int *tokens, int *answers, gsl_rng *rng) {
    const int P = r->P, K = r->V / 2;
    draw_distinct(r, r->keys, rng);
    draw_distinct(r, r->values, rng);
    for (int i = 0; i < P; i++) {
        tokens[2 * i] = r->keys[i];
        tokens[2 * i + 1] = K + r->values[i];
    }
    for (int i = 0; i < P; i++) r->order[i] = i;
    gsl_ran_shuffle(rng, r->order, (size_t)P, sizeof(int));
    int *query = tokens + 2 * P;
    for (int j = 0; j < P; j++) {
        query[2 * j] = r->keys[r->order[j]];
        query[2 * j + 1] = (int)gsl_rng_uniform_int(rng, (unsigned long)r->V);
        answers[j] = K + r->values[r->order[j]];
    }
}

// N_HELD_OUT sequences and their answers from a generator seeded with seed.
static void generate_fixed(Recall *r, unsigned long seed, uint16_t **set, uint16_t **answers) {
    const int P = r->P, T = 4 * P;
    *set = xmalloc((size_t)N_HELD_OUT * T * sizeof(uint16_t));
    *answers = xmalloc((size_t)N_HELD_OUT * P * sizeof(uint16_t));
    int *tokens = xmalloc((size_t)T * sizeof(int)), *ans = xmalloc((size_t)P * sizeof(int));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (long k = 0; k < N_HELD_OUT; k++) {
        generate(r, tokens, ans, rng);
        for (int t = 0; t < T; t++) (*set)[k * T + t] = (uint16_t)tokens[t];
        for (int j = 0; j < P; j++) (*answers)[k * P + j] = (uint16_t)ans[j];
    }
    gsl_rng_free(rng);
    free(ans);
    free(tokens);
}

// targets (4P): at query j's key its value, -1 elsewhere.
static void set_targets(const int *answers, int *targets, int P) {
    for (int t = 0; t < 4 * P; t++) targets[t] = -1;
    for (int j = 0; j < P; j++) targets[2 * P + 2 * j] = answers[j];
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
    r->keys = xmalloc((size_t)P * sizeof(int));
    r->values = xmalloc((size_t)P * sizeof(int));
    r->order = xmalloc((size_t)P * sizeof(int));

    generate_fixed(r, VAL_SEED, &r->val, &r->val_answers);
    generate_fixed(r, TEST_SEED, &r->test, &r->test_answers);

    info->seq_len = 4 * P;
    info->vocab = V;
    info->n_classes = V;
    info->n_train = N_TRAIN;
    info->n_val = N_HELD_OUT;
    info->n_test = N_HELD_OUT;
    return r;
}

void recall_baselines(int pairs, int vocab, double *chance, double *values_only) {
    *chance = 2.0 / vocab;
    *values_only = 1.0 / pairs;
}

void recall_free(Recall *r) {
    if (!r) return;
    free(r->val);
    free(r->test);
    free(r->val_answers);
    free(r->test_answers);
    free(r->pool);
    free(r->swaps);
    free(r->keys);
    free(r->values);
    free(r->order);
    free(r);
}

void recall_train_batch(Recall *r, Batch *b, gsl_rng *rng) {
    const int P = r->P, T = 4 * P;
    int *answers = xmalloc((size_t)P * sizeof(int));
    for (int row = 0; row < b->B; row++) {
        int *x = b->tokens + (size_t)row * T;
        generate(r, x, answers, rng);
        set_targets(answers, b->targets + (size_t)row * T, P);
    }
    free(answers);
}

void recall_eval_rows(const Recall *r, EvalSplit split, Batch *b, long start, int rows) {
    const int P = r->P, T = 4 * P;
    int *answers = xmalloc((size_t)P * sizeof(int));
    for (int row = 0; row < rows; row++) {
        const long k = start + row;
        const uint16_t *src = (split == SPLIT_VAL ? r->val : r->test) + (size_t)k * T;
        const uint16_t *ans = (split == SPLIT_VAL ? r->val_answers : r->test_answers) + (size_t)k * P;
        int *x = b->tokens + (size_t)row * T;
        for (int t = 0; t < T; t++) x[t] = src[t];
        for (int j = 0; j < P; j++) answers[j] = ans[j];
        set_targets(answers, b->targets + (size_t)row * T, P);
    }
    free(answers);
}
