// cp.h: CP (CANDECOMP/PARAFAC) decomposition of a four-mode tensor by alternating least
// squares, X ≈ Σ_r λ_r a_r^(0) ∘ a_r^(1) ∘ a_r^(2) ∘ a_r^(3).
//
// X is a Tensor4 (tensor4.h): dense, row-major [dims[0]][dims[1]][dims[2]][dims[3]] (last
// mode fastest) in double, or a circuits tensor whose products come from its factors.
// Factors are column-major dims[n] × rank with unit-norm columns; λ carries the scale.
// The fit 1 − ‖X − X̂‖/‖X‖ is computed without forming X̂ (norms from the factors'
// Gram matrices, the inner product from the last MTTKRP), as in SPLATT.
#ifndef ATTN_CP_H
#define ATTN_CP_H

#include "invariants/tensor4.h"

typedef struct {
    int rank;
    double *lambda;      // rank
    double *factor[4];   // dims[n] × rank, column-major, unit-norm columns
    double fit;
    int iters;
} CpModel;

// ALS from the given initial factors (init[n]: dims[n] × rank column-major; the HOSVD
// leading left singular vectors of each unfolding, padded as the caller sees fit; a zero
// column is replaced by a fixed pseudo-random one). Stops when |Δfit| < tol or after
// max_iter sweeps (at least one); components come sorted by decreasing λ. Returns 0, or
// -1 if a normal-equation solve failed, X is zero (fit 0/0) or X or init holds NaN/Inf;
// then out->fit is NaN and out is still allocated (normalised init, λ = 0).
int cp_als(CpModel *out, const Tensor4 *X, int rank, const double *const init[4], double tol, int max_iter,
           int verbose);
void cp_model_free(CpModel *m);

// M (dims[n] × rank, column-major) = X_(n) (⊙_{m≠n} A_m), the MTTKRP of mode n, computed
// as cp_als computes it (for tests).
void cp_mttkrp(double *M, const Tensor4 *X, int rank, const double *const factor[4], int n);

// Condition number (largest / smallest singular value) of a dims × rank column-major matrix.
double matrix_condition(const double *A, int rows, int cols);

#endif
