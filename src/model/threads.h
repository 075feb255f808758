// threads.h: how a rank's threads share the work of a step that is not a GEMM.
//
// As many threads as OpenBLAS uses (OPENBLAS_NUM_THREADS, 1 under MPI), so that the
// GEMMs and the rest use the same share of the machine. Work is split statically, and
// every sum over rows is taken per thread and then added in thread order: the results
// depend on the thread count, never on timing; with one thread there is no split and no
// partial sum (the serial order).
#ifndef ATTN_THREADS_H
#define ATTN_THREADS_H

enum { MAX_KERNEL_THREADS = 256 };

// OpenBLAS's thread count, at most MAX_KERNEL_THREADS.
int kernel_threads(void);

// Thread t of nt takes [*lo, *hi) of n items.
static inline void thread_span(long n, int t, int nt, long *lo, long *hi) {
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

#endif
