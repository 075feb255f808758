#!/usr/bin/env bash
# The invariants of one layer are the same numbers (to 1e-10; with one BLAS thread per
# rank they come out bit for bit the same) on 2, 3 and 4 MPI ranks (oversubscribed
# beyond the cores) as on one: each run of test_invariants_mpi compares its score with
# rank 0 scoring the same tensor alone in the same job, and checks known values
# (tests/test_invariants_mpi.c); a run with a failed check exits non-zero.
# Usage: bash tests/test_invariants_mpi_ranks.sh /path/to/attnsweep   (from the
# repository root; ctest runs it so). test_invariants_mpi is the program beside attnsweep
# (ctest also runs that program alone, on one rank, as its own test).
# Under AddressSanitizer, leak detection is off for these runs only: Open MPI's own
# allocations at exit would be reported as leaks.
set -euo pipefail

bin=${1:?usage: bash tests/test_invariants_mpi_ranks.sh /path/to/attnsweep}
prog=$(cd "$(dirname "$bin")" && pwd)/test_invariants_mpi
[[ -x $prog ]] || { echo "FAIL: $prog is not an executable" >&2; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_invariants_mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

for np in 2 3 4; do
  extra=()
  [[ $np -gt $(nproc) ]] && extra=(--oversubscribe)
  if ! mpirun -np "$np" "${extra[@]}" "$prog" >"$tmp/out$np" 2>"$tmp/err$np"; then
    echo "FAIL: mpirun -np $np test_invariants_mpi" >&2
    cat "$tmp/out$np" "$tmp/err$np" >&2
    exit 1
  fi
  cat "$tmp/out$np"
done
