// score.c: the invariants of one layer's attention tensor and the reward (see score.h).
//
// One pass per layer: the SVD of every unfolding on the grid (unfolding_svd.c), the metrics
// that follow from the singular values, the head correlation from the head Gram matrix,
// HOOI from the HOSVD factors, and the CP rank sweep (cp.c). The sweep's ranks are dealt
// round-robin over the grid's ranks (each CP-ALS is local and its cost grows with the
// rank) and each result is broadcast from the rank that computed it.
#include "invariants/score.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "circuits/circuits.h"
#include "common/util.h"
#include "invariants/chance.h"
#include "invariants/cp.h"
#include "invariants/tensor4.h"
#include "invariants/tucker.h"

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

void score_options_default(ScoreOptions *o) {
    o->decompose = 1;
    o->energy = 0.99;
    for (int n = 0; n < 4; n++) o->ranks[n] = 0;
    o->tucker_tol = 1e-4;
    o->tucker_max_iter = 100;
    o->cp = 1;
    o->cp_rank_max = 0;
    o->cp_fit_threshold = 0.9;
    o->cp_tol = 1e-8;
    o->cp_max_iter = 100;
    o->verbose = 0;
    o->dense_max = (size_t)1 << 24;
}


// Mean over pairs g ≠ h of nonzero rows of |cos| between rows g, h of the mode-0
// unfolding, from their Gram matrix M (G × G); 0 with fewer than two nonzero rows. A zero
// row (a head that writes nothing, circuits_weight_by_writes) is in no pair.
static double head_correlation(const double *M, int G) {
    double sum = 0.0;
    long pairs = 0;
    for (int g = 0; g < G; g++)
        for (int h = g + 1; h < G; h++) {
            const double den = sqrt(M[g * G + g]) * sqrt(M[h * G + h]);
            if (den > 0.0) sum += fmin(1.0, fabs(M[g * G + h]) / den), pairs++;
        }
    return pairs ? sum / (double)pairs : 0.0;
}

// The CP-ALS start for one mode (d × rank, column-major) from the HOSVD: the leading
// left singular vectors whose σ is not negligible (σ_i > max(d, N)·ε·σ_1), then an
// orthonormal completion by Gram–Schmidt on e_0, e_1, … up to d columns, then columns
// j ≥ d repeat column j mod d (no orthonormal set is longer than d). Vectors of zero σ
// are left out because the eigensolver's choice among them is arbitrary.
static void cp_init_factor(double *A, const UnfoldingSvd *s, int N, int rank) {
    const int d = s->m;
    const double cut = imax(d, N) * DBL_EPSILON * (s->n_sv > 0 ? s->sv[0] : 0.0);
    int k = 0;
    while (k < imin(rank, s->n_vec) && k < s->n_sv && s->sv[k] > cut) k++;
    memcpy(A, s->U, (size_t)d * k * sizeof(double));
    for (int e = 0; k < imin(rank, d) && e < d; e++) {
        double *v = A + (size_t)k * d;
        for (int i = 0; i < d; i++) v[i] = i == e;
        for (int pass = 0; pass < 2; pass++)  // twice is enough (Kahan–Parlett)
            for (int c = 0; c < k; c++) {
                const double dot = cblas_ddot(d, A + (size_t)c * d, 1, v, 1);
                cblas_daxpy(d, -dot, A + (size_t)c * d, 1, v, 1);
            }
        const double nv = cblas_dnrm2(d, v, 1);
        if (nv < 0.5) continue;  // e_e lies mostly in the span already
        cblas_dscal(d, 1.0 / nv, v, 1);
        k++;
    }
    for (int j = d; j < rank; j++) memcpy(A + (size_t)j * d, A + (size_t)(j % d) * d, (size_t)d * sizeof(double));
}

