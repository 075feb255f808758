// runner.c: trial_run (runner.h): what every runner's trial gets before and after the
// runner: its identity and times, the validation metrics from its curve, the scores of
// its final weights and the reward.
#define _POSIX_C_SOURCE 200809L  // gethostname
#include "trial/runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "trial/metrics.h"

void trial_runner_free(TrialRunner *runner) {
    if (runner) runner->free(runner);
}

// Full scores of the final weights and the reward.
static void score_final(TrialResult *out, const BlacsGrid *g, const ScoreOptions *o, const RewardSpec *spec) {
    out->scores = xcalloc((size_t)out->n_layers, sizeof(LayerScore));
    for (int l = 0; l < out->n_layers; l++) {
        const LayerWeights w = trial_layer_weights(out, l);
        score_layer(&out->scores[l], &w, spec->tensor, o, g);
    }
    out->reward_spec = *spec;
    out->rank_deviation = rank_deviation(out->scores, out->n_layers, spec);
    out->correlation = mean_correlation(out->scores, out->n_layers);
    out->correlation_chance = mean_correlation_chance(out->scores, out->n_layers);
    out->reward = reward_value(out->val_accuracy, out->rank_deviation, out->correlation, spec);
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
    out->start_time = unix_seconds();
    gethostname(out->host, sizeof out->host - 1);
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
    // interrupted one is not recorded.
    out->rank_deviation = out->correlation = out->reward = NAN;
    if (h.grid && trial_status_measured(out->status)) score_final(out, h.grid, h.score, h.reward);
    return out->status == TRIAL_OK ? 0 : 1;
}
