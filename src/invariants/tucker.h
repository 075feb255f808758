// tucker.h: Tucker decomposition of a four-mode tensor, X ≈ C ×₀ U₀ ×₁ U₁ ×₂ U₂ ×₃ U₃,
// by HOSVD and HOOI (De Lathauwer, De Moor & Vandewalle 2000), with the SVDs of the
// unfoldings computed over the ranks of a grid. Private to the invariants module:
// score.c and the tests use it.
//
// X is double, row-major [d0][d1][d2][d3] (last mode fastest). The mode-n unfolding
// X_(n) is the d_n × (Π_{k≠n} d_k) matrix of mode-n fibres. Its columns are taken in
// numpy's order, moveaxis(X, n, 0).reshape(d_n, -1): a column permutation of Kolda &
// Bader's, which changes neither the singular values nor the left singular vectors.
#ifndef ATTN_TUCKER_H
#define ATTN_TUCKER_H

#include "invariants/grid.h"
#include "invariants/tensor4.h"

// Xn (d_n × Π_{k≠n} d_k, column-major) = X_(n).
void tensor_unfold(double *Xn, const double *X, const int dims[4], int n);

// Smallest r with Σ_{i<r} σ_i² ≥ energy · Σ σ_i² (sv descending); 0 when all σ are 0.
int numerical_rank(const double *sv, int n_sv, double energy);
// exp(−Σ p_i log p_i), p = σ/Σσ: between 1 (one direction) and n_sv (flat); 0 for σ = 0.
double effective_rank(const double *sv, int n_sv);

typedef struct {
    int m;       // d_n, rows of X_(n)
    int n_sv;    // min(d_n, Π_{k≠n} d_k)
    double *sv;  // n_sv singular values, descending
    int n_vec;   // leading left singular vectors kept
    double *U;   // d_n × n_vec, column-major, orthonormal; sign: largest-|·| entry positive
    double *gram;  // mode 0 only (NULL for the others): X_(0)X_(0)ᵀ, d_0 × d_0
} UnfoldingSvd;

// Collective over g->comm. The singular values of the four unfoldings X_(n) of t and,
// unless n_vec_min is NULL, their leading left singular vectors, replicated on every
// rank (see unfolding_svd.c for how the work is split). σ come from the QR Y_nᵀ = QR
// (TSQR over the ranks; Y_n = X_(n) for a dense tensor, see tensor4.h) and the
// bidiagonal SVD of R (dgebrd, dbdsqr), so they are accurate to ε‖X‖ like a direct SVD
// (a circuits tensor's modes 0 and 3 excepted: tensor4.h); the vectors are eigenvectors of
// RᵀR = X_(n)X_(n)ᵀ. Keeps n_vec = min(d_n, max(n_vec_min[n], numerical_rank(σ, energy)))
// vectors (none, and U NULL, when n_vec_min is NULL). The bits do not depend on the
// number of ranks.
void unfolding_svds(UnfoldingSvd out[4], const Tensor4 *t, const int *n_vec_min, double energy, const BlacsGrid *g);
void unfolding_svd_free(UnfoldingSvd *u);

typedef struct {
    int ranks[4];
    double *U[4];  // d_n × ranks[n], column-major, orthonormal
    double fit;    // 1 − ‖X − X̂‖/‖X‖, X̂ the projection of X on the factors' spans
    int iters;
} TuckerModel;

// HOOI from U0[n] (d_n × ranks[n], column-major, orthonormal; the HOSVD factors): each
// sweep replaces U_n by the leading ranks[n] left singular vectors of
// X ×_{k≠n} U_kᵀ, n = 0..3, and stops when the fit changes by less than tol or after
// max_iter sweeps. Needs ranks[n] ≤ Π_{k≠n} ranks[k]. Collective over g->comm: every
// rank passes the same X and U0 and gets the same model, whatever the number of ranks;
// the mode products on X itself are split over the ranks, the rest is repeated on each.
// verbose: one line per sweep on stderr.
void tucker_hooi(TuckerModel *t, const double *X, const int dims[4], const int ranks[4], const double *const U0[4],
                 double tol, int max_iter, int verbose, const BlacsGrid *g);
// The same for a circuits tensor too large to hold (tensor4.h), from its factors, with
// ranks[0] = heads and ranks[3] = 2: only U_1 and U_2 are updated (tucker.c); norm2 = ‖T‖².
void tucker_hooi_circuits(TuckerModel *t, const Circuits *c, double norm2, const int ranks[4],
                          const double *const U0[4], double tol, int max_iter, int verbose, const BlacsGrid *g);
void tucker_model_free(TuckerModel *t);

#endif
