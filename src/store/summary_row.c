// summary_row.c: a trial as the report holds it (summary.h SummaryRow): its /summary
// values, its configuration as the words in which it differs from the sweep's base, its
// reason, its evaluations as the verdict reads them, and the views that materialise its
// configuration again.
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "store/summary.h"
#include "trial/runner.h"

// A configuration is compared and rebuilt in 8-byte words, every byte of it (padding and
// unused program slots included), so a row's configuration is the read one exactly.
enum { CONFIG_WORDS = sizeof(TrialConfig) / sizeof(uint64_t) };
_Static_assert(sizeof(TrialConfig) % sizeof(uint64_t) == 0, "a TrialConfig is whole words");
_Static_assert(CONFIG_WORDS <= 65536, "a word's place fits in a uint16_t");

// Where row's words go in a TrialConfig, in words (after the words in their allocation).
static uint16_t *word_places(const SummaryRow *row) { return (uint16_t *)(void *)(row->words + row->n_words); }

// Words of a configuration: to[at[k]] = from[k] (from_places: from[at[k]]), k < n.
static void put_words(TrialConfig *to, const uint64_t *from, const uint16_t *at, int n, int from_places) {
    for (int k = 0; k < n; k++)
        memcpy((char *)to + at[k] * sizeof(uint64_t), from + (from_places ? at[k] : k), sizeof(uint64_t));
}

void summary_row_set(SummaryRow *row, const TrialResult *t) {
    row->id = t->id, row->status = t->status, row->steps = t->steps;
    row->n_params = t->n_params, row->seconds = t->seconds, row->program_metric = t->program_metric;
    for (int i = 0; i < n_metrics; i++) row->metric[i] = metric_value(t, &metrics[i]);
}

void summary_row_values(const SummaryRow *row, TrialResult *t) {
    t->id = row->id, t->status = row->status, t->steps = row->steps;
    t->n_params = row->n_params, t->seconds = row->seconds, t->program_metric = row->program_metric;
    for (int i = 0; i < n_metrics; i++) *(double *)((char *)t + metrics[i].offset) = row->metric[i];
}

// c's words that differ from base, into row->words (one allocation, the places after them).
static void config_words(SummaryRow *row, const TrialConfig *base, const TrialConfig *c) {
    uint16_t at[CONFIG_WORDS];
    int n = 0;
    for (int k = 0; k < CONFIG_WORDS; k++)
        if (memcmp((const uint64_t *)(const void *)base + k, (const uint64_t *)(const void *)c + k, sizeof(uint64_t)))
            at[n++] = (uint16_t)k;
    row->n_words = n;
    row->words = n ? xmalloc((size_t)n * (sizeof(uint64_t) + sizeof(uint16_t))) : NULL;
    for (int k = 0; k < n; k++) memcpy(&row->words[k], (const uint64_t *)(const void *)c + at[k], sizeof(uint64_t));
    if (n) memcpy(word_places(row), at, (size_t)n * sizeof *at);
}

void summary_row_details(const SweepSummary *s, SummaryRow *row, const TrialResult *t) {
    config_words(row, &s->base, &t->config);
    row->seed = t->config.seed, row->task = t->config.task;
    row->reason = t->reason[0] ? xstrdup(t->reason) : NULL;
    if (t->status != TRIAL_OK || t->n_curve == 0) return;
    row->n_evals = t->n_curve;
    row->evals = xmalloc((size_t)t->n_curve * sizeof *row->evals);
    for (int k = 0; k < t->n_curve; k++) {
        const EvalPoint e = trial_eval_point(t, &t->curve[k], &t->reward_spec);
        row->evals[k] = (SummaryEval){e.step, e.val_accuracy, e.val_loss, e.terms.rank_deviation_excess,
                                      e.terms.correlation_excess, e.reward};
    }
}

void summary_append(SweepSummary *s, const TrialResult *t) {
    s->trials = xrealloc(s->trials, (size_t)(s->n_trials + 1) * sizeof *s->trials);
    SummaryRow *row = &s->trials[s->n_trials++];
    *row = (SummaryRow){0};
    if (s->n_trials == 1) s->base = t->config;
    summary_row_set(row, t);
    summary_row_details(s, row, t);
}

void summary_row_free(SummaryRow *row) {
    free(row->reason);
    free(row->words);
    free(row->evals);
    *row = (SummaryRow){0};
}

double summary_value(const SummaryRow *row, const Metric *m) {
    if (metric_is_program(m)) return row->program_metric;
    if (m->offset == offsetof(TrialResult, n_params)) return (double)row->n_params;
    if (m->offset == offsetof(TrialResult, seconds)) return row->seconds;
    for (int i = 0; i < n_metrics; i++)
        if (m->offset == metrics[i].offset) return row->metric[i];
    return NAN;
}

double summary_eval_value(const SummaryRow *row, const SummaryEval *e, const Metric *m) {
    const EvalPoint p = {.step = e->step, .val_accuracy = e->val_accuracy, .val_loss = e->val_loss,
                         .val_bits_per_byte = metric_bits_per_byte(row->task, e->val_loss), .reward = e->reward,
                         .program_metric = NAN};
    return eval_point_value(&p, m);
}

// ---------------------------------------------------------------- views

ConfigView *config_view_new(const SweepSummary *s) {
    ConfigView *v = xmalloc(sizeof *v);
    v->s = s;
    v->row = NULL;
    v->config = s->base;
    return v;
}

const TrialConfig *config_view(ConfigView *v, const SummaryRow *row) {
    if (v->row == row) return &v->config;
    const SummaryRow *last = v->row;
    if (last && last->n_words)  // back to the base where the last row differed from it
        put_words(&v->config, (const uint64_t *)(const void *)&v->s->base, word_places(last), last->n_words, 1);
    if (row->n_words) put_words(&v->config, row->words, word_places(row), row->n_words, 0);
    v->row = row;
    return &v->config;
}

TrialConfig *summary_config(const SweepSummary *s, const SummaryRow *row) {
    TrialConfig *c = xmalloc(sizeof *c);
    *c = s->base;
    if (row->n_words) put_words(c, row->words, word_places(row), row->n_words, 0);
    return c;
}
