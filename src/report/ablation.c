// ablation.c: the report's ablations (report.h): each regulariser's λ > 0 against λ = 0
// and against plain L2, paired over shared seeds or Welch's, with Holm's adjustment over
// every test of the report and the verdict in words (ablation_verdict); and the
// dose-response of every regulariser and of plain L2.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "report/analysis.h"

// The metrics each ablation tests besides the sweep's, in the order of its columns.
static const char *const always_tested[2] = {"val_accuracy", "reward"};

// The regularisers ablated, and the control: plain L2 of the same strength.
static const char *const regularisers[] = {"lambda_orth", "lambda_nuclear", "lambda_stability"};
#define CONTROL "lambda_l2"

// ---------------------------------------------------------------- ablations

// "Holm p = 0.012", or "Holm p < 0.001"; with more digits where two would round across or
// onto the significance level (0.0501 is "Holm p = 0.0501", not "Holm p = 0.05").
static void p_text(char *out, size_t len, double p) {
    if (p < 0.001) {
        snprintf(out, len, "Holm p < 0.001");
        return;
    }
    for (int digits = 2; digits <= 6; digits++) {
        snprintf(out, len, "Holm p = %.*g", digits, p);
        const double shown = strtod(out + strlen("Holm p = "), NULL);
        if ((shown < REPORT_ALPHA) == (p < REPORT_ALPHA) && (shown != REPORT_ALPHA || p == REPORT_ALPHA)) return;
    }
}

void ablation_verdict(char *out, size_t len, const char *reg, double lambda, const char *against,
                      const char *variant, int n_arm, int n_ctl, int k_tested, const char *const *tested,
                      const double *d, const double *p) {
    if (n_arm < 2 || n_ctl < 2) {
        snprintf(out, len, "n too small (%d against %d trials; the test needs at least 2 each)", n_arm, n_ctl);
        return;
    }
    char claims[512] = "", plain[512] = "", untested[256] = "";
    for (int k = 0; k < k_tested; k++) {
        const char *name = tested[k];
        char pt[32];
        p_text(pt, sizeof pt, p[k]);
        if (isnan(p[k]))
            snprintf(untested + strlen(untested), sizeof untested - strlen(untested), "%s%s", untested[0] ? " and " : "",
                     name);
        else if (p[k] < REPORT_ALPHA)
            snprintf(claims + strlen(claims), sizeof claims - strlen(claims), "%s%s %s (%s)", claims[0] ? " and " : "",
                     d[k] > 0 ? "raises" : "lowers", name, pt);
        else
            snprintf(plain + strlen(plain), sizeof plain - strlen(plain), "%s%s (%s)",
                     plain[0] ? " or " : "no significant difference in ", name, pt);
    }
    int n = 0;
    if (claims[0])
        n += snprintf(out, len, "λ_%s = %g %s over %s for %s", reg + strlen("lambda_"), lambda, claims, against, variant);
    if (plain[0] && n >= 0 && (size_t)n < len) n += snprintf(out + n, len - (size_t)n, "%s%s", n ? "; " : "", plain);
    if (untested[0] && n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "%s%s: no spread within the arms or in their differences, no test",
                 n ? "; " : "", untested);
}

// One comparison of an ablation: a configuration with λ > 0 against its control, for each
// metric tested the difference of the means (arm − control), the test's p and Holm's.
// Where the arms share seeds (seed·1000 + repeat is the seed of repeat r of every
// configuration) the test is paired over those seeds, else Welch's.
typedef struct {
    const Config *arm, *ctl;
    double lambda;
    int vs_l2;  // the control is plain L2 at λ · l2_scale (else λ = 0)
    int pairs;  // trials of the two arms with the same seed: the paired test's when ≥ 2
    double d[3], p[3], p_holm[3], d_twin[3];
    int nan[3];  // the metric is NaN in a trial of the arms: no test
} Comparison;

