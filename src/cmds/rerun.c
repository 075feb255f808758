// attnsweep rerun: run one trial of a finished (or stopped) sweep again, from its results
// file alone: the trial's configuration and seed from /trials/NNNNNN, the sweep's settings
// (budget, time limit, memory limit, reward, scoring threshold, a program's command) from
// the YAML text the file keeps, and the engine on one BLAS thread as a sweep's ranks run.
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "invariants/grid.h"
#include "invariants/score.h"
#include "space/space.h"
#include "store/summary.h"
#include "trial/external.h"
#include "trial/metrics.h"
#include "trial/runner.h"

// The row of the trial that --trial N names, or one line and exit 2.
static const SummaryRow *named_trial(const SweepSummary *s, const char *path, int id) {
    for (int i = 0; i < s->n_trials; i++)
        if (s->trials[i].id == id) return &s->trials[i];
    die(EXIT_BADINPUT, "rerun: %s has no trial %d (it records %d trial%s%s)", path, id, s->n_trials,
        s->n_trials == 1 ? "" : "s", s->n_trials ? ", see attnsweep report" : "");
}

// The trial read from its group: ok, or one line and exit 2.
static void read_trial(const char *path, const SummaryRow *row, TrialResult *r) {
    char err[1024];
    if (summary_trial(path, row, r, err, sizeof err) != 0) die(EXIT_BADINPUT, "rerun: %s", err);
    if (r->status == TRIAL_FAILED)
        die(EXIT_BADINPUT, "rerun: trial %d of %s failed (%s): only a trial that finished ok can be rerun", r->id,
            path, r->reason);
    if (r->status != TRIAL_OK)
        die(EXIT_BADINPUT,
            "rerun: trial %d of %s was %s (%s): its metric is not a full run's; only a trial that finished ok "
            "can be rerun",
            r->id, path, trial_status_names[r->status], r->reason);
}

// The ok trial best by the sweep's metric and goal (the first of equals).
static const SummaryRow *best_trial(const SweepSummary *s, const Metric *m, const char *path) {
    const SummaryRow *best = NULL;
    double best_v = 0;
    for (int i = 0; i < s->n_trials; i++) {
        const SummaryRow *r = &s->trials[i];
        const double v = summary_value(r, m);
        if (r->status != TRIAL_OK || isnan(v)) continue;
        if (!best || (s->maximize ? v > best_v : v < best_v)) best = r, best_v = v;
    }
    if (!best) die(EXIT_BADINPUT, "rerun: %s has no trial that finished ok with a %s: nothing is best", path, m->name);
    return best;
}

// path without its .h5, then suffix: RESULTS.h5 → RESULTS.rerun-N.h5 (the default
// output, beside the input), OUT.h5 → OUT.trials (a program's trial directories).
static char *beside(const char *path, const char *suffix) {
    size_t n = strlen(path);
    if (n > 3 && !strcmp(path + n - 3, ".h5")) n -= 3;
    const size_t len = n + strlen(suffix) + 1;
    char *out = xmalloc(len);
    snprintf(out, len, "%.*s%s", (int)n, path, suffix);
    return out;
}

