// attnsweep report: what a sweep's results file says — leaderboard, per-variant summary,
// Pareto front, regulariser ablations with Welch's t-test, parameter importance, failures
// and pruning — as aligned text, CSV, JSON or one self-contained HTML page. Reads the file
// only (no MPI); works on a file whose sweep is still running (what has been flushed) and
// on a resumed one; --watch rewrites the output while the sweep runs.
#define _DEFAULT_SOURCE  // fdopen, fileno
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/outfile.h"
#include "common/util.h"
#include "report/html.h"
#include "report/importance.h"
#include "report/report.h"
#include "report/verdict.h"
#include "space/space.h"
#include "store/summary.h"
#include "trial/metrics.h"

typedef enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON, FORMAT_HTML } Format;
static const char *const format_names[] = {"table", "csv", "json", "html", NULL};  // indexed by Format

static void print_header(FILE *f, const SweepSummary *s, const char *path, const ReportOptions *o) {
    char *sweep = text_escaped(s->sweep);  // the file's bytes, never a terminal's control sequence
    fprintf(f, "attnsweep report: %s: sweep %s, %d trial%s%s, metric %s (%s is better)\n", path, sweep, s->n_trials,
            s->n_trials == 1 ? "" : "s", s->until_stopped ? " (it runs until stopped)" : "", o->metric,
            o->maximize ? "higher" : "lower");
    free(sweep);
    if (s->being_written)
        fprintf(f, "The sweep is still running (another process is writing the file): this covers the trials "
                   "flushed so far.\n");
}

static void print_json(FILE *f, const SweepSummary *s, const char *path, const ReportOptions *o, const Report *r) {
    report_print_json(f, s, path, o, r, table_put);
    fputc('\n', f);
}

// --suggest-reward: the verdict's β and γ as a reward: line, the other keys from the first
// finished trial's reward_spec (the sweep's), read from its group.
static void print_suggestion(const SweepSummary *s, const Report *r, const char *path) {
    char yaml[2048], why[512], err[1024];
    const SummaryRow *first = NULL;
    for (int i = 0; i < s->n_trials && !first; i++)
        if (s->trials[i].status == TRIAL_OK) first = &s->trials[i];
    TrialResult t = {0};
    if (first && summary_trial(path, first, &t, err, sizeof err) != 0) die(EXIT_BADINPUT, "report: %s", err);
    if (!first || verdict_suggest_reward(r, &t.reward_spec, yaml, sizeof yaml, why, sizeof why) != 0)
        die(EXIT_RUNTIME, "report: %s: no β and γ to suggest: %s", path, first ? why : "no finished trial");
    trial_result_free(&t);
    fputs(yaml, stdout);
}

// SIGINT or SIGTERM ends --watch after the write under way.
static volatile sig_atomic_t stop;
static void on_stop(int sig) { stop = sig; }

