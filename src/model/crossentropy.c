// Softmax cross-entropy. Row maximum subtracted before exp for stability. Rows are shared
// among the threads (threads.h).
#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/fastmath.h"
#include "model/layers.h"
#include "model/targets.h"
#include "model/threads.h"

// Rows [n0, n1): their summed loss into *total, predictions and correct ones into *cnt, *ok.
KERNEL_TARGETS
static void forward_rows(float *restrict probs, const float *restrict logits, const int *restrict targets, long n0,
                         long n1, int K, double *total, long *cnt, long *ok) {
    for (long n = n0; n < n1; n++) {
        const float *l = logits + n * K;
        float *p = probs + n * K;
        float mx = l[0], sum = 0.0f;
#pragma omp simd reduction(max : mx)
        for (int k = 1; k < K; k++) mx = l[k] > mx ? l[k] : mx;
        int arg = 0;  // the first maximum
        while (arg < K - 1 && l[arg] != mx) arg++;
#pragma omp simd reduction(+ : sum)
        for (int k = 0; k < K; k++) {
            p[k] = exp_fast(l[k] - mx);
            sum += p[k];
        }
        float inv = 1.0f / sum;
        for (int k = 0; k < K; k++) p[k] *= inv;
        int t = targets[n];
        if (t < 0) continue;
        *total += -(double)(l[t] - mx) + log((double)sum);  // −log p[t] without underflow
        ++*cnt;
        *ok += arg == t;
    }
}

double crossentropy_forward(float *probs, const float *logits, const int *targets, int N, int K,
                            long *count, long *correct) {
    const int nt = split_threads();
    double total[MAX_KERNEL_THREADS] = {0};  // per thread, added in thread order
    long cnt[MAX_KERNEL_THREADS] = {0}, ok[MAX_KERNEL_THREADS] = {0};
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int t = omp_get_thread_num();
        long lo, hi;
        thread_span(N, t, omp_get_num_threads(), &lo, &hi);
        forward_rows(probs, logits, targets, lo, hi, K, &total[t], &cnt[t], &ok[t]);
    }
    double sum = 0.0;
    *count = *correct = 0;
    for (int t = 0; t < nt; t++) {
        sum += total[t];
        *count += cnt[t];
        *correct += ok[t];
    }
    return sum;
}

KERNEL_TARGETS
static void backward_rows(float *restrict dlogits, const float *restrict probs, const int *restrict targets,
                          float scale, long n0, long n1, int K) {
    for (long n = n0; n < n1; n++) {
        const int t = targets[n];
        const float *p = probs + n * K;
        float *d = dlogits + n * K;
        if (t < 0) {
            memset(d, 0, (size_t)K * sizeof(float));
            continue;
        }
        for (int k = 0; k < K; k++) d[k] = scale * p[k];
        d[t] -= scale;
    }
}

void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float scale, int N, int K) {
    const int nt = split_threads();
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        long lo, hi;
        thread_span(N, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        backward_rows(dlogits, probs, targets, scale, lo, hi, K);
    }
}