// One rank of the sweep, packed for the broadcast: fit, cond[4], roles[rank × d3].
static void cp_run(double *res, const Tensor4 *t, int N[4], const UnfoldingSvd svd[4], int rank,
                   const ScoreOptions *o, int verbose) {
    const int *dims = t->dims;
    double *init[4];
    for (int n = 0; n < 4; n++) {
        init[n] = xmalloc((size_t)dims[n] * rank * sizeof(double));
        cp_init_factor(init[n], &svd[n], N[n], rank);
    }
    CpModel m;
    const int status =
        cp_als(&m, t, rank, (const double *const *)init, o->cp_tol, o->cp_max_iter, verbose);
    res[0] = status == 0 ? m.fit : NAN;
    for (int n = 0; n < 4; n++) res[1 + n] = status == 0 ? matrix_condition(m.factor[n], dims[n], rank) : NAN;
    // role weights: the unit role column, its largest-|·| entry made positive (the sign
    // of a CP component is shared between its factors and carries no meaning)
    double *roles = res + 5;
    for (int c = 0; c < rank; c++) {
        const double *a = m.factor[3] + (size_t)c * dims[3];
        int imx = 0;
        for (int i = 1; i < dims[3]; i++)
            if (fabs(a[i]) > fabs(a[imx])) imx = i;
        const double sign = a[imx] < 0 ? -1.0 : 1.0;
        for (int i = 0; i < dims[3]; i++) roles[c * dims[3] + i] = status == 0 ? sign * a[i] : NAN;
    }
    cp_model_free(&m);
    for (int n = 0; n < 4; n++) free(init[n]);
}

// The CP rank sweep 1..rmax (every rank is run, so cp_fits is the whole curve): the
// smallest rank whose fit reaches the threshold, else the best fit.
static void cp_sweep(LayerScore *s, const Tensor4 *t, int N[4], const UnfoldingSvd svd[4], int rmax,
                     const ScoreOptions *o, const BlacsGrid *g) {
    const int d3 = t->dims[3];
    s->cp_rank_max = rmax;
    s->cp_fits = xmalloc((size_t)rmax * sizeof(double));
    double *all = xmalloc((size_t)rmax * (5 + (size_t)rmax * d3) * sizeof(double));  // per rank: res
    const size_t stride = 5 + (size_t)rmax * d3;
    for (int rank = 1; rank <= rmax; rank++) {
        const int owner = (rank - 1) % g->size;
        double *res = all + (size_t)(rank - 1) * stride;
        if (owner == g->rank) cp_run(res, t, N, svd, rank, o, o->verbose && g->rank == 0);
    }
    for (int rank = 1; rank <= rmax; rank++)
        MPI_Bcast(all + (size_t)(rank - 1) * stride, 5 + rank * d3, MPI_DOUBLE, (rank - 1) % g->size, g->comm);

    int chosen = 0;
    for (int rank = 1; rank <= rmax; rank++) {
        const double fit = all[(size_t)(rank - 1) * stride];
        s->cp_fits[rank - 1] = fit;
        if (!chosen && fit >= o->cp_fit_threshold) chosen = rank;
    }
    const int reached = chosen;
    for (int rank = 1; !reached && rank <= rmax; rank++) {  // none reached it: the best
        const double fit = s->cp_fits[rank - 1];
        if (isfinite(fit) && (!chosen || fit > s->cp_fits[chosen - 1])) chosen = rank;
    }
    s->cp_rank = chosen;
    if (chosen) {
        const double *res = all + (size_t)(chosen - 1) * stride;
        s->cp_fit = res[0];
        for (int n = 0; n < 4; n++) s->cp_cond[n] = res[1 + n];
        s->cp_roles = xmalloc((size_t)chosen * d3 * sizeof(double));
        memcpy(s->cp_roles, res + 5, (size_t)chosen * d3 * sizeof(double));
    }
    free(all);
}

const char *const tensor_view_names[3] = {"function", "parameters", NULL};

