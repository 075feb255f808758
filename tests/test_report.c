// test_report: the statistics of attnsweep report against known values, the table
// renderers, the Pareto front, and the report's sections on a sweep made up in memory
// (leaderboard order, means over repeats, ablation verdicts that follow the test and only
// the test, failure counts, steps saved); then a results file written by h5store and read
// back by summary_read (the metric from the stored YAML, trials in id order).
//
// Reference values: scipy 1.10.1, scipy.stats.ttest_ind(a, b, equal_var=False) (Welch),
// scipy.stats.ttest_rel(a, b) (paired, where the arms share seeds),
// and numpy's mean and std(ddof=1); two cases have closed forms: with df = 2,
// P(|T| > t) = 1 − t/√(2 + t²), and with df = 1 (Cauchy), P(|T| > t) = 1 − (2/π)·atan(t).
// modules: report
#define _POSIX_C_SOURCE 200809L  // mkstemp, open_memstream
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "report_tables.h"
#include "splitmix.h"
#include "common/util.h"
#include "report/report.h"
#include "report/stats.h"
#include "store/h5store.h"
#include "store/summary.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// ---------------------------------------------------------------- statistics

static void test_sample_stats(void) {
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, Σ(x − 5)² = 32, sd = √(32/7)
    SampleStats s = sample_stats(x, 8);
    CHECK(s.n == 8, "n: got %d", s.n);
    CHECK_CLOSE(s.mean, 5.0, 0, 1e-15, "mean of 2,4,4,4,5,5,7,9");
    CHECK_CLOSE(s.sd, sqrt(32.0 / 7.0), 0, 1e-15, "sd of 2,4,4,4,5,5,7,9");
    CHECK_CLOSE(s.sd, 2.138089935299395, 0, 1e-14, "sd against numpy");
    s = sample_stats(x, 1);
    CHECK(s.mean == 2 && isnan(s.sd), "one value: mean 2, sd NaN; got %g, %g", s.mean, s.sd);
    s = sample_stats(x, 0);
    CHECK(isnan(s.mean) && isnan(s.sd), "no values: NaN");
    // Large offset, small spread: the two-pass sum keeps the digits.
    const double y[] = {1e9 + 1, 1e9 + 2, 1e9 + 3};
    CHECK_CLOSE(sample_stats(y, 3).sd, 1.0, 0, 1e-9, "sd of 1e9 + (1, 2, 3)");
}

static void test_welch(void) {
    static const struct {
        const char *what;
        double a[20], b[20];
        int na, nb;
        double t, df, p;  // scipy, or the closed form
    } cases[] = {
        // The three examples of Wikipedia's "Welch's t-test" article.
        {"example 1",
         {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4},
         {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4},
         15, 15, -2.455356398286006, 24.988529290231416, 0.021378001462866985},
        {"example 2",
         {17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8},
         {21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5, 23.5,
          21.5, 21.8},
         10, 20, -1.5654335235985037, 9.904741248650831, 0.14884169660532834},
        {"example 3",
         {19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0},
         {28.2, 26.6, 20.1, 23.3, 25.2, 22.1, 17.7, 27.6, 20.6, 13.7, 23.2, 17.5, 20.6, 18.0, 23.9, 21.6, 24.3, 20.4,
          23.9, 13.3},
         10, 20, -2.225512039969852, 24.524634944257343, 0.035484530830010325},
        // df = 2 exactly (two pairs of equal spread): t = −1/√2, p = 1 − (1/√2)/√2.5.
        {"df = 2", {0, 2}, {1, 3}, 2, 2, -0.7071067811865475, 2.0, 0.5527864045000421},
        // df = 1 exactly (one arm without spread): t = −4, p = 1 − (2/π)·atan 4.
        {"df = 1", {0, 2}, {5, 5}, 2, 2, -4.0, 1.0, 0.1559582607547385},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        WelchTest w;
        const int rc = welch_test(sample_stats(cases[i].a, cases[i].na), sample_stats(cases[i].b, cases[i].nb), &w);
        CHECK(rc == 0, "%s: welch_test returned %d", cases[i].what, rc);
        CHECK_CLOSE(w.t, cases[i].t, 0, 1e-12, "%s: t", cases[i].what);
        CHECK_CLOSE(w.df, cases[i].df, 0, 1e-12, "%s: df", cases[i].what);
        CHECK_CLOSE(w.p, cases[i].p, 0, 1e-10, "%s: p", cases[i].what);
    }
    // Swapping the arms flips t and keeps p.
    WelchTest ab, ba;
    welch_test(sample_stats(cases[0].a, 15), sample_stats(cases[0].b, 15), &ab);
    welch_test(sample_stats(cases[0].b, 15), sample_stats(cases[0].a, 15), &ba);
    CHECK(ab.t == -ba.t && ab.p == ba.p, "swapped arms: t %g / %g, p %g / %g", ab.t, ba.t, ab.p, ba.p);

    const double one[] = {1}, two[] = {1, 2}, flat[] = {3, 3, 3};
    WelchTest w = {0};
    CHECK(welch_test(sample_stats(one, 1), sample_stats(two, 2), &w) == -1, "n = 1: no test");
    CHECK(welch_test(sample_stats(two, 2), sample_stats(one, 1), &w) == -1, "n = 1 (second): no test");
    CHECK(welch_test(sample_stats(flat, 3), sample_stats(flat, 2), &w) == 0 && isnan(w.t) && isnan(w.p),
          "no spread in either arm: t and p NaN, got %g, %g", w.t, w.p);
}

// Holm–Bonferroni against statsmodels 0.13.5: multipletests(p, method="holm")[1] over
// the seven p-values that are not NaN (ties, a step-down maximum, one NaN left out).
static void test_holm(void) {
    double p[8] = {0.01, 0.04, 0.03, NAN, 0.005, 0.03, 0.5, 0.2}, got[8];
    const double want[7] = {0.06, 0.15, 0.15, 0.035, 0.15, 0.5, 0.4};  // the tests, NaN left out
    holm_adjust(p, 8, got);
    const double tested[7] = {got[0], got[1], got[2], got[4], got[5], got[6], got[7]};
    CHECK_ALL_CLOSE(tested, want, 7, 1e-15, 0.0, "Holm's adjusted p-values");
    CHECK(isnan(got[3]), "a NaN p stays NaN (no test), got %g", got[3]);
    holm_adjust(p, 8, p);
    CHECK_ALL_CLOSE(p, got, 8 - 5, 0.0, 0.0, "Holm's adjustment in place");
    CHECK_ALL_CLOSE(p + 4, got + 4, 4, 0.0, 0.0, "Holm's adjustment in place");
    CHECK(isnan(p[3]), "in place: the NaN stays");
}

// ---------------------------------------------------------------- tables

// What a renderer prints, as a string the caller frees.
static char *render(const Table *t, void (*print)(const Table *, FILE *)) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    print(t, f);
    fclose(f);
    return buf;
}

