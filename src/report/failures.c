// failures.c: the report's failures and pruning: trials by status and by reason, and the
// steps ASHA saved.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "report/analysis.h"


Table *by_status(const Analysis *a) {
    const SweepSummary *s = a->s;
    Table *t = table_new("failures.by_status", "Failures and pruning: trials by status");
    table_column(t, "status", "status", COL_TEXT, NULL);
    table_column(t, "n", "trials", COL_INT, NULL);
    // in the order of the status table: ok, pruned, failed
    for (int k = 0; k < TRIAL_STATUS_COUNT; k++) {
        int n = 0;
        for (int i = 0; i < s->n_trials; i++) n += s->trials[i].status == (TrialStatus)k;
        if (!n) continue;
        table_row(t);
        table_text(t, "%s", trial_status_names[k]);
        table_number(t, n);
    }
    return t;
}

typedef struct {
    const char *status;
    char reason[256];
    int n;
} ReasonCount;

static int by_count(const void *x, const void *y) {
    const ReasonCount *a = x, *b = y;
    if (a->n != b->n) return b->n - a->n;
    const int c = strcmp(a->status, b->status);
    return c ? c : strcmp(a->reason, b->reason);
}

Table *by_reason(const Analysis *a) {
    const SweepSummary *s = a->s;
    Table *t = table_new("failures.by_reason", "Failures and pruning: trials by reason (the text before \"at step\"; "
                                               "the numbers of a program's stderr line as N)");
    table_column(t, "status", "status", COL_TEXT, NULL);
    table_column(t, "reason", "reason", COL_TEXT, NULL);
    table_column(t, "n", "trials", COL_INT, NULL);
    ReasonCount *r = xcalloc((size_t)(s->n_trials ? s->n_trials : 1), sizeof *r);
    int n = 0;
    for (int i = 0; i < s->n_trials; i++) {
        const SummaryRow *x = &s->trials[i];
        if (!x->reason) continue;
        ReasonCount c = {.status = trial_status_names[x->status]};
        trial_reason_key(x->reason, c.reason, sizeof c.reason);
        int k = 0;
        while (k < n && (strcmp(r[k].status, c.status) || strcmp(r[k].reason, c.reason))) k++;
        if (k == n) r[n++] = c;
        r[k].n++;
    }
    qsort(r, (size_t)n, sizeof *r, by_count);
    for (int k = 0; k < n; k++) {
        table_row(t);
        table_text(t, "%s", r[k].status);
        table_text(t, "%s", r[k].reason);
        table_number(t, r[k].n);
    }
    free(r);
    return t;
}

// The steps trial x was to run: its steps parameter; when that is 0 (a budget in epochs,
// which ASHA does not allow) the steps it took if it finished, else those of a finished
// trial with the same training set, epochs and batch (epochs × examples / batch, as
// train_total_steps counts them); -1 if none finished. v, other: views of a's sweep.
static long budget_steps(const Analysis *a, const SummaryRow *x, ConfigView *v, ConfigView *other) {
    const TrialConfig *c = config_view(v, x);
    if (c->steps > 0) return c->steps;
    if (is_ok(x)) return x->steps;
    for (int i = 0; i < a->n_ok; i++) {
        const TrialConfig *o = config_view(other, a->ok[i]);
        if (o->steps == 0 && o->task == c->task && !strcmp(o->data_dir, c->data_dir) && o->seq_len == c->seq_len &&
            o->recall_pairs == c->recall_pairs && o->recall_vocab == c->recall_vocab && o->epochs == c->epochs &&
            o->batch == c->batch)
            return a->ok[i]->steps;
    }
    return -1;
}

Table *asha(const Analysis *a) {
    const SweepSummary *s = a->s;
    Table *t = table_new("failures.asha", "Failures and pruning: steps saved by ASHA, Σ (budget − steps taken) over the pruned trials");
    t->single = 1;
    table_column(t, "pruned", "pruned trials", COL_INT, NULL);
    table_column(t, "steps_saved", "steps saved", COL_INT, NULL);
    table_column(t, "budget_steps", "full budget (steps)", COL_INT, NULL);
    table_column(t, "fraction_saved", "saved (fraction of the budget)", COL_REAL, "%.3f");
    long pruned = 0, saved = 0, budget = 0, unknown = 0;
    ConfigView *v = config_view_new(s), *other = config_view_new(s);
    for (int i = 0; i < s->n_trials; i++) {
        const SummaryRow *x = &s->trials[i];
        const long b = budget_steps(a, x, v, other);
        if (b < 0) {
            unknown++;
            continue;
        }
        budget += b;
        if (x->status == TRIAL_PRUNED) {
            pruned++;
            saved += b > x->steps ? b - x->steps : 0;
        }
    }
    free(v), free(other);
    table_note(t, "full budget: Σ over the trials of the steps each was to run (its steps parameter)");
    if (unknown)
        table_note(t, "%ld trials with a budget in epochs that no finished trial of the same size shows are left out",
                   unknown);
    table_row(t);
    table_number(t, (double)pruned);
    table_number(t, (double)saved);
    table_number(t, (double)budget);
    table_number(t, budget > 0 ? (double)saved / (double)budget : NAN);
    return t;
}
