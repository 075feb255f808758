#!/usr/bin/env bash
# The table of docs/results/score-views.md, the two tensors a layer can be scored on:
# each attention variant trained on Fashion-MNIST at the default budget (attnsweep train:
# one epoch, 430 steps of 128, seed 1, d_model 64, 4 heads, 2 layers), then scored with
# attnsweep score on its function-level tensor and on its parameter tensor; Correlation
# beside its chance level
# and its z (the layers' on their rotation nulls), RankDeviation (heads mode, ideal = full
# rank), means over the 2 layers, and the penalty the default reward charges (β = γ = 0.1
# on the terms beyond chance; none for Grassmann's head terms).
# Usage: scripts/score_views.sh [extra attnsweep train options]    (about 3 minutes)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x build/attnsweep ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j >/dev/null; }
export OPENBLAS_NUM_THREADS=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| variant | val accuracy | function-level Correlation (chance, z) | RankDeviation | penalty | parameter-tensor Correlation (chance, z) | RankDeviation | penalty |"
echo "|---|---|---|---|---|---|---|---|"
for attention in mha tucker linear grassmann; do
  ./build/attnsweep train --attention "$attention" -q -o "$out/$attention.h5" "$@" >/dev/null
  for view in function parameters; do
    ./build/attnsweep score "$out/$attention.h5" --tensor "$view" --no-cp --json -o "$out/$attention.$view.h5" \
      >"$out/$attention.$view.json"
  done
  /usr/bin/python3 - "$out" "$attention" <<'PY'
import json, sys
out, a = sys.argv[1], sys.argv[2]
f, p = (json.load(open(f"{out}/{a}.{v}.json")) for v in ("function", "parameters"))
import h5py
with h5py.File(f"{out}/{a}.h5") as h:
    acc = float(h["summary"][0]["val_accuracy"])
z = lambda v: "–" if v is None else f"{v:.1f}"
cell = lambda d: (f'{d["correlation"]:.4f} ({d["correlation_chance"]:.4f}, {z(d["correlation_z"])}) | '
                  f'{d["rank_deviation"]:.4f} | {0.1 * d["rank_deviation_excess"] + 0.1 * d["correlation_excess"]:+.4f}')
print(f"| {a} | {acc:.4f} | {cell(f)} | {cell(p)} |")
PY
done
