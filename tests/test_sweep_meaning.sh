#!/usr/bin/env bash
# Sweeps that mean what their YAML says (issue 16), end to end under mpirun:
#   1. group size: the same trials trained alone (G = 1) and data-parallel in a group of
#      G = 2 (a batch of 33 rows split 16 + 17, an encoder and a decoder task, a
#      regulariser on) have the same learning curves to 1e-4 in loss, and each records
#      its G (/trials/NNNNNN attribute and /summary column group_size); the last line of
#      a sweep counts ok, pruned and failed trials (test_sweep.sh: exit 1 when none is ok).
#   2. ASHA decides per configuration: with repeats 3 on one worker, a configuration's
#      repeats are pruned at the same rung or all finish, exactly as the rule replayed on
#      the val_accuracy curves gives (each configuration's mean over its repeats that
#      reached the rung; the first to arrive decides for all); `per: trial` decides each
#      trial alone, as the per-trial rule replayed gives; a sweep whose metric is the
#      reward (β = γ = 2) decides on the reward at each rung, computed from the invariants
#      traced there (the rule replayed on it gives every end, on the accuracy it would not).
# Usage: bash tests/test_sweep_meaning.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh

echo "== 1. batch is the trial's global batch whatever the group size"
cat >group.yaml <<'YAML'
name: group
method: grid
seed: 3
budget: {steps: 40, eval_every: 10}
parameters:
  task: {values: [fashion_mnist, charlm]}
  attention: {values: [mha, tucker]}
  lambda_orth: {value: 0.01}
  d_model: {value: 16}
  heads: {value: 2}
  layers: {value: 1}
  seq_len: {value: 16}
  batch: {value: 33}
  eval_batches: {value: 3}
YAML
mpi 2 run group.yaml -o g1.h5 --quiet
expect_rc 0 "the sweep alone (G = 1)"
mpi 3 run group.yaml -o g2.h5 --group-size 2 --quiet
expect_rc 0 "the sweep in a group of 2"
last=$(tail -n 1 "$tmp/err")
[[ $last == "sweep group: finished 4 trials in "*" s (4 ok, 0 pruned, 0 failed); results in g2.h5" ]] ||
    fail "the sweep's last line: '$last'"
"$py" - g1.h5 g2.h5 <<'PY' || fail "G = 1 and G = 2 differ"
import sys
from numcheck import close
from attnsweep.results import Results
a, b = (Results(p) for p in sys.argv[1:])
assert a.trial_ids() == b.trial_ids() and len(a.trial_ids()) == 4
worst = 0.0
for t in a.trial_ids():
    ca, cb = a.curves(t), b.curves(t)
    assert (ca["step"] == cb["step"]).all() and len(ca["step"]) == 4, (ca["step"], cb["step"])
    for k in ("train_loss", "val_loss"):
        assert close(cb[k], ca[k], atol=1e-4), (t, k, ca[k], cb[k])
        worst = max(worst, abs(ca[k] - cb[k]).max())
    assert a.trial_attrs(t)["group_size"] == 1 and b.trial_attrs(t)["group_size"] == 2
assert list(a.summary.group_size) == [1] * 4 and list(b.summary.group_size) == [2] * 4
print(f"largest difference in loss over the curves: {worst:.2e}")
PY
pass "G = 1 and G = 2: the same curves (train and validation loss within 1e-4), group_size recorded 1 and 2"

echo "== 2. ASHA per configuration: repeats continue or stop together"
cat >asha.yaml <<YAML
name: asha
method: random
trials: 24
repeats: 3
seed: 5
metric: {name: val_accuracy, goal: maximize}
task: recall
budget: {steps: 40, eval_every: 10}
scheduler: {name: asha, min_steps: 10, eta: 2}
parameters:
  lr: {distribution: log_uniform_values, min: 0.0003, max: 0.03}
  attention: {values: [mha, linear]}
$tiny_recall_params
YAML
sed 's/^name: asha$/name: asha_trial/; s/eta: 2}/eta: 2, per: trial}/' asha.yaml >asha_trial.yaml
sed 's/^name: asha$/name: asha_reward/; s/^metric: .*/metric: {name: reward, goal: maximize}\nreward: {beta: 2, gamma: 2}/' \
    asha.yaml >asha_reward.yaml
for f in asha asha_trial asha_reward; do
    mpi 2 run $f.yaml -o $f.h5 --quiet
    expect_rc 0 "ASHA sweep $f on one worker"
