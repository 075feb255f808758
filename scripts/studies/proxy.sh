#!/usr/bin/env bash
# The proxy study: runs sweeps/study_proxy.yaml with a coordinator and two workers, then
# attnsweep report with the verdict at step 40 (text, and JSON beside the results).
# Usage: scripts/studies/proxy.sh [OUT_DIR]     (about 6 minutes on 2 cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/results}
mkdir -p "$out"
bin=$root/build/attnsweep
[ -x "$bin" ] || { cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$root/build" -j >/dev/null; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
h5=$out/study_proxy.h5
mpirun --oversubscribe -np 3 "$bin" run "$root/sweeps/study_proxy.yaml" -o "$h5" --resume --quiet
"$bin" report "$h5" --early-step 40 --format json -o "$out/study_proxy.report.json"
"$bin" report "$h5" --early-step 40
