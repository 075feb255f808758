// test_function_invariance: the function-level scores are properties of what a layer
// computes. For every variant, a random reparameterisation that the variant's function
// allows is applied twice:
//   1. to the float model: its forward output (the logits) stays the same, which shows
//      the change is a symmetry of the model;
//   2. to the layer's factors in double (circuits/circuits.h): every metric of the
//      function-level tensor stays the same to 1e-9.
// The symmetries (what each variant allows):
//   mha      per head h: W_Q ↦ A_h W_Q, W_K ↦ A_h⁻ᵀ W_K (A_h invertible; biases alike),
//            W_V ↦ M_h W_V, W_O ↦ W_O M_h⁻¹; and a permutation of the heads
//   tucker   the same with one A and one M for all heads (they act on the core's d_k
//            mode), the core rank mixed (U ↦ U S, G ↦ S⁻¹ G), a permutation of the heads
//   linear   φ = elu + 1 acts entrywise, so on Q/K only a permutation P_h of each head's
//            d_k features (applied to both); M_h on V/O as for mha; head permutation
//   grassmann z ↦ O z for orthogonal O: W_red ↦ O W_red, b_red ↦ O b_red, W_plu ↦
//            W_plu (Λ²O)ᵀ (each A_o ↦ O A_o Oᵀ)
// Every metric is also unchanged under an orthogonal change of basis of d_model (modes 1
// and 2; not a symmetry of the model). Then two heads of the same function, one a
// disguise of the other, are reported as perfectly correlated. The parameter tensor's
// metrics, for comparison, move (printed).
// modules: invariants model
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "circuits/circuits.h"
#include "common/util.h"
#include "invariants/score.h"
#include "model/model.h"
#include "mpi_leaks.h"

// ---- small dense linear algebra (row-major n × n)

// Q (n × n) orthogonal from the QR of a Gaussian matrix.
static void random_orthogonal(double *Q, int n, gsl_rng *rng) {
    double tau[64];
    for (int i = 0; i < n * n; i++) Q[i] = gsl_ran_gaussian(rng, 1.0);
    LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, n, n, Q, n, tau);
    LAPACKE_dorgqr(LAPACK_ROW_MAJOR, n, n, n, Q, n, tau);
}

// A = Q1 diag(e^u) Q2 with u ∈ [−0.7, 0.7] (condition number below e^1.4), and A⁻¹.
static void random_invertible(double *A, double *Ainv, int n, gsl_rng *rng) {
    double Q1[64 * 64], Q2[64 * 64], s[64];
    random_orthogonal(Q1, n, rng);
    random_orthogonal(Q2, n, rng);
    for (int i = 0; i < n; i++) s[i] = exp(gsl_ran_flat(rng, -0.7, 0.7));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double a = 0.0, b = 0.0;
            for (int k = 0; k < n; k++) {
                a += Q1[i * n + k] * s[k] * Q2[k * n + j];
                b += Q2[k * n + i] / s[k] * Q1[j * n + k];
            }
            A[i * n + j] = a, Ainv[i * n + j] = b;
        }
}

static void random_permutation_matrix(double *P, double *Pinv, int n, gsl_rng *rng) {
    int perm[64];
    for (int i = 0; i < n; i++) perm[i] = i;
    gsl_ran_shuffle(rng, perm, (size_t)n, sizeof(int));
    memset(P, 0, (size_t)n * n * sizeof(double));
    for (int i = 0; i < n; i++) P[i * n + perm[i]] = 1.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) Pinv[i * n + j] = P[j * n + i];
}

static void transpose(double *T, const double *A, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) T[j * n + i] = A[i * n + j];
}

// Rows [r0, r0 + n) of X (leading dimension ld, `cols` columns) ↦ A·rows.
static void rows_d(double *X, size_t ld, int r0, int n, int cols, const double *A) {
    double *tmp = xmalloc((size_t)n * cols * sizeof(double));
    for (int i = 0; i < n; i++)
        for (int c = 0; c < cols; c++) {
            double s = 0.0;
            for (int k = 0; k < n; k++) s += A[i * n + k] * X[(size_t)(r0 + k) * ld + c];
            tmp[(size_t)i * cols + c] = s;
        }
    for (int i = 0; i < n; i++)
        for (int c = 0; c < cols; c++) X[(size_t)(r0 + i) * ld + c] = tmp[(size_t)i * cols + c];
    free(tmp);
}

