// metrics.c: the metric table (metrics.h).
#include "trial/metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define AT(f) offsetof(TrialResult, f)
#define EV(f) offsetof(EvalPoint, f)

const Metric metrics[] = {
    {"val_accuracy", "val accuracy", "", AT(val_accuracy), 1, METRIC_DECIDES, 0, 1, 0, EV(val_accuracy)},
    {"val_loss", "val loss", "nats", AT(val_loss), 0, METRIC_DECIDES, 0, 0, 0, EV(val_loss)},
    {"val_bits_per_byte", "val bits/byte", "", AT(val_bits_per_byte), 0, METRIC_DECIDES, 1, 0, 0, EV(val_bits_per_byte)},
    {"test_accuracy", "test accuracy", "", AT(test_accuracy), 1, METRIC_SHOWN, 0, 1, 0, 0},
    {"test_loss", "test loss", "nats", AT(test_loss), 0, METRIC_SHOWN, 0, 0, 0, 0},
    {"test_bits_per_byte", "test bits/byte", "", AT(test_bits_per_byte), 0, METRIC_SHOWN, 1, 0, 0, 0},
    {"rank_deviation", "RankDeviation", "", AT(rank_deviation), 0, METRIC_RANKS, 0, 1, 0, 0},
    {"correlation", "Correlation", "", AT(correlation), 0, METRIC_RANKS, 0, 1, 0, 0},
    {"correlation_chance", "chance", "", AT(correlation_chance), 0, METRIC_SHOWN, 0, 0, 0, 0},
    {"correlation_z", "Corr z", "", AT(correlation_z), 0, METRIC_RANKS, 0, 1, 0, 0},
    {"eff_rank_z", "rank z", "", AT(eff_rank_z), 1, METRIC_RANKS, 0, 1, 0, 0},
    {"rank_deviation_excess", "RankDev beyond", "", AT(rank_deviation_excess), 0, METRIC_RANKS, 0, 0, 0, 0},
    {"correlation_excess", "Corr beyond", "", AT(correlation_excess), 0, METRIC_RANKS, 0, 0, 0, 0},
    {"reward", "reward", "", AT(reward), 1, METRIC_DECIDES, 0, 1, 0, EV(reward)},
};
const int n_metrics = (int)(sizeof metrics / sizeof metrics[0]);
_Static_assert(sizeof metrics / sizeof metrics[0] == METRIC_COUNT, "METRIC_COUNT is the number of metrics");

const Metric cost_metrics[] = {
    {"n_params", "parameters", "", AT(n_params), 0, METRIC_RANKS, 0, 0, 1, 0},
    {"seconds", "time", "s", AT(seconds), 0, METRIC_RANKS, 0, 0, 0, 0},
};
const int n_cost_metrics = (int)(sizeof cost_metrics / sizeof cost_metrics[0]);
_Static_assert(sizeof metrics / sizeof metrics[0] + sizeof cost_metrics / sizeof cost_metrics[0] < METRIC_NAMES,
               "METRIC_NAMES has no room for every name");
_Static_assert(sizeof(((TrialResult *)0)->n_params) == sizeof(long), "n_params is read as a long");

const TrialColumn trial_lead_columns[] = {
    {"trial", COLUMN_INT32, "", AT(id), "the trial's number in the sweep"},
    {"status", COLUMN_TEXT, "", AT(status), "how it ended (the statuses below)"},
};
const TrialColumn trial_trail_columns[] = {
    {"steps", COLUMN_INT32, "", AT(steps), "optimiser steps it trained (a pruned trial: fewer than its budget)"},
    {"n_params", COLUMN_INT64, "", AT(n_params), "parameters of its model"},
    {"seconds", COLUMN_FLOAT64, "s", AT(seconds), "wall time of its training"},
    {"group_size", COLUMN_INT32, "", AT(group_size), "ranks that ran it together"},
};
const int n_trial_lead_columns = (int)(sizeof trial_lead_columns / sizeof trial_lead_columns[0]);
const int n_trial_trail_columns = (int)(sizeof trial_trail_columns / sizeof trial_trail_columns[0]);

