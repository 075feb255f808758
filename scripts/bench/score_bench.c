// score_bench: time the Tucker scoring of one synthetic attention layer on the ranks
// mpirun gives (built and run by scripts/bench/score_vs_numpy.sh).
//
//   score_bench G DG DM R r0 r1 r2 r3 NOISE REPS [OUT]
//
// W[G, DG, DM, R] = core ×₀ F₀ ×₁ F₁ ×₂ F₂ ×₃ F₃ (Gaussian core of size r0×r1×r2×r3,
// Gaussian factors) plus Gaussian noise of NOISE × its rms, the same on every rank
// (fixed seed). With OUT, rank 0 also writes, for numpy, W to OUT.f32 (float32,
// row-major) and the HOSVD of the last repetition to OUT.svd: per mode, as float64,
// m, n_sv, n_vec, the n_sv singular values, then the m × n_vec leading left singular
// vectors (column-major). Prints one JSON object from rank 0: the median and minimum
// over REPS of the time of score_layer without the CP sweep and of the HOSVD alone
// (unfolding_svds with the vectors score_layer asks for), the Tucker ranks/fit/sweeps,
// and the peak resident memory per rank.
#define _DEFAULT_SOURCE  // M_PI
#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "invariants/score.h"
#include "invariants/tucker.h"

// out[a, i, b] = Σ_j F[i, j] in[a, j, b]: mode of size r expanded to d (F row-major d × r).
static void expand(double *out, const double *in, size_t a, int r, int d, size_t b, const double *F) {
    for (size_t al = 0; al < a; al++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, (int)b, r, 1.0, F, r, in + al * r * b, (int)b, 0.0,
                    out + al * d * b, (int)b);
}

// N(0, 1) by Box–Muller (gsl_randist.h would bring GSL's cblas.h next to OpenBLAS's).
static double gaussian(gsl_rng *rng) {
    return sqrt(-2.0 * log(gsl_rng_uniform_pos(rng))) * cos(2.0 * M_PI * gsl_rng_uniform(rng));
}