static void test_tables(void) {
    Table *t = table_new("outer.inner", "Title");
    table_note(t, "first note");
    table_note(t, "second note");
    table_column(t, "name", "name", COL_TEXT, NULL);
    table_column(t, "n", "n", COL_INT, NULL);
    table_column(t, "x", "x (s)", COL_REAL, "%.2f");
    table_column(t, "m", "m", COL_MEAN_SD, "%.1f");
    table_row(t);
    table_text(t, "a, \"b\"");
    table_number(t, 3);
    table_number(t, 1.5);
    table_mean_sd(t, 0.25, 0.5);
    table_row(t);
    table_text(t, "λ");
    table_empty(t);
    table_number(t, NAN);
    table_mean_sd(t, 1, NAN);

    char *text = render(t, table_print_text);
    // Widths in characters (λ, – and ± are one each): text left-aligned, numbers right-aligned.
    const char *want_text = "Title\nfirst note\nsecond note\n"
                            "  name    n  x (s)          m\n"
                            "  a, \"b\"  3   1.50  0.2 ± 0.5\n"
                            "  λ       –      –    1.0 ± –\n";
    CHECK(!strcmp(text, want_text), "text table:\n%s\nwanted:\n%s", text, want_text);
    free(text);

    char *csv = render(t, table_print_csv);
    const char *want_csv = "# outer.inner\nname,n,x,m_mean,m_sd\n\"a, \"\"b\"\"\",3,1.5,0.25,0.5\nλ,,,1,\n";
    CHECK(!strcmp(csv, want_csv), "CSV:\n%s\nwanted:\n%s", csv, want_csv);
    free(csv);

    // JSON: nested by the dots of the keys, the tables of a prefix in one object, as cJSON prints it.
    Table *single = table_new("outer.one", "One row"), *top = table_new("top", "Top"), *deep = table_new("a.b.c", "Deep");
    single->single = 1;
    table_column(single, "k", "k", COL_INT, NULL);
    table_row(single);
    table_number(single, 7);
    table_column(top, "k", "k", COL_INT, NULL);
    table_column(deep, "k", "k", COL_INT, NULL);
    table_row(deep);
    table_number(deep, 1);
    char *json = NULL;
    size_t json_len = 0;
    FILE *f = open_memstream(&json, &json_len);
    fputc('{', f);
    table_print_json_members((const Table *const[]){t, single, top, deep}, 4, 1, f, table_put);
    fputc('}', f);
    fclose(f);
    const char *want_json = "{\"outer\":{\"inner\":[{\"name\":\"a, \\\"b\\\"\",\"n\":3,\"x\":1.5,\"m\":{\"mean\":0.25,"
                            "\"sd\":0.5}},{\"name\":\"λ\",\"n\":null,\"x\":null,\"m\":{\"mean\":1,\"sd\":null}}],"
                            "\"one\":{\"k\":7}},\"top\":[],\"a\":{\"b\":{\"c\":[{\"k\":1}]}}}";
    CHECK(!strcmp(json, want_json), "JSON:\n%s\nwanted:\n%s", json, want_json);
    free(json);
    table_free(single), table_free(top), table_free(deep);

    // A mean ± sd whose mean alone fills a cell (a damaged file's 1e300 as "%.4f", 305
    // characters): the cell is its first 127 characters, nothing written past it.
    Table *huge = table_new("h", "Huge");
    table_column(huge, "m", "m", COL_MEAN_SD, "%.4f");
    table_row(huge);
    table_mean_sd(huge, 1e300, 1e300);
    table_row(huge);
    table_mean_sd(huge, 1e300, NAN);
    text = render(huge, table_print_text);
    char want_line[400] = "\n  ";  // a row: the cell cut at 127 characters, the line ending there
    snprintf(want_line + 3, sizeof want_line - 3, "%.4f", 1e300);
    snprintf(want_line + 3 + 127, sizeof want_line - 3 - 127, "\n");
    const char *row = strstr(text, want_line);
    CHECK(row && strstr(row + 1, want_line), "huge mean ± sd, two rows of '%s' wanted: '%s'", want_line, text);
    free(text);
    table_free(huge);

    Table *empty = table_new("e", "Empty");
    table_column(empty, "a", "a", COL_TEXT, NULL);
    text = render(empty, table_print_text);
    CHECK(!strcmp(text, "Empty\n  (none)\n"), "empty table: '%s'", text);
    free(text);
    table_free(empty);
    table_free(t);
}

// ---------------------------------------------------------------- Pareto front, reasons

static void test_pareto(void) {
    // val_accuracy, correlation, rank_deviation
    static const double v[][3] = {
        {0.9, 0.5, 0.5},  // 0: best accuracy: on the front
        {0.8, 0.1, 0.5},  // 1: lowest correlation: on the front
        {0.8, 0.2, 0.5},  // 2: dominated by 1
        {0.7, 0.3, 0.0},  // 3: lowest rank deviation: on the front
        {0.7, 0.3, 0.0},  // 4: equal to 3: neither dominates, both on the front
        {0.6, 0.6, 0.6},  // 5: dominated by everything
        {NAN, 0.0, 0.0},  // 6: NaN: left out
        {0.8, 0.1, 0.5},  // 7: equal to 1: on the front
    };
    enum { N = COUNT(v) };
    SummaryRow rows[N] = {{0}};
    const SummaryRow *p[N];
    for (int i = 0; i < N; i++) {
        // the test accuracy in the opposite order: the front must not see it
        summary_row_set(&rows[i], &(TrialResult){.val_accuracy = v[i][0], .test_accuracy = 1 - v[i][0],
                                                 .correlation = v[i][1], .rank_deviation = v[i][2]});
        p[i] = &rows[i];
    }
    int front[N];
    const SweepSummary none = {0};
    const ParetoObjectives o = pareto_objectives(&none);
    const int n = pareto_front(p, N, &o, front);
    static const int want[] = {0, 1, 7, 3, 4};  // by accuracy descending, then index
    CHECK(n == (int)COUNT(want), "front size: got %d want %zu", n, COUNT(want));
    for (int i = 0; i < n && i < (int)COUNT(want); i++) CHECK(front[i] == want[i], "front[%d]: got %d want %d", i, front[i], want[i]);
    // a motpe sweep's objectives, with their goals: by the first, best first
    static const struct {
        const char *name[2];
        int maximize[2], want[3];
    } mo[] = {{{"correlation", "val_accuracy"}, {0, 1}, {1, 7, 0}}, {{"val_accuracy", "rank_deviation"}, {0, 0}, {5, 3, 4}}};
    for (size_t c = 0; c < COUNT(mo); c++) {
        SweepSummary s = {.n_objectives = 2};
        for (int j = 0; j < 2; j++) s.objective[j] = metric_find(mo[c].name[j]), s.objective_maximize[j] = mo[c].maximize[j];
        const ParetoObjectives so = pareto_objectives(&s);
        const int m = pareto_front(p, N, &so, front);
        CHECK(m == 3, "objectives %s, %s: front size %d want 3", mo[c].name[0], mo[c].name[1], m);
        for (int i = 0; i < m && i < 3; i++)
            CHECK(front[i] == mo[c].want[i], "objectives %s, %s: front[%d] = %d want %d", mo[c].name[0], mo[c].name[1], i,
                  front[i], mo[c].want[i]);
    }
}

static void test_reasons(void) {
    static const char *const cases[][2] = {
        {"diverged: non-finite training loss at step 12", "diverged: non-finite training loss"},
        {"time limit of 600 s exceeded at step 4000", "time limit of 600 s exceeded"},
        {"stopped by the scheduler at step 100", "stopped by the scheduler"},
        {"out of memory allocating the model and its activations", "out of memory allocating the model and its activations"},
        {"", ""},
        // a program's stderr line: its numbers as N, the cause's kept
        {"the program exited with code 1; stderr: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
         "0x7f3a free)",
         "the program exited with code 1; stderr: RuntimeError: CUDA out of memory. Tried to allocate N GiB (GPU N; "
         "N free)"},
        {"the program exited with code 2; stderr: ModuleNotFoundError: No module named 'torch2'",
         "the program exited with code 2; stderr: ModuleNotFoundError: No module named 'torch2'"},
        {"time limit of 60 s exceeded at step 4 (SIGTERM, then SIGKILL after 10 s); stderr: epoch 3 loss 0.5",
         "time limit of 60 s exceeded"},
        {"the program exited with code 1; stderr: ValueError: loss is nan at step 17",
         "the program exited with code 1; stderr: ValueError: loss is nan"},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        char out[256];
        trial_reason_key(cases[i][0], out, sizeof out);
        CHECK(!strcmp(out, cases[i][1]), "trial_reason_key('%s'): got '%s' want '%s'", cases[i][0], out, cases[i][1]);
    }
}

