#!/usr/bin/env bash
# The Grassmann study in the paper's units: runs sweeps/charlm_paper.yaml (3 arms x 3
# learning rates x 3 seeds, each arm at its own best lr) with a coordinator and two
# workers, then prints the table of grassmann_paper_table.py. --smoke runs the same
# sweep at 30 steps with 2 learning rates (18 trials, a few minutes) into
# results/charlm_paper_smoke.h5: the pipeline end to end, not a result.
# A stopped run continues where it was (--resume).
# Usage: scripts/studies/grassmann_paper.sh [--smoke]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ -x build/attnsweep ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 >/dev/null; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1
mkdir -p results
sweep=sweeps/charlm_paper.yaml out=results/charlm_paper.h5
if [ "${1:-}" = --smoke ]; then
  sweep=results/charlm_paper_smoke.yaml out=results/charlm_paper_smoke.h5
  sed -e 's/^name: charlm_paper$/name: charlm_paper_smoke/' \
      -e 's/^budget: .*/budget: {steps: 30, eval_every: 15}/' \
      -e 's/^  lr: .*/  lr: {values: [0.001, 0.004]}/' \
      -e 's/^  eval_batches: .*/  eval_batches: {value: 2}/' sweeps/charlm_paper.yaml >"$sweep"
fi
./build/attnsweep validate "$sweep" >/dev/null
mpirun --oversubscribe -np 3 ./build/attnsweep run "$sweep" -o "$out" --resume --quiet
/usr/bin/python3 scripts/studies/grassmann_paper_table.py "$out"
