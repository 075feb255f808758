// circuits.c: factors and Gram matrices of the function-level view (see circuits.h).
#include "circuits/circuits.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void circuits_alloc(Circuits *c, int heads, int d_k, int d_model) {
    const size_t n = (size_t)heads * d_k * d_model;
    c->heads = heads, c->d_k = d_k, c->d_model = d_model;
    for (int rho = 0; rho < 2; rho++) {
        c->L[rho] = xmalloc(n * sizeof(double));
        c->R[rho] = xmalloc(n * sizeof(double));
    }
}

void circuits_load(Circuits *c, const float *qkv, const float *out) {
    const size_t n = (size_t)c->heads * c->d_k, D = (size_t)c->d_model;
    const double scale = 1.0 / sqrt((double)c->d_k);
    for (size_t row = 0; row < n; row++)  // row = h·d_k + k
        for (size_t m = 0; m < D; m++) {
            const float *w = qkv + (row * D + m) * 3;
            c->L[0][row * D + m] = scale * w[0];
            c->R[0][row * D + m] = w[1];
            c->L[1][row * D + m] = out[m * n + row];
            c->R[1][row * D + m] = w[2];
        }
}

void circuits_init(Circuits *c, const float *qkv, const float *out, int heads, int d_k, int d_model) {
    circuits_alloc(c, heads, d_k, d_model);
    circuits_load(c, qkv, out);
}

void circuits_free(Circuits *c) {
    for (int rho = 0; rho < 2; rho++) {
        free(c->L[rho]);
        free(c->R[rho]);
    }
    memset(c, 0, sizeof *c);
}

void circuits_factor_gram(double *P, const Circuits *c, int left, int rho) {
    const int n = c->heads * c->d_k, D = c->d_model;
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, n, D, 1.0, left ? c->L[rho] : c->R[rho], D, 0.0, P, n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) P[(size_t)i * n + j] = P[(size_t)j * n + i];
}

// Σ_{a,b} P[a, b]·Q[a, b] over a d_k × d_k block of two row blocks (leading dimension ld).
static double block_dot(const double *P, const double *Q, int d_k, size_t ld) {
    double s = 0.0;
    for (int a = 0; a < d_k; a++)
        for (int b = 0; b < d_k; b++) s += P[a * ld + b] * Q[a * ld + b];
    return s;
}

void circuits_whole_network(float *qkv1, float *out1, const float *qkv, const float *out, const LayerForm *f,
                            int heads, int d_k, int d_model) {
    const size_t n = (size_t)heads * d_k, D = (size_t)d_model, D1 = D + 1;
    double *w = xmalloc(D * sizeof(double));
    for (size_t row = 0; row < n; row++)  // row = h·d_k + k
        for (int rho = 0; rho < 3; rho++) {
            const float *src = qkv + row * D * 3 + rho;
            double bias = f->bias_qkv ? f->bias_qkv[rho * n + row] : 0.0, mean = 0.0;
            for (size_t m = 0; m < D; m++) {
                const double raw = src[m * 3];
                if (f->norm != NORM_NONE && f->ln_b) bias += raw * f->ln_b[m];
                w[m] = f->norm != NORM_NONE && f->ln_w ? raw * f->ln_w[m] : raw;
                mean += w[m];
            }
            mean = f->norm == NORM_LAYER ? mean / (double)D : 0.0;
            float *dst = qkv1 + row * D1 * 3 + rho;
            for (size_t m = 0; m < D; m++) dst[m * 3] = (float)(w[m] - mean);
            const int kept = rho == 0 || (rho == 1 && f->key_bias);  // query bias; key bias where it counts
            dst[D * 3] = kept ? (float)bias : 0.0f;
        }
    for (size_t col = 0; out && col < n; col++) {
        double mean = 0.0;
        if (f->centre_writes) {
            for (size_t i = 0; i < D; i++) mean += out[i * n + col];
            mean /= (double)D;
        }
        for (size_t i = 0; i < D; i++) out1[i * n + col] = (float)(out[i * n + col] - mean);
        out1[D * n + col] = 0.0f;
    }
    free(w);
}