int tensor_view_find(const char *name) {
    for (int v = 0; tensor_view_names[v]; v++)
        if (!strcmp(name, tensor_view_names[v])) return v;
    return -1;
}
const char *const tensor_mode_names[2][4] = {{"heads", "dest_dim", "src_dim", "roles"},
                                             {"heads", "head_dim", "model_dim", "roles"}};

int tensor_mode_index(TensorView view, const char *name) {
    for (int n = 0; n < 4; n++)
        if (!strcmp(name, tensor_mode_names[view][n]) || (name[0] == '0' + n && !name[1])) return n;
    return -1;
}

void scored_dims(int dims[4], const LayerWeights *w, TensorView view) {
    const int D = w->dims[2];
    if (view == TENSOR_PARAMETERS) {
        memcpy(dims, w->dims, 4 * sizeof(int));
    } else if (w->grassmann) {
        dims[0] = dims[1] = dims[2] = D, dims[3] = 1;
    } else {
        dims[0] = w->dims[0], dims[1] = dims[2] = D, dims[3] = 2;
    }
}

// The σ-derived metrics, the correlation, HOOI and the CP sweep of a tensor. HOOI runs on
// the entries of a dense tensor; on a circuits tensor from its factors
// (tucker_hooi_circuits) when the heads and roles modes keep their full ranks, which
// gives the dense HOOI's result (test_circuits) without forming T; with a truncated
// heads or roles mode, on the materialised T if it has at most o->dense_max entries,
// and otherwise from the factors with those two modes kept whole (reported in
// tucker_ranks). CP-ALS reads t, from the factors for a circuits tensor.
static void score_tensor(LayerScore *out, const Tensor4 *t, const ScoreOptions *o, const BlacsGrid *g) {
    const int *dims = t->dims;
    const size_t size = tensor4_size(t);
    const int rmax = o->decompose && o->cp ? (o->cp_rank_max > 0 ? o->cp_rank_max : imin(8, dims[0] * dims[3])) : 0;
    const int huge = t->c && size > o->dense_max;  // a circuits tensor HOOI never forms

    // HOSVD: singular values of every unfolding, and the leading vectors when HOOI and
    // CP-ALS will start from them
    UnfoldingSvd svd[4];
    int N[4], n_vec_min[4];
    for (int n = 0; n < 4; n++) n_vec_min[n] = imax(o->ranks[n], rmax);
    if (t->c) n_vec_min[0] = dims[0], n_vec_min[3] = dims[3];  // what HOOI from the factors starts from
    unfolding_svds(svd, t, o->decompose ? n_vec_min : NULL, o->energy, g);
    const double norm2 = tensor4_norm2(t);
    out->norm = sqrt(norm2);
    for (int n = 0; n < 4; n++) {
        N[n] = (int)(size / dims[n]);
        out->n_sv[n] = svd[n].n_sv;
        out->sv[n] = xmalloc((size_t)svd[n].n_sv * sizeof(double));
        memcpy(out->sv[n], svd[n].sv, (size_t)svd[n].n_sv * sizeof(double));
        double total = 0.0, kept = 0.0;
        out->num_rank[n] = numerical_rank(out->sv[n], out->n_sv[n], o->energy);
        for (int i = 0; i < out->n_sv[n]; i++) {
            total += out->sv[n][i] * out->sv[n][i];
            if (i < out->num_rank[n]) kept += out->sv[n][i] * out->sv[n][i];
        }
        out->eff_rank[n] = effective_rank(out->sv[n], out->n_sv[n]);
        out->core_energy[n] = total > 0.0 ? kept / total : 0.0;
    }
    out->correlation = head_correlation(svd[0].gram, dims[0]);

    if (o->decompose && norm2 > 0.0) {
        // Tucker ranks: given or numerical, each at most the product of the others
        // (a larger one adds only arbitrary directions)
        int r[4];
        for (int n = 0; n < 4; n++) r[n] = imax(1, o->ranks[n] > 0 ? imin(o->ranks[n], dims[n]) : out->num_rank[n]);
        if (huge) r[0] = dims[0], r[3] = dims[3];
        const int factored = t->c && r[0] == dims[0] && r[3] == dims[3];
        for (int changed = 1; changed;) {
            changed = 0;
            for (int n = 0; n < 4; n++) {
                const int others = r[(n + 1) % 4] * r[(n + 2) % 4] * r[(n + 3) % 4];
                if (r[n] > others) r[n] = others, changed = 1;
            }
        }
        const double *U0[4] = {svd[0].U, svd[1].U, svd[2].U, svd[3].U};
        TuckerModel tm;
        const int verbose = o->verbose && g->rank == 0;
        if (factored) {
            tucker_hooi_circuits(&tm, t->c, norm2, r, U0, o->tucker_tol, o->tucker_max_iter, verbose, g);
        } else {
            double *X = t->c ? xmalloc(size * sizeof(double)) : NULL;
            if (X) circuits_materialize(X, t->c);
            tucker_hooi(&tm, X ? X : t->X, dims, r, U0, o->tucker_tol, o->tucker_max_iter, verbose, g);
            free(X);
        }
        memcpy(out->tucker_ranks, tm.ranks, sizeof out->tucker_ranks);
        out->tucker_fit = tm.fit;
        out->tucker_iters = tm.iters;
        tucker_model_free(&tm);
        if (o->cp) cp_sweep(out, t, N, svd, rmax, o, g);
    }
    for (int n = 0; n < 4; n++) unfolding_svd_free(&svd[n]);
}

