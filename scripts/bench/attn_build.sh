# shellcheck shell=bash
# attn_build.sh: shared by train_vs_torch.sh and seq_scaling.sh; sourced, not run.
#
# torch_malloc         GLIBC_TUNABLES for the PyTorch runs: glibc's malloc keeps every
#                      freed block for reuse (no mmap below 4 GB, no trim below 1 TB), as
#                      a caching allocator does, so that PyTorch's timed steps pay for its
#                      kernels and not for page faults. By default glibc maps a tensor past
#                      32 MB anew each step and faults in and zeroes every page (on these
#                      VMs, where faults are dear, 29 % of the time in the kernel: mha at
#                      L = 512 6.8x slower); with attnsweep's own settings (mmap from 64
#                      MB, common/util.c) the (B, heads, L, L) tensors of the plain
#                      attention from L = 1024 on (128 MB each) still were: mha at L = 1024
#                      ran at 0.13 steps/s, 1.64 with these. The price is PyTorch's peak
#                      memory, which then counts the freed blocks it keeps (mha at L =
#                      1024: 1.8 GB against 0.93; at 2048 7.4 against 2.6).
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
torch_malloc="glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=1099511627776"