// A failed program's reason gains the last line of its stderr: one line, printable, bounded.
static void test_stderr_reasons(void) {
    char long_line[600], long_cause[251];
    memset(long_line, 'x', sizeof long_line - 1), long_line[sizeof long_line - 1] = 0;
    memset(long_cause, 'c', sizeof long_cause - 1), long_cause[sizeof long_cause - 1] = 0;
    static const char exited[] = "the program exited with code 1";
    const struct {
        const char *cause, *tail, *want;
    } cases[] = {
        {exited,
         "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n    import torch\n"
         "ModuleNotFoundError: No module named 'torch'\n\n",
         "the program exited with code 1; stderr: ModuleNotFoundError: No module named 'torch'"},
        {exited, "epoch 1\r 50%|###  |\r100%|#####|\x1b[31m\tdone\x1b[0m  \n",
         "the program exited with code 1; stderr: 100%|#####| [31m done [0m"},
        {exited, "caf\xc3\xa9 \xff\xc3", "the program exited with code 1; stderr: caf\xc3\xa9 ??"},
        {exited, "", exited},
        {exited, " \n\t\r\n", exited},
        {exited, NULL, exited},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        TrialResult r = {.status = TRIAL_FAILED};
        snprintf(r.reason, sizeof r.reason, "%s", cases[i].cause);
        r.run.stderr_tail = (char *)cases[i].tail;
        trial_reason_add_stderr(&r);
        CHECK(!strcmp(r.reason, cases[i].want), "case %zu: reason '%s', want '%s'", i, r.reason, cases[i].want);
    }
    // A long cause gives way to a long line, which keeps its first TRIAL_STDERR_LINE bytes.
    TrialResult r = {.status = TRIAL_FAILED, .run.stderr_tail = long_line};
    snprintf(r.reason, sizeof r.reason, "%s", long_cause);
    trial_reason_add_stderr(&r);
    const char *mark = strstr(r.reason, "; stderr: ");
    CHECK(strlen(r.reason) == sizeof r.reason - 1 && mark && strlen(mark + 10) == TRIAL_STDERR_LINE &&
              strspn(r.reason, "c") == (size_t)(mark - r.reason),
          "a long cause and line: '%s'", r.reason);
}

// ---------------------------------------------------------------- a row's configuration

static void set_spec(TrialConfig *c, const ParamSpec *p, const char *value) {
    char err[256];
    if (config_set(c, p, value, err, sizeof err) != 0) die(EXIT_RUNTIME, "test setup: %s", err);
}
static void set(TrialConfig *c, const char *name, const char *value) { set_spec(c, config_find(name), value); }

// A row holds its trial's configuration as the words in which it differs from the sweep's
// base (the first trial's), and gives it back byte for byte: every word of a TrialConfig
// (random bytes in each, padding included), and a program's parameters of each type, set,
// or declared but absent (its `when` fails), through views visited in any order and as a
// copy of its own.
static void test_row_configuration(void) {
    enum { N = 6, WORDS = sizeof(TrialConfig) / 8 };
    TrialResult *t = xcalloc(N, sizeof *t);
    for (int i = 0; i < N; i++) config_defaults(&t[i].config), t[i].id = i;
    uint64_t state = 31;
    unsigned char *bytes = (unsigned char *)&t[1].config;  // 1: every byte random
    for (size_t k = 0; k < sizeof t[1].config; k++) bytes[k] = (unsigned char)splitmix64(&state);
    t[2].config = t[1].config;  // 2: every other word back to the base's
    for (int k = 0; k < WORDS; k += 2) memcpy((char *)&t[2].config + 8 * k, (char *)&t[0].config + 8 * k, 8);
    // 3..5: a program's integer, real and text parameters; 4 lacks the text, 5 has none set
    ParamSpec spec[3];
    static const char *const names[3] = {"layers", "lr", "attention"}, *const values[3][3] = {
        {"12", "0.000316", "mha"}, {"-3", "1e-300", NULL}, {NULL, NULL, NULL}};
    static const ParamType types[3] = {PT_INT, PT_REAL, PT_TEXT};
    for (int j = 0; j < 3; j++) config_program_param(&spec[j], names[j], NULL, types[j], j);
    for (int i = 3; i < N; i++)
        for (int j = 0; j < 3; j++) {
            config_program_declare(&t[i].config, &spec[j]);
            if (values[i - 3][j]) set_spec(&t[i].config, &spec[j], values[i - 3][j]);
        }
    SweepSummary s = {0};
    for (int i = 0; i < N; i++) summary_append(&s, &t[i]);
    CHECK(s.trials[0].n_words == 0 && s.trials[1].n_words == WORDS && s.trials[2].n_words == WORDS / 2,
          "words against the base: %d, %d of %d, %d", s.trials[0].n_words, s.trials[1].n_words, WORDS,
          s.trials[2].n_words);
    ConfigView *v = config_view_new(&s);
    static const int order[] = {1, 0, 2, 5, 3, 1, 4, 4, 0, 2, 3, 5};
    for (size_t k = 0; k < COUNT(order); k++) {
        const int i = order[k];
        const TrialConfig *c = config_view(v, &s.trials[i]);
        TrialConfig *copy = summary_config(&s, &s.trials[i]);
        CHECK(!memcmp(c, &t[i].config, sizeof *c) && !memcmp(copy, &t[i].config, sizeof *c),
              "visit %zu: trial %d's configuration differs from its row's (view %d, copy %d)", k, i,
              memcmp(c, &t[i].config, sizeof *c) != 0, memcmp(copy, &t[i].config, sizeof *c) != 0);
        CHECK(s.trials[i].seed == t[i].config.seed && s.trials[i].task == t[i].config.task, "trial %d: seed, task", i);
        for (int j = 0; i >= 3 && j < 3; j++) {
            char want[CONFIG_TEXT + 64], got[CONFIG_TEXT + 64];
            config_format(&t[i].config, &spec[j], want, sizeof want);
            config_format(c, &spec[j], got, sizeof got);
            CHECK(!strcmp(got, want) && config_relevant(c, &spec[j]) == (values[i - 3][j] != NULL),
                  "trial %d: %s is '%s', want '%s'", i, names[j], got, want);
        }
        free(copy);
    }
    free(v);
    summary_free(&s);
    free(t);
}

// ---------------------------------------------------------------- the report on a made-up sweep