// The same on float rows (through double).
static void rows_f(float *X, size_t ld, int r0, int n, int cols, const double *A) {
    double *d = xmalloc((size_t)n * cols * sizeof(double));
    for (int i = 0; i < n; i++)
        for (int c = 0; c < cols; c++) d[(size_t)i * cols + c] = X[(size_t)(r0 + i) * ld + c];
    rows_d(d, (size_t)cols, 0, n, cols, A);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < cols; c++) X[(size_t)(r0 + i) * ld + c] = (float)d[(size_t)i * cols + c];
    free(d);
}

// Columns [c0, c0 + n) of X (rows × ld, float) ↦ columns · B (B n × n).
static void cols_f(float *X, size_t ld, int rows, int c0, int n, const double *B) {
    double tmp[64];
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < n; k++) s += X[(size_t)r * ld + c0 + k] * B[k * n + j];
            tmp[j] = s;
        }
        for (int j = 0; j < n; j++) X[(size_t)r * ld + c0 + j] = (float)tmp[j];
    }
}

// ---- the model and its logits

enum { B = 2, T = 6, V = 11, C = 16, HEADS = 4, HS = C / HEADS, RANK = 6 };

// The rows of every factor in F[0..1] and G[0..1] (rows × C each, NULL: none) ↦ rows · Q
// for one random orthogonal Q (C × C): an orthogonal change of basis of d_model.
static void rotate_d_model(double *F[2], double *G[2], int rows, gsl_rng *rng) {
    double Q[64 * 64], *tmp = xmalloc((size_t)rows * C * sizeof(double));
    random_orthogonal(Q, C, rng);
    double *const all[4] = {F[0], F[1], G[0], G[1]};
    for (int k = 0; k < 4; k++) {
        if (!all[k]) continue;
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < C; j++) {
                double v = 0.0;
                for (int m = 0; m < C; m++) v += all[k][(size_t)i * C + m] * Q[m * C + j];
                tmp[(size_t)i * C + j] = v;
            }
        memcpy(all[k], tmp, (size_t)rows * C * sizeof(double));
    }
    free(tmp);
}

static void make_model(Model *m, int attention) {
    TrialConfig cfg;
    config_defaults(&cfg);
    cfg.attention = attention;
    cfg.d_model = C, cfg.heads = HEADS, cfg.layers = 1, cfg.core_rank = 2, cfg.grassmann_rank = RANK;
    const DatasetInfo info = {.kind = TASK_CHARLM, .seq_len = T, .vocab = V, .n_classes = V};
    CHECK(model_init(m, &cfg, &info, B) == 0, "model_init");
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 5);
    for (size_t i = 0; i < m->params_arena.total; i++) m->params_arena.mem[i] += (float)gsl_ran_gaussian(rng, 0.1);
    gsl_rng_free(rng);
}

static void logits(Model *m, float *out) {
    int tokens[B * T], targets[B * T];
    for (int i = 0; i < B * T; i++) tokens[i] = (i * 7 + 3) % V, targets[i] = (i * 5 + 1) % V;
    Batch b = {.B = B, .rows = B, .tokens = tokens, .targets = targets};
    long count, correct;
    model_forward(m, &b, &count, &correct);
    memcpy(out, m->acts.logits, (size_t)m->NP * m->K * sizeof(float));
}

static void check_same_output(const float *a, const float *b, int n, const char *what) {
    double scale = 0.0;
    for (int i = 0; i < n; i++) scale = worst_diff(scale, a[i], 0.0);  // max |a|, NaN if any is
    CHECK_ALL_CLOSE(b, a, n, 1e-4 * scale, 0.0, "%s", what);
}

// ---- scores compared