// One report of the file at path (the options as cmd_report checked them) to out, or to
// standard output when out is NULL. A later round of --watch (again) that cannot read the
// file warns and leaves out as it was.
static void write_report(const char *path, const char *metric, int known, const char *allowed, int top,
                         double l2_scale, int early_step, int suggest, int format, const char *out, int again) {
    SweepSummary s;
    char err[1024];
    // the page reads every trial's group again (its host, times, curves and traces)
    const SummaryRead what = format == FORMAT_HTML ? SUMMARY_PAGE : SUMMARY_REPORT;
    const int read = summary_read(path, what, &s, err, sizeof err);
    if (read != 0 && again) {
        warnf("report: %s (%s left as it was)", err, out);
        return;
    }
    if (read != 0) die(EXIT_BADINPUT, "report: %s", err);
    if (!known && !(s.program_metric.name && !strcmp(metric, s.program_metric.name)))  // a program's own metric
        die(EXIT_BADINPUT, "report: --metric must be one of %s%s%s, got '%s'", allowed,
            s.program_metric.name ? " or " : "", s.program_metric.name ? s.program_metric.name : "", metric);
    // The sweep's own goal for its metric; the natural one for another metric.
    const int own_goal = !metric || !strcmp(metric, s.metric);
    const ReportOptions o = {.metric = metric ? metric : s.metric,
                             .maximize = own_goal ? s.maximize : summary_metric(&s, metric)->maximize,
                             .top = top,
                             .l2_scale = l2_scale,
                             .early_step = early_step};
    // The sweep's space, for the parameters' bounds and scales and ASHA's rungs: when its
    // YAML loads here (a lone trial's has no space; a sweep's needs its data files).
    SweepSpec space;
    const int have_space = s.yaml && space_parse(&space, s.sweep, s.yaml, strlen(s.yaml), err, sizeof err) == 0;
    Report r;
    report_build(&s, &o, &r);
    if (suggest) {  // --suggest-reward prints the reward: line and nothing else
        print_suggestion(&s, &r, path);
        report_free(&r);
        if (have_space) space_free(&space);
        summary_free(&s);
        return;
    }
    r.tables = xrealloc(r.tables, (size_t)(r.n + 1) * sizeof *r.tables);
    r.tables[r.n++] = importance_table(&s, &o, have_space ? &space : NULL);
    // The report goes straight to its destination, never whole in memory (an HTML page of
    // 50,000 trials is about 80 MB): -o's temporary file, renamed over FILE when complete,
    // or standard output. Every table is built before the first byte is written.
    char tmp[4096 + OUTFILE_SUFFIX + 1];
    FILE *f = stdout;
    if (out) {
        const int fd = outfile_create(out, tmp, sizeof tmp);
        if (fd < 0 || !(f = fdopen(fd, "w"))) die(EXIT_RUNTIME, "report: %s: cannot create: %s", out, strerror(errno));
    }
    switch (format) {
    case FORMAT_TABLE:
        print_header(f, &s, path, &o);
        for (int i = 0; i < r.n; i++) {
            fputc('\n', f);
            table_print_text(r.tables[i], f);
        }
        break;
    case FORMAT_CSV:
        for (int i = 0; i < r.n; i++) {
            if (i) fputc('\n', f);
            table_print_csv(r.tables[i], f);
        }
        break;
    case FORMAT_JSON: print_json(f, &s, path, &o, &r); break;
    case FORMAT_HTML: report_html(f, &s, path, &o, &r, have_space ? &space : NULL); break;
    }
    report_free(&r);
    if (have_space) space_free(&space);
    summary_free(&s);
    if (!out && (fflush(stdout) != 0 || ferror(stdout)))
        die(EXIT_RUNTIME, "report: cannot write the report: %s", strerror(errno));
    if (out && (fflush(f) != 0 || ferror(f) || outfile_commit(fileno(f), tmp, out) != 0))
        die(EXIT_RUNTIME, "report: %s: cannot write: %s", out, strerror(errno));
    if (out) fclose(f);
}