// Configurations A..H of the sweep below and the extra trials. Repeats have seeds 1000 + r.
static const struct {
    const char *attention, *orth, *l2, *status, *reason;
    double accuracy, reward;  // val_accuracy (the test metrics are made to disagree: made_up_trials)
    int steps;
} made_up[] = {
    // A: mha, λ_orth 0, λ_l2 0 (trials 0-2)
    {"mha", "0", "0", "ok", "", 0.60, 0.50, 100}, {"mha", "0", "0", "ok", "", 0.61, 0.52, 100},
    {"mha", "0", "0", "ok", "", 0.62, 0.51, 100},
    // B: mha, λ_orth 0.1 (3-5): reward up against A, accuracy the same; accuracy up against C (L2)
    {"mha", "0.1", "0", "ok", "", 0.60, 0.60, 100}, {"mha", "0.1", "0", "ok", "", 0.61, 0.61, 100},
    {"mha", "0.1", "0", "ok", "", 0.62, 0.62, 100},
    // C: mha, λ_l2 0.1 (6-8): the L2 control of B
    {"mha", "0", "0.1", "ok", "", 0.55, 0.58, 100}, {"mha", "0", "0.1", "ok", "", 0.56, 0.62, 100},
    {"mha", "0", "0.1", "ok", "", 0.57, 0.60, 100},
    // D: mha, λ_orth 0.1 and λ_l2 0.1 (9-11): against C (λ = 0), accuracy up and reward down
    {"mha", "0.1", "0.1", "ok", "", 0.60, 0.50, 100}, {"mha", "0.1", "0.1", "ok", "", 0.60, 0.50, 100},
    {"mha", "0.1", "0.1", "ok", "", 0.60, 0.50, 100},
    // E, F: tucker, λ_orth 0.1 and 0 (12-13, 14-15), no spread at all: no test
    {"tucker", "0.1", "0", "ok", "", 0.40, 0.30, 100}, {"tucker", "0.1", "0", "ok", "", 0.40, 0.30, 100},
    {"tucker", "0", "0", "ok", "", 0.40, 0.30, 100}, {"tucker", "0", "0", "ok", "", 0.40, 0.30, 100},
    // G, H: grassmann, λ_orth 0.1 once (16), 0 twice (17-18) and once pruned (19): n too small
    {"grassmann", "0.1", "0", "ok", "", 0.30, 0.20, 100}, {"grassmann", "0", "0", "ok", "", 0.30, 0.20, 100},
    {"grassmann", "0", "0", "ok", "", 0.31, 0.21, 100},
    {"grassmann", "0", "0", "pruned", "stopped by the scheduler at step 25", 0.10, 0.05, 25},
    // two failures of one kind at different steps (20-21)
    {"mha", "0.5", "0", "failed", "diverged: non-finite training loss at step 7", NAN, NAN, 7},
    {"mha", "0.5", "0", "failed", "diverged: non-finite training loss at step 9", NAN, NAN, 9},
};
enum { N_MADE_UP = COUNT(made_up) };

// The made-up trials (with room for one more).
static TrialResult *made_up_trials(void) {
    TrialResult *made = xcalloc(N_MADE_UP + 1, sizeof *made);
    int repeat = 0;
    for (int i = 0; i < N_MADE_UP; i++) {
        TrialResult *t = &made[i];
        config_defaults(&t->config);
        set(&t->config, "attention", made_up[i].attention);
        set(&t->config, "lambda_orth", made_up[i].orth);
        set(&t->config, "lambda_l2", made_up[i].l2);
        set(&t->config, "steps", "100");
        // repeat r of a configuration: the r-th trial since its configuration began
        repeat = i > 0 && !strcmp(made_up[i].attention, made_up[i - 1].attention) &&
                         !strcmp(made_up[i].orth, made_up[i - 1].orth) && !strcmp(made_up[i].l2, made_up[i - 1].l2)
                     ? repeat + 1
                     : 0;
        char seed[16];
        snprintf(seed, sizeof seed, "%d", 1000 + repeat);
        set(&t->config, "seed", seed);
        t->id = i;
        t->status = trial_status_find(made_up[i].status);
        snprintf(t->reason, sizeof t->reason, "%s", made_up[i].reason);
        t->val_accuracy = made_up[i].accuracy;
        t->reward = made_up[i].reward;
        t->rank_deviation = isnan(t->val_accuracy) ? NAN : 0.1;
        t->correlation = isnan(t->val_accuracy) ? NAN : 0.2;
        t->val_loss = isnan(t->val_accuracy) ? NAN : 1 - t->val_accuracy;
        t->val_bits_per_byte = t->val_loss / log(2.0);
        // The test metrics rank the trials the other way round: nothing below may follow them.
        t->test_accuracy = 1 - t->val_accuracy;
        t->test_loss = t->val_accuracy;
        t->test_bits_per_byte = t->test_loss / log(2.0);
        t->steps = made_up[i].steps;
        t->seconds = 1.5;
    }
    return made;
}

// The sweep of trials t[0..n), ranked by reward as a report reads it: a row each.
static void summarise(SweepSummary *s, const TrialResult *t, int n) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < n; i++) summary_append(s, &t[i]);
    snprintf(s->metric, sizeof s->metric, "reward");
    s->maximize = 1;
}

static int is_ok_status(const TrialResult *t) { return t->status == TRIAL_OK; }

static int has_column(const Table *t, const char *col) {
    for (int c = 0; c < t->n_cols; c++)
        if (!strcmp(t->cols[c].key, col)) return 1;
    return 0;
}

