#!/usr/bin/env bash
# ctest's fixture_sweep (FIXTURES_SETUP e2e_sweep, CMakeLists.txt): tests/fixture_sweep.yaml
# run once under mpirun into $ATTN_FIXTURE_SWEEP, the results file that the e2e tests which
# only read a sweep's file copy (tests/lib.sh's fixture_sweep). The old file is removed
# first, so a failed run leaves none and its readers fail saying so; the new one appears
# whole (renamed from beside it).
# Usage: ATTN_FIXTURE_SWEEP=OUT.h5 bash tests/fixture_sweep.sh /path/to/attnsweep
set -euo pipefail

# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
out=${ATTN_FIXTURE_SWEEP:-}
[[ -n $out ]] || { echo "usage: ATTN_FIXTURE_SWEEP=OUT.h5 bash tests/fixture_sweep.sh /path/to/attnsweep" >&2; exit 2; }
rm -f "$out"
mkdir -p "$(dirname "$out")"
run_fixture_sweep fixture.h5
cp fixture.h5 "$out.partial"
mv "$out.partial" "$out"
pass "$(grep '^sweep .*: finished' "$tmp/err"), copied to $out"
echo "all $checks checks passed in $((SECONDS - start)) s"