static void check_same_scores(const LayerScore *a, const LayerScore *b, double tol, const char *what) {
    char w[160];
    for (int n = 0; n < 4; n++) {
        CHECK(a->n_sv[n] == b->n_sv[n] && a->num_rank[n] == b->num_rank[n] && a->tucker_ranks[n] == b->tucker_ranks[n],
              "%s: mode %d sizes or ranks differ", what, n);
        if (a->n_sv[n] == b->n_sv[n])
            CHECK_ALL_CLOSE(b->sv[n], a->sv[n], a->n_sv[n], tol * a->sv[n][0], 0.0, "%s: σ of mode %d", what, n);
        snprintf(w, sizeof w, "%s: effective rank of mode %d", what, n);
        CHECK_CLOSE(b->eff_rank[n], a->eff_rank[n], 0.0, tol, w);
        snprintf(w, sizeof w, "%s: core energy of mode %d", what, n);
        CHECK_CLOSE(b->core_energy[n], a->core_energy[n], tol, 0.0, w);
    }
    snprintf(w, sizeof w, "%s: norm", what);
    CHECK_CLOSE(b->norm, a->norm, 0.0, tol, w);
    snprintf(w, sizeof w, "%s: head correlation", what);
    CHECK_CLOSE(b->correlation, a->correlation, tol, 0.0, w);
    snprintf(w, sizeof w, "%s: Tucker fit", what);
    CHECK_CLOSE(b->tucker_fit, a->tucker_fit, tol, 0.0, w);
    CHECK(a->cp_rank == b->cp_rank && a->cp_rank_max == b->cp_rank_max, "%s: CP rank %d vs %d", what, a->cp_rank,
          b->cp_rank);
    if (a->cp_rank_max == b->cp_rank_max && a->cp_rank_max > 0)
        CHECK_ALL_CLOSE(b->cp_fits, a->cp_fits, a->cp_rank_max, tol, 0.0, "%s: CP fits", what);
}

static ScoreOptions options(void) {
    ScoreOptions o;
    score_options_default(&o);
    o.cp_tol = 1e-13;  // converge both CP runs far enough that their fits agree to 1e-9
    o.cp_max_iter = 2000;
    o.tucker_tol = 1e-14;
    return o;
}

// ---- softmax-family variants

// The transforms of one reparameterisation, per head: QK (A, A⁻ᵀ), OV (M, M⁻ᵀ, M⁻¹), and
// the head permutation (new head h = old head perm[h]).
typedef struct {
    double A[HEADS][HS * HS], Ait[HEADS][HS * HS], M[HEADS][HS * HS], Mit[HEADS][HS * HS], Minv[HEADS][HS * HS];
    int perm[HEADS];
} Reparam;

static void draw_reparam(Reparam *p, int attention, gsl_rng *rng) {
    double Ainv[HS * HS];
    for (int h = 0; h < HEADS; h++) {
        const int shared = attention == ATTN_TUCKER && h > 0;  // tucker: one A, one M for all heads
        if (shared) {
            memcpy(p->A[h], p->A[0], sizeof p->A[0]), memcpy(p->Ait[h], p->Ait[0], sizeof p->Ait[0]);
            memcpy(p->M[h], p->M[0], sizeof p->M[0]), memcpy(p->Mit[h], p->Mit[0], sizeof p->Mit[0]);
            memcpy(p->Minv[h], p->Minv[0], sizeof p->Minv[0]);
            continue;
        }
        if (attention == ATTN_LINEAR)
            random_permutation_matrix(p->A[h], Ainv, HS, rng);
        else
            random_invertible(p->A[h], Ainv, HS, rng);
        transpose(p->Ait[h], Ainv, HS);
        random_invertible(p->M[h], p->Minv[h], HS, rng);
        transpose(p->Mit[h], p->Minv[h], HS);
    }
    for (int h = 0; h < HEADS; h++) p->perm[h] = h;
    gsl_ran_shuffle(rng, p->perm, HEADS, sizeof(int));
}

