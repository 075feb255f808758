/* core_bench.c: the attention cores alone (attn_linear.c, attn_softmax.c), forward and
 * backward, in nanoseconds per token and head, against sequence length.
 *
 *   core_bench [--variant linear|softmax] [--lengths "64 512 4096"] [--batch B]
 *
 * The default model's shapes: d_model 64, 4 heads of 16, causal, and the batch training
 * gives a core at a time (train.c's micro-batches: 512 / L sequences, at least one; the
 * character LM of seq_scaling.sh), on the calling thread (OMP_NUM_THREADS=1 for one).
 * Inputs are uniform in [-1, 1). Each (variant, L) runs 5 blocks of at least 0.2 s of
 * forward + backward pairs after one untimed pair, and reports the best block (the
 * machines are noisy: best = least disturbed), one JSON line each:
 *   {"variant":"linear","seq_len":512,"forward_ns":..,"backward_ns":..}  (per token and head)
 * Reports; asserts nothing. Build: cmake --build build --target core_bench.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "model/attention.h"

enum { BLOCKS = 5, C = 64, NH = 4 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    int linear, B, T;
    float *qkv, *out, *saved, *dout, *dqkv;
} Run;

static void forward(const Run *r) {
    (r->linear ? attn_linear_forward : attn_softmax_forward)(r->out, r->saved, r->qkv, r->B, r->T, C, NH, 1);
}

static void backward(const Run *r) {
    (r->linear ? attn_linear_backward : attn_softmax_backward)(r->dqkv, r->dout, r->out, r->saved, r->qkv, r->B,
                                                               r->T, C, NH, 1);
}

static float *uniform(size_t n) {
    float *x = xmalloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    return x;
}

// The best block's seconds per call of f over at least 0.2 s.
static double best(void (*f)(const Run *), const Run *r) {
    double best_s = 1e30;
    for (int b = 0; b < BLOCKS; b++) {
        long n = 0;
        const double t0 = now();
        double t;
        do {
            f(r);
            n++;
        } while ((t = now() - t0) < 0.2);
        if (t / n < best_s) best_s = t / n;
    }
    return best_s;
}

int main(int argc, char **argv) {
    const char *variant = "linear", *lengths = "64 256 512 1024 2048 4096";
    int B = 0;  // the micro-batch's
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--variant")) variant = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--lengths")) lengths = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--batch")) B = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: core_bench [--variant linear|softmax] [--lengths \"64 512\"] [--batch B]\n");
            return 2;
        }
    }
    if (strcmp(variant, "linear") && strcmp(variant, "softmax")) {
        fprintf(stderr, "core_bench: unknown variant '%s' (linear, softmax)\n", variant);
        return 2;
    }
    char *list = xstrdup(lengths), *save = NULL;
    for (char *tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        const int T = atoi(tok);
        if (T < 1 || B < 0) {
            fprintf(stderr, "core_bench: lengths and batch must be positive integers\n");
            return 2;
        }
        const int nb = B ? B : T < 512 ? 512 / T : 1;
        const size_t rows = (size_t)nb * T;
        Run r = {.linear = variant[0] == 'l', .B = nb, .T = T, .qkv = uniform(rows * 3 * C), .out = uniform(rows * C),
                 .saved = uniform(attn_saved_floats(nb, T, NH)), .dout = uniform(rows * C), .dqkv = uniform(rows * 3 * C)};
        forward(&r);
        backward(&r);
        const double f = best(forward, &r), b = best(backward, &r), per = 1e9 / ((double)rows * NH);
        printf("{\"variant\":\"%s\",\"seq_len\":%d,\"batch\":%d,\"forward_ns\":%.2f,\"backward_ns\":%.2f}\n", variant,
               T, nb, f * per, b * per);
        fflush(stdout);
        free(r.qkv), free(r.out), free(r.saved), free(r.dout), free(r.dqkv);
    }
    free(list);
    return 0;
}
