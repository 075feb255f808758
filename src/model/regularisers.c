// The four penalties on one layer's attention and their gradients.
//
// Orthogonality and stability are functions of the head Gram K (G, G), K_gh = ⟨h_g, h_h⟩
// for the function-level rows h_g (regularisers.h). G is small (the heads; for Grassmann
// the d_model output features); the rows are not (2·d_model² numbers per softmax head,
// d_model² per output feature) and are never formed: circuits.h builds K from products of
// the factors. Every gradient has the form
//
//     dP = Σ_gh (Γ_gh/2) dK_gh,  i.e.  ∂P/∂h_g = Σ_h Γ_gh h_h,   Γ (G, G) symmetric,
//
// so each penalty only computes Γ, and the representation (circuits_head_gram_backward,
// mixing_kernel_gram_backward) turns the sum of the penalties' Γ into gradients of the
// weights in one pass.
//
// Orthogonality, with n_g = ‖h_g‖ = √K_gg, ĥ_g = h_g/n_g, C = Ĥ Ĥᵀ (C_ij = K_ij/(n_i n_j)),
// E = C − I, P = ‖E‖²_F:
//     dP/dĥ_g = 4 Σ_j E_gj ĥ_j                        (E symmetric)
//     dh_g    = (dĥ_g − ĥ_g (ĥ_g·dĥ_g)) / n_g        (back through h ↦ h/‖h‖)
// and ĥ_g·dĥ_g = 4 Σ_j E_gj C_gj =: a_g, so
//     Γ_gj = 4 E_gj/(n_g n_j) − δ_gj a_g/n_g².
// A zero head (n_g < 1e-12) has no direction: it gets ĥ_g = 0 and no diagonal term
// (I_gg := 0), so it adds nothing to P and receives no gradient.
//
// Stability, with σ_1 ≥ … ≥ σ_G the singular values of the rows H (σ_j² the eigenvalues
// of K = H Hᵀ, u_j its eigenvectors), S = Σσ, s = σ/S, P = ‖s − s_ref‖²:
//     g_s = 2(s − s_ref),   gσ_j = (g_s_j − Σ_i g_s_i s_i)/S        (through s = σ/S)
//     dσ_j = u_jᵀ dK u_j / (2σ_j), so Γ = U diag(gσ/σ) Uᵀ.
// This is the gradient where it exists: the singular values are distinct and nonzero
// (there σ is a smooth function of H). Components with σ_j ≤ 1e-12·σ_max, and those past
// the rank the rows can have at most, have no defined direction and are skipped; at
// repeated singular values the formula gives one element of the generalised gradient
// (s itself stays continuous there).
// σ_j from the Gram matrix carries an absolute error of about ε·σ_max²/σ_j; that is below
// the uncertainty float storage of the weights already puts on every σ_j (about
// 1e-7·σ_max: the rows are products of two float factors) for all σ_j above ~1e-8·σ_max.
//
// The nuclear norm works per role on W_ρ = W[:, :, :, ρ] as a (G·Dg) × Dm matrix with
// an economy SVD W_ρ = U Σ Vᵀ; its gradient is U Vᵀ (a subgradient when W_ρ is rank
// deficient).
//
// A LAPACK failure (in practice only NaN/Inf in the weights, which LAPACKE rejects)
// makes the penalty NaN, so the trainer records the trial as failed instead of the rank
// dying.
#include "model/regularisers.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <string.h>

#include "common/util.h"

#define ZERO_NORM 1e-12    // a head with ‖h‖ below this has no direction
#define SIGMA_RTOL 1e-12   // σ_j ≤ SIGMA_RTOL·σ_max: no singular direction to follow

// Singular values of the rows behind K (G, G): sigma (G) descending, with exact zeros past
// rank. If U is not NULL it receives the left singular vectors (K's eigenvectors) as
// columns, u_j = U[:, j] (G, G), in the same order. Returns the LAPACK info (0 = ok).
static int head_sigma(double *sigma, double *U, const double *K, int G, int rank) {
    double *E = xmalloc((size_t)G * G * sizeof(double));
    double *eig = xmalloc((size_t)G * sizeof(double));
    memcpy(E, K, (size_t)G * G * sizeof(double));
    // eigenvalues ascending; with 'V', column j of E becomes eigenvector j
    int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, U ? 'V' : 'N', 'U', G, E, G, eig);
    if (info == 0)
        for (int j = 0; j < G; j++) {
            int src = G - 1 - j;
            sigma[j] = j < rank ? sqrt(fmax(eig[src], 0.0)) : 0.0;
            if (U)
                for (int i = 0; i < G; i++) U[i * G + j] = E[i * G + src];
        }
    free(eig);
    free(E);
    return info;
}

