// test_circuits: the function-level factors and Gram matrices of circuits/circuits.h
// against the slices built entry by entry from their definitions, and the scores of the
// function-level tensor (factored unfolding SVDs, head correlation, Tucker and CP on the
// materialised tensor) against numpy building T from the raw weights itself.
// modules: circuits invariants
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "circuits/circuits.h"
#include "common/util.h"
#include "invariants/cp.h"
#include "invariants/score.h"
#include "invariants/tensor4.h"
#include "invariants/tucker.h"
#include "mpi_leaks.h"
#include "python_ref.h"


static double uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (*state >> 8) / 16777216.0 * 2.0 - 1.0;
}

// X_hρ[i, j] by the definition: B_h = W_Q^hᵀ W_K^h / √d_k, C_h = W_O^h W_V^h.
static double slice_entry(const float *qkv, const float *out, int H, int dk, int D, int h, int rho, int i, int j) {
    double s = 0.0;
    for (int k = 0; k < dk; k++) {
        const size_t row = (size_t)h * dk + k;
        if (rho == 0)
            s += qkv[(row * D + i) * 3 + 0] * (double)qkv[(row * D + j) * 3 + 1] / sqrt((double)dk);
        else
            s += out[(size_t)i * H * dk + row] * (double)qkv[(row * D + j) * 3 + 2];
    }
    return s;
}

// Random weights qkv [H, dk, D, 3] and out [D, H·dk] and their circuits.
typedef struct {
    float *qkv, *out;
    Circuits c;
} Layer;

static Layer random_layer(int H, int dk, int D, unsigned seed) {
    const int n = H * dk;
    Layer l = {.qkv = xmalloc((size_t)n * D * 3 * sizeof(float)), .out = xmalloc((size_t)D * n * sizeof(float))};
    for (int i = 0; i < n * D * 3; i++) l.qkv[i] = (float)uniform(&seed);
    for (int i = 0; i < D * n; i++) l.out[i] = (float)uniform(&seed);
    circuits_init(&l.c, l.qkv, l.out, H, dk, D);
    return l;
}

// numpy's check `script` of the layer: it reads qkv, out and then the n doubles x from the
// file its first argument names; H, dk and D follow.
static void check_layer_python(const char *script, const Layer *l, int H, int dk, int D, const double *x, size_t n,
                               const char *what) {
    char path[] = "/tmp/attnsweep_circuits_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    FILE *f = fdopen(fd, "wb");
    fwrite(l->qkv, sizeof(float), (size_t)H * dk * D * 3, f);
    fwrite(l->out, sizeof(float), (size_t)D * H * dk, f);
    fwrite(x, sizeof(double), n, f);
    fclose(f);
    char args[256];
    snprintf(args, sizeof args, "%s %d %d %d", path, H, dk, D);
    check_python(script, args, what);
    unlink(path);
}

static void layer_free(Layer *l) {
    circuits_free(&l->c);
    free(l->out);
    free(l->qkv);
}

static void test_head_gram(void) {
    const int H = 3, dk = 4, D = 7;
    Layer l = random_layer(H, dk, D, 7);
    const float *qkv = l.qkv, *out = l.out;
    double gram[9], want[9] = {0};
    circuits_head_gram(gram, &l.c);
    for (int g = 0; g < H; g++)
        for (int h = 0; h < H; h++)
            for (int rho = 0; rho < 2; rho++)
                for (int i = 0; i < D; i++)
                    for (int j = 0; j < D; j++)
                        want[g * H + h] += slice_entry(qkv, out, H, dk, D, g, rho, i, j) *
                                           slice_entry(qkv, out, H, dk, D, h, rho, i, j);
    CHECK_ALL_CLOSE(gram, want, H * H, 1e-12, 1e-12, "head Gram of the circuits");
    layer_free(&l);
}

