# shellcheck shell=bash
# attn_build.sh: shared by train_vs_torch.sh and seq_scaling.sh; sourced, not run.
#
# attn_build NAME DIR  builds attnsweep and sgemm_bench in $ATTN_BUILD (default build;
#                      configured there, Release, if it has no CMake cache) and copies
#                      both into DIR, so that a rebuild during the run changes nothing
#                      it measures. NAME prefixes its message.
attn_build() {
  local build="${ATTN_BUILD:-build}"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "$1: configuring attnsweep (Release) in $build" >&2
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$build" -j2 --target attnsweep sgemm_bench >/dev/null  # CMakeLists.txt: the benchmarks
  cp "$build/attnsweep" "$build/bench/sgemm_bench" "$2/"
}