// The trials of arm and ctl with the same seed: a[i] and c[i] are pair i (a and c may be
// NULL). Returns how many.
static int pairs_of(const Config *arm, const Config *ctl, const SummaryRow **a, const SummaryRow **c) {
    int n = 0;
    for (int i = 0; i < arm->n; i++)
        for (int j = 0; j < ctl->n; j++) {
            if (arm->ok[i]->seed != ctl->ok[j]->seed) continue;
            if (a) a[n] = arm->ok[i], c[n] = ctl->ok[j];
            n++;
        }
    return n;
}

// x's test of metric m: over the pairs when x has 2 of them (d the mean of the
// differences), else Welch's over the arms (d the difference of the means); p NaN where
// there is no test. Returns -1, with d and p NaN, when m is NaN in a trial tested.
static int arm_test(const Comparison *x, const Metric *m, double *d, double *p) {
    const int n = x->arm->n + x->ctl->n;
    const SummaryRow **a = xcalloc((size_t)n, sizeof *a), **c = xcalloc((size_t)n, sizeof *c);
    double *diff = xcalloc((size_t)n, sizeof *diff);
    int rc = 0;
    *d = *p = NAN;
    if (x->pairs >= 2) {
        pairs_of(x->arm, x->ctl, a, c);
        for (int i = 0; i < x->pairs; i++) {
            diff[i] = summary_value(a[i], m) - summary_value(c[i], m);
            rc |= isnan(diff[i]) ? -1 : 0;
        }
        PairedTest t;
        if (rc == 0) *d = sample_stats(diff, x->pairs).mean, *p = paired_t_test(diff, x->pairs, &t) == 0 ? t.p : NAN;
    } else {
        const SampleStats sa = stats_of(x->arm->ok, x->arm->n, m), sc = stats_of(x->ctl->ok, x->ctl->n, m);
        WelchTest w;
        rc = isnan(sa.mean) || isnan(sc.mean) ? -1 : 0;
        if (rc == 0) *d = sa.mean - sc.mean, *p = welch_test(sa, sc, &w) == 0 ? w.p : NAN;
    }
    free(a), free(c), free(diff);
    return rc;
}

// The ablations of one report: the metrics tested (the sweep's when it is another,
// val_accuracy, reward) and the comparisons of each regulariser; the p-values of them
// all are one family for Holm's adjustment.
typedef struct {
    int k_tested;
    const char *tested[3];
    int n[COUNT(regularisers)];
    Comparison *c[COUNT(regularisers)];
    int family;  // the tests made (p not NaN) over every table
    double l2_scale;  // the L2 control of an arm at λ is lambda_l2 = λ · l2_scale
} Ablations;

// Every finished configuration with regulariser r > 0 that has a finished control.
static void compare(const Analysis *a, Ablations *ab, int r) {
    const char *reg = regularisers[r];
    ab->c[r] = xcalloc((size_t)(2 * a->n_configs + 1), sizeof *ab->c[r]);
    ConfigView *v = config_view_new(a->s);
    for (int i = 0; i < a->n_configs; i++) {
        const Config *arm = &a->configs[a->order[i]];
        const TrialConfig *first = config_view(v, arm->first);
        const double lambda = lambda_of(first, reg);
        if (lambda <= 0 || !arm->n) continue;
        for (int vs_l2 = 0; vs_l2 < 2; vs_l2++) {
            if (vs_l2 && lambda_of(first, CONTROL) != 0) continue;
            TrialConfig c = *first;
            *lambda_at(&c, reg) = 0;
            if (vs_l2) *lambda_at(&c, CONTROL) = lambda * ab->l2_scale;
            const Config *ctl = find_config(a, &c);
            if (!ctl || !ctl->n) continue;
            Comparison *x = &ab->c[r][ab->n[r]++];
            *x = (Comparison){.arm = arm, .ctl = ctl, .lambda = lambda, .vs_l2 = vs_l2};
            x->pairs = pairs_of(arm, ctl, NULL, NULL);
            for (int k = 0; k < ab->k_tested; k++) {
                const Metric *m = summary_metric(a->s, ab->tested[k]), *twin = metric_test_twin(m);
                x->nan[k] = arm_test(x, m, &x->d[k], &x->p[k]) != 0;
                x->d_twin[k] = twin ? stats_of(arm->ok, arm->n, twin).mean - stats_of(ctl->ok, ctl->n, twin).mean : NAN;
            }
        }
    }
    free(v);
}