int cmd_report(int argc, char **argv) {
    const char *path = NULL, *metric = NULL, *out = NULL;
    int top = 10, format = FORMAT_TABLE, early_step = 0, suggest = 0;
    double l2_scale = 1, watch = 0;
    const Option options[] = {
        OPT_INT("--top", &top, 1, 1000000, "K", "leaderboard rows (10)"),
        OPT_CHOICE("--format", &format, format_names, "F",
                   "table (aligned text), csv (a '# section' line and a header row per\n"
                   "table), json (one object) or html (one self-contained page of charts:\n"
                   "the JSON report and every trial's curves inside) (table)"),
        OPT_STRING("--output", "-o", &out, "FILE",
                   "write the report to FILE (a temporary file beside it, renamed over it\n"
                   "when complete) instead of standard output"),
        OPT_NUMBER("--watch", &watch, 1e-3, 1e9, "SECONDS",
                   "rewrite FILE every SECONDS while the sweep runs, until SIGINT or\n"
                   "SIGTERM (needs -o)"),
        OPT_FLAG("--json", NULL, &format, FORMAT_JSON, "the same as --format json"),
        OPT_STRING("--metric", NULL, &metric, "NAME",
                   "rank by reward, val_accuracy, val_loss, val_bits_per_byte,\n"
                   "rank_deviation, correlation, n_params or seconds (the sweep's metric;\n"
                   "reward for a single trial); the test metrics are shown, never ranked by"),
        OPT_NUMBER("--l2-scale", &l2_scale, 1e-30, 1e30, "S",
                   "the L2 control of a regulariser at λ is lambda_l2 = λ × S, for a control\n"
                   "calibrated to the regulariser's penalty at the start (1: equal strength)"),
        OPT_INT("--early-step", &early_step, 1, 1000000000, "S",
                "the evaluation step of the verdict's fit of β and γ (the first\n"
                "every finished trial has)"),
        OPT_FLAG("--suggest-reward", NULL, &suggest, 1,
                 "print the verdict's β and γ as the reward: line of the next sweep,\n"
                 "nothing else"),
        OPT_END,
    };
    const Command cmd = {"report",
                         "attnsweep report RESULTS.h5 [--top K] [--format table|csv|json|html] [-o FILE [--watch SECONDS]]\n"
                         "                 [--metric NAME] [--l2-scale S] [--early-step S] [--suggest-reward]",
                         "Summarises a sweep's results file (attnsweep run, or attnsweep train -o): the top trials,\n"
                         "the verdict (does the reward add information: Kendall τ of early predictors against the\n"
                         "final metric, β and γ fitted), mean ± sd per attention variant and per configuration\n"
                         "over repeats, the Pareto front of val_accuracy against Correlation and RankDeviation,\n"
                         "each regulariser's λ against λ = 0 and against plain L2 of equal strength or at λ × S\n"
                         "(paired over shared seeds, else Welch's t-test over repeats), failures and the steps\n"
                         "ASHA saved, and each parameter's importance (fANOVA, as Optuna computes it). It ranks\n"
                         "and tests by validation metrics only; test_accuracy (measured once\n"
                         "per trial) is shown beside val_accuracy. A file whose sweep is still running is read\n"
                         "as far as it has been flushed.\n\n",
                         options, NULL,
                         {1, "one results file only",
                          "which file? (attnsweep report RESULTS.h5)"}};
    args_parse(&cmd, argc, argv, &path);
    char allowed[256], why[512], err[1024];
    if (metric && metric_refusal(metric, METRIC_RANKS, why, sizeof why)) die(EXIT_BADINPUT, "report: --metric %s", why);
    const int known = !metric || report_metric_known(metric, allowed, sizeof allowed);
    if (!known && !metric[0]) die(EXIT_BADINPUT, "report: --metric must be one of %s, got '%s'", allowed, metric);

    if (watch > 0 && !out) die(EXIT_BADINPUT, "report: --watch needs -o FILE (the file rewritten)");
    if (suggest && out)
        die(EXIT_BADINPUT, "report: --suggest-reward prints the reward: line on standard output (no -o FILE)");
    if (out && outfile_check(out, err, sizeof err) != 0) die(EXIT_BADINPUT, "report: %s", err);
    if (watch > 0) {
        struct sigaction sa = {.sa_handler = on_stop};  // no SA_RESTART: the sleep ends at once
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    for (int round = 0;; round++) {
        write_report(path, metric, known, allowed, top, l2_scale, early_step, suggest, format, out, round > 0);
        if (watch <= 0) break;
        struct timespec left = {.tv_sec = (time_t)watch, .tv_nsec = (long)((watch - (double)(time_t)watch) * 1e9)};
        while (!stop && nanosleep(&left, &left) != 0 && errno == EINTR) {}
        if (stop) break;
    }
    return 0;
}

