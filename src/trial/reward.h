// reward.h: the reward specification of a trial and the reward made from its scores:
//
//     reward = val_accuracy − β · RankDeviation − γ · Correlation
//
// over the layers' scores of one tensor view (invariants/score.h). A sweep's `reward:`
// section, `attnsweep score --beta ...` and every trial's `reward_spec` attribute are one.
#ifndef ATTN_REWARD_H
#define ATTN_REWARD_H

#include "invariants/score.h"

// The ranges a reward specification's numbers take wherever they are given (a sweep's
// `reward:` section, attnsweep score's options): β and γ in [0, REWARD_WEIGHT_MAX], the
// numerical-rank energy threshold in [REWARD_ENERGY_MIN, 1].
#define REWARD_WEIGHT_MAX 1e6
#define REWARD_ENERGY_MIN 1e-6

typedef struct {
    TensorView tensor;       // the view scored (function)
    double beta, gamma;
    int use_mode[4];         // which modes RankDeviation averages over
    double ideal_rank[4];    // r_ideal per mode (absolute effective rank); < 0 = the mode's r_max
} RewardSpec;

void reward_spec_default(RewardSpec *r);  // function view, β = γ = 0.1, mode 0 only, ideal = r_max (distinct heads)
// Mean over layers and used modes of |eff_rank − r_ideal| / r_max, with r_max the
// largest rank mode n can have (min(dims[n], Π others)); in [0, 1].
double rank_deviation(const LayerScore *layers, int n_layers, const RewardSpec *r);
double reward_value(double accuracy, double rank_dev, double correlation, const RewardSpec *r);
// The same from the effective ranks eff_rank[n_layers][4] of tensors of shape dims
// (score.h scored_dims), r_max of mode n being min(dims[n], Π others) as in the scores:
// what the cheap pass traced at an evaluation gives (trial.h InvariantTrace).
double ranks_deviation(const double *eff_rank, int n_layers, const int dims[4], const RewardSpec *r);

// The specification as JSON text, the trial attribute "reward_spec":
// {"tensor": "function", "beta": B, "gamma": G, "modes": {"heads": null, "src_dim": 32}}
// where a mode's value is its ideal rank (null: the mode's full rank), modes named as
// the tensor's (tensor_mode_names). Free with cJSON_free.
char *reward_spec_to_json(const RewardSpec *r);
// The inverse: 0, or -1 when text is not such an object.
int reward_spec_from_json(RewardSpec *r, const char *text);

#endif