static void ablations_analyse(const Analysis *a, Ablations *ab) {
    memset(ab, 0, sizeof *ab);
    ab->l2_scale = a->o->l2_scale > 0 ? a->o->l2_scale : 1;
    if (strcmp(a->o->metric, "val_accuracy") && strcmp(a->o->metric, "reward")) ab->tested[ab->k_tested++] = a->o->metric;
    for (size_t k = 0; k < COUNT(always_tested); k++) ab->tested[ab->k_tested++] = always_tested[k];
    int total = 0;
    for (size_t r = 0; r < COUNT(regularisers); r++) compare(a, ab, (int)r), total += ab->n[r] * ab->k_tested;
    double *p = xmalloc((size_t)(total ? total : 1) * sizeof *p);  // the family, flat
    int n = 0;
    for (size_t r = 0; r < COUNT(regularisers); r++)
        for (int i = 0; i < ab->n[r]; i++)
            for (int k = 0; k < ab->k_tested; k++) p[n++] = ab->c[r][i].p[k], ab->family += !isnan(ab->c[r][i].p[k]);
    holm_adjust(p, n, p);
    n = 0;
    for (size_t r = 0; r < COUNT(regularisers); r++)
        for (int i = 0; i < ab->n[r]; i++)
            for (int k = 0; k < ab->k_tested; k++) ab->c[r][i].p_holm[k] = p[n++];
    free(p);
}

static void ablations_free(Ablations *ab) {
    for (size_t r = 0; r < COUNT(regularisers); r++) free(ab->c[r]);
}