static void test_mixing_kernel(void) {
    const int r = 4, D = 5, M = r * (r - 1) / 2;
    unsigned st = 11;
    float red[4 * 5], plu[5 * 6];
    for (int i = 0; i < r * D; i++) red[i] = (float)uniform(&st);
    for (int i = 0; i < D * M; i++) plu[i] = (float)uniform(&st);
    MixingKernel k;
    mixing_kernel_init(&k, red, plu, r, D);
    double K[5 * 5 * 5], want[5 * 5 * 5] = {0};
    mixing_kernel_tensor(K, &k);
    for (int o = 0; o < D; o++)
        for (int m = 0; m < D; m++)
            for (int nn = 0; nn < D; nn++) {
                int idx = 0;
                for (int i = 0; i < r; i++)
                    for (int j = i + 1; j < r; j++, idx++)
                        want[(o * D + m) * D + nn] += plu[o * M + idx] * ((double)red[i * D + m] * red[j * D + nn] -
                                                                          (double)red[j * D + m] * red[i * D + nn]);
            }
    CHECK_ALL_CLOSE(K, want, D * D * D, 1e-12, 1e-12, "mixing kernel K_o = W_redᵀ A_o W_red");
    double gram[25], gwant[25] = {0};
    mixing_kernel_gram(gram, &k);
    for (int o = 0; o < D; o++)
        for (int p = 0; p < D; p++)
            for (int e = 0; e < D * D; e++) gwant[o * D + p] += want[o * D * D + e] * want[p * D * D + e];
    CHECK_ALL_CLOSE(gram, gwant, D * D, 1e-12, 1e-12, "Gram of the output features' forms");
    mixing_kernel_free(&k);
}

// numpy builds T[h, i, j, ρ] from qkv and out by the definitions (B_h = W_Q^hᵀW_K^h/√d_k
// weighted by ‖C_h‖/s, s² the heads' mean ‖C_h‖², C_h = W_O^hW_V^h) and compares the singular values of its four unfoldings, the head
// correlation, the norm and the HOSVD-truncated Tucker fit bound with what score_circuits
// printed. An uneven shape (d_k < d_model < 2·heads·d_k) exercises both kinds of modes.
static const char numpy_script[] =
    "import sys, numpy as np\n"
    "f = open(sys.argv[1], 'rb'); H, dk, D = (int(x) for x in sys.argv[2:5])\n"
    "qkv = np.fromfile(f, np.float32, H*dk*D*3).astype(np.float64).reshape(H, dk, D, 3)\n"
    "out = np.fromfile(f, np.float32, D*H*dk).astype(np.float64).reshape(D, H, dk)\n"
    "got = np.fromfile(f, np.float64)\n"
    "Q, K, V = qkv[..., 0], qkv[..., 1], qkv[..., 2]\n"
    "B = np.einsum('hki,hkj->hij', Q, K) / np.sqrt(dk)\n"
    "C = np.einsum('ihk,hkj->hij', out, V)\n"
    "w2 = (C ** 2).sum(axis=(1, 2)); B = B * np.sqrt(w2 / w2.mean())[:, None, None]\n"
    "T = np.stack([B, C], axis=-1)\n"
    "want = []\n"
    "for n in range(4):\n"
    "    s = np.linalg.svd(np.moveaxis(T, n, 0).reshape(T.shape[n], -1), compute_uv=False)\n"
    "    want.extend(s)\n"
    "rows = T.reshape(H, -1); G = rows @ rows.T; nr = np.sqrt(np.diag(G))\n"
    "cos = np.abs(G) / np.outer(nr, nr); corr = (cos.sum() - H) / (H * (H - 1))\n"
    "want.extend([corr, np.linalg.norm(T)])\n"
    "want = np.array(want)\n"
    "assert got.shape == want.shape, (got.shape, want.shape)\n"
    "scale = np.abs(want).max()\n"
    "err = np.abs(got - want) / scale\n"
    "assert np.all(np.isfinite(got)) and np.all(err <= 1e-12), (err.max(), got, want)\n"
    "print(f'  numpy: T[{H},{D},{D},2] σ of the four unfoldings, correlation and norm agree to {err.max():.1e}')\n";

