#!/usr/bin/env bash
# asha_vs_full.sh: ASHA against training everything. The 27-configuration grid of
# scripts/bench/asha27.yaml (d_model x lambda_orth x lr on Fashion-MNIST, 360 steps)
# runs once with every trial trained to the full budget, then once with
# `scheduler: {name: asha, min_steps: 40, eta: 3}` added to the same YAML (min_steps =
# max/9), both on 2 workers (mpirun -np 3). Reports the best reward of each run, their
# difference (target <= 0.01), the fraction of optimizer steps ASHA spent (sum of /summary
# steps; target <= 40 %), the wall times, and how well the full run's early evaluations
# predict its final accuracy. Then the same grid with `repeats: 2` (54 trials) runs in
# full, with ASHA deciding per configuration (the default: a configuration's repeats go on
# or stop together, on their mean) and with `per: trial` (each repeat alone), and reports
# for each the best configuration by its mean reward over both repeats, the fraction of
# steps, and how many configurations had their repeats split. Asserts nothing. Budget:
# 360 steps per trial (d_model 16, 32 and 64) keeps the first two runs to about 2-3
# minutes and the other three to about 6 on a quiet 2-core machine; a loaded machine takes
# longer (the report shows how much CPU other work took).
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

echo
echo "== the same grid with repeats: 2, in full and under ASHA per configuration and per trial"
for f in full asha; do sed 's/^seed: 1$/seed: 1\nrepeats: 2/' "$WORK/$f.yaml" >"$WORK/${f}2.yaml"; done
sed 's/eta: 3}$/eta: 3, per: trial}/' "$WORK/asha2.yaml" >"$WORK/asha2t.yaml"
run_sweep full2 3 "$WORK/full2.yaml"
run_sweep asha2 3 "$WORK/asha2.yaml"
run_sweep asha2t 3 "$WORK/asha2t.yaml"
machine_facts "after the repeats"
"$PY" "$BENCH_DIR/sweep_report.py" asha_repeats "$WORK" full2 asha2 asha2t d_model,lambda_orth,lr
