// threads.h: how a rank's threads share the work of a step.
//
// As many threads as OpenBLAS was given (OPENBLAS_NUM_THREADS, 1 under MPI), and they
// are OpenMP's alone: while a model runs, OpenBLAS itself runs on one thread. Two pools
// that both wait for work by spinning (libgomp's and OpenBLAS's) on the same cores made
// a 2-thread step 3.4× slower than a 1-thread step on the 2-core machines
// (scripts/bench/train_vs_torch.sh --threads 2); one pool cannot fight itself.
//
// A step's micro-batches are shared first (model/train.c): each thread runs whole
// micro-batches, forward and backward, on a lane of its own (the activations and
// gradients of model_lane_init), and the lanes' gradients are added at the end of the
// step. A thread then reads and writes its own rows only, and the threads meet once a
// step: on the 2-core VMs, where a cache line takes about 250 ns from one core to the
// other and a fork and join of two threads 3.3 µs, splitting every kernel instead
// (a few hundred meetings a step) gave 1.42× the 1-thread speed, the lanes 1.7–1.9×.
// Where there are fewer micro-batches than threads (a batch of one sequence) and outside
// a step's passes (AdamW), the kernels split their own work (split_threads): the GEMM
// wrapper (matmul.h) a product's rows or columns, each thread calling sgemm on its block
// (a dense layer's weight gradient, a sum over rows, as per-thread products over each
// thread's own rows); the row kernels their rows; the attention cores their heads.
//
// Work is split statically, and every sum over threads or lanes is taken per thread
// and then added in thread order: the results depend on the thread count, never on
// timing; with one thread there is no split and no partial sum (the serial order).
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

// The threads a kernel splits its work over: the rank's (kernel_threads), or 1 on a
// thread that is already one of a team (a lane of whole micro-batches, train.c; a head
// of an attention layer).
int split_threads(void);

// sum[i] += part[t·stride + i] for t = 0 … nt − 1 in that order, i < n: per-thread
// partial sums added in thread order (the same result for the same thread count).
static inline void add_in_thread_order(float *restrict sum, const float *restrict part, int nt, long n,
                                       long stride) {
    for (int t = 0; t < nt; t++)
        for (long i = 0; i < n; i++) sum[i] += part[t * stride + i];
}

// Thread t of nt takes [*lo, *hi) of n items.
static inline void thread_span(long n, int t, int nt, long *lo, long *hi) {
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

#endif