// The names of the versions before the validation split, and what they became.
static const struct {
    const char *old, *now;
} renamed[] = {{"accuracy", "val_accuracy"}, {"loss", "val_loss"}, {"bits_per_byte", "val_bits_per_byte"}};

#define VAL "val_"
#define TEST "test_"

const Metric *metric_find(const char *name) {
    for (int i = 0; i < n_metrics; i++)
        if (!strcmp(metrics[i].name, name)) return &metrics[i];
    for (int i = 0; i < n_cost_metrics; i++)
        if (!strcmp(cost_metrics[i].name, name)) return &cost_metrics[i];
    return NULL;
}

double metric_value(const TrialResult *r, const Metric *m) {
    const char *at = (const char *)r + m->offset;
    return m->integer ? (double)*(const long *)at : *(const double *)at;
}

void metric_program(Metric *m, const char *name, int maximize) {
    *m = (Metric){.name = name, .label = name, .unit = "", .offset = AT(program_metric), .maximize = maximize,
                  .use = METRIC_DECIDES, .at_eval = EV(program_metric)};
}

int metric_is_program(const Metric *m) { return m->offset == AT(program_metric); }

int metric_column_taken(const char *name) {
    for (int i = 0; i < n_trial_lead_columns; i++)
        if (!strcmp(name, trial_lead_columns[i].name)) return 1;
    for (int i = 0; i < n_trial_trail_columns; i++)
        if (!strcmp(name, trial_trail_columns[i].name)) return 1;
    return metric_find(name) != NULL;
}

void metric_param_column(const char *name, char *out, size_t len) {
    snprintf(out, len, metric_column_taken(name) ? "config_%s" : "%s", name);
}

int metric_applies(const Metric *m, int task) { return !m->charlm_only || task == TASK_CHARLM; }

double metric_bits_per_byte(int task, double loss) { return task == TASK_CHARLM ? loss / log(2.0) : NAN; }

const Metric *metric_test_twin(const Metric *m) {
    if (strncmp(m->name, VAL, strlen(VAL)) != 0) return NULL;
    char twin[64];
    snprintf(twin, sizeof twin, TEST "%s", m->name + strlen(VAL));
    return metric_find(twin);
}

int metric_names(MetricUse most, const char *names[METRIC_NAMES]) {
    int n = 0;
    for (int i = 0; i < n_metrics; i++)
        if (metrics[i].use <= most) names[n++] = metrics[i].name;
    for (int i = 0; i < n_cost_metrics; i++)
        if (cost_metrics[i].use <= most) names[n++] = cost_metrics[i].name;
    names[n] = NULL;
    return n;
}

void metric_names_text(MetricUse most, char *out, size_t len) {
    const char *names[METRIC_NAMES];
    const int n = metric_names(most, names);
    out[0] = 0;
    for (int i = 0; i < n; i++) snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? ", " : "", names[i]);
}

const char *metric_refusal(const char *name, MetricUse most, char *out, size_t len) {
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
        if (!strcmp(name, renamed[i].old)) {
            snprintf(out, len, "'%s' is now called '%s' (every decision reads the validation split)", name,
                     renamed[i].now);
            return out;
        }
    if (strncmp(name, TEST, strlen(TEST)) != 0) return NULL;
    char twin[64];
    snprintf(twin, sizeof twin, VAL "%s", name + strlen(TEST));
    const Metric *m = metric_find(twin);
    if (m && m->use <= most) {
        snprintf(out, len, "'%s' is a test metric, and test metrics never drive decisions (use '%s')", name, twin);
    } else {
        char allowed[256];
        metric_names_text(most, allowed, sizeof allowed);
        snprintf(out, len, "'%s' is a test metric, and test metrics never drive decisions (use one of %s)", name,
                 allowed);
    }
    return out;
}