// The reparameterisation on the circuits' factors (double): L0 = W_Q/√d_k ↦ A L0,
// R0 = W_K ↦ A⁻ᵀ R0, R1 = W_V ↦ M R1, L1 = W_Oᵀ ↦ M⁻ᵀ L1, then the heads permuted.
static void reparam_circuits(Circuits *c, const Reparam *p) {
    const size_t blk = (size_t)HS * C;
    for (int h = 0; h < HEADS; h++) {
        rows_d(c->L[0], C, h * HS, HS, C, p->A[h]);
        rows_d(c->R[0], C, h * HS, HS, C, p->Ait[h]);
        rows_d(c->R[1], C, h * HS, HS, C, p->M[h]);
        rows_d(c->L[1], C, h * HS, HS, C, p->Mit[h]);
    }
    double *tmp = xmalloc(HEADS * blk * sizeof(double));
    double *f[4] = {c->L[0], c->R[0], c->L[1], c->R[1]};
    for (int k = 0; k < 4; k++) {
        for (int h = 0; h < HEADS; h++) memcpy(tmp + h * blk, f[k] + (size_t)p->perm[h] * blk, blk * sizeof(double));
        memcpy(f[k], tmp, HEADS * blk * sizeof(double));
    }
    free(tmp);
}

// Permute head blocks of `per` rows (or entries) each in X (rows of width w).
static void permute_heads_f(float *X, int per, int w, const int *perm) {
    const size_t blk = (size_t)per * w;
    float *tmp = xmalloc(HEADS * blk * sizeof(float));
    for (int h = 0; h < HEADS; h++) memcpy(tmp + h * blk, X + (size_t)perm[h] * blk, blk * sizeof(float));
    memcpy(X, tmp, HEADS * blk * sizeof(float));
    free(tmp);
}

// The same reparameterisation on the float model's parameters.
static void reparam_model(Model *m, const Reparam *p, gsl_rng *rng) {
    BlockParams *b = &m->params.blocks[0];
    const double *qk[3][HEADS] = {{0}};
    for (int h = 0; h < HEADS; h++) qk[0][h] = p->A[h], qk[1][h] = p->Ait[h], qk[2][h] = p->M[h];
    for (int rho = 0; rho < 3; rho++)
        for (int h = 0; h < HEADS; h++) rows_f(b->qkv_b, 1, rho * C + h * HS, HS, 1, qk[rho][h]);
    for (int h = 0; h < HEADS; h++) cols_f(b->proj_w, C, C, h * HS, HS, p->Minv[h]);
    if (m->cfg.attention == ATTN_TUCKER) {
        // core G (3, R, hs·C): each core slice's d_k rows ↦ the role's shared map; then
        // the core rank mixed: U ↦ U S, G_r ↦ Σ_s S⁻¹[r, s] G_s
        const int R = m->R;
        for (int rho = 0; rho < 3; rho++)
            for (int r = 0; r < R; r++) rows_f(b->core + ((size_t)rho * R + r) * HS * C, C, 0, HS, C, qk[rho][0]);
        double S[4], Sinv[4];
        random_invertible(S, Sinv, R, rng);
        for (int h = 0; h < HEADS; h++) {
            double u[2] = {b->factor[h * R], b->factor[h * R + 1]};
            for (int s = 0; s < R; s++) b->factor[h * R + s] = (float)(u[0] * S[s] + u[1] * S[R + s]);
        }
        for (int rho = 0; rho < 3; rho++) rows_f(b->core + (size_t)rho * R * HS * C, (size_t)HS * C, 0, R, HS * C, Sinv);
        permute_heads_f(b->factor, 1, R, p->perm);
    } else {
        for (int rho = 0; rho < 3; rho++)
            for (int h = 0; h < HEADS; h++) rows_f(b->qkv_w, C, rho * C + h * HS, HS, C, qk[rho][h]);
        for (int rho = 0; rho < 3; rho++) permute_heads_f(b->qkv_w + (size_t)rho * C * C, HS, C, p->perm);
    }
    for (int rho = 0; rho < 3; rho++) permute_heads_f(b->qkv_b + rho * C, HS, 1, p->perm);
    // proj_w's column blocks: transpose, permute row blocks, transpose back
    float *t = xmalloc((size_t)C * C * sizeof(float));
    for (int i = 0; i < C; i++)
        for (int j = 0; j < C; j++) t[j * C + i] = b->proj_w[i * C + j];
    permute_heads_f(t, HS, C, p->perm);
    for (int i = 0; i < C; i++)
        for (int j = 0; j < C; j++) b->proj_w[i * C + j] = t[j * C + i];
    free(t);
}