// out's fields that stay NaN unless a decomposition fills them, and its dims.
static void score_begin(LayerScore *out, TensorView view, const int dims[4]) {
    memset(out, 0, sizeof *out);
    out->view = view;
    for (int n = 0; n < 4; n++)
        if (dims[n] < 1) die(EXIT_RUNTIME, "score_layer: dims[%d] = %d (must be at least 1)", n, dims[n]);
    memcpy(out->dims, dims, sizeof out->dims);
    out->tucker_fit = out->cp_fit = NAN;
    for (int n = 0; n < 4; n++) out->cp_cond[n] = NAN;
}

// The rotation nulls (chance.h) of the Correlation and of the heads mode's effective rank,
// from each head's parts' squared norms.
static void set_null(LayerScore *out, const double *part2, int heads, int parts, double n1n2) {
    const ChanceNull c = correlation_rotation_null(part2, heads, parts, n1n2);
    const ChanceNull r = eff_rank_rotation_null(part2, heads, parts, n1n2);
    out->correlation_chance = c.mean, out->correlation_chance_sd = c.sd;
    out->eff_rank_chance = r.mean, out->eff_rank_chance_sd = r.sd;
}

void score_circuits(LayerScore *out, const Circuits *c, const ScoreOptions *o, const BlacsGrid *g) {
    // heads of one QK form merged (circuits_same_qk), each head's QK weighted by what it
    // writes: c's factors but for copies of those these change: the QK's left one, which
    // the weights scale (a LLaMA-7B layer's is 128 MB), and all four where heads merge
    Circuits w = *c;
    int *first = xmalloc((size_t)c->heads * sizeof(int));
    const int merge = circuits_same_qk(c, first) > 0;
    const size_t bytes = (size_t)c->heads * c->d_k * c->d_model * sizeof(double);
    for (int k = 0; k < (merge ? 4 : 1); k++) {
        double **f = k < 2 ? &w.L[k] : &w.R[k - 2];
        const double *from = *f;
        *f = xmalloc(bytes);
        memcpy(*f, from, bytes);
    }
    if (merge) circuits_merge_same_qk(&w, first);
    free(first);
    double *norm2 = xmalloc((size_t)2 * c->heads * sizeof(double));
    circuits_weight_by_writes(&w, norm2);
    const Tensor4 t = tensor4_circuits(&w);
    score_begin(out, TENSOR_FUNCTION, t.dims);
    score_tensor(out, &t, o, g);
    const double n = c->d_model;
    set_null(out, norm2, c->heads, 2, n * n);
    free(norm2);
    free(w.L[0]);
    if (merge) free(w.L[1]), free(w.R[0]), free(w.R[1]);
}

