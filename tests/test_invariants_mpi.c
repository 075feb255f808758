// test_invariants_mpi: score one layer on however many ranks mpirun gives (ctest runs it
// alone, on one rank; test_invariants_mpi_ranks.sh on 2, 3 and 4) and check on rank 0:
//  * the same numbers as rank 0 scoring the same tensor alone, on its own 1×1 grid in the
//    same job, to 1e-10 (check_same_scores; in fact they come out bit for bit the same);
//  * known values: ‖W‖ and Σσ² of every unfolding against ‖W‖² summed directly, the
//    planted multilinear ranks as the Tucker ranks, and the Tucker fit the noise allows;
//  * a softmax layer's function-level scores the same on the grid as on rank 0 alone.
//
// The tensor, [8, 24, 128, 3], is a rank-(4, 6, 10, 3) Tucker tensor plus 5 % noise,
// generated identically on every rank. It is the smallest shape whose every unfolding
// gets two TSQR leaves (unfolding_svd.c): on 2 ranks sibling triangles are folded across ranks,
// on 4 two ranks hold no leaf, every leaf spans two chunks, and the eight SVD tasks
// (values and vectors of each mode) land on different ranks.
// modules: invariants
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "check.h"
#include "mpi_leaks.h"
#include "same_scores.h"
#include "common/util.h"
#include "invariants/score.h"

// W[i0,i1,i2,i3] = Σ_c core[c] Π_n F_n[i_n, c_n] + noise, with Gaussian core and
// factors (orthonormality is not needed: the multilinear rank is what matters here).
static float *layer_tensor(const int dims[4], const int ranks[4], double noise) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2024);
    double *F[4];
    for (int n = 0; n < 4; n++) {
        F[n] = xmalloc((size_t)dims[n] * ranks[n] * sizeof(double));
        for (int i = 0; i < dims[n] * ranks[n]; i++) F[n][i] = gsl_ran_gaussian(rng, 1.0);
    }
    const int core_size = ranks[0] * ranks[1] * ranks[2] * ranks[3];
    double *core = xmalloc((size_t)core_size * sizeof(double));
    for (int c = 0; c < core_size; c++) core[c] = gsl_ran_gaussian(rng, 1.0);
    // contract one mode at a time would be faster; the direct sum is clear and small enough
    // T2[i0, i1, c2, c3] = Σ_{c0,c1} core[c0,c1,c2,c3] F0[i0,c0] F1[i1,c1]
    const int r2r3 = ranks[2] * ranks[3];
    double *T2 = xcalloc((size_t)dims[0] * dims[1] * r2r3, sizeof(double));
    for (int i0 = 0; i0 < dims[0]; i0++)
        for (int i1 = 0; i1 < dims[1]; i1++)
            for (int c0 = 0; c0 < ranks[0]; c0++)
                for (int c1 = 0; c1 < ranks[1]; c1++) {
                    const double f = F[0][i0 * ranks[0] + c0] * F[1][i1 * ranks[1] + c1];
                    const double *cc = core + (size_t)(c0 * ranks[1] + c1) * r2r3;
                    double *t = T2 + (size_t)(i0 * dims[1] + i1) * r2r3;
                    for (int c = 0; c < r2r3; c++) t[c] += f * cc[c];
                }
    const size_t size = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    float *W = xmalloc(size * sizeof(float));
    double sum2 = 0.0;
    double *X = xmalloc(size * sizeof(double));
    for (int ab = 0; ab < dims[0] * dims[1]; ab++)
        for (int i2 = 0; i2 < dims[2]; i2++)
            for (int i3 = 0; i3 < dims[3]; i3++) {
                double v = 0.0;
                for (int c2 = 0; c2 < ranks[2]; c2++)
                    for (int c3 = 0; c3 < ranks[3]; c3++)
                        v += T2[(size_t)ab * r2r3 + c2 * ranks[3] + c3] * F[2][i2 * ranks[2] + c2] *
                             F[3][i3 * ranks[3] + c3];
                X[((size_t)ab * dims[2] + i2) * dims[3] + i3] = v;
                sum2 += v * v;
            }
    const double rms = sqrt(sum2 / size);
    for (size_t i = 0; i < size; i++) W[i] = (float)(X[i] + noise * rms * gsl_ran_gaussian(rng, 1.0));
    free(X);
    free(T2);
    free(core);
    for (int n = 0; n < 4; n++) free(F[n]);
    gsl_rng_free(rng);
    return W;
}