static void test_report_sections(void) {
    TrialResult *made = made_up_trials();
    SweepSummary s;
    summarise(&s, made, N_MADE_UP);
    Report r;
    report_build(&s, &(ReportOptions){.metric = "reward", .maximize = 1, .top = 5}, &r);

    // Leaderboard: finished trials by reward, ties by id: 5 and 7 (0.62), 4 (0.61), 3 and 8 (0.60).
    const Table *lb = find_table(&r, "leaderboard");
    static const int want_ids[] = {5, 7, 4, 3, 8};
    CHECK(lb->n_rows == 5, "leaderboard rows: %d", lb->n_rows);
    for (int i = 0; i < lb->n_rows && i < 5; i++)
        CHECK(at(lb, i, "trial")->value == want_ids[i], "leaderboard row %d: trial %g want %d", i,
              at(lb, i, "trial")->value, want_ids[i]);
    // The swept parameters are columns (seed too, for a list of trials); fixed ones are not.
    CHECK(has_column(lb, "lambda_orth") && has_column(lb, "lambda_l2") && has_column(lb, "seed") &&
              !has_column(lb, "d_model") && !has_column(lb, "lambda_nuclear") && !has_column(lb, "val_loss"),
          "leaderboard columns");
    // The test accuracy is shown beside the validation accuracy (here its complement).
    CHECK(has_column(lb, "val_accuracy") && has_column(lb, "test_accuracy") && !has_column(lb, "test_loss") &&
              at(lb, 0, "test_accuracy")->value == 1 - at(lb, 0, "val_accuracy")->value,
          "leaderboard: test_accuracy beside val_accuracy");

    // Ranked by val_loss (lower is better): its column is added; 0.38 (trials 2 and 5) first
    // (their test_loss, 0.62, is the worst: the test metrics do not rank).
    Report by_loss;
    report_build(&s, &(ReportOptions){.metric = "val_loss", .maximize = 0, .top = 2}, &by_loss);
    const Table *lbl = find_table(&by_loss, "leaderboard");
    CHECK(has_column(lbl, "val_loss") && has_column(lbl, "test_loss") && lbl->n_rows == 2 && at(lbl, 0, "trial")->value == 2 &&
              at(lbl, 1, "trial")->value == 5,
          "leaderboard by loss: %d rows, first trials %g, %g", lbl->n_rows, at(lbl, 0, "trial")->value,
          at(lbl, 1, "trial")->value);
    // Every table shows that metric beside val_accuracy and reward, and the ablations test it.
    static const char *const tables[] = {"variants.by_variant", "variants.by_configuration", "pareto",
                                         "ablations.lambda_orth"};
    for (size_t k = 0; k < COUNT(tables); k++) {
        const Table *x = find_table(&by_loss, tables[k]);
        const int ab = k == 3;
        CHECK(has_column(x, ab ? "d_val_loss" : "val_loss") && has_column(x, ab ? "d_test_loss" : "test_loss") &&
                  has_column(x, ab ? "d_val_accuracy" : "val_accuracy") && has_column(x, ab ? "d_reward" : "reward") &&
                  (!ab || has_column(x, "p_val_loss")),
              "%s: the sweep's metric val_loss beside val_accuracy and reward", tables[k]);
    }
    const Table *abl = find_table(&by_loss, "ablations.lambda_orth"), *bcl = find_table(&by_loss, "variants.by_configuration");
    CHECK(abl->n_rows > 0 && strstr(at(abl, 0, "verdict")->text, "val_loss") != NULL,
          "the ablation's verdict speaks of val_loss: '%s'", abl->n_rows ? at(abl, 0, "verdict")->text : "");
    CHECK(bcl->n_rows > 0 && isfinite(at(bcl, 0, "val_loss")->value), "per configuration: mean val_loss");
    report_free(&by_loss);

    // Per variant: mha over its 12 finished trials; grassmann over 3 (the pruned one is left out).
    const Table *bv = find_table(&r, "variants.by_variant");
    CHECK(bv->n_rows == 3, "variants: %d rows", bv->n_rows);
    CHECK(!strcmp(at(bv, 0, "attention")->text, "mha") && at(bv, 0, "n")->value == 12, "mha row");
    const double mha_acc[] = {.60, .61, .62, .60, .61, .62, .55, .56, .57, .60, .60, .60};
    const SampleStats ms = sample_stats(mha_acc, 12);
    CHECK_CLOSE(at(bv, 0, "val_accuracy")->value, ms.mean, 0, 1e-15, "mha mean accuracy");
    CHECK_CLOSE(at(bv, 0, "val_accuracy")->sd, ms.sd, 0, 1e-15, "mha sd accuracy");
    CHECK_CLOSE(at(bv, 0, "test_accuracy")->value, 1 - ms.mean, 0, 1e-14, "mha mean test accuracy (shown)");
    CHECK(!strcmp(at(bv, 2, "attention")->text, "grassmann") && at(bv, 2, "n")->value == 3, "grassmann: n = 3");

    // Per configuration: 8 with a finished trial (A..H); H has n = 2 of its 3 trials.
    const Table *bc = find_table(&r, "variants.by_configuration");
    CHECK(bc->n_rows == 8, "configurations: %d rows", bc->n_rows);
    CHECK(!has_column(bc, "seed"), "configurations have no seed column");
    const Cell *h = at(bc, 7, "reward");
    CHECK(at(bc, 7, "n")->value == 2, "configuration H: n %g", at(bc, 7, "n")->value);
    CHECK_CLOSE(h->value, 0.205, 1e-15, 0.0, "configuration H: mean reward");
    CHECK_CLOSE(h->sd, sqrt(0.00005), 1e-15, 0.0, "configuration H: sd of the reward");

    // Pareto front, over the sweep's metric: every finished trial has RankDeviation 0.1 and
    // Correlation 0.2, so the front is the best reward, 0.62: trials 5 and 7 (not trials 2
    // and 5 of the best val_accuracy; trial 5's test_accuracy, 0.38, is the worst).
    const Table *pf = find_table(&r, "pareto");
    CHECK(pf->n_rows == 2 && at(pf, 0, "trial")->value == 5 && at(pf, 1, "trial")->value == 7, "Pareto front");
    CHECK(fabs(at(pf, 0, "test_accuracy")->value - 0.38) < 1e-15, "Pareto front: test_accuracy shown");

    // Ablations of lambda_orth: B against A (λ = 0) and C (L2), D against C (λ = 0; D has
    // λ_l2 > 0, so no L2 control), E against F, G against H. Repeat r has seed 1000 + r in
    // every configuration, so the arms pair by seed: p-values of scipy's ttest_rel (see the
    // top); G (one trial) pairs once, too few, and falls back to Welch's. Holm's over the
    // report's 5 tests: statsmodels' multipletests(p, method="holm"). B − A's val_accuracy
    // and E − F's differences are all 0: no test. B − C's val_accuracy differences are 0.05
    // up to rounding: p about 1e-30.
    const Table *ab = find_table(&r, "ablations.lambda_orth");
    static const struct {
        const char *against, *attention, *test;
        double l2, d_acc, p_acc, h_acc, d_rew, p_rew, h_rew;
        const char *verdict;
    } rows[] = {
        {"lambda_orth = 0", "mha", "paired t, 3 pairs", 0, 0, NAN, NAN, 0.1, 0.003316758722356868, 0.013267034889427471,
         "λ_orth = 0.1 raises reward (Holm p = 0.013) over λ = 0 for mha; val_accuracy: no spread within the arms or "
         "in their differences, no test"},
        {"lambda_l2 = 0.1", "mha", "paired t, 3 pairs", 0, 0.05, 5.488900341503629e-31, 2.7444501707518146e-30, 0.01,
         0.42264973081037427, 0.42264973081037427,
         "λ_orth = 0.1 raises val_accuracy (Holm p < 0.001) over plain L2 of equal strength for mha; no significant "
         "difference in reward (Holm p = 0.42)"},
        {"lambda_orth = 0", "mha", "paired t, 3 pairs", 0.1, 0.04, 0.020204102886728623, 0.040408205773457245, -0.1,
         0.013072457560346544, 0.039217372681039635,
         "λ_orth = 0.1 raises val_accuracy (Holm p = 0.04) and lowers reward (Holm p = 0.039) over λ = 0 for mha"},
        {"lambda_orth = 0", "tucker", "paired t, 2 pairs", 0, 0, NAN, NAN, 0, NAN, NAN,
         "val_accuracy and reward: no spread within the arms or in their differences, no test"},
        {"lambda_orth = 0", "grassmann", "Welch", 0, -0.005, NAN, NAN, -0.005, NAN, NAN,
         "n too small (1 against 2 trials; the test needs at least 2 each)"},
    };
    CHECK(ab->note && strstr(ab->note, "Holm–Bonferroni over the 5 tests of this report"), "Holm's note: '%s'",
          ab->note ? ab->note : "");
    CHECK(ab->n_rows == (int)COUNT(rows), "ablation rows: got %d want %zu", ab->n_rows, COUNT(rows));
    for (int i = 0; i < ab->n_rows && i < (int)COUNT(rows); i++) {
        char what[64];
        snprintf(what, sizeof what, "ablation row %d", i);
        CHECK(at(ab, i, "lambda_orth")->value == 0.1, "%s: λ", what);
        CHECK(!strcmp(at(ab, i, "against")->text, rows[i].against), "%s: against '%s'", what, at(ab, i, "against")->text);
        CHECK(!strcmp(at(ab, i, "test")->text, rows[i].test), "%s: test '%s'", what, at(ab, i, "test")->text);
        CHECK(!strcmp(at(ab, i, "attention")->text, rows[i].attention), "%s: variant", what);
        CHECK(at(ab, i, "lambda_l2")->value == rows[i].l2, "%s: lambda_l2", what);
        CHECK_CLOSE(at(ab, i, "d_val_accuracy")->value, rows[i].d_acc, 1e-12, 0, what);
        CHECK_CLOSE(at(ab, i, "d_test_accuracy")->value, -rows[i].d_acc, 1e-12, 0, what);  // shown, never tested
        CHECK_CLOSE(at(ab, i, "d_reward")->value, rows[i].d_rew, 1e-12, 0, what);
        static const char *const p_cols[2][2] = {{"p_val_accuracy", "p_holm_val_accuracy"}, {"p_reward", "p_holm_reward"}};
        const double want_p[2][2] = {{rows[i].p_acc, rows[i].h_acc}, {rows[i].p_rew, rows[i].h_rew}};
        for (int m = 0; m < 2; m++)
            for (int adj = 0; adj < 2; adj++) {
                if (isnan(want_p[m][adj]))
                    CHECK(isnan(at(ab, i, p_cols[m][adj])->value), "%s: %s NaN", what, p_cols[m][adj]);
                else
                    CHECK_CLOSE(at(ab, i, p_cols[m][adj])->value, want_p[m][adj], 1e-12, 1e-9, "%s: %s", what,
                                p_cols[m][adj]);
            }
        CHECK(!strcmp(at(ab, i, "verdict")->text, rows[i].verdict), "%s: verdict\n  got  '%s'\n  want '%s'", what,
              at(ab, i, "verdict")->text, rows[i].verdict);
    }
    // Where two digits would round across 0.05, the verdict prints more.
    static const struct {
        double p;
        const char *text;
    } near[] = {{0.0501, "Holm p = 0.0501"}, {0.04996, "Holm p = 0.04996"}, {0.05, "Holm p = 0.05"},
                {0.0449, "Holm p = 0.045"}};
    static const char *const tested[2] = {"val_accuracy", "reward"};
    for (size_t i = 0; i < COUNT(near); i++) {
        const double d[2] = {0.01, 0.02}, p[2] = {near[i].p, near[i].p};
        char words[256];
        ablation_verdict(words, sizeof words, "lambda_orth", 0.1, "λ = 0", "mha", 3, 3, 2, tested, d, p);
        CHECK(strstr(words, near[i].text) != NULL, "p %g: verdict '%s' should say '%s'", near[i].p, words, near[i].text);
        CHECK((strstr(words, "raises") != NULL) == (near[i].p < REPORT_ALPHA), "p %g: verdict '%s'", near[i].p, words);
    }
    const Table *nuc = find_table(&r, "ablations.lambda_nuclear");
    CHECK(nuc->n_rows == 0 && nuc->note && strstr(nuc->note, "lambda_nuclear is 0 in every trial"),
          "lambda_nuclear: no rows, and says why");

    // Failures and pruning.
    const Table *st = find_table(&r, "failures.by_status");
    CHECK(st->n_rows == 3 && !strcmp(at(st, 0, "status")->text, "ok") && at(st, 0, "n")->value == 19 &&
              !strcmp(at(st, 1, "status")->text, "pruned") && at(st, 1, "n")->value == 1 &&
              !strcmp(at(st, 2, "status")->text, "failed") && at(st, 2, "n")->value == 2,
          "by status");
    const Table *re = find_table(&r, "failures.by_reason");
    CHECK(re->n_rows == 2 && !strcmp(at(re, 0, "reason")->text, "diverged: non-finite training loss") &&
              at(re, 0, "n")->value == 2 && !strcmp(at(re, 1, "reason")->text, "stopped by the scheduler") &&
              !strcmp(at(re, 1, "status")->text, "pruned") && at(re, 1, "n")->value == 1,
          "by reason");
    // Steps saved: the pruned trial ran 25 of its 100; the full budget is 22 × 100.
    const Table *as = find_table(&r, "failures.asha");
    CHECK(as->single && as->n_rows == 1 && at(as, 0, "pruned")->value == 1 && at(as, 0, "steps_saved")->value == 75 &&
              at(as, 0, "budget_steps")->value == 2200,
          "ASHA: pruned %g, saved %g, budget %g", at(as, 0, "pruned")->value, at(as, 0, "steps_saved")->value,
          at(as, 0, "budget_steps")->value);
    CHECK_CLOSE(at(as, 0, "fraction_saved")->value, 75.0 / 2200.0, 0, 1e-15, "ASHA fraction saved");

    report_free(&r);

    // A configuration drawn twice with one seed is one run: the second trial (here with a
    // made-up reward) is on the leaderboard but not in any mean or test.
    made[N_MADE_UP] = made[3];  // B, seed 1000
    made[N_MADE_UP].id = N_MADE_UP;
    made[N_MADE_UP].reward = 0.99;
    summary_free(&s);
    summarise(&s, made, N_MADE_UP + 1);
    report_build(&s, &(ReportOptions){.metric = "reward", .maximize = 1, .top = 5}, &r);
    lb = find_table(&r, "leaderboard");
    CHECK(at(lb, 0, "trial")->value == N_MADE_UP, "duplicate: on the leaderboard");
    bc = find_table(&r, "variants.by_configuration");
    CHECK(at(bc, 1, "n")->value == 3 && bc->note &&
              strstr(bc->note, "1 finished trial repeated a configuration with the same seed"),
          "duplicate: configuration B keeps n 3 (got %g) and notes the repeat", at(bc, 1, "n")->value);
    CHECK_CLOSE(at(bc, 1, "reward")->value, 0.61, 1e-15, 0.0, "duplicate: configuration B keeps its mean reward");
    ab = find_table(&r, "ablations.lambda_orth");
    CHECK(at(ab, 0, "n")->value == 3, "duplicate: ablation n unchanged");
    CHECK_CLOSE(at(ab, 0, "p_reward")->value, rows[0].p_rew, 1e-12, 0.0, "duplicate: ablation p unchanged");
    bv = find_table(&r, "variants.by_variant");
    CHECK(at(bv, 0, "n")->value == 12, "duplicate: mha keeps n 12");
    report_free(&r);

    // The L2 control calibrated to the penalty's size (report --l2-scale): configuration C
    // at lambda_l2 = 0.1 × 0.005 is the control of B at λ_orth = 0.1 with the same numbers.
    for (int i = 0; i < N_MADE_UP; i++)
        if (made[i].config.lambda_l2 == 0.1) set(&made[i].config, "lambda_l2", "0.0005");
    summary_free(&s);
    summarise(&s, made, N_MADE_UP);
    report_build(&s, &(ReportOptions){.metric = "reward", .maximize = 1, .top = 5, .l2_scale = 0.005}, &r);
    ab = find_table(&r, "ablations.lambda_orth");
    CHECK(ab->n_rows == (int)COUNT(rows) && !strcmp(at(ab, 1, "against")->text, "lambda_l2 = 0.0005") &&
              strstr(ab->title, "plain L2 at λ × 0.005") && strstr(ab->note, "lambda_l2 = λ × 0.005"),
          "scaled L2 control: '%s' in '%s'", at(ab, 1, "against")->text, ab->title);
    CHECK_CLOSE(at(ab, 1, "p_val_accuracy")->value, rows[1].p_acc, 1e-12, 1e-9, "scaled L2 control: p");
    CHECK(strstr(at(ab, 1, "verdict")->text, "over plain L2 at λ × 0.005 for mha") != NULL, "scaled L2 verdict: '%s'",
          at(ab, 1, "verdict")->text);
    report_free(&r);
    report_build(&s, &(ReportOptions){.metric = "reward", .maximize = 1, .top = 5}, &r);
    ab = find_table(&r, "ablations.lambda_orth");
    CHECK(ab->n_rows == (int)COUNT(rows) - 1, "equal strength finds no L2 control at 0.1 now: %d rows", ab->n_rows);
    report_free(&r);
    for (int i = 0; i < N_MADE_UP; i++)
        if (made[i].config.lambda_l2 == 0.0005) set(&made[i].config, "lambda_l2", "0.1");

    // lambda_l2 0 in every trial: no arm has a plain-L2 control, though the one it would be
    // differs from the arm's λ = 0 configuration only in lambda_l2, which no trial varies.
    TrialResult *l2_zero = xcalloc(N_MADE_UP, sizeof *l2_zero);
    int n_zero = 0;
    for (int i = 0; i < N_MADE_UP; i++)
        if (made[i].config.lambda_l2 == 0) l2_zero[n_zero++] = made[i];
    SweepSummary no_l2;
    summarise(&no_l2, l2_zero, n_zero);
    report_build(&no_l2, &(ReportOptions){.metric = "reward", .maximize = 1, .top = 5}, &r);
    ab = find_table(&r, "ablations.lambda_orth");
    int against_l2 = 0;
    for (int i = 0; i < ab->n_rows; i++) against_l2 += !strncmp(at(ab, i, "against")->text, "lambda_l2", 9);
    CHECK(ab->n_rows > 0 && against_l2 == 0, "no lambda_l2 swept: %d rows, %d against plain L2", ab->n_rows, against_l2);
    report_free(&r);
    summary_free(&no_l2);
    free(l2_zero);

    // A budget in epochs (steps 0): a finished trial ran its whole budget, and shows it for
    // the others of the same training set, epochs and batch. The grassmann trials (batch
    // 128) ran 300 steps, the others (batch 64) 100: the pruned one saved 300 − 25.
    for (int i = 0; i < N_MADE_UP; i++) {
        TrialResult *t = &made[i];
        set(&t->config, "steps", "0");
        if (t->config.attention == ATTN_GRASSMANN && is_ok_status(t)) t->steps = 300;
        if (t->config.attention != ATTN_GRASSMANN) set(&t->config, "batch", "64");
    }
    summary_free(&s);
    summarise(&s, made, N_MADE_UP);
    report_build(&s, &(ReportOptions){.metric = "reward", .maximize = 1, .top = 5}, &r);
    as = find_table(&r, "failures.asha");
    CHECK(at(as, 0, "steps_saved")->value == 275 && at(as, 0, "budget_steps")->value == 4 * 300 + 18 * 100 &&
              !strstr(as->note, "left out"),
          "epochs budget: saved %g, budget %g", at(as, 0, "steps_saved")->value, at(as, 0, "budget_steps")->value);
    report_free(&r);
    // Without a finished trial of its size, a trial's budget is unknown and left out.
    set(&made[20].config, "batch", "32");
    summary_free(&s);
    summarise(&s, made, N_MADE_UP);
    report_build(&s, &(ReportOptions){.metric = "reward", .maximize = 1, .top = 5}, &r);
    as = find_table(&r, "failures.asha");
    CHECK(at(as, 0, "budget_steps")->value == 4 * 300 + 17 * 100 && strstr(as->note, "1 trials with a budget in epochs"),
          "unknown budget: %g; note '%s'", at(as, 0, "budget_steps")->value, as->note);
    report_free(&r);
    summary_free(&s);
    free(made);
}