static void test_scores_against_numpy(const BlacsGrid *g) {
    const int H = 5, dk = 3, D = 11;
    Layer l = random_layer(H, dk, D, 3);
    ScoreOptions o;
    score_options_default(&o);
    LayerScore s;
    score_circuits(&s, &l.c, &o, g);
    double got[64];  // every σ (at most H + 2 D + 2 of them), the correlation and the norm
    size_t k = 0;
    for (int m = 0; m < 4; m++)
        for (int i = 0; i < s.n_sv[m]; i++) got[k++] = s.sv[m][i];
    got[k++] = s.correlation, got[k++] = s.norm;
    check_layer_python(numpy_script, &l, H, dk, D, got, k, "numpy reference of the function-level scores");
    CHECK(isfinite(s.tucker_fit) && s.tucker_fit > 0.0 && s.tucker_fit <= 1.0, "Tucker fit %g", s.tucker_fit);
    CHECK(s.cp_rank > 0 && isfinite(s.cp_fit), "CP rank %d fit %g", s.cp_rank, s.cp_fit);
    layer_score_free(&s);
    layer_free(&l);
}

// HOOI and CP-ALS from the factors give the numbers of the dense computation on the
// materialised tensor: HOOI from the factors (heads and roles whole) against HOOI on the
// entries with the same ranks, the MTTKRP of every mode and CP-ALS against the entries'.
static void test_factored_decompositions(const BlacsGrid *g) {
    const int H = 3, dk = 5, D = 12;
    Layer l = random_layer(H, dk, D, 5);
    const Tensor4 t = tensor4_circuits(&l.c);
    double *X = xmalloc(tensor4_size(&t) * sizeof(double));
    circuits_materialize(X, &l.c);
    const Tensor4 tx = tensor4_dense(X, t.dims);
    CHECK_CLOSE(tensor4_norm2(&t), tensor4_norm2(&tx), 0.0, 1e-13, "‖T‖² from the factors");

    const int ranks[4] = {H, 7, 8, 2}, n_vec[4] = {H, 7, 8, 2};
    UnfoldingSvd u[4];
    unfolding_svds(u, &t, n_vec, 0.99, g);
    const double *U0[4] = {u[0].U, u[1].U, u[2].U, u[3].U};
    TuckerModel td, tf;
    tucker_hooi(&td, X, t.dims, ranks, U0, 1e-13, 200, 0, g);
    tucker_hooi_circuits(&tf, &l.c, tensor4_norm2(&t), ranks, U0, 1e-13, 200, 0, g);
    CHECK_CLOSE(tf.fit, td.fit, 1e-10, 0.0, "HOOI from the factors against HOOI on the entries");
    CHECK(tf.iters > 1, "HOOI from the factors ran %d sweeps", tf.iters);
    printf("  HOOI ranks (%d, %d, %d, %d): fit %.12f from the factors, %.12f on the entries (%d, %d sweeps)\n", ranks[0],
           ranks[1], ranks[2], ranks[3], tf.fit, td.fit, tf.iters, td.iters);
    tucker_model_free(&td);
    tucker_model_free(&tf);
    for (int n = 0; n < 4; n++) unfolding_svd_free(&u[n]);

    const int R = 4;
    double *A[4], *Mc = xmalloc((size_t)2 * H * D * R * sizeof(double)), *Md = xmalloc((size_t)2 * H * D * R * sizeof(double));
    unsigned st = 9;
    for (int n = 0; n < 4; n++) {
        A[n] = xmalloc((size_t)t.dims[n] * R * sizeof(double));
        for (int i = 0; i < t.dims[n] * R; i++) A[n][i] = uniform(&st);
    }
    for (int n = 0; n < 4; n++) {  // the MTTKRP of every mode, through either partial product
        cp_mttkrp(Mc, &t, R, (const double *const *)A, n);
        cp_mttkrp(Md, &tx, R, (const double *const *)A, n);
        CHECK_ALL_CLOSE(Mc, Md, t.dims[n] * R, 1e-12, 1e-12, "MTTKRP of mode %d from the circuits' factors", n);
    }
    CpModel mc, md;
    cp_als(&mc, &t, R, (const double *const *)A, 1e-12, 500, 0);
    cp_als(&md, &tx, R, (const double *const *)A, 1e-12, 500, 0);
    CHECK_CLOSE(mc.fit, md.fit, 1e-9, 0.0, "CP-ALS from the factors against CP-ALS on the entries");
    printf("  CP rank %d: fit %.12f from the factors, %.12f on the entries\n", R, mc.fit, md.fit);
    cp_model_free(&mc);
    cp_model_free(&md);
    for (int n = 0; n < 4; n++) free(A[n]);
    free(Md);
    free(Mc);
    free(X);
    layer_free(&l);
}