// Values the tensor's construction gives, whatever the grid.
static void check_known_values(const LayerScore *s, const float *W, const int dims[4], const int ranks[4],
                               double noise) {
    const size_t size = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    double norm2 = 0.0;
    for (size_t i = 0; i < size; i++) norm2 += (double)W[i] * W[i];
    CHECK_CLOSE(s->norm, sqrt(norm2), 0.0, 1e-14, "‖W‖ vs summed directly");
    for (int n = 0; n < 4; n++) {
        double sv2 = 0.0;
        for (int i = 0; i < s->n_sv[n]; i++) sv2 += s->sv[n][i] * s->sv[n][i];
        CHECK_CLOSE(sv2, norm2, 0.0, 1e-12, "Σσ² of mode %d vs ‖W‖²", n);
        CHECK(s->tucker_ranks[n] == ranks[n], "mode %d: Tucker rank %d, planted %d", n, s->tucker_ranks[n], ranks[n]);
    }
    // The residual is the noise outside the planted subspace (720 of the 73728 dimensions)
    // and ‖W‖ ≈ ‖noiseless W‖·√(1 + noise²): fit ≈ 1 − noise·√(1 − 720/73728) / √(1 + noise²).
    const double inside = (double)(ranks[0] * ranks[1] * ranks[2] * ranks[3]) / (double)size;
    CHECK_CLOSE(s->tucker_fit, 1.0 - noise * sqrt(1.0 - inside) / sqrt(1.0 + noise * noise), 2e-3, 0.0,
                "Tucker fit vs the noise level");
}


// A softmax layer's function-level tensor (6 heads of 8 on 40 features: its heads' Gram
// rows and its d_model modes' tasks are dealt over the ranks), scored on grid g.
static void score_function_level(LayerScore *s, const BlacsGrid *g) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 77);
    float *qkv = xmalloc(6 * 8 * 40 * 3 * sizeof(float)), *out = xmalloc(40 * 48 * sizeof(float));
    for (int i = 0; i < 6 * 8 * 40 * 3; i++) qkv[i] = (float)gsl_ran_gaussian(rng, 1.0);
    for (int i = 0; i < 40 * 48; i++) out[i] = (float)gsl_ran_gaussian(rng, 1.0);
    gsl_rng_free(rng);
    const LayerWeights w = {.dims = {6, 8, 40, 3}, .qkv = qkv, .out_dims = {40, 48}, .out = out};
    ScoreOptions o;
    score_options_default(&o);
    score_layer(s, &w, TENSOR_FUNCTION, &o, g);
    free(out);
    free(qkv);
}

// On rank 0: the grid's function-level scores against rank 0 alone.
static void check_function_level(const LayerScore *on_grid, const BlacsGrid *g) {
    BlacsGrid self;
    grid_init(&self, MPI_COMM_SELF);
    LayerScore one;
    score_function_level(&one, &self);
    char what[96];
    snprintf(what, sizeof what, "function-level [6,40,40,2] on %d ranks vs 1 rank", g->size);
    check_same_scores(&one, on_grid, 1e-10, what);
    printf("test_invariants_mpi: %s: max difference %.1e\n", what, max_score_diff(&one, on_grid));
    layer_score_free(&one);
    grid_free(&self);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc > 1) die(EXIT_BADINPUT, "usage: test_invariants_mpi (under mpirun -np N, or alone)");
    BlacsGrid g;
    grid_init(&g, MPI_COMM_WORLD);
    const int dims[4] = {8, 24, 128, 3}, ranks[4] = {4, 6, 10, 3};
    const double noise = 0.05;
    float *W = layer_tensor(dims, ranks, noise);
    ScoreOptions o;
    score_options_default(&o);
    LayerScore s;
    const double t0 = MPI_Wtime();
    score_weights(&s, W, dims, &o, &g);
    const double t = MPI_Wtime() - t0;
    LayerScore fs;
    score_function_level(&fs, &g);

    int failed = 0;
    if (g.rank == 0) {
        check_known_values(&s, W, dims, ranks, noise);
        if (g.size > 1) {  // rank 0 alone, on its own 1×1 grid
            BlacsGrid self;
            grid_init(&self, MPI_COMM_SELF);
            LayerScore one;
            score_weights(&one, W, dims, &o, &self);
            char what[64];
            snprintf(what, sizeof what, "%d ranks (%d×%d grid) vs 1 rank", g.size, g.nprow, g.npcol);
            check_same_scores(&one, &s, 1e-10, what);
            printf("test_invariants_mpi: %s: max difference %.1e\n", what, max_score_diff(&one, &s));
            layer_score_free(&one);
            grid_free(&self);
        }
        if (g.size > 1) check_function_level(&fs, &g);
        printf("test_invariants_mpi: %d rank(s), %d×%d grid, [8,24,128,3] scored in %.3f s: Tucker ranks "
               "(%d,%d,%d,%d) fit %.6f, CP rank %d fit %.6f\n",
               g.size, g.nprow, g.npcol, t, s.tucker_ranks[0], s.tucker_ranks[1], s.tucker_ranks[2],
               s.tucker_ranks[3], s.tucker_fit, s.cp_rank, s.cp_fit);
        failed = check_report("test_invariants_mpi");
    }
    layer_score_free(&s);
    layer_score_free(&fs);
    free(W);
    grid_free(&g);
    MPI_Finalize();
    return failed;
}
