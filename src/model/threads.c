#include "model/threads.h"

#include <cblas.h>

int kernel_threads(void) {
    const int n = openblas_get_num_threads();
    return n < MAX_KERNEL_THREADS ? n : MAX_KERNEL_THREADS;
}
