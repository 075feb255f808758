#!/usr/bin/env bash
# Install what is missing, build (warnings are errors) with the benchmark programs and run
# every test, all tiers at once (ctest labels, CMakeLists.txt: unit, fuzz, e2e, slow; ctest
# ends with each label's test-seconds); then a Debug build under AddressSanitizer and UBSan
# runs the unit and fuzz tiers and one end-to-end test (label smoke).
# Usage: scripts/test.sh            (from anywhere)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/cmake_build.sh

bash scripts/install-deps.sh
jobs=$(nproc)

echo "== release build (-Werror) and the benchmark programs"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DATTNSWEEP_WERROR=ON >/dev/null
cmake_build build -j"$jobs" --target all bench
(cd build && ctest --output-on-failure -j"$jobs")

echo "== debug build with AddressSanitizer + UBSan: unit, fuzz and the smoke test"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DATTNSWEEP_WERROR=ON -DATTNSWEEP_SANITIZE=ON >/dev/null
cmake_build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ATTNSWEEP_SANITIZED=1 ctest --output-on-failure -j"$jobs" -L 'unit|fuzz|smoke')
echo "== all tests passed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