// A layer whose heads mode is truncated (head 1 a copy of head 0: numerical rank 2 of 3):
// HOOI runs on the entries when they fit in dense_max, and from the factors with the
// heads mode whole when they do not.
static void test_truncated_heads(const BlacsGrid *g) {
    const int H = 3, dk = 4, D = 8;
    Layer l = random_layer(H, dk, D, 21);
    for (int rho = 0; rho < 2; rho++) {
        memcpy(l.c.L[rho] + (size_t)dk * D, l.c.L[rho], (size_t)dk * D * sizeof(double));
        memcpy(l.c.R[rho] + (size_t)dk * D, l.c.R[rho], (size_t)dk * D * sizeof(double));
    }
    ScoreOptions o;
    score_options_default(&o);
    LayerScore dense, whole;
    score_circuits(&dense, &l.c, &o, g);
    o.dense_max = 0;
    score_circuits(&whole, &l.c, &o, g);
    CHECK(dense.num_rank[0] == 2 && dense.tucker_ranks[0] == 2, "truncated heads: numerical rank %d, Tucker rank %d",
          dense.num_rank[0], dense.tucker_ranks[0]);
    CHECK(whole.tucker_ranks[0] == H && whole.tucker_ranks[3] == 2, "above dense_max: Tucker ranks %d, %d kept whole",
          whole.tucker_ranks[0], whole.tucker_ranks[3]);
    CHECK(isfinite(dense.tucker_fit) && isfinite(whole.tucker_fit) && whole.tucker_fit >= dense.tucker_fit - 1e-12,
          "the fit with the heads kept whole (%.6f) is at least the truncated one's (%.6f)", whole.tucker_fit,
          dense.tucker_fit);
    layer_score_free(&dense);
    layer_score_free(&whole);
    layer_free(&l);
}