double reg_orth(double *coef, const double *K, int G, double lambda) {
    double *E = xmalloc((size_t)G * G * sizeof(double));  // E = C − I
    double *norm = xmalloc((size_t)G * sizeof(double));  // n_g, 0 for a zero head

    for (int g = 0; g < G; g++) {
        double n = sqrt(K[g * G + g]);
        norm[g] = n < ZERO_NORM ? 0.0 : n;
    }
    double penalty = 0.0;
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            double *e = &E[i * G + j];
            if (norm[i] == 0.0 || norm[j] == 0.0) {
                *e = 0.0;
                continue;
            }
            *e = K[i * G + j] / (norm[i] * norm[j]) - (i == j);
            penalty += *e * *e;
        }
    // Γ_gj = 4 E_gj/(n_g n_j) − δ_gj a_g/n_g², with a_g = 4 Σ_j E_gj C_gj, C = E + I
    for (int g = 0; g < G; g++) {
        if (norm[g] == 0.0) continue;
        double a = 0.0;
        for (int j = 0; j < G; j++) {
            double e = E[g * G + j];
            a += 4.0 * e * (e + (g == j));
            if (norm[j] != 0.0) coef[g * G + j] += lambda * 4.0 * e / (norm[g] * norm[j]);
        }
        coef[g * G + g] -= lambda * a / (norm[g] * norm[g]);
    }

    free(norm);
    free(E);
    return lambda * penalty;
}

// Economy SVD of M (m, n) row-major: M = U diag(S) Vt with U (m, k), Vt (k, n), k = min(m, n),
// all row-major; M is destroyed. Row-major M is the column-major Mᵀ = V S Uᵀ, so asking
// column-major LAPACK for the SVD of Mᵀ returns exactly row-major Vt in its "U" and
// row-major U in its "VT", with no transposition copies. Divide and conquer (dgesdd)
// is 1.5–3× faster than dgesvd from 64 × 64 up (measured here; this runs every step);
// dgesvd is the fallback for the rare matrix on which dgesdd does not converge.
// Returns the LAPACK info.
static int svd_economy(double *U, double *S, double *Vt, double *M, int m, int n) {
    const int k = m < n ? m : n;
    int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', n, m, M, n, S, Vt, n, U, k);
    if (info > 0) {
        double *superb = xmalloc((size_t)(k > 1 ? k - 1 : 1) * sizeof(double));
        info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', n, m, M, n, S, Vt, n, U, k, superb);
        free(superb);
    }
    return info;
}

double reg_nuclear(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda) {
    const int m = G * Dg, n = Dm, k = m < n ? m : n;
    double *M = xmalloc((size_t)m * n * sizeof(double));  // W_ρ (m, n), then U Vᵀ
    double *U = xmalloc((size_t)m * k * sizeof(double));  // (m, k)
    double *Vt = xmalloc((size_t)k * n * sizeof(double)); // (k, n)
    double *S = xmalloc((size_t)k * sizeof(double));

    double penalty = 0.0;
    for (int rho = 0; rho < R; rho++) {
        // W_ρ[i, d] = W[g, c, d, ρ] with i = g·Dg + c: stride R in W
        for (size_t i = 0; i < (size_t)m * n; i++) M[i] = W[i * R + rho];
        if (svd_economy(U, S, Vt, M, m, n) != 0) {
            penalty = NAN;
            break;
        }
        for (int j = 0; j < k; j++) penalty += S[j];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, lambda, U, k, Vt, n, 0.0,
                    M, n);
        for (size_t i = 0; i < (size_t)m * n; i++) dW[i * R + rho] += (float)M[i];
    }

    free(S);
    free(Vt);
    free(U);
    free(M);
    return lambda * penalty;
}

double reg_l2(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda) {
    size_t n = (size_t)G * Dg * Dm * R;
    double penalty = 0.0;
    for (size_t i = 0; i < n; i++) {
        double w = W[i];
        penalty += w * w;
        dW[i] += (float)(2.0 * lambda * w);
    }
    return lambda * penalty;
}

// s = σ/Σσ from sigma (G) in place; all zeros if Σσ = 0. Returns Σσ.
static double normalise_sigma(double *s, int G) {
    double sum = 0.0;
    for (int j = 0; j < G; j++) sum += s[j];
    for (int j = 0; j < G; j++) s[j] = sum > 0.0 ? s[j] / sum : 0.0;
    return sum;
}

