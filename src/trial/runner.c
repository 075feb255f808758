// runner.c: trial_run (runner.h): what every runner's trial gets before and after the
// runner: its identity and times, the validation metrics from its curve, the scores of
// its final weights and the reward.
#define _POSIX_C_SOURCE 200809L  // gethostname
#include "trial/runner.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "model/threads.h"
#include "trial/metrics.h"

void trial_runner_free(TrialRunner *runner) {
    if (runner) runner->free(runner);
}

void trial_score(TrialResult *out, const BlacsGrid *g, const ScoreOptions *o, const RewardSpec *spec) {
    kernel_threads_release();  // ScaLAPACK's BLAS on the rank's threads again
    if (out->scores)
        for (int l = 0; l < out->n_layers; l++) layer_score_free(&out->scores[l]);
    free(out->scores);
    out->scores = xcalloc((size_t)out->n_layers, sizeof(LayerScore));
    for (int l = 0; l < out->n_layers; l++) {
        const LayerWeights w = trial_layer_weights(out, l);
        score_layer(&out->scores[l], &w, spec->tensor, o, g);
    }
    out->reward_spec = *spec;
    RewardTerms t;
    reward_terms_of_scores(&t, out->scores, out->n_layers, spec);
    trial_set_terms(out, &t);
    out->reward = reward_value(out->val_accuracy, &t, spec);
}

EvalPoint trial_eval_point(const TrialResult *r, const CurvePoint *pt, const RewardSpec *spec) {
    EvalPoint e = {.step = pt->step, .val_accuracy = pt->val_accuracy, .val_loss = pt->val_loss,
                   .val_bits_per_byte = metric_bits_per_byte(r->config.task, pt->val_loss),
                   .reward = NAN, .program_metric = NAN};
    e.terms = reward_terms_none();
    const InvariantTrace *t = &r->trace;
    int i = t->n - 1;
    while (i >= 0 && t->step[i] != pt->step) i--;
    if (i < 0 || t->layers < 1) return e;
    int dims[4];
    const LayerWeights lw = trial_weights(r, NULL, NULL);
    scored_dims(dims, &lw, spec->tensor);
    const size_t at = (size_t)i * t->layers;
    reward_terms(&e.terms, t->eff_rank + at * 4, t->correlation + at, t->chance + at * 4, t->layers, dims, spec);
    e.reward = reward_value(e.val_accuracy, &e.terms, spec);
    return e;
}

double eval_point_value(const EvalPoint *e, const Metric *m) {
    return m->use == METRIC_DECIDES ? *(const double *)((const char *)e + m->at_eval) : NAN;
}

int trial_run(TrialRunner *runner, const TrialConfig *c, const TrialHooks *hooks, TrialResult *out) {
    RewardSpec spec;
    reward_spec_default(&spec);
    ScoreOptions score;
    score_options_default(&score);
    TrialHooks h = *hooks;
    if (!h.reward) h.reward = &spec;
    if (!h.score) h.score = &score;

    memset(out, 0, sizeof *out);
    out->config = *c;
    out->val_accuracy = out->val_loss = out->val_bits_per_byte = NAN;
    out->test_accuracy = out->test_loss = out->test_bits_per_byte = NAN;
    out->id = h.id;
    out->reward_spec = *h.reward;  // what the trial is scored by, scored or not (--resume compares it)
    out->program_metric = NAN;
    out->start_time = unix_seconds();
    gethostname(out->host, sizeof out->host - 1);
    out->group_size = 1;
    if (h.group) MPI_Comm_size(*h.group, &out->group_size);
    out->status = TRIAL_OK;
    runner->run(runner, c, &h, out);
    out->end_time = unix_seconds();

    if (out->n_curve > 0) {
        const CurvePoint *last = &out->curve[out->n_curve - 1];
        out->val_accuracy = last->val_accuracy;
        out->val_loss = last->val_loss;
        out->val_bits_per_byte = metric_bits_per_byte(c->task, last->val_loss);
    }
    out->test_bits_per_byte = metric_bits_per_byte(c->task, out->test_loss);
    // A failed trial's weights hold no invariants worth the name (and may hold NaN); an
    // interrupted one is not recorded; a program's trial may have no weights to score.
    const RewardTerms none = reward_terms_none();
    trial_set_terms(out, &none);
    out->reward = NAN;
    if (h.grid && trial_status_measured(out->status) && out->n_layers > 0) trial_score(out, h.grid, h.score, h.reward);
    return out->status == TRIAL_OK ? 0 : 1;
}
