// h5_append_bench: what the results file writes per trial as it grows (h5store_write_trial:
// a /summary row and a /trials/NNNNNN group, then a flush), and how large it ends.
//
//   h5_append_bench FILE.h5 [TRIALS]       (default 4000)
//
// Each trial: the built-in engine's shape, 1 layer of (4, 8, 16, 3) weights and (16, 33)
// output weights, a curve of 10 evaluations, no scores. The bytes are this process's
// write()/pwrite() bytes (/proc/self/io wchar) over each trial's write and flush; prints
// their mean over the trials in each tenth with the mean wall time of a write, then the
// file's size. Build it against the
// commit before a change of src/store/h5store.c for the "before" numbers.
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

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) die(EXIT_BADINPUT, "usage: h5_append_bench FILE.h5 [TRIALS]");
    const int trials = argc == 3 ? atoi(argv[2]) : 4000, tenth = trials / 10 > 0 ? trials / 10 : 1;
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
