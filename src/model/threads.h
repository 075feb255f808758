// threads.h: how a rank's threads share the work of a step.
//
// As many threads as OpenBLAS was given (OPENBLAS_NUM_THREADS, 1 under MPI), and they
// are OpenMP's alone: while a model runs, OpenBLAS itself runs on one thread, and the
// GEMM wrapper (matmul.h) splits a large product's rows or columns over the OpenMP
// threads instead, each calling sgemm on its block (a dense layer's weight gradient, a
// sum over rows, as per-thread products over each thread's own rows). Two pools that
// both wait for work by spinning (libgomp's and OpenBLAS's) on the same cores made a
// 2-thread step 3.4× slower than a 1-thread step on the 2-core machines
// (scripts/bench/train_vs_torch.sh --threads 2); one pool cannot fight itself. Work is split statically, and every sum
// over rows is taken per thread and then added in thread order: the results depend on
// the thread count, never on timing; with one thread there is no split and no partial
// sum (the serial order).
#ifndef ATTN_THREADS_H
#define ATTN_THREADS_H

enum { MAX_KERNEL_THREADS = 256 };

// The rank's thread count: OpenBLAS's when first asked (or what kernel_threads_set
// gave), at most MAX_KERNEL_THREADS; from then on OpenBLAS runs on one thread (until
// kernel_threads_release).
int kernel_threads(void);

// The rank's thread count from here on (tests compare counts in one process).
void kernel_threads_set(int n);

// OpenBLAS back to its own thread count, for work that is not a model's (the scoring
// of a trained model by ScaLAPACK); the next kernel_threads() takes it again.
void kernel_threads_release(void);

// Thread t of nt takes [*lo, *hi) of n items.
static inline void thread_span(long n, int t, int nt, long *lo, long *hi) {
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

#endif
