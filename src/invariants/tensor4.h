// tensor4.h: a four-mode tensor as the decompositions read it, private to the
// invariants module: dense (every entry in memory, double, row-major [d0][d1][d2][d3],
// last mode fastest) or the circuits of a softmax-family layer (circuits/circuits.h),
// T[h, i, j, ρ] = (L_hρᵀ R_hρ)[i, j] of dims [heads, d_model, d_model, 2], whose
// entries are formed only where a decomposition needs them whole (circuits_materialize).
//
// What the unfolding SVDs need of mode n is a tall matrix Y_nᵀ (rows of length d_n)
// with Y_nY_nᵀ = X_(n)X_(n)ᵀ, the same singular values and left singular vectors:
//   dense        the fibres X[a, :, b], N = Π_{k≠n} d_k rows;
//   circuits 1   rows S_hρ L_hρ (2·heads blocks of k = min(d_k, d_model) rows), S_hρ the
//                triangle of the QR R_hρᵀ = Q S_hρ: X_hρ = L_hρᵀ S_hρᵀ Qᵀ, so
//                Σ X_hρX_hρᵀ = Σ (S_hρ L_hρ)ᵀ(S_hρ L_hρ) with no product squared;
//   circuits 2   rows S'_hρ R_hρ, S'_hρ the triangle of L_hρᵀ = Q' S'_hρ (X_hρᵀ likewise);
//   The singular values of the two d_model modes are √λ of their rows' Gram matrix,
//   which the leading vectors need anyway: a d_model-sized bidiagonal SVD per mode would
//   double the dense work (at d_model 4096 it alone took 14 s of a 29 s scoring). √λ
//   is accurate to ε‖T‖²/σ; these modes have rank min(d_model, 2·heads·d_k) = d_model
//   for any usual shape, so no singular value is zero and every one above 1e-8·σ₁
//   keeps 1e-8 relative accuracy, but for the directions the whole network's view
//   (circuits_whole_network) leaves out: the mean direction of centred weights, the
//   homogeneous coordinate of a side without biases. Their eigenvalues are at the
//   Gram's rounding level and count as 0 (below m·ε·λ_max, unfolding_svd.c sigma_of).
//   circuits 0, 3  no rows: the Gram matrices themselves (heads × heads and 2 × 2), from
//                the factors' d_k × d_k blocks (circuits_head_gram_rows). Their
//                singular values are √λ of the Gram matrix, accurate to ε‖T‖²/σ; a zero
//                singular value (two heads of the same function, a head that writes
//                nothing) comes out 0 likewise, not √ε‖T‖.
#ifndef ATTN_TENSOR4_H
#define ATTN_TENSOR4_H

#include <stddef.h>

#include "circuits/circuits.h"
#include "invariants/grid.h"

typedef struct {
    int dims[4];
    const double *X;    // dense, or NULL
    const Circuits *c;  // circuits, or NULL
} Tensor4;

Tensor4 tensor4_dense(const double *X, const int dims[4]);
Tensor4 tensor4_circuits(const Circuits *c);
size_t tensor4_size(const Tensor4 *t);  // Π dims

// The rows of mode n's Y_nᵀ (see above).
typedef struct {
    const Tensor4 *t;
    int n, m;          // mode, row length d_n
    size_t N;          // rows
    size_t inner;      // dense: Π_{k>n} d_k
    int k;             // circuits: rows per block
    double *S;         // circuits: 2·heads triangles, k × d_k row-major each, block ρ·heads + h
    int sigma_from_gram;  // circuits: σ = √λ of the rows' Gram matrix, not a bidiagonal SVD (below)
} ModeRows;

// Returns 0, or −1 when mode n has no rows (circuits modes 0 and 3: use
// circuits_mode_grams). U (circuits only; NULL: none): the rows of the tensor projected
// on the span of U (d_model × rank_u, column-major, orthonormal) in the other d_model
// mode, T ×₂ Uᵀ for mode 1 and T ×₁ Uᵀ for mode 2 (HOOI's updates): their Gram is
// Σ X_hρ P X_hρᵀ with P = UUᵀ, through the triangles of R_hρU (L_hρU), k = min(d_k, rank_u).
int mode_rows_init(ModeRows *r, const Tensor4 *t, int n, const double *U, int rank_u);
void mode_rows_free(ModeRows *r);
// C[(j − j0) + i·ldc] = row j of Y_nᵀ, entry i, for j in [j0, j1) (C column-major).
void mode_rows_pack(double *C, size_t ldc, const ModeRows *r, size_t j0, size_t j1);

// Collective over g->comm: the Gram matrices of a circuits tensor's modes 0 (heads ×
// heads) and 3 (2 × 2), both triangles, on every rank. The heads' rows are dealt over
// the ranks by cost and each entry computed by one rank, so the bits do not depend on
// the number of ranks.
void circuits_mode_grams(double *gram0, double *gram3, const Circuits *c, const BlacsGrid *g);

// X (row-major [heads][d_model][d_model][2]) = every entry of T.
void circuits_materialize(double *X, const Circuits *c);

// ‖t‖²_F: the entries' squares, or for circuits Σ_hρ Σ (L_hρL_hρᵀ) ∘ (R_hρR_hρᵀ).
double tensor4_norm2(const Tensor4 *t);

// CP-ALS's two products with a circuits tensor (cp.c), read as the (heads·d_model) ×
// (d_model·2) matrix T_(01|23), factors column-major (dims[n] × rank):
//   Tr (heads·d_model × rank) = T_(01|23)(A2 ⊙ A3):  Σ_ρ A3[ρ, r] L_hρᵀ (R_hρ a2_r)
//   Ul (d_model·2 × rank)     = T_(01|23)ᵀ(A0 ⊙ A1): Σ_h A0[h, r] R_hρᵀ (L_hρ a1_r)
void circuits_partial_right(double *Tr, const Circuits *c, const double *A2, const double *A3, int rank);
void circuits_partial_left(double *Ul, const Circuits *c, const double *A0, const double *A1, int rank);

#endif