// No CP sweep here: every slice K_o is antisymmetric, and an antisymmetric tensor has
// no stable best CP approximation of rank above a few (components pair up and diverge).
// From starts that differed by rounding alone (the kernel of a model and of the same
// model under z ↦ Oz), CP-ALS ended at fits up to 0.04 apart at ranks 5 to 8, after 2000
// sweeps as after 20000; a number that moves with rounding is not a score.
void score_mixing_kernel(LayerScore *out, const MixingKernel *k, const ScoreOptions *o, const BlacsGrid *g) {
    const int D = k->d_model, dims[4] = {D, D, D, 1};
    score_begin(out, TENSOR_FUNCTION, dims);
    double *X = xmalloc((size_t)D * D * D * sizeof(double));
    mixing_kernel_tensor(X, k);
    const Tensor4 t = tensor4_dense(X, dims);
    ScoreOptions no_cp = *o;
    no_cp.cp = 0;
    score_tensor(out, &t, &no_cp, g);
    out->mixing = 1;
    out->correlation_chance = mixing_kernel_chance(k->r, D);
    out->correlation_chance_sd = out->eff_rank_chance = out->eff_rank_chance_sd = NAN;  // no rotation null of the
                                                                                        // output features' forms
    free(X);
}

void score_weights(LayerScore *out, const float *W, const int dims[4], const ScoreOptions *o, const BlacsGrid *g) {
    score_begin(out, TENSOR_PARAMETERS, dims);
    const size_t size = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    double *X = xmalloc(size * sizeof(double));
    for (size_t i = 0; i < size; i++) X[i] = W[i];
    const Tensor4 t = tensor4_dense(X, dims);
    score_tensor(out, &t, o, g);
    double *row2 = xcalloc((size_t)dims[0], sizeof(double));
    for (size_t i = 0; i < size; i++) row2[i / (size / dims[0])] += X[i] * X[i];
    set_null(out, row2, dims[0], 1, (double)(size / dims[0]));
    free(row2);
    free(X);
}

void score_layer(LayerScore *out, const LayerWeights *w, TensorView view, const ScoreOptions *o, const BlacsGrid *g) {
    if (view == TENSOR_PARAMETERS) {
        score_weights(out, w->qkv, w->dims, o, g);
        out->mixing = w->grassmann;
        return;
    }
    if (!w->out) die(EXIT_RUNTIME, "score_layer: the function view needs the output side");
    if (w->grassmann) {
        MixingKernel k;
        mixing_kernel_init(&k, w->qkv, w->out, w->dims[0], w->dims[2]);
        score_mixing_kernel(out, &k, o, g);
        mixing_kernel_free(&k);
    } else {
        Circuits c;
        circuits_init(&c, w->qkv, w->out, w->dims[0], w->dims[1], w->dims[2]);
        score_circuits(out, &c, o, g);
        circuits_free(&c);
    }
}

void layer_score_free(LayerScore *s) {
    for (int n = 0; n < 4; n++) free(s->sv[n]);
    free(s->cp_fits);
    free(s->cp_roles);
    memset(s, 0, sizeof *s);
}

double correlation_z(const LayerScore *s) {
    return s->correlation_chance_sd > 0.0 ? (s->correlation - s->correlation_chance) / s->correlation_chance_sd : NAN;
}

double eff_rank_z(const LayerScore *s) {
    return s->eff_rank_chance_sd > 0.0 ? (s->eff_rank[0] - s->eff_rank_chance) / s->eff_rank_chance_sd : NAN;
}