int cmd_rerun(int argc, char **argv) {
    malloc_keep_pages();
    const char *path = NULL, *output = NULL;
    int id = -1, best = 0, quiet = 0;
    const Option options[] = {
        OPT_INT("--trial", &id, 0, 1e9, "N", "the trial to run again (its number in /summary)"),
        OPT_FLAG("--best", NULL, &best, 1, "the ok trial best by the sweep's metric and goal"),
        OPT_STRING("--output", "-o", &output, "FILE",
                   "where the new result goes (default RESULTS.rerun-N.h5 beside\nthe input; never the input itself)"),
        OPT_FLAG("--quiet", "-q", &quiet, 1, "no progress lines on stderr"),
        OPT_END,
    };
    const Command cmd = {"rerun", "attnsweep rerun RESULTS.h5 (--trial N | --best) [-o OUT.h5] [--quiet]",
                         "Run one trial of a sweep again as its sweep ran it: its configuration and seed,\n"
                         "the sweep's budget, limits, reward and scoring from the YAML the results file\n"
                         "keeps, the built-in engine on one BLAS thread (as a sweep's ranks) or the sweep's\n"
                         "program. Writes the new trial as a results file of one trial and prints the\n"
                         "sweep's metric before and now. Exit code 0 when the rerun finished ok, 1 when\n"
                         "it failed, 2 on bad input.\n",
                         options, NULL,
                         {1, "one results file only", "which results file? (attnsweep rerun RESULTS.h5 --trial N)"}};
    args_parse(&cmd, argc, argv, &path);
    if ((id >= 0) == best) die(EXIT_BADINPUT, "rerun: give either --trial N or --best");
    if (output && !output[0]) die(EXIT_BADINPUT, "rerun: --output needs a file name");

    SweepSummary s;  // the root attributes and /summary; the trial's group is read alone
    char err[1024];
    if (summary_read(path, SUMMARY_ROWS, &s, err, sizeof err) != 0) die(EXIT_BADINPUT, "rerun: %s", err);
    SweepSpec spec;
    if (!s.yaml || space_parse(&spec, path, s.yaml, strlen(s.yaml), err, sizeof err) != 0)
        die(EXIT_BADINPUT,
            "rerun: %s: the sweep YAML it keeps does not load here (%s); a file of attnsweep train or score keeps "
            "no sweep",
            path, s.yaml ? err : "no yaml attribute");
    const Metric *m = summary_metric(&s, s.metric);
    if (!m) die(EXIT_BADINPUT, "rerun: %s: the sweep's metric '%s' is not one attnsweep knows", path, s.metric);
    TrialResult old;
    read_trial(path, best ? best_trial(&s, m, path) : named_trial(&s, path, id), &old);
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".rerun-%d.h5", old.id);
    char *out = output ? xstrdup(output) : beside(path, suffix);
    struct stat in_st, out_st;
    if (stat(path, &in_st) == 0 && stat(out, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino)
        die(EXIT_BADINPUT, "rerun: -o %s is the results file itself: a rerun never overwrites it", out);
    check_output("rerun", out);

    grid_mpi_start();
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world > 1) die(EXIT_BADINPUT, "rerun: runs on one rank (this job has %d)", world);
    // A sweep's ranks train on one BLAS thread (grid.c), and the engine's numbers depend on
    // the thread count: the same here, unless the user chose a number.
    if (!getenv("OPENBLAS_NUM_THREADS") && !getenv("OMP_NUM_THREADS")) openblas_set_num_threads(1);
    if (old.group_size > 1 && !quiet)
        fprintf(stderr,
                "rerun: trial %d trained data-parallel on %d ranks; alone here its sums run in another order (the "
                "metric agrees to about 1e-4, not bit for bit)\n",
                old.id, old.group_size);
    if (spec.program.n_command) spec.program.trials_dir = beside(out, ".trials");
    BlacsGrid grid;
    grid_init(&grid, MPI_COMM_SELF);
    ScoreOptions so;
    score_options_default(&so);
    so.energy = spec.energy;
    const TrialHooks hooks = {.progress = quiet ? NULL : stderr, .grid = &grid, .reward = &spec.reward, .score = &so,
                              .time_limit = spec.time_limit, .mem_limit = spec.mem_bytes, .id = old.id};
    TrialRunner *runner = spec.program.n_command ? trial_external_runner(&spec.program) : trial_builtin_runner();
    TrialResult r;
    const int rc = trial_run(runner, &old.config, &hooks, &r);
    trial_runner_free(runner);
    grid_free(&grid);
    // ranked as its sweep was, by a metric of the table (a program's own has no column in a
    // one-trial file)
    write_trial_file_yaml(out, &r, s.sweep ? s.sweep : "rerun", s.yaml, metric_find(s.metric) ? s.metric : NULL,
                          s.maximize);

    const double before = metric_value(&old, m), now = metric_value(&r, m);
    printf("trial %d of %s (seed %d): %s %.17g before, %.17g now (%s%.3g); status %s%s%s\n", old.id,
           s.sweep ? s.sweep : path, old.config.seed, m->name, before, now, now - before >= 0 ? "+" : "",
           now - before, trial_status_names[r.status], r.reason[0] ? ": " : "", r.reason);
    printf("wrote %s\n", out);
    trial_result_free(&r);
    trial_result_free(&old);
    free(out);
    space_free(&spec);
    summary_free(&s);
    return rc != 0 ? EXIT_RUNTIME : 0;
}