// norm2[2h + ρ] = ‖X_hρ‖²_F (‖B_h‖², ‖C_h‖²), from d_k × d_k blocks of the factors.
static void slice_norms(double *norm2, const Circuits *c) {
    const int H = c->heads, dk = c->d_k, D = c->d_model;
    double *PL = xmalloc((size_t)dk * dk * sizeof(double)), *PR = xmalloc((size_t)dk * dk * sizeof(double));
    for (int h = 0; h < H; h++)  // ‖X_hρ‖² = ⟨L_hρ L_hρᵀ, R_hρ R_hρᵀ⟩ (d_k × d_k blocks)
        for (int rho = 0; rho < 2; rho++) {
            const size_t off = (size_t)h * dk * D;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, dk, D, 1.0, c->L[rho] + off, D, c->L[rho] + off, D,
                        0.0, PL, dk);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, dk, D, 1.0, c->R[rho] + off, D, c->R[rho] + off, D,
                        0.0, PR, dk);
            norm2[2 * h + rho] = block_dot(PL, PR, dk, (size_t)dk);
        }
    free(PR);
    free(PL);
}

void circuits_weight_by_writes(Circuits *c, double *norm2) {
    const int H = c->heads;
    double *n2 = norm2 ? norm2 : xmalloc((size_t)2 * H * sizeof(double)), mean = 0.0;
    slice_norms(n2, c);
    for (int h = 0; h < H; h++) mean += n2[2 * h + 1] / H;
    for (int h = 0; mean > 0.0 && h < H; h++) {
        const double w2 = fmax(n2[2 * h + 1], 0.0) / mean;
        cblas_dscal(c->d_k * c->d_model, sqrt(w2), c->L[0] + (size_t)h * c->d_k * c->d_model, 1);
        n2[2 * h] *= w2;  // ‖w B_h‖² = w²‖B_h‖²
    }
    if (!norm2) free(n2);
}

// ⟨X_gρ, X_hρ⟩ from the d_k × d_k products of the two heads' factors (PL, PR: d_k² scratch each).
static double slice_inner(const Circuits *c, int rho, int g, int h, double *PL, double *PR) {
    const int dk = c->d_k, D = c->d_model;
    const size_t og = (size_t)g * dk * D, oh = (size_t)h * dk * D;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, dk, D, 1.0, c->L[rho] + og, D, c->L[rho] + oh, D, 0.0, PL,
                dk);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, dk, D, 1.0, c->R[rho] + og, D, c->R[rho] + oh, D, 0.0, PR,
                dk);
    return block_dot(PL, PR, dk, (size_t)dk);
}

int circuits_same_qk(const Circuits *c, int *first) {
    const int H = c->heads, dk = c->d_k, D = c->d_model;
    // a sketch B_h v of every head (v fixed), then the candidates it pairs checked exactly
    double *v = xmalloc((size_t)D * sizeof(double)), *t = xmalloc((size_t)dk * sizeof(double));
    double *sk = xcalloc((size_t)H * D, sizeof(double)), *skn = xmalloc((size_t)H * sizeof(double));
    double *b2 = xmalloc((size_t)H * sizeof(double));
    double *PL = xmalloc((size_t)dk * dk * sizeof(double)), *PR = xmalloc((size_t)dk * dk * sizeof(double));
    for (int m = 0; m < D; m++) v[m] = sin(1.0 + 0.7548776662466927 * m);  // no structure a head could share
    for (int h = 0; h < H; h++) {
        const size_t off = (size_t)h * dk * D;
        cblas_dgemv(CblasRowMajor, CblasNoTrans, dk, D, 1.0, c->R[0] + off, D, v, 1, 0.0, t, 1);
        cblas_dgemv(CblasRowMajor, CblasTrans, dk, D, 1.0, c->L[0] + off, D, t, 1, 0.0, sk + (size_t)h * D, 1);
        skn[h] = cblas_dnrm2(D, sk + (size_t)h * D, 1);
        b2[h] = -1.0;  // ‖B_h‖², computed for a candidate only
        first[h] = h;
    }
    int merged = 0;
    for (int h = 1; h < H; h++)
        for (int g = 0; g < h && first[h] == h; g++) {
            if (first[g] != g) continue;  // compare with each group's first head only
            double d2 = 0.0;
            for (int m = 0; m < D; m++) {
                const double d = sk[(size_t)g * D + m] - sk[(size_t)h * D + m];
                d2 += d * d;
            }
            const double big = fmax(skn[g], skn[h]);
            if (!(sqrt(d2) <= CIRCUITS_SAME_QK * big)) continue;
            for (int k = 0; k < 2; k++)
                if (b2[k ? h : g] < 0.0) b2[k ? h : g] = slice_inner(c, 0, k ? h : g, k ? h : g, PL, PR);
            const double b2max = fmax(b2[g], b2[h]);
            const double diff2 = b2[g] + b2[h] - 2.0 * slice_inner(c, 0, g, h, PL, PR);
            if (diff2 <= CIRCUITS_SAME_QK * CIRCUITS_SAME_QK * b2max) first[h] = g, merged++;
        }
    free(PR), free(PL), free(b2), free(skn), free(sk), free(t), free(v);
    return merged;
}

