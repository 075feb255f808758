// reward.h: the reward specification of a trial and the reward made from its scores:
//
//     reward = val_accuracy − β · (RankDeviation beyond chance) − γ · (Correlation beyond chance)
//
// over the layers' scores of one tensor view (invariants/score.h); RewardTerms below
// defines each term. A sweep's `reward:`
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

// The reward's invariant terms (results format 5: the reward charges what is beyond chance):
//   RankDeviation = mean over layers and used modes of |eff_rank − r_ideal| / r_max, r_max
//       the largest rank mode n can have (min(dims[n], Π others)); in [0, 1];
//   Correlation = mean over layers of the heads' mean off-diagonal |cosine|;
//   each read against the layer's rotation null (invariants/chance.h: each head's objects
//   rotated at random, their spectra kept), the terms the reward charges are
//   rank_deviation_excess = mean over the same layers and modes of
//       (|eff_rank − r_ideal| − |eff_rank_chance − r_ideal|) / r_max for the heads mode,
//       eff_rank_chance the null's mean effective rank (with the default r_ideal = r_max
//       this is (eff_rank_chance − eff_rank) / r_max, whose mean under the null is 0), and
//       |eff_rank − r_ideal| / r_max as measured for the other modes, which have no null;
//   correlation_excess = mean over layers of Correlation − its null's mean;
//   so that a layer at chance pays nothing in expectation, and a layer more alike than
//   chance pays for the difference only. A layer without a rotation null (Grassmann's
//   mixing, which has no heads: its output features are another object) pays no head
//   terms: its heads-mode and Correlation excesses are 0, as a layer at chance.
//   correlation_z, eff_rank_z: the layers' summed differences from their nulls' means over
//   the square root of the summed variances (the layers' nulls are independent), NaN when
//   no layer has a null; eff_rank_z below 0 means fewer distinct heads than chance gives.
typedef struct {
    double rank_deviation, correlation, correlation_chance;  // as measured; the null's mean
    double rank_deviation_excess, correlation_excess;        // what the reward charges
    double correlation_z, eff_rank_z;
} RewardTerms;

// From each layer's effective ranks eff_rank[n_layers × 4], correlation[n_layers] and its
// nulls chance[n_layers × 4] (correlation mean, sd, heads-mode effective rank mean, sd;
// NaN: none) of tensors of shape dims (score.h scored_dims): what the cheap pass traced
// at an evaluation gives (trial.h InvariantTrace), and what the final scores give.
void reward_terms(RewardTerms *t, const double *eff_rank, const double *correlation, const double *chance,
                  int n_layers, const int dims[4], const RewardSpec *r);
// The same from the layers' scores.
void reward_terms_of_scores(RewardTerms *t, const LayerScore *layers, int n_layers, const RewardSpec *r);
// A layer's chance[4] (above) from its scores: NaN but the correlation's mean for a
// Grassmann layer, which the reward charges no head terms.
void layer_score_chance(double chance[4], const LayerScore *s);
// Every term NaN: what an unmeasured trial or an evaluation without a trace has.
RewardTerms reward_terms_none(void);
// val_accuracy − β · rank_deviation_excess − γ · correlation_excess.
double reward_value(double accuracy, const RewardTerms *t, const RewardSpec *r);

// The specification as JSON text, the trial attribute "reward_spec":
// {"tensor": "function", "beta": B, "gamma": G, "modes": {"heads": null, "src_dim": 32}}
// where a mode's value is its ideal rank (null: the mode's full rank), modes named as
// the tensor's (tensor_mode_names). Free with cJSON_free.
char *reward_spec_to_json(const RewardSpec *r);
// The inverse: 0, or -1 when text is not such an object.
int reward_spec_from_json(RewardSpec *r, const char *text);

#endif