static void circuits_of(Circuits *c, Model *m) {
    float *W = xmalloc((size_t)HEADS * HS * C * 3 * sizeof(float)), *O = xmalloc((size_t)C * C * sizeof(float));
    model_export_attention(m, 0, W);
    model_export_output(m, 0, O);
    circuits_init(c, W, O, HEADS, HS, C);
    free(O);
    free(W);
}

// The head correlation of the parameter tensor W (dims), for comparison.
static double parameter_correlation(const float *W, const int dims[4], const BlacsGrid *g) {
    ScoreOptions o;
    score_options_default(&o);
    o.decompose = 0;
    LayerScore s;
    score_weights(&s, W, dims, &o, g);
    const double corr = s.correlation;
    layer_score_free(&s);
    return corr;
}

// The same for the model's layer 0 (Q/K/V).
static double qkv_correlation(Model *m, const BlacsGrid *g) {
    float *W = xmalloc((size_t)HEADS * HS * C * 3 * sizeof(float));
    model_export_attention(m, 0, W);
    const double corr = parameter_correlation(W, m->dims, g);
    free(W);
    return corr;
}

static void check_softmax_variant(int attention, const BlacsGrid *g) {
    char what[96];
    const char *name = attention_names[attention];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 17 + attention);
    Model m;
    make_model(&m, attention);
    const int nl = m.NP * m.K;
    float *before = xmalloc((size_t)nl * sizeof(float)), *after = xmalloc((size_t)nl * sizeof(float));
    logits(&m, before);
    Circuits c0, c1;
    circuits_of(&c0, &m);
    circuits_of(&c1, &m);
    const double param_before = qkv_correlation(&m, g);

    Reparam p;
    draw_reparam(&p, attention, rng);
    reparam_model(&m, &p, rng);
    logits(&m, after);
    snprintf(what, sizeof what, "%s: logits after the reparameterisation", name);
    check_same_output(before, after, nl, what);
    const double param_after = qkv_correlation(&m, g);

    // the double transform is the model's: its circuits agree with the float model's
    reparam_circuits(&c1, &p);
    Circuits cm;
    circuits_of(&cm, &m);
    snprintf(what, sizeof what, "%s: circuits of the reparameterised model", name);
    for (int rho = 0; rho < 2; rho++) {
        double *slice = xmalloc((size_t)C * C * sizeof(double)), *want = xmalloc((size_t)C * C * sizeof(double));
        for (int h = 0; h < HEADS; h++) {  // X_hρ = L_hρᵀ R_hρ of both
            for (int i = 0; i < C; i++)
                for (int j = 0; j < C; j++) {
                    double s = 0.0, t = 0.0;
                    for (int k = 0; k < HS; k++) {
                        const size_t r = (size_t)(h * HS + k) * C;
                        s += cm.L[rho][r + i] * cm.R[rho][r + j];
                        t += c1.L[rho][r + i] * c1.R[rho][r + j];
                    }
                    slice[i * C + j] = s, want[i * C + j] = t;
                }
            CHECK_ALL_CLOSE(slice, want, C * C, 1e-4, 1e-4, "%s", what);
        }
        free(want);
        free(slice);
    }
    circuits_free(&cm);

    const ScoreOptions o = options();
    LayerScore s0, s1;
    score_circuits(&s0, &c0, &o, g);
    score_circuits(&s1, &c1, &o, g);
    snprintf(what, sizeof what, "%s under its symmetries", name);
    check_same_scores(&s0, &s1, 1e-9, what);
    // and under an orthogonal change of basis of d_model (not a symmetry of the model:
    // of the metrics, which read modes 1 and 2 through their Gram matrices)
    rotate_d_model(c1.L, c1.R, HEADS * HS, rng);
    LayerScore s2;
    score_circuits(&s2, &c1, &o, g);
    snprintf(what, sizeof what, "%s under an orthogonal map of d_model", name);
    check_same_scores(&s0, &s2, 1e-9, what);
    layer_score_free(&s2);
    printf("  %-9s logits unchanged; function-level correlation %.6f -> %.6f, eff. head rank %.6f -> %.6f, "
           "Tucker fit %.6f -> %.6f; parameter-tensor correlation %.4f -> %.4f\n",
           name, s0.correlation, s1.correlation, s0.eff_rank[0], s1.eff_rank[0], s0.tucker_fit, s1.tucker_fit,
           param_before, param_after);
    layer_score_free(&s0);
    layer_score_free(&s1);
    circuits_free(&c0);
    circuits_free(&c1);
    free(before);
    free(after);
    model_free(&m);
    gsl_rng_free(rng);
}

