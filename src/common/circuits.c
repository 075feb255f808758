// circuits.c: factors and Gram matrices of the function-level view (see circuits.h).
#include "common/circuits.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void circuits_init(Circuits *c, const float *qkv, const float *out, int heads, int d_k, int d_model) {
    const size_t n = (size_t)heads * d_k, D = (size_t)d_model;
    c->heads = heads, c->d_k = d_k, c->d_model = d_model;
    for (int rho = 0; rho < 2; rho++) {
        c->L[rho] = xmalloc(n * D * sizeof(double));
        c->R[rho] = xmalloc(n * D * sizeof(double));
    }
    const double scale = 1.0 / sqrt((double)d_k);
    for (size_t row = 0; row < n; row++)  // row = h·d_k + k
        for (size_t m = 0; m < D; m++) {
            const float *w = qkv + (row * D + m) * 3;
            c->L[0][row * D + m] = scale * w[0];
            c->R[0][row * D + m] = w[1];
            c->L[1][row * D + m] = out[m * n + row];
            c->R[1][row * D + m] = w[2];
        }
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

void circuits_block_inner(double *gram, const double *PL, const double *PR, int heads, int d_k) {
    const size_t n = (size_t)heads * d_k;
    for (int g = 0; g < heads; g++)
        for (int h = 0; h < heads; h++) {
            const size_t at = (size_t)g * d_k * n + (size_t)h * d_k;
            gram[g * heads + h] = block_dot(PL + at, PR + at, d_k, n);
        }
}

void circuits_head_gram_rows(double *gram, double *roles, const Circuits *c, int g0, int g1) {
    const int H = c->heads, dk = c->d_k, D = c->d_model;
    const size_t n = (size_t)H * dk;
    // PL[a, ·] = L_g[a] · L_{≥g}ᵀ: d_k × (heads − g)·d_k, and the same for R; then the
    // cross-role blocks L_g0 L_g1ᵀ, R_g0 R_g1ᵀ for the role Gram
    double *PL = xmalloc((size_t)dk * n * sizeof(double)), *PR = xmalloc((size_t)dk * n * sizeof(double));
    for (int g = g0; g < g1; g++) {
        const int w = (H - g) * dk;
        const size_t off = (size_t)g * dk * D;
        double part[2] = {0.0, 0.0};
        for (int h = g; h < H; h++) gram[g * H + h] = 0.0;
        for (int rho = 0; rho < 2; rho++) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, w, D, 1.0, c->L[rho] + off, D, c->L[rho] + off, D,
                        0.0, PL, w);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, w, D, 1.0, c->R[rho] + off, D, c->R[rho] + off, D,
                        0.0, PR, w);
            for (int h = g; h < H; h++) gram[g * H + h] += block_dot(PL + (h - g) * dk, PR + (h - g) * dk, dk, w);
            part[rho] = block_dot(PL, PR, dk, w);
        }
        for (int h = g + 1; h < H; h++) gram[h * H + g] = gram[g * H + h];
        if (!roles) continue;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, dk, D, 1.0, c->L[0] + off, D, c->L[1] + off, D, 0.0,
                    PL, dk);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dk, dk, D, 1.0, c->R[0] + off, D, c->R[1] + off, D, 0.0,
                    PR, dk);
        roles[3 * g] = part[0];
        roles[3 * g + 1] = block_dot(PL, PR, dk, dk);
        roles[3 * g + 2] = part[1];
    }
    free(PR);
    free(PL);
}

void circuits_head_gram(double *gram, const Circuits *c) { circuits_head_gram_rows(gram, NULL, c, 0, c->heads); }

// ---- Grassmann mixing kernel

void mixing_kernel_init(MixingKernel *k, const float *red, const float *plu, int r, int d_model) {
    const size_t D = (size_t)d_model, rr = (size_t)r * r, M = (size_t)r * (r - 1) / 2;
    k->r = r, k->d_model = d_model;
    k->W = xmalloc((size_t)r * D * sizeof(double));
    k->A = xmalloc(D * rr * sizeof(double));
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
    const int r = k->r, D = k->d_model, rr = r * r;
    double *Mg = xmalloc((size_t)rr * sizeof(double)), *T = xmalloc((size_t)rr * sizeof(double));
    double *Q = xmalloc((size_t)D * rr * sizeof(double));
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, r, D, 1.0, k->W, D, 0.0, Mg, r);
    for (int i = 0; i < r; i++)
        for (int j = 0; j < i; j++) Mg[i * r + j] = Mg[j * r + i];
    for (int o = 0; o < D; o++) {  // Q_o = M A_o M
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, Mg, r, k->A + (size_t)o * rr, r, 0.0, T,
                    r);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, T, r, Mg, r, 0.0, Q + (size_t)o * rr, r);
    }
    // gram[o, p] = ⟨A_o, Q_p⟩ (= tr(A_oᵀ M A_p M)): the rows of A and Q as D × r² matrices
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, D, D, rr, 1.0, k->A, rr, Q, rr, 0.0, gram, D);
    for (int o = 0; o < D; o++)  // exactly symmetric
        for (int p = 0; p < o; p++) gram[o * D + p] = gram[p * D + o] = 0.5 * (gram[o * D + p] + gram[p * D + o]);
    free(Q);
    free(T);
    free(Mg);
}
