// score_bench: time the Tucker scoring of one synthetic attention layer on the ranks
// mpirun gives (built and run by scripts/bench/score_vs_numpy.sh).
//
//   score_bench parameters G DG DM R r0 r1 r2 r3 NOISE REPS [OUT]
//   score_bench function   H DK DM RANK NOISE REPS [OUT]
//
// parameters: the tensor W[G, DG, DM, R] = core ×₀ F₀ ×₁ F₁ ×₂ F₂ ×₃ F₃ (Gaussian core
// of size r0×r1×r2×r3, Gaussian factors) plus Gaussian noise of NOISE × its rms, scored
// as it is (score_weights).
// function: a softmax layer of H heads of DK on DM features whose four factor matrices
// (W_Q, W_K, W_V and W_Oᵀ, each H·DK × DM) are a Gaussian H·DK × RANK matrix times a
// shared RANK × DM input basis (one for the query/output side, one for the key/value
// side) plus NOISE × its rms: its function-level tensor T[H, DM, DM, 2] has d_model
// modes of rank about RANK. Scored through score_layer from the float weights as
// `attnsweep score` scores a checkpoint (the circuits from the factors; for a tensor
// above ScoreOptions.dense_max, HOOI from the factors too).
// Both are the same on every rank (fixed seed). With OUT, rank 0 also writes, for numpy,
// the float32 weights (parameters: OUT.f32, W row-major; function: OUT.qkv.f32 as
// [H, DK, DM, 3] and OUT.out.f32 as [DM, H·DK]) and the HOSVD of the last repetition to
// OUT.svd: per mode, as float64, m, n_sv, n_vec, the n_sv singular values, then the m ×
// n_vec leading left singular vectors (column-major). Prints one JSON object from rank
// 0: the median and minimum over REPS of the time of the scoring without the CP sweep and
// of the HOSVD alone (unfolding_svds with the vectors the scoring asks for), the Tucker
// ranks/fit/sweeps, and the peak resident memory per rank.
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
#include "invariants/tensor4.h"
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

// W (float) = T plus Gaussian noise of `noise` × T's rms.
static void add_noise(float *W, const double *T, size_t size, double noise, gsl_rng *rng) {
    double sum2 = 0.0;
    for (size_t i = 0; i < size; i++) sum2 += T[i] * T[i];
    const double sd = noise * sqrt(sum2 / size);
    for (size_t i = 0; i < size; i++) W[i] = (float)(T[i] + sd * gaussian(rng));
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
    float *W = xmalloc(size * sizeof(float));
    add_noise(W, T, size, noise, rng);
    free(T);
    gsl_rng_free(rng);
    return W;
}

// The four factor matrices of a softmax layer (see the top), as qkv [H, DK, DM, 3] and
// out [DM, H·DK].
static void synthetic_heads(float *qkv, float *out, int H, int dk, int D, int rank, double noise) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 54321);
    const int n = H * dk;
    double *E[2], *G = xmalloc((size_t)n * rank * sizeof(double)), *F = xmalloc((size_t)n * D * sizeof(double));
    float *f = xmalloc((size_t)n * D * sizeof(float));
    for (int side = 0; side < 2; side++) {  // 0: query/output side, 1: key/value side
        E[side] = xmalloc((size_t)rank * D * sizeof(double));
        for (size_t i = 0; i < (size_t)rank * D; i++) E[side][i] = gaussian(rng);
    }
    for (int k = 0; k < 4; k++) {  // W_Q, W_K, W_V, W_Oᵀ
        for (size_t i = 0; i < (size_t)n * rank; i++) G[i] = gaussian(rng);
        const int side = k == 1 || k == 2;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, rank, 1.0, G, rank, E[side], D, 0.0, F, D);
        add_noise(f, F, (size_t)n * D, noise, rng);
        for (int row = 0; row < n; row++)
            for (int m = 0; m < D; m++) {
                if (k < 3)
                    qkv[((size_t)row * D + m) * 3 + k] = f[(size_t)row * D + m];
                else
                    out[(size_t)m * n + row] = f[(size_t)row * D + m];
            }
    }
    for (int side = 0; side < 2; side++) free(E[side]);
    free(f);
    free(F);
    free(G);
    gsl_rng_free(rng);
}

