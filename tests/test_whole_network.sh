#!/usr/bin/env bash
# The whole network's symmetries (LayerNorm folded, reads and writes centred, biases, dead
# heads, per-head maps, permutations) leave every function-level score unchanged, and real
# changes of function (a query bias, a head's temperature with its output gain, weight
# noise) move them: tests/whole_network.py, on GPT-2-, BERT- and LLaMA-shaped checkpoints
# and on an mha and a tucker model trained here by `attnsweep train` (each proved a
# symmetry or a change by a float64 numpy forward of the whole model first).
# Usage: bash tests/test_whole_network.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

tiny=(--task charlm --steps 30 --eval-every 30 --eval-batches 1 --batch 8 --seq-len 16 --d-model 16 --heads 4
      --layers 2 --quiet)
run train --attention mha "${tiny[@]}" -o "$tmp/mha.h5"
expect_rc 0 "train mha -o"
run train --attention tucker --core-rank 2 "${tiny[@]}" -o "$tmp/tucker.h5"
expect_rc 0 "train tucker -o"
# the script's many `attnsweep score` runs without leak detection (test_score_cli checks
# that path for leaks; MPI's own allocations need tests/sanitizer_env.sh's slow unwinding)
ASAN_OPTIONS=$asan_noleaks "$py" "$here/whole_network.py" "$bin" "$tmp" "$tmp/mha.h5" "$tmp/tucker.h5" ||
    fail "whole_network.py"
pass "whole-network symmetries and real changes (tests/whole_network.py)"
echo "test_whole_network: all $checks checks passed in $((SECONDS - start)) s"
