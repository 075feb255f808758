#!/usr/bin/env bash
# sweep_scaling.sh: the same sweep of 12 real short Fashion-MNIST trials
# (scripts/bench/scaling.yaml) with 1 worker (mpirun -np 2) and with 2 workers
# (mpirun -np 3: three processes on the 2 cores, the coordinator sharing a core).
# Reports the wall time of each (mpirun's, MPI start-up, and the coordinator's own, which
# the ratios use), the speed-up (target >= 1.8x), the worker utilisation
# sum(busy) / (workers x wall) (target >= 95 %) with busy = the trials' `seconds`
# grouped by rank (and, from an MPI trace, TRIAL received -> RESULT sent), where the
# rest of the workers' time went, the coordinator's CPU, and the machine's load.
# Asserts nothing. About 1.5-2 minutes on a quiet 2-core machine.
#
#   bash scripts/bench/sweep_scaling.sh        (ATTNSWEEP_BIN=... to use another binary;
#                                               KEEP=1 keeps the work directory)
set -euo pipefail
# shellcheck source=scripts/bench/sweep_bench_lib.sh
source "$(dirname "$0")/sweep_bench_lib.sh"
bench_setup
cp "$BENCH_DIR/scaling.yaml" "$WORK/"

echo "== sweep scaling: $BIN"
echo "   sweep scaling.yaml: $("$BIN" validate "$WORK/scaling.yaml" | sed -n 's/^ *trials *//p'); $("$BIN" validate "$WORK/scaling.yaml" | sed -n 's/^ *budget *//p'), one evaluation on 20 batches"
echo "   $(mpirun --version 2>/dev/null | head -n 1); OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
machine_facts "before"
# Both runs read the images from the page cache, not the disk.
cat /usr/share/datasets/fashion-mnist/*.gz > /dev/null 2>&1 || true

run_sweep w1 2 "$WORK/scaling.yaml"
machine_facts "between"
run_sweep w2 3 "$WORK/scaling.yaml"
machine_facts "after"
echo
"$PY" "$BENCH_DIR/sweep_report.py" scaling "$WORK" w1 w2