// The rotation nulls (chance.h: a Gaussian reading of each pair's inner product under
// independent Haar rotations of every slice) against numpy rotating every weighted slice
// B_h, C_h by exact Haar matrices on both sides, 2000 times from a fixed seed: the
// Correlation's mean within 3 % and sd within 6 % (measured 1.5 % and 3.5 %; the Monte
// Carlo's own standard errors about 0.7 % and 1.6 %), the heads' effective rank's mean
// within a quarter of its sd and its sd within 15 % (measured 0.04 sd and 10 %; 256 draws
// give that sd a standard error of 4 %).
static const char null_script[] =
    "import sys, numpy as np\n"
    "f = open(sys.argv[1], 'rb'); H, dk, D = (int(x) for x in sys.argv[2:5])\n"
    "qkv = np.fromfile(f, np.float32, H*dk*D*3).astype(np.float64).reshape(H, dk, D, 3)\n"
    "out = np.fromfile(f, np.float32, D*H*dk).astype(np.float64).reshape(D, H, dk)\n"
    "mean_c, sd_c, rank_c, rank_sd_c = np.fromfile(f, np.float64, 4)\n"
    "B = np.einsum('hki,hkj->hij', qkv[..., 0], qkv[..., 1]) / np.sqrt(dk)\n"
    "C = np.einsum('ihk,hkj->hij', out, qkv[..., 2])\n"
    "w2 = (C ** 2).sum(axis=(1, 2)); B = B * np.sqrt(w2 / w2.mean())[:, None, None]\n"
    "rng = np.random.default_rng(7)\n"
    "def haar():\n"
    "    q, r = np.linalg.qr(rng.normal(size=(D, D))); return q * np.sign(np.diag(r))\n"
    "cs, er = [], []\n"
    "for s in range(2000):\n"
    "    rows = np.array([np.concatenate([(haar() @ X[h] @ haar()).ravel() for X in (B, C)]) for h in range(H)])\n"
    "    G = rows @ rows.T; nr = np.sqrt(np.diag(G)); cs.append(((np.abs(G) / np.outer(nr, nr)).sum() - H) / (H * (H - 1)))\n"
    "    sv = np.sqrt(np.clip(np.linalg.eigvalsh(G), 0, None)); p = sv / sv.sum(); er.append(np.exp(-(p * np.log(p)).sum()))\n"
    "m, sd, rm, rsd = np.mean(cs), np.std(cs), np.mean(er), np.std(er)\n"
    "print(f'  rotation null: analytic mean {mean_c:.5f} sd {sd_c:.5f}; Haar Monte Carlo mean {m:.5f} sd {sd:.5f}')\n"
    "print(f'  heads effective rank: drawn mean {rank_c:.6f} sd {rank_sd_c:.6f}; Haar Monte Carlo mean {rm:.6f} sd {rsd:.6f}')\n"
    "assert np.isfinite(rank_c) and abs(rank_c - rm) <= 0.25 * rsd, (rank_c, rm, rsd)\n"
    "assert np.isfinite(rank_sd_c) and abs(rank_sd_c / rsd - 1) <= 0.15, (rank_sd_c, rsd)\n"
    "assert np.isfinite(mean_c) and abs(mean_c / m - 1) <= 0.03, (mean_c, m)\n"
    "assert np.isfinite(sd_c) and abs(sd_c / sd - 1) <= 0.06, (sd_c, sd)\n";

static void test_rotation_null(const BlacsGrid *g) {
    const int H = 4, dk = 4, D = 17, n = H * dk;
    Layer l = random_layer(H, dk, D, 11);
    for (int i = 0; i < D; i++)  // heads that write 1, 2, 3 and 4 times as much
        for (int j = 0; j < n; j++) l.out[i * n + j] *= (float)(1 + j / dk);
    circuits_free(&l.c);
    circuits_init(&l.c, l.qkv, l.out, H, dk, D);
    ScoreOptions o;
    score_options_default(&o);
    o.decompose = 0;
    LayerScore s;
    score_circuits(&s, &l.c, &o, g);
    CHECK(s.correlation_chance > 0 && s.correlation_chance_sd > 0, "null mean %g sd %g", s.correlation_chance,
          s.correlation_chance_sd);
    CHECK_CLOSE(correlation_z(&s), (s.correlation - s.correlation_chance) / s.correlation_chance_sd, 1e-15, 0.0,
                "z of the layer's Correlation");
    const double null[4] = {s.correlation_chance, s.correlation_chance_sd, s.eff_rank_chance, s.eff_rank_chance_sd};
    check_layer_python(null_script, &l, H, dk, D, null, 4, "rotation nulls against exact Haar rotations");
    layer_score_free(&s);
    layer_free(&l);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    BlacsGrid g;
    grid_init(&g, MPI_COMM_WORLD);
    test_head_gram();
    test_mixing_kernel();
    test_scores_against_numpy(&g);
    test_factored_decompositions(&g);
    test_truncated_heads(&g);
    test_rotation_null(&g);
    grid_free(&g);
    MPI_Finalize();
    return check_report("test_circuits");
}
