// targets.h: the instruction sets the hot loops are compiled for.
//
// One portable binary, fast on each node: a function marked KERNEL_TARGETS is compiled
// for AVX-512 (x86-64-v4), for AVX2 with FMA (x86-64-v3) and for baseline x86-64, and
// the loader picks the variant the CPU runs (gcc's target_clones, an ifunc), as OpenBLAS
// picks its kernels. Helpers the function calls must be static inline, so that they are
// compiled into each variant. A build for one machine (-march=native, which defines
// __AVX2__ or more) compiles the functions for that machine alone: its variants could not
// inline helpers compiled for a target that is not a subset of theirs.
#ifndef ATTN_TARGETS_H
#define ATTN_TARGETS_H

#if defined(__x86_64__) && !defined(__clang__) && !defined(__AVX2__)
#define KERNEL_TARGETS __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KERNEL_TARGETS
#endif

#endif
