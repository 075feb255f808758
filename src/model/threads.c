#include "model/threads.h"

#include <cblas.h>
#include <omp.h>

static int count;        // the rank's threads (0: not yet read)
static int blas_single;  // OpenBLAS set to one thread by kernel_threads

void kernel_threads_set(int n) {
    kernel_threads_release();
    count = n < 1 ? 1 : n < MAX_KERNEL_THREADS ? n : MAX_KERNEL_THREADS;
}

int kernel_threads(void) {
    if (!count) kernel_threads_set(openblas_get_num_threads());
    if (count > 1 && !blas_single) {
        openblas_set_num_threads(1);
        blas_single = 1;
    }
    return count;
}

void kernel_threads_release(void) {
    if (!blas_single) return;
    openblas_set_num_threads(count);
    blas_single = 0;
}

int split_threads(void) { return omp_in_parallel() ? 1 : kernel_threads(); }