// Finished trials with a NaN metric (a results file may hold any value): the report is built
// (GSL's t distribution aborted the process on NaN), the tests on those arms not made, as
// each row's verdict says.
static void test_nan_metric(void) {
    TrialResult *made = made_up_trials();
    for (int i = 0; i < N_MADE_UP; i++)
        if (is_ok_status(&made[i])) made[i].val_loss = NAN;
    SweepSummary s;
    summarise(&s, made, N_MADE_UP);
    free(made);
    Report r;
    report_build(&s, &(ReportOptions){.metric = "val_loss", .maximize = 0, .top = 5}, &r);
    const Table *ab = find_table(&r, "ablations.lambda_orth");
    CHECK(ab->n_rows > 0 && isnan(at(ab, 0, "p_val_loss")->value) &&
              strstr(at(ab, 0, "verdict")->text, "val_loss: NaN in a trial of an arm, no test"),
          "NaN val_loss: %d rows, p %g, verdict '%s'", ab->n_rows, ab->n_rows ? at(ab, 0, "p_val_loss")->value : 0.0,
          ab->n_rows ? at(ab, 0, "verdict")->text : "");
    report_free(&r);
    summary_free(&s);
}

// ---------------------------------------------------------------- a results file, read back

static void temp_file(char *path, size_t len) {
    snprintf(path, len, "/tmp/test_report_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) die(EXIT_RUNTIME, "cannot create a temporary file");
    close(fd);
}

// A file of three trials ranked by metric (NULL: reward) with that goal, and objectives.
static void write_file(const char *path, const char *metric, int maximize, int n_objectives,
                       const char *const *objective, const int *objective_maximize) {
    H5Store *st = h5store_create(path, &(StoreMeta){.sweep = "readback", .yaml = "name: readback\n", .seed = 3,
                                                    .start_time = 1.7e9, .metric = metric, .maximize = maximize,
                                                    .program_metric = metric && !metric_find(metric) ? metric : NULL,
                                                    .n_objectives = n_objectives, .objective = objective,
                                                    .objective_maximize = objective_maximize});
    static const int ids[] = {2, 0, 1};  // workers finish out of order
    for (size_t k = 0; k < COUNT(ids); k++) {
        TrialResult t = {0};
        config_defaults(&t.config);
        t.id = ids[k];
        set(&t.config, "lambda_orth", ids[k] == 1 ? "0.25" : "0");
        set(&t.config, "attention", ids[k] == 2 ? "linear" : "mha");
        t.status = ids[k] == 0 ? TRIAL_PRUNED : TRIAL_OK;
        snprintf(t.reason, sizeof t.reason, "%s", ids[k] == 0 ? "stopped by the scheduler at step 5" : "");
        t.val_accuracy = 0.5 + 0.125 * ids[k];
        t.test_accuracy = 0.375 + 0.125 * ids[k];
        t.rank_deviation = 0.25, t.correlation = 0.125 * ids[k];
        t.reward = t.val_accuracy - 0.1 * t.rank_deviation - 0.1 * t.correlation;
        t.val_loss = 1.5, t.test_loss = 1.75;
        t.val_bits_per_byte = t.test_bits_per_byte = NAN;  // not charlm
        t.steps = 10 + ids[k];
        t.n_params = 5000000000L + ids[k];
        t.seconds = 2.5;
        h5store_write_trial(st, &t);
    }
    h5store_close(st, 1.7e9 + 10);
}

static void test_read_back(void) {
    char path[64], err[512];
    temp_file(path, sizeof path);
    // The root attributes metric, goal and objectives (store/schema.h), as the sweep's
    // space decided them, read back; a name of no metric is the program's own.
    static const char *const two[] = {"val_accuracy", "n_params"}, *const own_two[] = {"objective", "seconds"};
    static const int two_goals[] = {1, 0};
    static const struct {
        const char *metric, *want;
        int maximize, want_maximize, n_objectives;
        const char *const *objectives;
        int program;
    } cases[] = {
        {"val_loss", "val_loss", 0, 0, 0, NULL, 0},
        {"val_accuracy", "val_accuracy", 0, 0, 0, NULL, 0},
        {"val_bits_per_byte", "val_bits_per_byte", 1, 1, 0, NULL, 0},
        {NULL, "reward", 0, 1, 0, NULL, 0},  // attnsweep train's file: reward, maximised
        {"reward", "reward", 1, 1, 2, two, 0},
        {"objective", "objective", 0, 0, 2, own_two, 1},  // a program's own metric, an objective too
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        write_file(path, cases[i].metric, cases[i].maximize, cases[i].n_objectives, cases[i].objectives, two_goals);
        SweepSummary s;
        const int rc = summary_read(path, SUMMARY_REPORT, &s, err, sizeof err);
        CHECK(rc == 0, "summary_read (case %zu): %s", i, err);
        if (rc) continue;
        CHECK(!strcmp(s.metric, cases[i].want) && s.maximize == cases[i].want_maximize,
              "case %zu: metric %s (%s), want %s (%s)", i, s.metric, s.maximize ? "max" : "min", cases[i].want,
              cases[i].want_maximize ? "max" : "min");
        CHECK(s.n_objectives == cases[i].n_objectives && (cases[i].program ? s.program_metric.name != NULL
                                                                            : s.program_metric.name == NULL),
              "case %zu: %d objectives, program metric %s", i, s.n_objectives,
              s.program_metric.name ? s.program_metric.name : "none");
        for (int j = 0; j < s.n_objectives; j++)
            CHECK(!strcmp(s.objective[j]->name, cases[i].objectives[j]) && s.objective_maximize[j] == two_goals[j],
                  "case %zu: objective %d is %s", i, j, s.objective[j]->name);
        if (i == 0) {
            CHECK(s.n_trials == 3 && !strcmp(s.sweep, "readback") && !s.being_written, "3 trials of sweep readback");
            ConfigView *v = config_view_new(&s);
            for (int k = 0; k < s.n_trials && k < 3; k++) {
                const SummaryRow *t = &s.trials[k];
                TrialResult x = {0};  // the row's values where the checks below read them
                summary_row_values(t, &x);
                CHECK(t->id == k, "trial %d in place %d", t->id, k);
                CHECK(t->status == (k == 0 ? TRIAL_PRUNED : TRIAL_OK), "trial %d: status %s", k, trial_status_names[t->status]);
                CHECK(k == 0 ? t->reason && !strcmp(t->reason, "stopped by the scheduler at step 5") : !t->reason,
                      "trial %d: reason", k);
                CHECK(config_view(v, t)->lambda_orth == (k == 1 ? 0.25 : 0) &&
                          config_view(v, t)->attention == (k == 2 ? ATTN_LINEAR : ATTN_MHA),
                      "trial %d: configuration from the config attribute", k);
                CHECK(x.val_accuracy == 0.5 + 0.125 * k && x.test_accuracy == 0.375 + 0.125 * k &&
                          x.correlation == 0.125 * k && x.rank_deviation == 0.25 &&
                          x.reward == x.val_accuracy - 0.1 * 0.25 - 0.1 * x.correlation && x.steps == 10 + k &&
                          x.n_params == 5000000000L + k && x.seconds == 2.5 && x.val_loss == 1.5 &&
                          x.test_loss == 1.75 && isnan(x.val_bits_per_byte) &&
                          summary_value(t, metric_find("n_params")) == 5000000000.0 + k,
                      "trial %d: metrics from /summary", k);
            }
            free(v);
        }
        summary_free(&s);
    }
    // A torn last trial (a flush cut short by a full disk: /summary lists it, its group
    // lacks attributes) is left out with a warning; a torn trial before the last is damage,
    // and refused.
    for (int last = 1; last >= 0; last--) {
        write_file(path, NULL, 0, 0, NULL, two_goals);
        const char *torn = last ? "trials/000001" : "trials/000000";  // written in the order 2, 0, 1
        hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
        CHECK(f >= 0 && H5Adelete_by_name(f, torn, "config", H5P_DEFAULT) >= 0 && H5Fclose(f) >= 0, "tearing %s", torn);
        SweepSummary s;
        const int rc = summary_read(path, SUMMARY_REPORT, &s, err, sizeof err);
        if (last)
            CHECK(rc == 0 && s.n_trials == 2 && s.trials[0].id == 0 && s.trials[1].id == 2,
                  "a torn last trial is left out: %s", rc ? err : "");
        else
            CHECK(rc != 0 && strstr(err, "trials/000000: missing attribute 'config'"),
                  "a torn trial before the last is refused: %s", rc ? err : "read");
        if (rc == 0) summary_free(&s);
    }
    // More rows than one read of /summary takes (SUMMARY_ROWS_READ): every row of every
    // read lands in its trial.
    const int many = 2 * SUMMARY_ROWS_READ + 3;
    H5Store *big = h5store_create(path, &(StoreMeta){.sweep = "many", .yaml = "name: many\n", .metric = "val_accuracy",
                                                     .maximize = 1});
    for (int id = 0; id < many; id++) {
        TrialResult t = {.id = id, .status = id % 7 ? TRIAL_OK : TRIAL_FAILED, .val_accuracy = id / 8192.0, .steps = id};
        config_defaults(&t.config);
        h5store_write_trial(big, &t);
    }
    h5store_close(big, 0);
    SweepSummary m;
    CHECK(summary_read(path, SUMMARY_REPORT, &m, err, sizeof err) == 0 && m.n_trials == many, "%d trials: %s", many, err);
    int wrong = 0;
    for (int k = 0; k < m.n_trials; k++) {
        const SummaryRow *t = &m.trials[k];
        wrong += t->id != k || summary_value(t, metric_find("val_accuracy")) != k / 8192.0 || t->steps != k ||
                 t->status != (k % 7 ? TRIAL_OK : TRIAL_FAILED);
    }
    CHECK(wrong == 0, "%d of %d trials read from %d reads of /summary differ from what was written", wrong, many,
          (many + SUMMARY_ROWS_READ - 1) / SUMMARY_ROWS_READ);
    summary_free(&m);
    // A sweep that has not finished a trial yet: read, and every section empty.
    H5Store *st = h5store_create(path, &(StoreMeta){.sweep = "empty", .yaml = "metric: {name: val_loss}\n",
                                                    .metric = "val_loss"});
    h5store_close(st, 0);
    SweepSummary s;
    CHECK(summary_read(path, SUMMARY_REPORT, &s, err, sizeof err) == 0 && s.n_trials == 0 && !strcmp(s.metric, "val_loss"),
          "a file without trials: %s", err);
    Report r;
    report_build(&s, &(ReportOptions){.metric = "val_loss", .maximize = 0, .top = 10}, &r);
    int rows = 0;  // but the verdict's, which say why there is none
    for (int i = 0; i < r.n; i++) rows += r.tables[i]->single || !strncmp(r.tables[i]->key, "verdict.", 8) ? 0 : r.tables[i]->n_rows;
    CHECK(rows == 0 && find_table(&r, "failures.asha")->n_rows == 1, "a file without trials: %d rows", rows);
    const Table *why = find_table(&r, "verdict.fit");
    CHECK(why->n_rows == 1 && strstr(why->cells[why->n_cols - 1].text, "0 configurations with a finished trial"),
          "a file without trials: the verdict says why");
    report_free(&r);
    summary_free(&s);
    remove(path);
    CHECK(summary_read("/nonexistent/x.h5", SUMMARY_REPORT, &(SweepSummary){0}, err, sizeof err) == -1 &&
              !strcmp(err, "/nonexistent/x.h5: No such file or directory"),
          "missing file: '%s'", err);
    CHECK(summary_read("/tmp", SUMMARY_REPORT, &(SweepSummary){0}, err, sizeof err) == -1 && !strcmp(err, "/tmp: not a regular file"),
          "a directory: '%s'", err);
}

int main(void) {
    test_sample_stats();
    test_welch();
    test_holm();
    test_tables();
    test_pareto();
    test_reasons();
    test_stderr_reasons();
    test_row_configuration();
    test_report_sections();
    test_nan_metric();
    test_read_back();
    return check_report("test_report");
}
