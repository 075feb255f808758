#!/usr/bin/env bash
# The Grassmann study in the paper's units: runs sweeps/charlm_paper.yaml (3 arms x 3
# learning rates x 3 seeds, each arm at its own best lr) with a coordinator and two
# workers; then, since both Grassmann arms were best at the grid's top lr (0.004), the
# same seeds at lr 0.008 for them (results/charlm_paper_lr8.h5, 6 trials); then both
# Grassmann arms at their best lr 0.004 with the offsets ×4 (4 … 64 bytes, the paper's
# reach in GPT-2 tokens of about 4 bytes: results/charlm_paper_x4.h5, 6 trials), and
# prints the table of grassmann_paper_table.py over the three files. --smoke runs the same
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
outs=("$out")
# follow NAME SED...: the Grassmann arms of the sweep, edited by the sed expressions, with
# the same seeds into results/NAME.h5
follow() {
  local name=$1; shift
  sed -e "s/^name: charlm_paper\$/name: $name/" \
      -e 's/^  attention: .*/  attention: {value: grassmann}/' \
      -e 's/^  grassmann_block: .*/  grassmann_block: {values: [paper, preln]}/' \
      "$@" sweeps/charlm_paper.yaml >"results/$name.yaml"
  ./build/attnsweep validate "results/$name.yaml" >/dev/null
  mpirun --oversubscribe -np 3 ./build/attnsweep run "results/$name.yaml" -o "results/$name.h5" --resume --quiet
  outs+=("results/$name.h5")
}
if [ "${1:-}" != --smoke ]; then
  follow charlm_paper_lr8 -e 's/^  lr: .*/  lr: {values: [0.008]}/'
  # the paper counts its offsets in GPT-2 tokens of about 4 bytes: the same reach in bytes
  follow charlm_paper_x4 -e 's/^  lr: .*/  lr: {values: [0.004]}/' \
      -e 's/^  grassmann_offsets: .*/  grassmann_offsets: {value: [4, 8, 16, 32, 48, 64]}/'
fi
/usr/bin/python3 scripts/studies/grassmann_paper_table.py "${outs[@]}"
