#!/usr/bin/env bash
# The plain-L2 control calibrated to the same penalty size at the start as head
# orthogonality (not the same lambda): for each seed, the configuration is built and one
# step taken with lambda_orth 1 and then with lambda_l2 1; the penalty recorded at that
# step is the regulariser's value at the initialisation (it is computed before the first
# update). lambda_l2 = lambda_orth x mean P_orth / mean P_l2, printed for each lambda_orth.
# Usage: scripts/studies/calibrate_l2.sh SEEDS LAMBDA_ORTH... [-- extra train options]
#   e.g. scripts/studies/calibrate_l2.sh 5 0.1 1 -- --attention mha --lr 0.01
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ -x build/attnsweep ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j >/dev/null; }
export OPENBLAS_NUM_THREADS=1
seeds=$1; shift
lambdas=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do lambdas+=("$1"); shift; done
[ $# -gt 0 ] && shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for seed in $(seq 1 "$seeds"); do
  for reg in orth l2; do
    ./build/attnsweep train --steps 1 --eval-every 1 --eval-batches 1 --seed "$seed" --lambda-$reg 1 \
      -q -o "$out/$reg.$seed.h5" "$@" >/dev/null
  done
done
/usr/bin/python3 - "$out" "$seeds" "${lambdas[@]}" <<'PY'
import sys, h5py, numpy as np
out, seeds, lambdas = sys.argv[1], int(sys.argv[2]), [float(x) for x in sys.argv[3:]]
def penalty(reg, seed):
    with h5py.File(f"{out}/{reg}.{seed}.h5") as f:
        return float(f["trials/000000/curves"][0]["penalty"])
p = {reg: np.array([penalty(reg, s) for s in range(1, seeds + 1)]) for reg in ("orth", "l2")}
for reg in p:
    print(f"P_{reg} at the initialisation over {seeds} seeds: mean {p[reg].mean():.6g}, sd {p[reg].std(ddof=1) if seeds > 1 else 0:.3g}")
ratio = p["orth"].mean() / p["l2"].mean()
for lam in lambdas:
    print(f"lambda_orth {lam:g}: calibrated lambda_l2 {lam * ratio:.3g}")
PY
