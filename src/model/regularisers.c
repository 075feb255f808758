// The four penalties on one layer's attention tensor W [G, Dg, Dm, R] and their gradients.
//
// Three of them only need the head unfolding H (G, L), L = Dg·Dm·R, which is W itself
// read as a G × L row-major matrix. G is small (≤ 64) and L large (3072 for
// d_k 16 × d_model 64 × 3 roles), so everything about H goes through the G × G
// Gram matrix K = H Hᵀ (one dsyrk, O(G²L)) and every gradient has the form
//
//     dH = A H,   A (G, G) symmetric,
//
// one dgemm. No G × L factorisation is ever formed.
//
// Orthogonality, with n_g = ‖h_g‖ = √K_gg, ĥ_g = h_g/n_g, C = Ĥ Ĥᵀ (C_ij = K_ij/(n_i n_j)),
// E = C − I, P = ‖E‖²_F:
//     dP/dĥ_g = 4 Σ_j E_gj ĥ_j                        (E symmetric)
//     dh_g    = (dĥ_g − ĥ_g (ĥ_g·dĥ_g)) / n_g        (back through h ↦ h/‖h‖)
// and ĥ_g·dĥ_g = 4 Σ_j E_gj C_gj =: a_g, so
//     A_gj = 4 E_gj/(n_g n_j) − δ_gj a_g/n_g².
// A zero head (n_g < 1e-12) has no direction: it gets ĥ_g = 0 and no diagonal term
// (I_gg := 0), so it adds nothing to P and receives no gradient.
//
// Stability, with σ_1 ≥ … ≥ σ_G the singular values of H (σ_j² the eigenvalues of K,
// u_j its eigenvectors = left singular vectors of H), S = Σσ, s = σ/S,
// P = ‖s − s_ref‖²:
//     g_s = 2(s − s_ref),   gσ_j = (g_s_j − Σ_i g_s_i s_i)/S        (through s = σ/S)
//     dσ_j/dH = u_j v_jᵀ with v_j = Hᵀu_j/σ_j, so dH = U diag(gσ/σ) Uᵀ H.
// This is the gradient where it exists: the singular values are distinct and nonzero
// (there σ is a smooth function of H). Components with σ_j ≤ 1e-12·σ_max have no
// defined v_j and are skipped; at repeated singular values the formula gives one
// element of the generalised gradient (s itself stays continuous there).
// σ_j from the Gram matrix carries an absolute error of about ε·σ_max²/σ_j; that is below
// the uncertainty float storage of W already puts on every σ_j (about 6e-8·σ_max) for
// all σ_j above ~1e-8·σ_max.
//
// The nuclear norm works per role on W_ρ = W[:, :, :, ρ] as a (G·Dg) × Dm matrix with
// an economy SVD W_ρ = U Σ Vᵀ; its gradient is U Vᵀ (a subgradient when W_ρ is rank
// deficient).
//
// A LAPACK failure (in practice only NaN/Inf in W, which LAPACKE rejects) makes the
// penalty NaN, so the trainer records the trial as failed instead of the rank dying.
#include "model/regularisers.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <string.h>

#include "common/util.h"

#define ZERO_NORM 1e-12    // a head with ‖h‖ below this has no direction
#define SIGMA_RTOL 1e-12   // σ_j ≤ SIGMA_RTOL·σ_max: no singular direction to follow
#define BLOCK_DOUBLES 2048 // G × B column block of H converted to double at a time

// H is never held in double as a whole: it is streamed in G × B column blocks
// (16 KB each). Besides using less memory this matters for speed, because a G × L
// double copy per call is large enough (0.4 MB at G = 4, L = 12288) that glibc returns
// it to the kernel on free, and the page faults on the next call cost 10× the work.
static int block_width(int G) { return G < BLOCK_DOUBLES ? BLOCK_DOUBLES / G : 1; }

// Hb (G, b) = H[:, l0 : l0 + b] in double, H = W as a G × L matrix.
static void load_block(double *Hb, const float *W, int G, int L, int l0, int b) {
    for (int g = 0; g < G; g++)
        for (int l = 0; l < b; l++) Hb[(size_t)g * b + l] = W[(size_t)g * L + l0 + l];
}

// K (G, G) = H Hᵀ, both triangles filled.
static void head_gram(double *K, const float *W, int G, int L) {
    const int B = block_width(G);
    double *Hb = xmalloc((size_t)G * B * sizeof(double));
    memset(K, 0, (size_t)G * G * sizeof(double));
    for (int l0 = 0; l0 < L; l0 += B) {
        int b = L - l0 < B ? L - l0 : B;
        load_block(Hb, W, G, L, l0, b);
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, G, b, 1.0, Hb, b, 1.0, K, G);
    }
    for (int i = 0; i < G; i++)
        for (int j = 0; j < i; j++) K[i * G + j] = K[j * G + i];
    free(Hb);
}