static float *synthetic_layer(const int dims[4], const int ranks[4], double noise) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 12345);
    int cur[4] = {ranks[0], ranks[1], ranks[2], ranks[3]};
    size_t size = (size_t)cur[0] * cur[1] * cur[2] * cur[3];
    double *T = xmalloc(size * sizeof(double));
    for (size_t i = 0; i < size; i++) T[i] = gaussian(rng);
    for (int n = 3; n >= 0; n--) {  // mode 0 last: its intermediate is the smallest
        double *F = xmalloc((size_t)dims[n] * ranks[n] * sizeof(double));
        for (int i = 0; i < dims[n] * ranks[n]; i++) F[i] = gaussian(rng);
        size_t a = 1, b = 1;
        for (int k = 0; k < n; k++) a *= (size_t)cur[k];
        for (int k = n + 1; k < 4; k++) b *= (size_t)cur[k];
        double *E = xmalloc(a * dims[n] * b * sizeof(double));
        expand(E, T, a, ranks[n], dims[n], b, F);
        free(F);
        free(T);
        T = E;
        cur[n] = dims[n];
        size = a * dims[n] * b;
    }
    double sum2 = 0.0;
    for (size_t i = 0; i < size; i++) sum2 += T[i] * T[i];
    const double sd = noise * sqrt(sum2 / size);
    float *W = xmalloc(size * sizeof(float));
    for (size_t i = 0; i < size; i++) W[i] = (float)(T[i] + sd * gaussian(rng));
    free(T);
    gsl_rng_free(rng);
    return W;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    malloc_keep_pages();  // as attnsweep score
    MPI_Init(&argc, &argv);
    if (argc != 11 && argc != 12)
        die(EXIT_BADINPUT, "usage: score_bench G DG DM R r0 r1 r2 r3 NOISE REPS [OUT]");
    int dims[4], ranks[4];
    for (int n = 0; n < 4; n++) {
        dims[n] = atoi(argv[1 + n]);
        ranks[n] = atoi(argv[5 + n]);
    }
    const double noise = atof(argv[9]);
    const int reps = atoi(argv[10]);
    BlacsGrid g;
    grid_init(&g, MPI_COMM_WORLD);
    float *W = synthetic_layer(dims, ranks, noise);
    const size_t size = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    const char *out = argc == 12 && g.rank == 0 ? argv[11] : NULL;
    char path[4096];
    if (out) {
        snprintf(path, sizeof path, "%s.f32", out);
        FILE *f = xfopen(path, "wb");
        if (fwrite(W, sizeof(float), size, f) != size) die(EXIT_RUNTIME, "%s: short write", path);
        fclose(f);
    }
    const double rss_before = (double)peak_rss_bytes();

    ScoreOptions o;
    score_options_default(&o);
    o.cp = 0;
    double *t_score = xmalloc((size_t)reps * sizeof(double)), *t_hosvd = xmalloc((size_t)reps * sizeof(double));
    LayerScore s;
    for (int k = 0; k < reps; k++) {
        MPI_Barrier(g.comm);
        double t0 = MPI_Wtime();
        score_weights(&s, W, dims, &o, &g);
        MPI_Barrier(g.comm);
        t_score[k] = MPI_Wtime() - t0;
        if (k + 1 < reps) layer_score_free(&s);

        double *X = xmalloc(size * sizeof(double));
        for (size_t i = 0; i < size; i++) X[i] = W[i];
        MPI_Barrier(g.comm);
        t0 = MPI_Wtime();
        UnfoldingSvd u[4];
        const int n_vec_min[4] = {0, 0, 0, 0};
        const Tensor4 t4 = tensor4_dense(X, dims);
        unfolding_svds(u, &t4, n_vec_min, o.energy, &g);
        MPI_Barrier(g.comm);
        t_hosvd[k] = MPI_Wtime() - t0;
        if (out && k + 1 == reps) {
            snprintf(path, sizeof path, "%s.svd", out);
            FILE *f = xfopen(path, "wb");
            for (int n = 0; n < 4; n++) {
                const double head[3] = {u[n].m, u[n].n_sv, u[n].n_vec};
                const size_t n_u = (size_t)u[n].m * u[n].n_vec;
                if (fwrite(head, sizeof(double), 3, f) != 3 ||
                    fwrite(u[n].sv, sizeof(double), (size_t)u[n].n_sv, f) != (size_t)u[n].n_sv ||
                    fwrite(u[n].U, sizeof(double), n_u, f) != n_u)
                    die(EXIT_RUNTIME, "%s: short write", path);
            }
            fclose(f);
        }
        for (int n = 0; n < 4; n++) unfolding_svd_free(&u[n]);
        free(X);
    }
    qsort(t_score, (size_t)reps, sizeof(double), cmp_double);
    qsort(t_hosvd, (size_t)reps, sizeof(double), cmp_double);
    double rss[2] = {rss_before, (double)peak_rss_bytes()}, rss_max[2];
    MPI_Reduce(rss, rss_max, 2, MPI_DOUBLE, MPI_MAX, 0, g.comm);
    if (g.rank == 0)
        printf("{\"ranks\": %d, \"grid\": \"%dx%d\", \"dims\": [%d, %d, %d, %d], \"score_median_s\": %.6f, "
               "\"score_min_s\": %.6f, \"hosvd_median_s\": %.6f, \"tucker_ranks\": [%d, %d, %d, %d], "
               "\"tucker_fit\": %.8f, \"tucker_iters\": %d, \"eff_rank\": [%.6f, %.6f, %.6f, %.6f], "
               "\"peak_rss_mb_per_rank\": %.1f, \"rss_before_scoring_mb\": %.1f, \"reps\": %d}\n",
               g.size, g.nprow, g.npcol, dims[0], dims[1], dims[2], dims[3], t_score[reps / 2], t_score[0],
               t_hosvd[reps / 2], s.tucker_ranks[0], s.tucker_ranks[1], s.tucker_ranks[2], s.tucker_ranks[3],
               s.tucker_fit, s.tucker_iters, s.eff_rank[0], s.eff_rank[1], s.eff_rank[2], s.eff_rank[3],
               rss_max[1] / 1048576.0, rss_max[0] / 1048576.0, reps);
    layer_score_free(&s);
    free(t_score);
    free(t_hosvd);
    free(W);
    grid_free(&g);
    MPI_Finalize();
    return 0;
}
