// attnsweep report: what a sweep's results file says — leaderboard, per-variant summary,
// Pareto front, regulariser ablations with Welch's t-test, failures and pruning — as
// aligned text, CSV or JSON. Reads the file only (no MPI); works on a file whose sweep
// is still running (what has been flushed) and on a resumed one.
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "report/report.h"
#include "report/verdict.h"
#include "store/summary.h"
#include "trial/metrics.h"

typedef enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON } Format;
static const char *const format_names[] = {"table", "csv", "json", NULL};  // indexed by Format

static void print_header(const SweepSummary *s, const char *path, const ReportOptions *o) {
    char *sweep = text_escaped(s->sweep);  // the file's bytes, never a terminal's control sequence
    printf("attnsweep report: %s: sweep %s, %d trial%s, metric %s (%s is better)\n", path, sweep, s->n_trials,
           s->n_trials == 1 ? "" : "s", o->metric, o->maximize ? "higher" : "lower");
    free(sweep);
    if (s->being_written)
        printf("The sweep is still running (another process is writing the file): this covers the trials "
               "flushed so far.\n");
}

static void print_json(const SweepSummary *s, const char *path, const ReportOptions *o, const Report *r) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "file", path);
    cJSON_AddStringToObject(root, "sweep", s->sweep);
    cJSON_AddStringToObject(root, "metric", o->metric);
    cJSON_AddStringToObject(root, "goal", o->maximize ? "maximize" : "minimize");
    cJSON_AddNumberToObject(root, "trials", s->n_trials);
    cJSON_AddBoolToObject(root, "being_written", s->being_written);
    for (int i = 0; i < r->n; i++) table_add_json(r->tables[i], root);
    char *text = cJSON_PrintUnformatted(root);
    if (!text) die(EXIT_RUNTIME, "out of memory printing JSON");
    puts(text);
    free(text);
    cJSON_Delete(root);
}

// --suggest-reward: the verdict's β and γ as a reward: line, the other keys from a finished
// trial's reward_spec (the sweep's).
static void print_suggestion(const SweepSummary *s, const Report *r, const char *path) {
    char yaml[2048], why[512];
    const TrialResult *spec = NULL;
    for (int i = 0; i < s->n_trials && !spec; i++)
        if (s->trials[i].status == TRIAL_OK) spec = &s->trials[i];
    if (!spec || verdict_suggest_reward(r, &spec->reward_spec, yaml, sizeof yaml, why, sizeof why) != 0)
        die(EXIT_RUNTIME, "report: %s: no β and γ to suggest: %s", path, spec ? why : "no finished trial");
    fputs(yaml, stdout);
}

int cmd_report(int argc, char **argv) {
    const char *path = NULL, *metric = NULL;
    int top = 10, format = FORMAT_TABLE, early_step = 0, suggest = 0;
    double l2_scale = 1;
    const Option options[] = {
        OPT_INT("--top", &top, 1, 1000000, "K", "leaderboard rows (10)"),
        OPT_CHOICE("--format", &format, format_names, "F",
                   "table (aligned text), csv (a '# section' line and a header row per\n"
                   "table) or json (one object) (table)"),
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
                         "attnsweep report RESULTS.h5 [--top K] [--format table|csv|json] [--metric NAME] [--l2-scale S]\n"
                         "                 [--early-step S] [--suggest-reward]",
                         "Summarises a sweep's results file (attnsweep run, or attnsweep train -o): the top trials,\n"
                         "the verdict (does the reward add information: Kendall τ of early predictors against the\n"
                         "final metric, β and γ fitted), mean ± sd per attention variant and per configuration\n"
                         "over repeats, the Pareto front of val_accuracy against Correlation and RankDeviation,\n"
                         "each regulariser's λ against λ = 0 and against plain L2 of equal strength or at λ × S\n"
                         "(paired over shared seeds, else Welch's t-test over repeats), failures and the steps\n"
                         "ASHA saved. It ranks and tests by validation metrics only; test_accuracy (measured once\n"
                         "per trial) is shown beside val_accuracy. A file whose sweep is still running is read\n"
                         "as far as it has been flushed.\n\n",
                         options, NULL,
                         {1, "one results file only",
                          "which file? (attnsweep report RESULTS.h5)"}};
    args_parse(&cmd, argc, argv, &path);
    char allowed[256], why[512];
    if (metric && metric_refusal(metric, METRIC_RANKS, why, sizeof why)) die(EXIT_BADINPUT, "report: --metric %s", why);
    const int known = !metric || report_metric_known(metric, allowed, sizeof allowed);
    if (!known && !metric[0]) die(EXIT_BADINPUT, "report: --metric must be one of %s, got '%s'", allowed, metric);

    SweepSummary s;
    char err[1024];
    if (summary_read(path, &s, err, sizeof err) != 0) die(EXIT_BADINPUT, "report: %s", err);
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
    Report r;
    report_build(&s, &o, &r);
    if (suggest) print_suggestion(&s, &r, path);
    switch (suggest ? -1 : format) {  // --suggest-reward prints nothing else
    case FORMAT_TABLE:
        print_header(&s, path, &o);
        for (int i = 0; i < r.n; i++) {
            putchar('\n');
            table_print_text(r.tables[i], stdout);
        }
        break;
    case FORMAT_CSV:
        for (int i = 0; i < r.n; i++) {
            if (i) putchar('\n');
            table_print_csv(r.tables[i], stdout);
        }
        break;
    case FORMAT_JSON: print_json(&s, path, &o, &r); break;
    }
    report_free(&r);
    summary_free(&s);
    if (fflush(stdout) != 0 || ferror(stdout)) die(EXIT_RUNTIME, "report: cannot write the report: %s", strerror(errno));
    return 0;
}