double reg_stability(double *coef, double *s, const double *K, const double *s_ref, int G, int rank,
                     double lambda) {
    double *U = xmalloc((size_t)G * G * sizeof(double));
    double *sigma = xmalloc((size_t)G * sizeof(double));
    double *c = xmalloc((size_t)G * sizeof(double));  // gσ_j/σ_j
    double *Uc = xmalloc((size_t)G * G * sizeof(double));  // U diag(c)
    double penalty = NAN;

    if (head_sigma(sigma, s_ref ? U : NULL, K, G, rank) != 0) {
        for (int j = 0; j < G; j++) s[j] = NAN;
    } else {
        memcpy(s, sigma, (size_t)G * sizeof(double));
        double S = normalise_sigma(s, G);
        penalty = 0.0;
        if (s_ref) {
            double gs_dot_s = 0.0;
            for (int j = 0; j < G; j++) {
                double d = s[j] - s_ref[j];
                penalty += d * d;
                gs_dot_s += 2.0 * d * s[j];
            }
            if (S > 0.0) {
                // sigma[0] = σ_max; zeros past the rank fall under the cut-off too
                for (int j = 0; j < G; j++) {
                    double gsigma = (2.0 * (s[j] - s_ref[j]) - gs_dot_s) / S;
                    c[j] = sigma[j] > SIGMA_RTOL * sigma[0] ? gsigma / sigma[j] : 0.0;
                }
                // Γ = U diag(c) Uᵀ, symmetric (G, G)
                for (int i = 0; i < G; i++)
                    for (int j = 0; j < G; j++) Uc[i * G + j] = U[i * G + j] * c[j];
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, G, G, G, lambda, Uc, G, U, G, 1.0, coef, G);
            }
        }
    }

    free(Uc);
    free(c);
    free(sigma);
    free(U);
    return lambda * penalty;
}

// ---- Function-level heads

void function_heads_init(FunctionHeads *f, int grassmann, int groups, int d_group, int d_model) {
    memset(f, 0, sizeof *f);
    f->grassmann = grassmann;
    if (grassmann) {  // K_o = Wᵀ A_o W: A_o has r(r−1)/2 coordinates, K_o is antisymmetric
        const long pairs = (long)groups * (groups - 1) / 2, forms = (long)d_model * (d_model - 1) / 2;
        const long span = pairs < forms ? pairs : forms;
        f->G = d_model;
        f->rank = span < d_model ? (int)span : d_model;
        mixing_kernel_alloc(&f->k, groups, d_model);
        f->ws = xmalloc(mixing_kernel_gram_workspace(&f->k) * sizeof(double));
    } else {  // rows (B_h, C_h) of 2·d_model² numbers
        const long span = 2L * d_model * d_model;
        f->G = groups;
        f->rank = span < groups ? (int)span : groups;
        circuits_alloc(&f->c, groups, d_group, d_model);
        f->ws = xmalloc(circuits_gram_workspace(&f->c) * sizeof(double));
    }
    f->K = xmalloc((size_t)f->G * f->G * sizeof(double));
    f->coef = xmalloc((size_t)f->G * f->G * sizeof(double));
}

void function_heads_free(FunctionHeads *f) {
    if (f->grassmann)
        mixing_kernel_free(&f->k);
    else
        circuits_free(&f->c);
    free(f->ws);
    free(f->K);
    free(f->coef);
    memset(f, 0, sizeof *f);
}

void function_heads_gram(FunctionHeads *f, const float *W, const float *out) {
    if (f->grassmann) {
        mixing_kernel_load(&f->k, W, out);
        mixing_kernel_gram_forward(f->K, f->ws, &f->k);
    } else {
        circuits_load(&f->c, W, out);
        circuits_head_gram_forward(f->K, f->ws, &f->c);
    }
    memset(f->coef, 0, (size_t)f->G * f->G * sizeof(double));
}

void function_heads_backward(float *dW, float *dout, FunctionHeads *f) {
    if (f->grassmann)
        mixing_kernel_gram_backward(dW, dout, &f->k, f->coef, f->ws);
    else
        circuits_head_gram_backward(dW, dout, &f->c, f->coef, f->ws);
}

// The ring holds s(W_t) in slot t mod window. After `count` pushes (steps 0 … count−1),
// step t = count needs s(W_{count−window}), which sits in slot count mod window and is
// the one the next push overwrites.
void stability_init(StabilityHistory *h, int G, int window) {
    if (G < 1 || window < 1)
        die(EXIT_RUNTIME, "stability history needs G >= 1 and window >= 1 (got G %d, window %d)",
            G, window);
    h->G = G;
    h->window = window;
    h->count = 0;
    h->ring = xcalloc((size_t)window * G, sizeof(double));
}

void stability_free(StabilityHistory *h) {
    free(h->ring);
    h->ring = NULL;
    h->count = 0;
}

const double *stability_reference(const StabilityHistory *h) {
    if (h->count < h->window) return NULL;
    return h->ring + (size_t)(h->count % h->window) * h->G;
}

void stability_push(StabilityHistory *h, const double *s) {
    memcpy(h->ring + (size_t)(h->count % h->window) * h->G, s, (size_t)h->G * sizeof(double));
    h->count++;
}
