#!/usr/bin/env bash
# Install what is missing, build (warnings are errors), run every test; then the same
# suite again in a Debug build under AddressSanitizer and UBSan.
# Usage: scripts/test.sh            (from anywhere)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/install-deps.sh
jobs=$(nproc)

echo "== release build (-Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DATTNSWEEP_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

echo "== debug build with AddressSanitizer + UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DATTNSWEEP_WERROR=ON -DATTNSWEEP_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ATTNSWEEP_SANITIZED=1 ctest --output-on-failure -j"$jobs")
echo "== all tests passed"
