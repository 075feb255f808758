#!/usr/bin/env bash
# The variant × task table of docs/results/variants.md: every attention variant trained on every
# task with the budgets below, one run each (seed 1), printed as a Markdown table.
# Recall is not here: sweeps/recall_mqar.yaml measures it at matched size and budget.
# Usage: scripts/variant_table.sh [extra attnsweep train options]
# Takes about 10-15 minutes on 2 cores (one run at a time, one BLAS thread).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x build/attnsweep ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j >/dev/null; }
export OPENBLAS_NUM_THREADS=1

declare -A budget=(
  [fashion_mnist]="--epochs 3"
  [charlm]="--steps 2000 --batch 64 --seq-len 64 --eval-batches 16"
)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| variant | task | budget | params | val accuracy | test accuracy | test loss (nats) | test bits/byte | steps/s | time (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for task in fashion_mnist charlm; do
  for attention in mha tucker linear grassmann; do
    # shellcheck disable=SC2086
    ./build/attnsweep train --task "$task" --attention "$attention" ${budget[$task]} --json -q "$@" \
      > "$out/r.json" || true
    /usr/bin/python3 - "$out/r.json" "${budget[$task]}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["config"]
bpb = f'{r["test_bits_per_byte"]:.3f}' if c["task"] == "charlm" else "–"
acc = (f'{r["val_accuracy"]:.4f} | {r["test_accuracy"]:.4f}' if r["status"] == "ok"
       else f'{r["status"]}: {r["reason"]} | –')
loss = f'{r["test_loss"]:.4f}' if r["status"] == "ok" else "–"
print(f'| {c["attention"]} | {c["task"]} | `{sys.argv[2]}` | {r["n_params"]:,} | {acc} | '
      f'{loss} | {bpb} | {r["steps_per_second"]:.1f} | {r["seconds"]:.0f} |')
PY
  done
done