// dW (G, L) += λ · A H, with A (G, G) and H = W as a G × L matrix.
static void add_row_mix(float *dW, const double *A, const float *W, int G, int L, double lambda) {
    const int B = block_width(G);
    double *Hb = xmalloc((size_t)G * B * sizeof(double));
    double *Db = xmalloc((size_t)G * B * sizeof(double));
    for (int l0 = 0; l0 < L; l0 += B) {
        int b = L - l0 < B ? L - l0 : B;
        load_block(Hb, W, G, L, l0, b);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, G, b, G, lambda, A, G, Hb, b, 0.0,
                    Db, b);
        for (int g = 0; g < G; g++)
            for (int l = 0; l < b; l++) dW[(size_t)g * L + l0 + l] += (float)Db[(size_t)g * b + l];
    }
    free(Db);
    free(Hb);
}

// Singular values of H (G, L) from its Gram matrix K: sigma (G) descending, with exact
// zeros past min(G, L). If U is not NULL it receives the left singular vectors as
// columns, u_j = U[:, j] (G, G), in the same order. Returns the LAPACK info (0 = ok).
static int head_sigma(double *sigma, double *U, const float *W, int G, int L) {
    double *K = xmalloc((size_t)G * G * sizeof(double));
    double *eig = xmalloc((size_t)G * sizeof(double));
    head_gram(K, W, G, L);
    // eigenvalues ascending; with 'V', column j of K becomes eigenvector j
    int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, U ? 'V' : 'N', 'U', G, K, G, eig);
    if (info == 0) {
        int rank = G < L ? G : L;
        for (int j = 0; j < G; j++) {
            int src = G - 1 - j;
            sigma[j] = j < rank ? sqrt(fmax(eig[src], 0.0)) : 0.0;
            if (U)
                for (int i = 0; i < G; i++) U[i * G + j] = K[i * G + src];
        }
    }
    free(eig);
    free(K);
    return info;
}

double reg_orth(float *dW, const float *W, int G, int Dg, int Dm, int R, double lambda) {
    const int L = Dg * Dm * R;
    double *C = xmalloc((size_t)G * G * sizeof(double));  // K, then C, then E = C − I
    double *A = xcalloc((size_t)G * G, sizeof(double));
    double *norm = xmalloc((size_t)G * sizeof(double));  // n_g, 0 for a zero head

    head_gram(C, W, G, L);
    for (int g = 0; g < G; g++) {
        double n = sqrt(C[g * G + g]);
        norm[g] = n < ZERO_NORM ? 0.0 : n;
    }
    double penalty = 0.0;
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            double *e = &C[i * G + j];
            if (norm[i] == 0.0 || norm[j] == 0.0) {
                *e = 0.0;
                continue;
            }
            *e = *e / (norm[i] * norm[j]) - (i == j);
            penalty += *e * *e;
        }
    // A_gj = 4 E_gj/(n_g n_j) − δ_gj a_g/n_g², with a_g = 4 Σ_j E_gj C_gj, C = E + I
    for (int g = 0; g < G; g++) {
        if (norm[g] == 0.0) continue;
        double a = 0.0;
        for (int j = 0; j < G; j++) {
            double e = C[g * G + j];
            a += 4.0 * e * (e + (g == j));
            if (norm[j] != 0.0) A[g * G + j] = 4.0 * e / (norm[g] * norm[j]);
        }
        A[g * G + g] -= a / (norm[g] * norm[g]);
    }
    add_row_mix(dW, A, W, G, L, lambda);

    free(norm);
    free(A);
    free(C);
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

void head_singular_values(double *s, const float *W, int G, int Dg, int Dm, int R) {
    const int L = Dg * Dm * R;
    if (head_sigma(s, NULL, W, G, L) != 0)
        for (int j = 0; j < G; j++) s[j] = NAN;
    else
        normalise_sigma(s, G);
}

double reg_stability(float *dW, const float *W, const double *s_ref, int G, int Dg, int Dm, int R,
                     double lambda) {
    const int L = Dg * Dm * R;
    double *U = xmalloc((size_t)G * G * sizeof(double));
    double *sigma = xmalloc((size_t)G * sizeof(double));
    double *s = xmalloc((size_t)G * sizeof(double));
    double *c = xmalloc((size_t)G * sizeof(double));  // gσ_j/σ_j
    double penalty = NAN;

    if (head_sigma(sigma, U, W, G, L) == 0) {
        memcpy(s, sigma, (size_t)G * sizeof(double));
        double S = normalise_sigma(s, G);
        double gs_dot_s = 0.0;
        penalty = 0.0;
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
            // A = U diag(c) Uᵀ, symmetric (G, G)
            double *A = xmalloc((size_t)G * G * sizeof(double));
            for (int i = 0; i < G; i++)
                for (int k = 0; k < G; k++) {
                    double a = 0.0;
                    for (int j = 0; j < G; j++) a += U[i * G + j] * c[j] * U[k * G + j];
                    A[i * G + k] = a;
                }
            add_row_mix(dW, A, W, G, L, lambda);
            free(A);
        }
    }

    free(c);
    free(s);
    free(sigma);
    free(U);
    return lambda * penalty;
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