// The OV maps of the heads of group (n heads, in index order) summed, M = Σ C_h = A Bᵀ with
// A, B the D × n·d_k stacks of their factors' rows, and dealt back over them by M's
// singular values: M = (Q_A U) Σ (Q_B W)ᵀ from A = Q_A R_A, B = Q_B R_B and the SVD
// R_A R_Bᵀ = U Σ Wᵀ; component i (σ_i √ on each side) goes to head i / d_k. A σ at the
// rounding level of the largest (≤ m·ε·σ_1) is 0, so the heads past M's rank write exactly
// nothing.
static void deal_ov(Circuits *c, const int *group, int n) {
    const int dk = c->d_k, D = c->d_model, m = n * dk, r = m < D ? m : D;
    double *A = xmalloc((size_t)D * m * sizeof(double)), *B = xmalloc((size_t)D * m * sizeof(double));
    for (int j = 0; j < n; j++) {  // column-major D × m: column j·d_k + k is row k of head group[j]
        const size_t off = (size_t)group[j] * dk * D;
        memcpy(A + (size_t)j * dk * D, c->L[1] + off, (size_t)dk * D * sizeof(double));
        memcpy(B + (size_t)j * dk * D, c->R[1] + off, (size_t)dk * D * sizeof(double));
    }
    double *tauA = xmalloc((size_t)r * sizeof(double)), *tauB = xmalloc((size_t)r * sizeof(double));
    double *RA = xcalloc((size_t)r * m, sizeof(double)), *RB = xcalloc((size_t)r * m, sizeof(double));
    double *K = xmalloc((size_t)r * r * sizeof(double)), *U = xmalloc((size_t)r * r * sizeof(double));
    double *Wt = xmalloc((size_t)r * r * sizeof(double)), *sv = xmalloc((size_t)r * sizeof(double));
    double *superb = xmalloc((size_t)r * sizeof(double));
    double *const QA = A, *const QB = B;  // overwritten by their Q factors
    int info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, D, m, A, D, tauA) | LAPACKE_dgeqrf(LAPACK_COL_MAJOR, D, m, B, D, tauB);
    for (int j = 0; j < m; j++)  // the r × m upper triangles
        for (int i = 0; i <= j && i < r; i++) RA[(size_t)j * r + i] = A[(size_t)j * D + i], RB[(size_t)j * r + i] = B[(size_t)j * D + i];
    info |= LAPACKE_dorgqr(LAPACK_COL_MAJOR, D, r, r, QA, D, tauA) | LAPACKE_dorgqr(LAPACK_COL_MAJOR, D, r, r, QB, D, tauB);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, r, r, m, 1.0, RA, r, RB, r, 0.0, K, r);
    info |= LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', r, r, K, r, sv, U, r, Wt, r, superb);
    if (info != 0) die(EXIT_RUNTIME, "circuits: the OV maps of heads of one QK form could not be decomposed");
    double *left = xmalloc((size_t)D * r * sizeof(double)), *right = xmalloc((size_t)D * r * sizeof(double));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, D, r, r, 1.0, QA, D, U, r, 0.0, left, D);  // Q_A U
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, D, r, r, 1.0, QB, D, Wt, r, 0.0, right, D);  // Q_B W
    const double floor = (double)m * DBL_EPSILON * sv[0];
    for (int i = 0; i < m; i++) {  // component i into row i % d_k of head group[i / d_k]
        const size_t row = ((size_t)group[i / dk] * dk + (size_t)(i % dk)) * D;
        const double s = i < r && sv[i] > floor ? sqrt(sv[i]) : 0.0;
        for (int x = 0; x < D; x++) {
            c->L[1][row + x] = s > 0.0 ? s * left[(size_t)i * D + x] : 0.0;
            c->R[1][row + x] = s > 0.0 ? s * right[(size_t)i * D + x] : 0.0;
        }
    }
    free(right), free(left);
    free(superb), free(sv), free(Wt), free(U), free(K), free(RB), free(RA), free(tauB), free(tauA), free(B), free(A);
}

