#!/usr/bin/env bash
# The main job on the embedded default: install what is missing, build, and run the
# demo sweep (sweeps/demo.yaml: the four attention variants x three head-orthogonality
# strengths on a short Fashion-MNIST budget) under mpirun with one coordinator and two
# workers, writing results/demo.h5, then prints its report (attnsweep report). Run
# again, it continues an interrupted sweep (--resume) or reports the finished one.
# Extra arguments go to `attnsweep run`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/cmake_build.sh

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
echo "== build (one line a target)"
cmake_build build -j"$(nproc)"

# One BLAS thread per rank; three ranks may outnumber the cores (the coordinator mostly
# waits), and Open MPI needs to be told that root is intended.
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mpirun -np "${ATTNSWEEP_RANKS:-3}" ./build/attnsweep run sweeps/demo.yaml --resume "$@"
# What the sweep found (with extra arguments, which may name another file, run
# `attnsweep report FILE` yourself)
if [ $# -eq 0 ]; then
  echo
  ./build/attnsweep report results/demo.h5 --top 5
fi
