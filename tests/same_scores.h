// same_scores.h: two scores of one layer shape compared, for the invariance tests
// (tests/test_invariants.c) and for N ranks against one (tests/test_invariants_mpi.c).
#ifndef ATTN_SAME_SCORES_H
#define ATTN_SAME_SCORES_H

#include "check.h"
#include "invariants/score.h"

// |a − b| ≤ tol·scale for every number of two scores of the same shape (the scale is
// σ_1 for the σ, the value itself for norm, effective ranks and condition numbers, 1
// for the rest).
static inline void check_same_scores(const LayerScore *a, const LayerScore *b, double tol, const char *what) {
    CHECK_CLOSE(b->norm, a->norm, 0.0, tol, "%s: norm", what);
    for (int n = 0; n < 4; n++) {
        CHECK_ALL_CLOSE(b->sv[n], a->sv[n], a->n_sv[n], tol * a->sv[n][0], 0.0, "%s: σ of mode %d", what, n);
        CHECK(a->num_rank[n] == b->num_rank[n], "%s: mode %d numerical rank %d vs %d", what, n, a->num_rank[n],
              b->num_rank[n]);
        CHECK(a->tucker_ranks[n] == b->tucker_ranks[n], "%s: mode %d Tucker rank", what, n);
        CHECK_CLOSE(b->eff_rank[n], a->eff_rank[n], 0.0, tol, "%s: mode %d effective rank", what, n);
        CHECK_CLOSE(b->core_energy[n], a->core_energy[n], tol, 0.0, "%s: mode %d core energy", what, n);
    }
    CHECK_CLOSE(b->correlation, a->correlation, tol, 0.0, "%s: correlation", what);
    CHECK_CLOSE(b->tucker_fit, a->tucker_fit, tol, 0.0, "%s: Tucker fit", what);
    CHECK(a->tucker_iters == b->tucker_iters, "%s: HOOI sweeps %d vs %d", what, a->tucker_iters, b->tucker_iters);
    CHECK(a->cp_rank == b->cp_rank, "%s: CP rank %d vs %d", what, a->cp_rank, b->cp_rank);
    CHECK_ALL_CLOSE(b->cp_fits, a->cp_fits, a->cp_rank_max, tol, 0.0, "%s: CP fit by rank", what);
    CHECK_CLOSE(b->cp_fit, a->cp_fit, tol, 0.0, "%s: CP fit", what);
    CHECK_ALL_CLOSE(b->cp_cond, a->cp_cond, 4, 0.0, tol, "%s: CP factor condition by mode", what);
    if (a->cp_rank == b->cp_rank)
        CHECK_ALL_CLOSE(b->cp_roles, a->cp_roles, a->cp_rank * a->dims[3], tol, 0.0, "%s: CP roles", what);
}

// The largest difference of the main numbers, for a summary line: the summed differences
// of correlation, Tucker fit and CP fit, or that of an effective rank (relative) or a σ
// (relative to σ_1) if larger; NaN if one is NaN.
static inline double max_score_diff(const LayerScore *a, const LayerScore *b) {
    double d = fabs(a->correlation - b->correlation) + fabs(a->tucker_fit - b->tucker_fit) + fabs(a->cp_fit - b->cp_fit);
    for (int n = 0; n < 4; n++) {
        d = worst_diff(d, b->eff_rank[n] / a->eff_rank[n], 1.0);
        for (int i = 0; i < a->n_sv[n]; i++)
            d = worst_diff(d, b->sv[n][i] / a->sv[n][0], a->sv[n][i] / a->sv[n][0]);
    }
    return d;
}

#endif