void circuits_merge_same_qk(Circuits *c, const int *first) {
    const int H = c->heads;
    const size_t block = (size_t)c->d_k * c->d_model;
    int *group = xmalloc((size_t)H * sizeof(int));
    for (int g = 0; g < H; g++) {
        if (first[g] != g) continue;
        int n = 0;
        for (int h = g; h < H; h++)
            if (first[h] == g) group[n++] = h;
        if (n < 2) continue;
        for (int j = 1; j < n; j++) {  // one QK form: the first head's factors for every head of the group
            memcpy(c->L[0] + group[j] * block, c->L[0] + g * block, block * sizeof(double));
            memcpy(c->R[0] + group[j] * block, c->R[0] + g * block, block * sizeof(double));
        }
        deal_ov(c, group, n);
    }
    free(group);
}

void circuits_block_inner(double *gram, const double *PL, const double *PR, int heads, int d_k) {
    const size_t n = (size_t)heads * d_k;
    for (int g = 0; g < heads; g++)
        for (int h = 0; h < heads; h++) {
            const size_t at = (size_t)g * d_k * n + (size_t)h * d_k;
            gram[g * heads + h] = block_dot(PL + at, PR + at, d_k, n);
        }
}

void circuits_head_gram_rows(double *gram, double *roles, const Circuits *c, int g0, int g1) {
    const int H = c->heads, dk = c->d_k, D = c->d_model, rows = (g1 - g0) * dk, w = (H - g0) * dk;
    const size_t off = (size_t)g0 * dk * D;
    // PL = L_ρ[rows of g0..g1) · L_ρ[rows of g0..H)ᵀ, rows × w, and the same for R: one GEMM
    // each for the whole range (the blocks below its diagonal are computed and not used)
    double *PL = xmalloc((size_t)rows * w * sizeof(double)), *PR = xmalloc((size_t)rows * w * sizeof(double));
    for (int g = g0; g < g1; g++)
        for (int h = g; h < H; h++) gram[g * H + h] = 0.0;
    for (int rho = 0; rho < 2; rho++) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, w, D, 1.0, c->L[rho] + off, D, c->L[rho] + off, D,
                    0.0, PL, w);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, w, D, 1.0, c->R[rho] + off, D, c->R[rho] + off, D,
                    0.0, PR, w);
        for (int g = g0; g < g1; g++) {
            const size_t at = (size_t)(g - g0) * dk * w;
            for (int h = g; h < H; h++) {
                const double v = block_dot(PL + at + (size_t)(h - g0) * dk, PR + at + (size_t)(h - g0) * dk, dk, w);
                gram[g * H + h] += v;
                if (roles && h == g) roles[3 * g + 2 * rho] = v;  // ‖B_g‖², ‖C_g‖²
            }
        }
    }
    for (int g = g0; g < g1; g++)
        for (int h = g + 1; h < H; h++) gram[h * H + g] = gram[g * H + h];
    if (roles) {  // ⟨B_g, C_g⟩ from the cross-role blocks L_g0 L_g1ᵀ and R_g0 R_g1ᵀ
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, rows, D, 1.0, c->L[0] + off, D, c->L[1] + off, D,
                    0.0, PL, rows);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, rows, D, 1.0, c->R[0] + off, D, c->R[1] + off, D,
                    0.0, PR, rows);
        for (int g = g0; g < g1; g++) {
            const size_t at = (size_t)(g - g0) * dk * rows + (size_t)(g - g0) * dk;
            roles[3 * g + 1] = block_dot(PL + at, PR + at, dk, rows);
        }
    }
    free(PR);
    free(PL);
}

void circuits_head_gram(double *gram, const Circuits *c) {
    double *ws = xmalloc(circuits_gram_workspace(c) * sizeof(double));
    circuits_head_gram_forward(gram, ws, c);
    free(ws);
}

// ws holds PL_0, PR_0, PL_1, PR_1 (n² each, n = heads·d_k; kept by the forward), then
// scratch: Z (n²; the forward's per-role Gram, heads² ≤ n²) and ∂P/∂L_0, ∂P/∂R_0,
// ∂P/∂L_1, ∂P/∂R_1 (n × d_model each).
size_t circuits_gram_workspace(const Circuits *c) {
    const size_t n = (size_t)c->heads * c->d_k;
    return 5 * n * n + 4 * n * c->d_model;
}