static Table *ablation(const Analysis *a, const Ablations *ab, int r) {
    const char *reg = regularisers[r];
    char key[64], title[256];
    snprintf(key, sizeof key, "ablations.%s", reg);
    char control[64] = "of equal strength", control_lambda[64] = "λ", l2_words[96];
    if (ab->l2_scale != 1) {
        snprintf(control, sizeof control, "at λ × %g", ab->l2_scale);
        snprintf(control_lambda, sizeof control_lambda, "λ × %g", ab->l2_scale);
    }
    snprintf(l2_words, sizeof l2_words, "plain L2 %s", control);
    snprintf(title, sizeof title, "Ablation of %s: each λ > 0 against λ = 0 and against plain L2 %s", reg, control);
    Table *t = table_new(key, title);
    duplicates_note(t, a);
    table_note(t,
               "matched on every other parameter (the L2 control: " CONTROL " = %s, %s = 0); finished trials; the "
               "paired t-test over the seeds both arms share where there are 2 (repeat r of every configuration has "
               "the seed seed·1000 + r), Welch's t-test over the repeats otherwise (the test column)",
               control_lambda, reg);
    table_note(t,
               "p: the test's; p Holm: adjusted by Holm–Bonferroni over the %d tests of this report (every ablation "
               "table, every metric tested); a verdict only at p Holm < %g; a metric that is NaN in a trial of an arm "
               "is not tested",
               ab->family, REPORT_ALPHA);
    const int k_tested = ab->k_tested;
    const char *const *tested = ab->tested;
    table_note(t, "the tests and the verdict read %s%s; the test twins' differences are shown only",
               k_tested == 3 ? tested[0] : "", k_tested == 3 ? " (the sweep's metric), val_accuracy and reward" : "val_accuracy and reward");
    table_column(t, reg, "λ", COL_REAL, "%g");
    table_column(t, "against", "against", COL_TEXT, NULL);
    param_columns(t, a, 0, reg);
    table_column(t, "n", "n", COL_INT, NULL);
    table_column(t, "n_control", "n ctrl", COL_INT, NULL);
    table_column(t, "test", "test", COL_TEXT, NULL);
    for (int k = 0; k < k_tested; k++) {
        const Metric *m = summary_metric(a->s, tested[k]), *twin = metric_test_twin(m);
        char col[80], head[80];
        snprintf(col, sizeof col, "d_%s", m->name);
        snprintf(head, sizeof head, "Δ %s", m->label);
        table_column(t, col, head, COL_REAL, "%+.4f");
        snprintf(col, sizeof col, "p_%s", m->name);
        table_column(t, col, "p", COL_REAL, "%.3g");
        snprintf(col, sizeof col, "p_holm_%s", m->name);
        table_column(t, col, "p Holm", COL_REAL, "%.3g");
        if (twin) {
            snprintf(col, sizeof col, "d_%s", twin->name);
            snprintf(head, sizeof head, "Δ %s", twin->label);
            table_column(t, col, head, COL_REAL, "%+.4f");
        }
    }
    table_column(t, "verdict", "verdict", COL_TEXT, NULL);
    int any_arm = 0;
    ConfigView *v = config_view_new(a->s);
    for (int i = 0; i < a->n_configs; i++) any_arm |= lambda_of(config_view(v, a->configs[i].first), reg) > 0;
    for (int i = 0; i < ab->n[r]; i++) {
        const Comparison *x = &ab->c[r][i];
        const TrialConfig *first = config_view(v, x->arm->first);
        char against[64], words[1024];
        if (x->vs_l2)
            snprintf(against, sizeof against, CONTROL " = %g", x->lambda * ab->l2_scale);
        else
            snprintf(against, sizeof against, "%s = 0", reg);
        // The verdict on the metrics tested; those NaN in a trial are said apart.
        const char *measured[3];
        double d[3], p[3];
        int k_measured = 0;
        char skipped[128] = "";
        for (int k = 0; k < k_tested; k++) {
            if (x->nan[k])
                snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "%s%s", skipped[0] ? " and " : "",
                         tested[k]);
            else
                measured[k_measured] = tested[k], d[k_measured] = x->d[k], p[k_measured++] = x->p_holm[k];
        }
        words[0] = 0;  // stays empty when every metric is NaN somewhere
        ablation_verdict(words, sizeof words, reg, x->lambda, x->vs_l2 ? l2_words : "λ = 0",
                         attention_names[first->attention], x->arm->n, x->ctl->n, k_measured, measured,
                         d, p);
        if (skipped[0])
            snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s: NaN in a trial of an arm, no test",
                     words[0] ? "; " : "", skipped);
        const int unpaired = x->arm->n + x->ctl->n - 2 * x->pairs;
        table_row(t);
        table_number(t, x->lambda);
        table_text(t, "%s", against);
        param_cells(t, a, first, 0, reg);
        table_number(t, x->arm->n);
        table_number(t, x->ctl->n);
        if (x->pairs < 2)
            table_text(t, "Welch");
        else if (unpaired)
            table_text(t, "paired t, %d pairs (%d unpaired trial%s left out)", x->pairs, unpaired, unpaired == 1 ? "" : "s");
        else
            table_text(t, "paired t, %d pairs", x->pairs);
        for (int k = 0; k < k_tested; k++) {
            table_number(t, x->d[k]);
            table_number(t, x->p[k]);
            table_number(t, x->p_holm[k]);
            if (metric_test_twin(summary_metric(a->s, tested[k]))) table_number(t, x->d_twin[k]);
        }
        table_text(t, "%s", words);
    }
    free(v);
    if (!any_arm)
        table_note(t, "%s is 0 in every trial: nothing to compare", reg);
    else if (!t->n_rows)
        table_note(t, "no finished configuration with %s > 0 has a finished counterpart that differs only in %s "
                      "(or in %s and " CONTROL ")",
                   reg, reg, reg);
    return t;
}

// The dose–response of every regulariser and of plain L2: for each background (the other
// parameters) the configurations in which it is the only λ > 0, with the one where every λ
// is 0, by strength; mean ± sd over their finished repeats of the metrics a regulariser is
// weighed by (the sweep's, val_accuracy) and of what it acts on (Correlation,
// RankDeviation). A curve needs a configuration with the λ > 0.
typedef struct {
    const Config *c;
    int background;  // index in a->configs of the background's first configuration, in table order
    double lambda;
} DosePoint;

static int by_background(const void *x, const void *y) {
    const DosePoint *p = x, *q = y;
    if (p->background != q->background) return p->background < q->background ? -1 : 1;
    return p->lambda < q->lambda ? -1 : p->lambda > q->lambda;
}

