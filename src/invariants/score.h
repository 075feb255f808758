// score.h: invariants of one layer's attention tensor and the sweep's reward.
//
// W[G, Dg, Dm, R] (groups/heads, head feature, input feature, roles; row-major, last
// mode fastest) as the variants export it (model.h). Modes are numbered 0..3 in that
// order; mode-n unfoldings follow Kolda & Bader. Every metric here is invariant under
// orthogonal changes of basis of modes 1 and 2 and under permutation of mode 0, and
// RankDeviation and Correlation under scaling of W.
#ifndef ATTN_SCORE_H
#define ATTN_SCORE_H

#include "invariants/grid.h"

typedef struct {
    int decompose;           // 1: HOOI and the CP sweep too; 0: only what the unfoldings'
                             //   singular values give (ranks, effective ranks, correlation):
                             //   the cheap pass training runs at every evaluation
    double energy;           // numerical rank: smallest r whose σ² energy reaches this (0.99)
    int ranks[4];            // Tucker ranks; 0 = numerical rank of that mode
    double tucker_tol;       // HOOI stops when the fit changes by less (1e-4)
    int tucker_max_iter;     // (100)
    int cp;                  // run the CP rank sweep (1) or not (0)
    int cp_rank_max;         // R_max of the sweep (0: min(8, G·R))
    double cp_fit_threshold; // smallest rank whose fit reaches this is chosen (0.9)
    double cp_tol;           // ALS stops on |Δfit| below this (1e-8)
    int cp_max_iter;         // (100)
    int verbose;             // per-iteration lines (fit, Δ, time) on stderr, rank 0
} ScoreOptions;

void score_options_default(ScoreOptions *o);

typedef struct {
    int dims[4];
    double norm;            // ‖W‖_F
    double *sv[4];          // singular values of each mode-n unfolding, descending,
    int n_sv[4];            //   n_sv[n] = min(dims[n], Π others) of them
    int num_rank[4];        // numerical multilinear ranks at the energy threshold
    double eff_rank[4];     // exp(entropy of σ/Σσ) per mode
    double correlation;     // mean off-diagonal |cosine| between the G rows of the mode-0 unfolding
    double core_energy[4];  // fraction of ‖W‖² kept by mode n's leading num_rank[n] singular vectors
    int tucker_ranks[4];    // ranks the Tucker decomposition used
    double tucker_fit;      // 1 − ‖W − Ŵ‖/‖W‖ of the HOOI result
    int tucker_iters;
    int cp_rank;            // chosen CP rank (0 if the sweep did not run)
    double cp_fit;          // its fit, 1 − ‖W − Ŵ‖/‖W‖
    double *cp_fits;        // fit of every rank tried, 1..cp_rank_max
    int cp_rank_max;
    double cp_cond[4];      // condition number of each CP factor at the chosen rank
    double *cp_roles;       // cp_rank × dims[3]: each component's role weights (unit-norm role factor column)
} LayerScore;

// Collective over g->comm: every rank passes the same W and gets the same result.
void score_layer(LayerScore *out, const float *W, const int dims[4], const ScoreOptions *o, const BlacsGrid *g);
void layer_score_free(LayerScore *s);

// ---- the reward: accuracy − β·RankDeviation − γ·Correlation
typedef struct {
    double beta, gamma;
    int use_mode[4];         // which modes RankDeviation averages over
    double ideal_rank[4];    // r_ideal per mode (absolute effective rank); < 0 = the mode's r_max
} RewardSpec;

void reward_spec_default(RewardSpec *r);  // β = γ = 0.1, mode 0 only, ideal = r_max (distinct heads)
// Mean over layers and used modes of |eff_rank − r_ideal| / r_max, with r_max the
// largest rank mode n can have (min(dims[n], Π others)); in [0, 1].
double rank_deviation(const LayerScore *layers, int n_layers, const RewardSpec *r);
// Mean over layers of LayerScore.correlation; in [0, 1].
double mean_correlation(const LayerScore *layers, int n_layers);
double reward_value(double accuracy, double rank_dev, double correlation, const RewardSpec *r);

#endif
