/* sgemm.c: single-precision GEMM throughput of cblas_sgemm (OpenBLAS), the
 * ceiling attnsweep's training step is measured against.
 *
 * Cases: a large square product (2000^3, as in ENVIRONMENT.md) and the GEMM
 * shapes of one forward pass of the default ViT (M = 2176 rows = 128 images x
 * 17 tokens; row-major C[M,N] = A[M,K] . B[K,N]):
 *   qkv      (2176x64) . (64x192)
 *   fc       (2176x64) . (64x256)
 *   fc_proj  (2176x256). (256x64)
 *   proj     (2176x64) . (64x64)
 * Each case runs 3 timed blocks of at least 0.1 s after one untimed call and
 * reports the best block (the machine is shared and noisy; best = least
 * disturbed). On stdout, first one JSON line on the library, e.g.
 *   {"openblas":"OpenBLAS 0.3.21 DYNAMIC_ARCH ...","core":"Haswell","threads":1}
 * (core: the kernel set OpenBLAS picked, which OPENBLAS_CORETYPE overrides),
 * then one JSON line per case:
 *   {"case":"qkv","m":2176,"n":192,"k":64,"gflop_per_second":...}
 * Threads: whatever OPENBLAS_NUM_THREADS says (the bench script sets it).
 * Arguments: the names of the cases to run (default: all), e.g. `sgemm_bench square_2000`.
 *
 * Build: cmake --build build --target sgemm_bench (build/bench/sgemm_bench)
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c17 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BLOCKS = 3 };
static const double MIN_BLOCK_SECONDS = 0.1;

struct gemm_case {
  const char *name;
  int m, n, k;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *random_matrix(size_t count) {
  float *a = malloc(count * sizeof *a);
  if (!a) {
    fprintf(stderr, "sgemm: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < count; i++) a[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  return a;
}

static void sgemm(const struct gemm_case *c, const float *a, const float *b, float *out) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->m, c->n, c->k, 1.0f, a, c->k,
              b, c->n, 0.0f, out, c->n);
}

/* Whether the command line names case `name` (no names: every case). */
static int wanted(const char *name, int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], name)) return 1;
  return argc < 2;
}

/* Best GFLOP/s over BLOCKS blocks, each block repeating the product long enough
 * (>= MIN_BLOCK_SECONDS) for the clock to be exact. */
static double best_gflop_per_second(const struct gemm_case *c) {
  float *a = random_matrix((size_t)c->m * c->k);
  float *b = random_matrix((size_t)c->k * c->n);
  float *out = random_matrix((size_t)c->m * c->n);

  double t0 = now_seconds();
  sgemm(c, a, b, out); /* untimed: warms caches and OpenBLAS's buffers */
  double once = now_seconds() - t0;
  long reps = once >= MIN_BLOCK_SECONDS ? 1 : (long)(MIN_BLOCK_SECONDS / once) + 1;

  double flop = 2.0 * c->m * c->n * c->k * (double)reps, best = 0.0;
  for (int blk = 0; blk < BLOCKS; blk++) {
    t0 = now_seconds();
    for (long r = 0; r < reps; r++) sgemm(c, a, b, out);
    double rate = flop / (now_seconds() - t0) * 1e-9;
    if (rate > best) best = rate;
  }
  free(a);
  free(b);
  free(out);
  return best;
}

int main(int argc, char **argv) {
  static const struct gemm_case cases[] = {
      {"square_2000", 2000, 2000, 2000},
      {"qkv", 2176, 192, 64},
      {"fc", 2176, 256, 64},
      {"fc_proj", 2176, 64, 256},
      {"proj", 2176, 64, 64},
  };
  for (int i = 1; i < argc; i++) {
    size_t k = 0;
    while (k < sizeof cases / sizeof cases[0] && strcmp(argv[i], cases[k].name)) k++;
    if (k == sizeof cases / sizeof cases[0]) {
      fprintf(stderr, "sgemm: unknown case '%s' (the cases:", argv[i]);
      for (k = 0; k < sizeof cases / sizeof cases[0]; k++) fprintf(stderr, " %s", cases[k].name);
      fprintf(stderr, ")\n");
      return 2;
    }
  }
  printf("{\"openblas\":\"%s\",\"core\":\"%s\",\"threads\":%d}\n", openblas_get_config(),
         openblas_get_corename(), openblas_get_num_threads());
  srand(1);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct gemm_case *c = &cases[i];
    if (!wanted(c->name, argc, argv)) continue;
    printf("{\"case\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"gflop_per_second\":%.2f}\n", c->name,
           c->m, c->n, c->k, best_gflop_per_second(c));
    fflush(stdout);
  }
  return 0;
}
