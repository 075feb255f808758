#!/usr/bin/env bash
# The invariants of one layer are the same numbers (to 1e-10 relative; with one BLAS
# thread per rank they come out bit for bit the same) on 1, 2, 3 and 4 MPI ranks
# (oversubscribed beyond the cores): test_invariants_mpi writes every number of its
# score with %.17g and this script compares the files.
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

for np in 1 2 3 4; do
  extra=()
  [[ $np -gt $(nproc) ]] && extra=(--oversubscribe)
  if ! mpirun -np "$np" "${extra[@]}" "$prog" "$tmp/np$np.txt" >"$tmp/out$np" 2>"$tmp/err$np"; then
    echo "FAIL: mpirun -np $np test_invariants_mpi" >&2
    cat "$tmp/out$np" "$tmp/err$np" >&2
    exit 1
  fi
  cat "$tmp/out$np"
done

/usr/bin/python3 - "$tmp" <<'EOF'
import sys
tmp = sys.argv[1]
def load(np):
    with open(f"{tmp}/np{np}.txt") as f:
        return [(k, float(v)) for k, v in (line.split() for line in f)]
ref = load(1)
bad = 0
for np in (2, 3, 4):
    got = load(np)
    if [k for k, _ in got] != [k for k, _ in ref]:
        print(f"FAIL: {np} ranks report different quantities than 1 rank"); bad += 1; continue
    worst = 0.0
    for (k, a), (_, b) in zip(ref, got):
        tol = 1e-10 * max(abs(a), abs(b)) + 1e-300
        if abs(a - b) > tol:
            print(f"FAIL: {k}: 1 rank {a!r}, {np} ranks {b!r} (diff {abs(a - b):.3g})"); bad += 1
        worst = max(worst, abs(a - b) / max(abs(a), abs(b), 1e-300))
    print(f"ok   {len(got)} numbers on {np} ranks match 1 rank: max relative difference {worst:.2e}")
sys.exit(1 if bad else 0)
EOF
