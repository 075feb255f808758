#!/usr/bin/env bash
# asha_vs_full.sh: ASHA against training everything. The 27-configuration grid of
# scripts/bench/asha27.yaml (d_model x lambda_orth x lr on Fashion-MNIST, 360 steps)
# runs once with every trial trained to the full budget, then once with
# `scheduler: {name: asha, min_steps: 40, eta: 3}` added to the same YAML (min_steps =
# max/9), both on 2 workers (mpirun -np 3). Reports the best reward of each run, their
# difference (target <= 0.01), the fraction of optimizer steps ASHA spent (sum of /summary
# steps; target <= 40 %), the wall times, and how well the full run's early evaluations
# predict its final accuracy. Asserts nothing. Budget: 360 steps per trial (d_model 16,
# 32 and 64) keeps the two runs to about 2-3 minutes on a quiet 2-core machine; a loaded
# machine takes longer (the report shows how much CPU other work took).
#
#   bash scripts/bench/asha_vs_full.sh        (ATTNSWEEP_BIN=..., KEEP=1)
set -euo pipefail
# shellcheck source=scripts/bench/sweep_bench_lib.sh
source "$(dirname "$0")/sweep_bench_lib.sh"
bench_setup
cp "$BENCH_DIR/asha27.yaml" "$WORK/full.yaml"
cp "$BENCH_DIR/asha27.yaml" "$WORK/asha.yaml"
echo "scheduler: {name: asha, min_steps: 40, eta: 3}" >> "$WORK/asha.yaml"

echo "== ASHA against the full grid: $BIN"
echo "   grid asha27.yaml: $("$BIN" validate "$WORK/full.yaml" | sed -n 's/^ *trials *//p'); $("$BIN" validate "$WORK/full.yaml" | sed -n 's/^ *budget *//p')"
echo "   asha: $(diff "$WORK/full.yaml" "$WORK/asha.yaml" | sed -n 's/^> //p')"
echo "   2 workers (mpirun -np 3); $(mpirun --version 2>/dev/null | head -n 1)"
machine_facts "before"
cat /usr/share/datasets/fashion-mnist/*.gz > /dev/null 2>&1 || true
run_sweep full 3 "$WORK/full.yaml"
machine_facts "between"
run_sweep asha 3 "$WORK/asha.yaml"
machine_facts "after"
echo
"$PY" "$BENCH_DIR/sweep_report.py" asha "$WORK" full asha d_model,lambda_orth,lr
