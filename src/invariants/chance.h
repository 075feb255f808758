// chance.h: the head correlation of independent Gaussian weights of a layer's shape
// (chance.c says how each is computed), shown beside a measured Correlation so that a
// number at chance reads as chance.
#ifndef ATTN_CHANCE_H
#define ATTN_CHANCE_H

// E|cos| between two rows of the scored tensor's mode-0 unfolding when every weight the
// view reads is independent N(0, 1): exact for rows of independent entries (the
// parameter view), a fixed-seed Monte Carlo mean for Grassmann's output features' forms
// (standard error at most 5 %).
double correlation_chance_of_rows(double n);         // rows of length n
double mixing_kernel_chance(int r, int d_model);     // Grassmann output features' forms

// The rotation null of a layer's head correlation: the Correlation its heads would have
// were each head's objects rotated independently (Haar), their spectra kept: mean and
// standard deviation, over the pairs of nonzero rows as the Correlation itself.
//   part2[h·parts + p] = ‖X_hp‖²_F, head h's part p an n1 × n2 matrix rotated on both
//       sides (softmax heads: parts 2, B_h and C_h, each (d_model + 1)²). For two heads,
//       ⟨row_g, row_h⟩ = Σ_p ⟨X_gp, U X_hp V⟩ with U, V Haar has mean 0 and variance
//       σ²_gh‖row_g‖²‖row_h‖², σ²_gh = Σ_p ‖X_gp‖²‖X_hp‖² / (n1 n2 ‖row_g‖²‖row_h‖²)
//       (E[U_ab U_cd] = δ_ac δ_bd / n1); |cos| is taken as |N(0, σ²_gh)|: mean σ√(2/π),
//       variance σ²(1 − 2/π). The pairs are pairwise independent (U_gᵀU_h and U_gᵀU_k
//       are independent Haar), so the variances add. Against exact Haar rotations
//       (tests/test_circuits.c: within 1.5 % (mean) and 3.5 % (sd) at d_k = 4 there, within 1 % and 2 % at d_k = 16); for
//       rank-1 heads (d_k = 1) the mean comes out 16 % high.
//   parts 1, n1n2 = n (the parameter view: each row of length n rotated whole): exact,
//       E|cos| = correlation_chance_of_rows(n), E cos² = 1/n.
typedef struct {
    double mean, sd;
} ChanceNull;
ChanceNull correlation_rotation_null(const double *part2, int heads, int parts, double n1n2);

// The heads mode's effective rank under the same null: the head Gram with its diagonal
// kept (‖row_g‖²) and each off-diagonal entry ‖row_g‖‖row_h‖·cos drawn as the Gaussian
// correlation_rotation_null reads cos as (E cos² = 1/n for parts 1), σ = √λ of its
// nonnegative eigenvalues; mean and sd over 256 draws from a fixed seed (so a layer always
// gets the same numbers). What RankDeviation's heads term has by chance.
ChanceNull eff_rank_rotation_null(const double *part2, int heads, int parts, double n1n2);

#endif
