# shellcheck shell=bash
# attn_build.sh: shared by train_vs_torch.sh and seq_scaling.sh; sourced, not run.
#
# torch_malloc         GLIBC_TUNABLES for the PyTorch runs: glibc's malloc keeps freed
#                      memory as attnsweep has it do for itself (common/util.c,
#                      malloc_keep_pages: no mmap below 64 MB, no trim below 256 MB). By
#                      default PyTorch's tensors past 32 MB are mapped and unmapped every
#                      step, each page faulted in and zeroed anew: on a VM where faults are
#                      dear (perf: 29 % of the time in the kernel) that made its mha step
#                      at L = 512 6.8x slower (0.37 against 2.48 steps/s), which measures
#                      the allocator, not PyTorch's kernels.
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

# shellcheck disable=SC2034 # used by the scripts that source this file
torch_malloc="glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=268435456"
