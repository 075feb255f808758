// attnsweep train: train one configuration, print its metrics, optionally write the
// trial's HDF5 file in the results layout.
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "data/dataset.h"
#include "invariants/grid.h"
#include "params/config.h"
#include "params/config_json.h"
#include "store/h5store.h"
#include "trial/metrics.h"
#include "trial/reward.h"
#include "trial/runner.h"

// The metrics of one split on a line: "val_accuracy 0.8415  val_loss 0.4407 nats".
static void print_split(const TrialResult *r, const char *prefix) {
    const char *sep = "";
    for (int i = 0; i < n_metrics; i++) {
        const Metric *m = &metrics[i];
        if (strncmp(m->name, prefix, strlen(prefix)) || !metric_applies(m, r->config.task)) continue;
        printf("%s%s %.4f%s%s", sep, m->name, metric_value(r, m), m->unit[0] ? " " : "", m->unit);
        sep = "  ";
    }
    putchar('\n');
}

int cmd_train(int argc, char **argv) {
    malloc_keep_pages();
    TrialConfig c;
    config_defaults(&c);
    const char *output = NULL;
    int json = 0, quiet = 0;
    const Option options[] = {
        OPT_PARAMS(&c, "Parameters (YAML names with '_' written '-'; defaults in brackets):\n"),
        OPT_STRING("--output", "-o", &output, "FILE", "write the trial (config, curves, final attention tensors) to an HDF5 file"),
        OPT_FLAG("--json", NULL, &json, 1, "print the final metrics as one JSON object on stdout"),
        OPT_FLAG("--quiet", "-q", &quiet, 1, "no progress lines on stderr"),
        OPT_END,
    };
    const Command cmd = {"train", "attnsweep train [--PARAMETER VALUE ...] [-o TRIAL.h5] [--json] [--quiet]",
                         "Train one configuration and report its validation and test metrics.\n"
                         "Threads: OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else one a core; each runs whole\n"
                         "micro-batches of a step. The numbers depend on the seed and the thread count only.\n",
                         options, NULL,
                         {0}};
    args_parse(&cmd, argc, argv, NULL);
    if (output && !output[0]) die(EXIT_BADINPUT, "train: --output needs a file name");
    char err[512];
    if (config_check(&c, err, sizeof err) != 0) die(EXIT_BADINPUT, "train: %s", err);
    if (output) check_output("train", output);

    grid_mpi_start();
    int world;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world > 1) die(EXIT_BADINPUT, "train: runs on one rank (this job has %d); sweeps run with attnsweep run", world);
    BlacsGrid grid;
    grid_init(&grid, MPI_COMM_SELF);
    RewardSpec spec;
    reward_spec_default(&spec);
    const TrialHooks hooks = {.progress = quiet ? NULL : stderr, .grid = &grid, .reward = &spec};
    TrialRunner *runner = trial_builtin_runner();
    TrialResult r;
    int rc = trial_run(runner, &c, &hooks, &r);
    trial_runner_free(runner);
    grid_free(&grid);
    if (output) write_trial_file(output, &r, "train");

    double peak_mb = (double)peak_rss_bytes() / (1024.0 * 1024.0);
    if (json) {
        cJSON *o = trial_result_to_json(&r);
        cJSON_AddNumberToObject(o, "peak_rss_mb", peak_mb);
        cJSON_AddNumberToObject(o, "train_seconds", r.train_seconds);
        cJSON_AddNumberToObject(o, "steps_per_second", r.train_seconds > 0 ? r.steps / r.train_seconds : 0.0);
        cJSON_AddNumberToObject(o, "gflop_per_step", r.flops_per_step * 1e-9);
        char *text = cJSON_PrintUnformatted(o);
        puts(text);
        free(text);
        cJSON_Delete(o);
    } else {
        printf("status %s%s%s\n", trial_status_names[r.status], r.reason[0] ? ": " : "", r.reason);
        print_split(&r, "val_");
        if (!isnan(r.test_loss)) print_split(&r, "test_");
        if (c.task == TASK_RECALL) {
            double chance, values_only;
            recall_baselines(c.recall_pairs, c.recall_vocab, &chance, &values_only);
            printf("recall baselines: chance %.4f (a value at random), values only %.4f (the sequence's values, "
                   "not which key has which)\n",
                   chance, values_only);
        }
        if (r.scores)
            printf("rank deviation %.4f (beyond chance %+.4f)  head correlation %.4f (beyond chance %+.4f, z %.1f)  "
                   "reward %.4f (= val_accuracy - %g x %+.4f - %g x %+.4f)\n",
                   r.rank_deviation, r.rank_deviation_excess, r.correlation, r.correlation_excess, r.correlation_z,
                   r.reward, spec.beta, r.rank_deviation_excess, spec.gamma, r.correlation_excess);
        double sps = r.train_seconds > 0 ? r.steps / r.train_seconds : 0.0;
        printf("steps %d  parameters %ld  time %.1f s  %.1f steps/s  %.1f GFLOP/s  peak memory %.0f MB\n", r.steps,
               r.n_params, r.seconds, sps, sps * r.flops_per_step * 1e-9, peak_mb);
        if (output) printf("wrote %s\n", output);
    }
    if (rc != 0) warnf("train: trial %s: %s", trial_status_names[r.status], r.reason[0] ? r.reason : "no reason recorded");
    trial_result_free(&r);
    return rc != 0 ? EXIT_RUNTIME : 0;
}