void circuits_head_gram_forward(double *gram, double *ws, const Circuits *c) {
    const int H = c->heads;
    const size_t n = (size_t)H * c->d_k;
    double *part = ws + 4 * n * n;
    memset(gram, 0, (size_t)H * H * sizeof(double));
    for (int rho = 0; rho < 2; rho++) {
        double *PL = ws + 2 * rho * n * n, *PR = PL + n * n;
        circuits_factor_gram(PL, c, 1, rho);
        circuits_factor_gram(PR, c, 0, rho);
        circuits_block_inner(part, PL, PR, H, c->d_k);
        for (int i = 0; i < H * H; i++) gram[i] += part[i];
    }
}

// Z = (Γ ⊗ 1_{d_k×d_k}) ∘ P, (heads·d_k)²: the adjoint of circuits_block_inner in the
// factor Gram it does not take as P.
static void block_scale(double *Z, const double *coef, const double *P, int heads, int d_k) {
    const size_t n = (size_t)heads * d_k;
    for (size_t i = 0; i < n; i++) {
        const double *cg = coef + (i / d_k) * heads;  // row g = i / d_k of Γ
        for (int h = 0; h < heads; h++)
            for (size_t j = (size_t)h * d_k; j < (size_t)(h + 1) * d_k; j++) Z[i * n + j] = cg[h] * P[i * n + j];
    }
}

void circuits_head_gram_backward(float *dqkv, float *dout, const Circuits *c, const double *coef, double *ws) {
    const size_t n = (size_t)c->heads * c->d_k, D = (size_t)c->d_model;
    double *Z = ws + 4 * n * n, *dF = Z + n * n;  // dF: ∂P/∂L_0, ∂P/∂R_0, ∂P/∂L_1, ∂P/∂R_1
    for (int rho = 0; rho < 2; rho++)
        for (int left = 1; left >= 0; left--) {
            // ∂P/∂L_ρ = ((Γ ⊗ 1) ∘ PR_ρ) L_ρ and ∂P/∂R_ρ = ((Γ ⊗ 1) ∘ PL_ρ) R_ρ (Z symmetric):
            // each side takes the other side's Gram, PR_ρ at 2ρ + 1 and PL_ρ at 2ρ in ws
            const double *other = ws + (2 * rho + left) * n * n;
            block_scale(Z, coef, other, c->heads, c->d_k);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)D, (int)n, 1.0, Z, (int)n,
                        left ? c->L[rho] : c->R[rho], (int)D, 0.0, dF + (2 * rho + !left) * n * D, (int)D);
        }
    const double scale = 1.0 / sqrt((double)c->d_k);
    const double *dL0 = dF, *dR0 = dF + n * D, *dL1 = dR0 + n * D, *dR1 = dL1 + n * D;
    for (size_t row = 0; row < n; row++)  // the transpose of circuits_load
        for (size_t m = 0; m < D; m++) {
            float *w = dqkv + (row * D + m) * 3;
            const size_t i = row * D + m;
            w[0] += (float)(scale * dL0[i]);
            w[1] += (float)dR0[i];
            dout[m * n + row] += (float)dL1[i];
            w[2] += (float)dR1[i];
        }
}

// ---- Grassmann mixing kernel

void mixing_kernel_alloc(MixingKernel *k, int r, int d_model) {
    k->r = r, k->d_model = d_model;
    k->W = xmalloc((size_t)r * d_model * sizeof(double));
    k->A = xmalloc((size_t)d_model * r * r * sizeof(double));
}

void mixing_kernel_load(MixingKernel *k, const float *red, const float *plu) {
    const int r = k->r;
    const size_t D = (size_t)k->d_model, rr = (size_t)r * r, M = (size_t)r * (r - 1) / 2;
    for (size_t i = 0; i < (size_t)r * D; i++) k->W[i] = red[i];
    for (size_t o = 0; o < D; o++) {
        double *A = k->A + o * rr;
        const float *p = plu + o * M;
        size_t idx = 0;  // pairs (i, j), i < j, row-major, as attn_grassmann.h orders them
        for (int i = 0; i < r; i++) {
            A[(size_t)i * r + i] = 0.0;
            for (int j = i + 1; j < r; j++, idx++) {
                A[(size_t)i * r + j] = p[idx];
                A[(size_t)j * r + i] = -p[idx];
            }
        }
    }
}