static Table *dose_response(const Analysis *a) {
    static const char *const all[] = {"lambda_orth", "lambda_nuclear", "lambda_stability", CONTROL};
    Table *t = table_new("ablations.dose",
                         "Dose–response: each regulariser and plain L2 over their strengths, the rest of the "
                         "configuration fixed");
    table_note(t, "for each background (every other parameter), the configurations in which the regulariser is the "
                  "only λ > 0, and the one with every λ = 0 (λ = 0 of each curve); mean ± sd over finished repeats");
    table_note(t, "read a regulariser's curve against " CONTROL "'s on the same background: what it does beyond plain "
                  "weight decay of a like strength, over the range swept rather than at one calibrated point");
    duplicates_note(t, a);
    table_column(t, "regulariser", "regulariser", COL_TEXT, NULL);
    param_columns(t, a, 0, "lambda_*");
    table_column(t, "lambda", "λ", COL_REAL, "%g");
    table_column(t, "n", "n", COL_INT, NULL);
    const char *names[4];
    int k = 0;
    if (strcmp(a->o->metric, "val_accuracy")) names[k++] = a->o->metric;
    names[k++] = "val_accuracy", names[k++] = "correlation", names[k++] = "rank_deviation";
    for (int j = 0; j < k; j++) metric_column(t, summary_metric(a->s, names[j]), COL_MEAN_SD);
    DosePoint *pt = xcalloc((size_t)a->n_configs + 1, sizeof *pt);
    int *place = xcalloc((size_t)a->n_configs + 1, sizeof *place);  // of each configuration in table order
    for (int j = 0; j < a->n_configs; j++) place[a->order[j]] = j;
    ConfigView *v = config_view_new(a->s);
    for (size_t r = 0; r < COUNT(all); r++) {
        int n = 0, dosed = 0;
        for (int i = 0; i < a->n_configs; i++) {
            const Config *c = &a->configs[a->order[i]];
            const TrialConfig *first = config_view(v, c->first);
            int others = 0;
            for (size_t q = 0; q < COUNT(all); q++) others |= q != r && lambda_of(first, all[q]) != 0;
            if (others || !c->n) continue;
            TrialConfig bare = *first;
            *lambda_at(&bare, all[r]) = 0;
            const Config *b = find_config(a, &bare);
            const int background = b ? place[b - a->configs] : i;  // the bare configuration's place when it ran
            pt[n++] = (DosePoint){c, background, lambda_of(first, all[r])};
            dosed |= pt[n - 1].lambda != 0;
        }
        if (!dosed) continue;
        qsort(pt, (size_t)n, sizeof *pt, by_background);
        for (int i = 0, curve = 0; i < n; i++) {
            if (!i || pt[i].background != pt[i - 1].background) {  // a background with the regulariser > 0 somewhere
                curve = 0;
                for (int j = i; j < n && pt[j].background == pt[i].background; j++) curve |= pt[j].lambda != 0;
            }
            if (!curve) continue;
            table_row(t);
            table_text(t, "%s", all[r]);
            param_cells(t, a, config_view(v, pt[i].c->first), 0, "lambda_*");
            table_number(t, pt[i].lambda);
            table_number(t, pt[i].c->n);
            for (int j = 0; j < k; j++) {
                const SampleStats st = stats_of(pt[i].c->ok, pt[i].c->n, summary_metric(a->s, names[j]));
                table_mean_sd(t, st.mean, st.sd);
            }
        }
    }
    free(pt), free(place), free(v);
    if (!t->n_rows) table_note(t, "no regulariser and no " CONTROL " was swept above 0 with the rest fixed");
    return t;
}

void ablation_tables(const Analysis *a, Table **out) {
    _Static_assert(COUNT(regularisers) + 1 == ABLATION_TABLES, "one ablation table per regulariser, then the dose");
    Ablations ab;
    ablations_analyse(a, &ab);
    for (size_t r = 0; r < COUNT(regularisers); r++) out[r] = ablation(a, &ab, (int)r);
    out[COUNT(regularisers)] = dose_response(a);
    ablations_free(&ab);
}
