# study.sh: what every study script of this directory shares, sourced by them. Sets root
# (the repository), out (OUT_DIR, default results/), bin (built if missing) and the MPI
# and BLAS environment; study_sweep NAME [OPTIONS] runs sweeps/NAME.yaml with a coordinator
# and two workers into $out/NAME.h5 (its path in h5).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/results}
mkdir -p "$out"
bin=$root/build/attnsweep
[ -x "$bin" ] || { cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$root/build" -j >/dev/null; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1

study_sweep() {
    local name=$1
    shift
    h5=$out/$name.h5
    mpirun --oversubscribe -np 3 "$bin" run "$root/sweeps/$name.yaml" -o "$h5" --quiet "$@"
}