void mixing_kernel_init(MixingKernel *k, const float *red, const float *plu, int r, int d_model) {
    mixing_kernel_alloc(k, r, d_model);
    mixing_kernel_load(k, red, plu);
}

void mixing_kernel_free(MixingKernel *k) {
    free(k->W);
    free(k->A);
    memset(k, 0, sizeof *k);
}

void mixing_kernel_tensor(double *K, const MixingKernel *k) {
    const int r = k->r, D = k->d_model;
    double *AW = xmalloc((size_t)r * D * sizeof(double));
    for (int o = 0; o < D; o++) {  // K_o = Wᵀ (A_o W)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, D, r, 1.0, k->A + (size_t)o * r * r, r, k->W, D,
                    0.0, AW, D);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, D, r, 1.0, k->W, D, AW, D, 0.0,
                    K + (size_t)o * D * D, D);
    }
    free(AW);
}

void mixing_kernel_gram(double *gram, const MixingKernel *k) {
    double *ws = xmalloc(mixing_kernel_gram_workspace(k) * sizeof(double));
    mixing_kernel_gram_forward(gram, ws, k);
    free(ws);
}

// ws holds M = W Wᵀ (r²), Y_o = M A_o and Q_o = Y_o M (d_model × r² each; kept by the
// forward), then the backward's X (d_model × r²: Ã, then ∂P/∂A), S (r²) and ∂P/∂W (r × d_model).
size_t mixing_kernel_gram_workspace(const MixingKernel *k) {
    const size_t r = k->r, D = k->d_model;
    return 2 * r * r + 3 * D * r * r + r * D;
}

void mixing_kernel_gram_forward(double *gram, double *ws, const MixingKernel *k) {
    const int r = k->r, D = k->d_model, rr = r * r;
    double *Mg = ws, *Y = Mg + rr, *Q = Y + (size_t)D * rr;
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, r, D, 1.0, k->W, D, 0.0, Mg, r);
    for (int i = 0; i < r; i++)
        for (int j = 0; j < i; j++) Mg[i * r + j] = Mg[j * r + i];
    for (int o = 0; o < D; o++) {  // Y_o = M A_o, Q_o = Y_o M = M A_o M
        double *Yo = Y + (size_t)o * rr;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, Mg, r, k->A + (size_t)o * rr, r, 0.0, Yo,
                    r);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, Yo, r, Mg, r, 0.0, Q + (size_t)o * rr, r);
    }
    // gram[o, p] = ⟨A_o, Q_p⟩ (= tr(A_oᵀ M A_p M)): the rows of A and Q as D × r² matrices
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, D, D, rr, 1.0, k->A, rr, Q, rr, 0.0, gram, D);
    for (int o = 0; o < D; o++)  // exactly symmetric
        for (int p = 0; p < o; p++) gram[o * D + p] = gram[p * D + o] = 0.5 * (gram[o * D + p] + gram[p * D + o]);
}

void mixing_kernel_gram_backward(float *dred, float *dplu, const MixingKernel *k, const double *coef, double *ws) {
    const int r = k->r, D = k->d_model, rr = r * r;
    const double *Y = ws + rr, *Q = Y + (size_t)D * rr;
    double *X = ws + rr + 2 * (size_t)D * rr, *S = X + (size_t)D * rr, *dW = S + rr;
    // Ã = Γ A (rows as D × r² matrices), S = Σ_o Y_oᵀ Ã_o (= Σ_o A_oᵀ M Ã_o): the blocks
    // stacked as (D·r) × r matrices
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, D, rr, D, 1.0, coef, D, k->A, rr, 0.0, X, rr);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, D * r, 1.0, Y, r, X, r, 0.0, S, r);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, D, r, 2.0, S, r, k->W, D, 0.0, dW, D);
    for (size_t i = 0; i < (size_t)r * D; i++) dred[i] += (float)dW[i];
    // ∂P/∂A_o = Σ_p Γ_op Q_p, then onto the pairs i < j
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, D, rr, D, 1.0, coef, D, Q, rr, 0.0, X, rr);
    const size_t M = (size_t)r * (r - 1) / 2;
    for (int o = 0; o < D; o++) {
        const double *G = X + (size_t)o * rr;
        float *p = dplu + o * M;
        size_t idx = 0;
        for (int i = 0; i < r; i++)
            for (int j = i + 1; j < r; j++, idx++) p[idx] += (float)(G[i * r + j] - G[j * r + i]);
    }
}