done
"$py" - asha.h5 asha_trial.h5 asha_reward.h5 <<'PY' || fail "ASHA's decisions per configuration"
import sys, h5py  # raw on purpose: /summary's on-disk row order (attnsweep.results sorts by trial)
import numpy as np
from numcheck import close
def accuracy(f, trial):
    c = f["trials"][f"{trial:06d}"]["curves"]
    return dict(zip(c["step"][:].tolist(), c["val_accuracy"][:].tolist()))
def reward(f, trial, beta=2.0, gamma=2.0):
    # val_accuracy − β·RankDeviation − γ·Correlation, each beyond chance, from the
    # invariants traced at each evaluation: the heads mode only, its ideal rank r_max =
    # heads = 2 (function view), less its value at the null's mean effective rank, and the
    # Correlation less its null's mean (chance: correlation mean, sd, eff_rank mean, sd);
    # a layer without a null (no heads) pays neither
    inv = f["trials"][f"{trial:06d}"]["invariants"][:]
    ch = inv["chance"]
    heads = np.isfinite(ch[:, :, 1]) & np.isfinite(ch[:, :, 3])
    rd = np.where(heads, np.abs(inv["eff_rank"][:, :, 0] - 2.0) - np.abs(ch[:, :, 2] - 2.0), 0.0).mean(axis=1) / 2.0
    corr = np.where(heads, inv["correlation"] - ch[:, :, 0], 0.0).mean(axis=1)
    acc = accuracy(f, trial)
    return {int(s): acc[int(s)] - beta * d - gamma * c for s, d, c in zip(inv["step"], rd, corr)}
def replay(path, per, value=accuracy):
    f = h5py.File(path, "r")
    rows = f["summary"][:]  # finishing order: one worker ran them one by one
    rungs, eta, budget = [10, 20], 2, 40
    sums = [{} for _ in rungs]    # rung -> unit -> [sum, count]
    decided = [{} for _ in rungs]  # rung -> unit -> go on
    bad, statuses = [], {}
    for row in rows:
        trial, status, steps = int(row["trial"]), row["status"].decode(), int(row["steps"])
        unit = trial // per
        val = value(f, trial)
        want = ("ok", budget)
        for k, rung in enumerate(rungs):
            if rung not in val:  # stopped before the rule would have: a wrong end
                break
            s = sums[k].setdefault(unit, [0.0, 0])
            s[0] += val[rung]; s[1] += 1
            if unit not in decided[k]:
                v = sorted(a / n for a, n in sums[k].values())
                pos = (1.0 - 1.0 / eta) * (len(v) - 1)
                lo = int(pos // 1)
                cut = v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) if lo + 1 < len(v) else v[lo]
                decided[k][unit] = s[0] / s[1] >= cut
            if not decided[k][unit]:
                want = ("pruned", rung)
                break
        if (status, steps) != want:
            bad.append(f"{path}: trial {trial}: {status} after {steps} steps, the rule says {want}")
        statuses.setdefault(trial // 3, set()).add((status, steps))
    pruned = sum(r["status"] == b"pruned" for r in rows)
    assert 0 < pruned < len(rows), f"fixture: {pruned} of {len(rows)} pruned"
    return bad, statuses
bad, together = replay(sys.argv[1], 3)
assert not bad, "\n".join(bad)
assert all(len(s) == 1 for s in together.values()), together
bad, alone = replay(sys.argv[2], 1)
assert not bad, "\n".join(bad)
print(f"per configuration: every configuration's 3 repeats share their end; per trial: "
      f"{sum(len(s) > 1 for s in alone.values())} of {len(alone)} configurations split")
# A reward sweep decides on the reward at each rung: the formula here gives each finished
# trial's final reward, the rule on it gives every end, and the rule on the accuracy not.
f = h5py.File(sys.argv[3], "r")
for row in f["summary"][:]:
    if row["status"] == b"ok":
        r = reward(f, int(row["trial"]))
        assert close(r[40], row["reward"], 1e-9), (int(row["trial"]), r[40], row["reward"])
bad, _ = replay(sys.argv[3], 3, reward)
assert not bad, "\n".join(bad)
bad, _ = replay(sys.argv[3], 3, accuracy)
assert bad, "fixture: the rule on the validation accuracy gives the same ends as on the reward"
print(f"reward sweep: the rule on the reward at each rung gives every end; on the accuracy {len(bad)} would differ")
PY
pass "ASHA per configuration: repeats pruned at one rung or finished together, as the replayed rule; per: trial as the per-trial rule; a reward sweep ranks rungs by the reward"

echo "$checks passed, 0 failed ($((SECONDS - start)) s)"
