// h5_append_bench: what the results file writes per trial as it grows (h5store_write_trial:
// a /summary row and a /trials/NNNNNN group, then a flush), and how large it ends.
//
//   h5_append_bench FILE.h5 [TRIALS [varied]]       (default 4000)
//
// Each trial: the built-in engine's shape, 1 layer of (4, 8, 16, 3) weights and (16, 33)
// output weights, a curve of 10 evaluations, no scores. The bytes are this process's
// write()/pwrite() bytes (/proc/self/io wchar) over each trial's write and flush; prints
// their mean over the trials in each tenth with the mean wall time of a write, then the
// file's size. Build it against the
// commit before a change of src/store/h5store.c for the "before" numbers.
//
// varied (scripts/bench/report_memory.sh: a large file for attnsweep report): each trial
// its own configuration and numbers, as a random sweep's: seed, lr and lambda_orth drawn
// per trial, two repeats of a configuration in three, metrics spread by trial, one
// trial in ten pruned and one in twenty failed with a reason.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "store/h5store.h"

static long long written_bytes(void) {  // wchar of /proc/self/io
    FILE *f = xfopen("/proc/self/io", "r");
    char key[64];
    long long v = -1, x;
    while (fscanf(f, "%63[^:]: %lld\n", key, &x) == 2)
        if (!strcmp(key, "wchar")) v = x;
    fclose(f);
    return v;
}

// Trial id of a random sweep (see the top): configuration id / 3 has the seeds 1000 and
// 1001 when id % 3 < 2, else its own; the numbers are a fixed scramble of id.
static void vary(TrialResult *r, int id) {
    const int config = id / 3, repeat = id % 3;
    const double u = fmod(config * 0.6180339887, 1.0), v = fmod(id * 0.7548776662, 1.0), w = fmod(id * 0.5698402910, 1.0);
    r->config.seed = repeat < 2 ? 1000 + repeat : 2000 + id;
    r->config.lr = 1e-4 * pow(100.0, u);
    r->config.lambda_orth = (double)(config % 4) * 0.01;
    r->val_accuracy = 0.3 + 0.6 * v, r->val_loss = 2.0 - 1.5 * v;
    r->test_accuracy = r->val_accuracy - 0.01, r->test_loss = r->val_loss + 0.02;
    r->rank_deviation = w, r->correlation = fmod(w + v, 1.0), r->reward = r->val_accuracy - 0.1 * w;
    r->seconds = 1.0 + w;
    if (id % 20 == 19) {
        r->status = TRIAL_FAILED, r->steps = 40;
        snprintf(r->reason, sizeof r->reason, "diverged: non-finite training loss at step %d", 40);
    } else if (id % 10 == 9) {
        r->status = TRIAL_PRUNED, r->steps = 50;
        snprintf(r->reason, sizeof r->reason, "stopped by ASHA at step %d", 50);
    }
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[3], "varied")))
        die(EXIT_BADINPUT, "usage: h5_append_bench FILE.h5 [TRIALS [varied]]");
    const int trials = argc >= 3 ? atoi(argv[2]) : 4000, tenth = trials / 10 > 0 ? trials / 10 : 1, varied = argc == 4;
    const int dims[4] = {4, 8, 16, 3};
    StoreMeta meta = {.sweep = "bench", .yaml = "method: random\n", .seed = 1, .start_time = 1.7e9};
    H5Store *s = h5store_create(argv[1], &meta);
    const size_t count = (size_t)dims[0] * dims[1] * dims[2] * dims[3], out_count = 16 * 33;
    float *w = xcalloc(count, sizeof(float)), *wo = xcalloc(out_count, sizeof(float));
    CurvePoint curve[10];
    for (int i = 0; i < 10; i++) curve[i] = (CurvePoint){.step = 10 * (i + 1), .val_loss = 2.0 - 0.1 * i, .val_accuracy = 0.1 * i};
    printf("h5_append_bench: %d trials; bytes written per trial (write + flush), mean over each tenth\n", trials);
    long long sum = 0;
    double seconds = 0.0;
    for (int id = 0; id < trials; id++) {
        TrialResult r = {.id = id, .status = TRIAL_OK, .val_accuracy = 0.5, .val_loss = 1.0, .steps = 100, .seconds = 1.0};
        config_defaults(&r.config);
        if (varied) vary(&r, id);
        r.n_curve = 10, r.curve = curve;
        r.n_layers = 1;
        memcpy(r.dims, dims, sizeof r.dims);
        r.out_dims[0] = 16, r.out_dims[1] = 33;
        r.weights = &w, r.weights_out = &wo;
        const long long before = written_bytes();
        const double t0 = now_seconds();
        h5store_write_trial(s, &r);
        seconds += now_seconds() - t0;
        sum += written_bytes() - before;
        if ((id + 1) % tenth == 0) {
            printf("  trials up to %6d: %8.1f KB %7.3f ms\n", id + 1, sum / 1024.0 / tenth, 1e3 * seconds / tenth);
            sum = 0, seconds = 0.0;
        }
    }
    h5store_close(s, 1.7e9 + trials);
    struct stat st;
    if (stat(argv[1], &st) != 0) die(EXIT_RUNTIME, "%s: not written", argv[1]);
    printf("file: %.2f MB, %.1f KB per trial\n", st.st_size / 1048576.0, st.st_size / 1024.0 / trials);
    free(w);
    free(wo);
    return 0;
}