static void write_floats(const char *path, const float *x, size_t n) {
    FILE *f = xfopen(path, "wb");
    if (fwrite(x, sizeof(float), n, f) != n) die(EXIT_RUNTIME, "%s: short write", path);
    fclose(f);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    malloc_keep_pages();  // as attnsweep score
    MPI_Init(&argc, &argv);
    const int function = argc > 1 && !strcmp(argv[1], "function"), nargs = function ? 8 : 12;
    if ((argc != nargs && argc != nargs + 1) || (!function && strcmp(argv[1], "parameters")))
        die(EXIT_BADINPUT, "usage: score_bench parameters G DG DM R r0 r1 r2 r3 NOISE REPS [OUT] | "
                           "score_bench function H DK DM RANK NOISE REPS [OUT]");
    BlacsGrid g;
    grid_init(&g, MPI_COMM_WORLD);
    const char *out = argc == nargs + 1 && g.rank == 0 ? argv[nargs] : NULL;
    const double noise = atof(argv[nargs - 2]);
    const int reps = atoi(argv[nargs - 1]);
    char path[4096];
    LayerWeights w = {0};
    float *qkv, *wout = NULL;
    if (function) {
        const int H = atoi(argv[2]), dk = atoi(argv[3]), D = atoi(argv[4]), rank = atoi(argv[5]);
        w = (LayerWeights){.dims = {H, dk, D, 3}, .out_dims = {D, H * dk}};
        qkv = xmalloc((size_t)H * dk * D * 3 * sizeof(float));
        wout = xmalloc((size_t)D * H * dk * sizeof(float));
        synthetic_heads(qkv, wout, H, dk, D, rank, noise);
        if (out) {
            snprintf(path, sizeof path, "%s.qkv.f32", out);
            write_floats(path, qkv, (size_t)H * dk * D * 3);
            snprintf(path, sizeof path, "%s.out.f32", out);
            write_floats(path, wout, (size_t)D * H * dk);
        }
    } else {
        int ranks[4];
        for (int n = 0; n < 4; n++) w.dims[n] = atoi(argv[2 + n]), ranks[n] = atoi(argv[6 + n]);
        qkv = synthetic_layer(w.dims, ranks, noise);
        if (out) {
            snprintf(path, sizeof path, "%s.f32", out);
            write_floats(path, qkv, (size_t)w.dims[0] * w.dims[1] * w.dims[2] * w.dims[3]);
        }
    }
    w.qkv = qkv, w.out = wout;
    const TensorView view = function ? TENSOR_FUNCTION : TENSOR_PARAMETERS;
    const double rss_before = (double)peak_rss_bytes();

    ScoreOptions o;
    score_options_default(&o);
    o.cp = 0;
    double *t_score = xmalloc((size_t)reps * sizeof(double)), *t_hosvd = xmalloc((size_t)reps * sizeof(double));
    LayerScore s;
    int dims[4];
    scored_dims(dims, &w, view);
    for (int k = 0; k < reps; k++) {
        MPI_Barrier(g.comm);
        double t0 = MPI_Wtime();
        score_layer(&s, &w, view, &o, &g);
        MPI_Barrier(g.comm);
        t_score[k] = MPI_Wtime() - t0;
        if (k + 1 < reps) layer_score_free(&s);

        // the HOSVD alone, on the tensor score_layer builds (the conversion to double included)
        MPI_Barrier(g.comm);
        t0 = MPI_Wtime();
        const size_t size = (size_t)w.dims[0] * w.dims[1] * w.dims[2] * w.dims[3];
        Circuits c = {0};
        double *X = NULL;
        Tensor4 t4;
        if (function) {
            circuits_init(&c, w.qkv, w.out, w.dims[0], w.dims[1], w.dims[2]);
            circuits_weight_by_writes(&c, NULL);  // as score_circuits (no two synthetic heads share a QK form)
            t4 = tensor4_circuits(&c);
        } else {
            X = xmalloc(size * sizeof(double));
            for (size_t i = 0; i < size; i++) X[i] = w.qkv[i];
            t4 = tensor4_dense(X, dims);
        }
        UnfoldingSvd u[4];
        const int n_vec_min[4] = {0, 0, 0, 0};
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
        circuits_free(&c);
    }
    qsort(t_score, (size_t)reps, sizeof(double), cmp_double);
    qsort(t_hosvd, (size_t)reps, sizeof(double), cmp_double);
    double rss[2] = {rss_before, (double)peak_rss_bytes()}, rss_max[2];
    MPI_Reduce(rss, rss_max, 2, MPI_DOUBLE, MPI_MAX, 0, g.comm);
    if (g.rank == 0)
        printf("{\"tensor\": \"%s\", \"ranks\": %d, \"grid\": \"%dx%d\", \"dims\": [%d, %d, %d, %d], "
               "\"score_median_s\": %.6f, \"score_min_s\": %.6f, \"hosvd_median_s\": %.6f, "
               "\"tucker_ranks\": [%d, %d, %d, %d], \"tucker_fit\": %.8f, \"tucker_iters\": %d, "
               "\"eff_rank\": [%.6f, %.6f, %.6f, %.6f], \"correlation\": %.6f, \"correlation_chance\": %.6f, "
               "\"peak_rss_mb_per_rank\": %.1f, \"rss_before_scoring_mb\": %.1f, \"reps\": %d}\n",
               tensor_view_names[view], g.size, g.nprow, g.npcol, dims[0], dims[1], dims[2], dims[3],
               t_score[reps / 2], t_score[0], t_hosvd[reps / 2], s.tucker_ranks[0], s.tucker_ranks[1],
               s.tucker_ranks[2], s.tucker_ranks[3], s.tucker_fit, s.tucker_iters, s.eff_rank[0], s.eff_rank[1],
               s.eff_rank[2], s.eff_rank[3], s.correlation, s.correlation_chance, rss_max[1] / 1048576.0,
               rss_max[0] / 1048576.0, reps);
    layer_score_free(&s);
    free(t_score);
    free(t_hosvd);
    free(qkv);
    free(wout);
    grid_free(&g);
    MPI_Finalize();
    return 0;
}