// Two heads, head 1 a disguise of head 0 (A, M drawn at random): one QK form, so one
// function writing 2·C (circuits/circuits.h circuits_same_qk): a head and a dead one, no pair
// to correlate, one head's rank. Head 1's QK moved by 1e-3 (two functions again, nearly
// alike): perfectly correlated but for that.
static void check_disguised_heads(const BlacsGrid *g) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 99);
    Circuits c = {.heads = 2, .d_k = HS, .d_model = C};
    const size_t blk = (size_t)HS * C;
    for (int rho = 0; rho < 2; rho++) {
        c.L[rho] = xmalloc(2 * blk * sizeof(double));
        c.R[rho] = xmalloc(2 * blk * sizeof(double));
        for (size_t i = 0; i < blk; i++) c.L[rho][i] = gsl_ran_gaussian(rng, 1.0), c.R[rho][i] = gsl_ran_gaussian(rng, 1.0);
        memcpy(c.L[rho] + blk, c.L[rho], blk * sizeof(double));
        memcpy(c.R[rho] + blk, c.R[rho], blk * sizeof(double));
    }
    double A[HS * HS], Ainv[HS * HS], Ait[HS * HS], M[HS * HS], Minv[HS * HS], Mit[HS * HS];
    random_invertible(A, Ainv, HS, rng);
    random_invertible(M, Minv, HS, rng);
    transpose(Ait, Ainv, HS);
    transpose(Mit, Minv, HS);
    rows_d(c.L[0], C, HS, HS, C, A);
    rows_d(c.R[0], C, HS, HS, C, Ait);
    rows_d(c.R[1], C, HS, HS, C, M);
    rows_d(c.L[1], C, HS, HS, C, Mit);
    ScoreOptions o;
    score_options_default(&o);
    LayerScore s;
    score_circuits(&s, &c, &o, g);
    CHECK(s.correlation == 0.0, "correlation of two heads of one function (one head): %g, want 0", s.correlation);
    CHECK(s.num_rank[0] == 1 && s.sv[0][1] == 0.0, "heads mode: numerical rank %d, σ₂ %g: want 1 and 0",
          s.num_rank[0], s.sv[0][1]);
    CHECK_CLOSE(s.eff_rank[0], 1.0, 1e-12, 0.0, "effective rank of two heads of one function");
    printf("  two heads, one disguised as the other: one function (correlation %g, head rank %d, σ₂ %g)\n",
           s.correlation, s.num_rank[0], s.sv[0][1]);
    layer_score_free(&s);
    for (size_t i = 0; i < blk; i++) c.L[0][blk + i] *= 1.0 + 1e-3 * gsl_ran_gaussian(rng, 1.0);
    score_circuits(&s, &c, &o, g);
    CHECK(s.correlation > 0.99 && s.correlation < 1.0, "correlation of two heads 1e-3 apart: %.6f, want (0.99, 1)",
          s.correlation);
    printf("  the disguise's QK moved by 1e-3: two functions, correlation %.6f\n", s.correlation);
    layer_score_free(&s);
    circuits_free(&c);
    gsl_rng_free(rng);
}

