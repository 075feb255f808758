#!/usr/bin/env bash
# Sweeps that mean what their YAML says (issue 16), end to end under mpirun:
#   1. group size: the same trials trained alone (G = 1) and data-parallel in a group of
#      G = 2 (a batch of 33 rows split 16 + 17, an encoder and a decoder task, a
#      regulariser on) have the same learning curves to 1e-4 in loss, and each records
#      its G (/trials/NNNNNN attribute and /summary column group_size); the last line of
#      a sweep counts ok, pruned and failed trials (test_sweep.sh: exit 1 when none is ok).
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
import sys, h5py
from numcheck import close
a, b = (h5py.File(p, "r") for p in sys.argv[1:])
assert sorted(a["trials"]) == sorted(b["trials"]) and len(a["trials"]) == 4
worst = 0.0
for t in a["trials"]:
    ca, cb = a["trials"][t]["curves"][:], b["trials"][t]["curves"][:]
    assert (ca["step"] == cb["step"]).all() and len(ca) == 4, (ca["step"], cb["step"])
    for k in ("train_loss", "val_loss"):
        assert close(cb[k], ca[k], atol=1e-4), (t, k, ca[k], cb[k])
        worst = max(worst, abs(ca[k] - cb[k]).max())
    assert a["trials"][t].attrs["group_size"] == 1 and b["trials"][t].attrs["group_size"] == 2
assert list(a["summary"]["group_size"]) == [1] * 4 and list(b["summary"]["group_size"]) == [2] * 4
print(f"largest difference in loss over the curves: {worst:.2e}")
PY
pass "G = 1 and G = 2: the same curves (train and validation loss within 1e-4), group_size recorded 1 and 2"

echo "$checks passed, 0 failed ($((SECONDS - start)) s)"