// ---- grassmann

static void check_grassmann(const BlacsGrid *g) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 31);
    Model m;
    make_model(&m, ATTN_GRASSMANN);
    const int nl = m.NP * m.K, Mp = grassmann_pairs(RANK);
    float *before = xmalloc((size_t)nl * sizeof(float)), *after = xmalloc((size_t)nl * sizeof(float));
    logits(&m, before);
    GrassmannWeights *w = &m.params.blocks[0].gm;
    MixingKernel k0, k1;
    mixing_kernel_init(&k0, w->red_w, w->plu_w, RANK, C);
    mixing_kernel_init(&k1, w->red_w, w->plu_w, RANK, C);
    const double param_before = parameter_correlation(w->red_w, m.dims, g);

    double O[RANK * RANK], Ot[RANK * RANK];
    random_orthogonal(O, RANK, rng);
    transpose(Ot, O, RANK);
    // the model: W_red ↦ O W_red, b_red ↦ O b_red, and W_plu through A_o ↦ O A_o Oᵀ
    rows_f(w->red_w, C, 0, RANK, C, O);
    rows_f(w->red_b, 1, 0, RANK, 1, O);
    rows_d(k1.W, C, 0, RANK, C, O);
    for (int o = 0; o < C; o++) {
        double *A = k1.A + (size_t)o * RANK * RANK;
        rows_d(A, RANK, 0, RANK, RANK, O);  // O A
        double AOt[RANK * RANK];
        for (int i = 0; i < RANK; i++)
            for (int j = 0; j < RANK; j++) {
                double s = 0.0;
                for (int q = 0; q < RANK; q++) s += A[i * RANK + q] * Ot[q * RANK + j];
                AOt[i * RANK + j] = s;
            }
        memcpy(A, AOt, sizeof AOt);
        int idx = 0;
        for (int i = 0; i < RANK; i++)
            for (int j = i + 1; j < RANK; j++, idx++) w->plu_w[(size_t)o * Mp + idx] = (float)A[i * RANK + j];
    }
    logits(&m, after);
    check_same_output(before, after, nl, "grassmann: logits after z ↦ Oz");
    const double param_after = parameter_correlation(w->red_w, m.dims, g);
    const ScoreOptions o = options();
    LayerScore s0, s1;
    score_mixing_kernel(&s0, &k0, &o, g);
    score_mixing_kernel(&s1, &k1, &o, g);
    check_same_scores(&s0, &s1, 1e-9, "grassmann under O(r)");
    double *none[2] = {NULL, NULL};  // W_red ↦ W_red Q: K_o ↦ Qᵀ K_o Q
    double *red[2] = {k1.W, NULL};
    rotate_d_model(red, none, RANK, rng);
    LayerScore s2;
    score_mixing_kernel(&s2, &k1, &o, g);
    check_same_scores(&s0, &s2, 1e-9, "grassmann under an orthogonal map of d_model");
    layer_score_free(&s2);
    printf("  grassmann logits unchanged; function-level correlation %.6f -> %.6f, eff. rank of the output "
           "features %.6f -> %.6f; W_red correlation %.4f -> %.4f\n",
           s0.correlation, s1.correlation, s0.eff_rank[0], s1.eff_rank[0], param_before, param_after);
    layer_score_free(&s0);
    layer_score_free(&s1);
    mixing_kernel_free(&k0);
    mixing_kernel_free(&k1);
    free(before);
    free(after);
    model_free(&m);
    gsl_rng_free(rng);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    BlacsGrid g;
    grid_init(&g, MPI_COMM_WORLD);
    printf("test_function_invariance: symmetries of each variant leave the logits and every function-level "
           "metric unchanged\n");
    check_softmax_variant(ATTN_MHA, &g);
    check_softmax_variant(ATTN_TUCKER, &g);
    check_softmax_variant(ATTN_LINEAR, &g);
    check_grassmann(&g);
    check_disguised_heads(&g);
    grid_free(&g);
    MPI_Finalize();
    return check_report("test_function_invariance");
}
