// Softmax cross-entropy. Row maximum subtracted before exp for stability.
#include <math.h>
#include <string.h>

#include "model/fastmath.h"
#include "model/layers.h"
#include "model/targets.h"

KERNEL_TARGETS
double crossentropy_forward(float *probs, const float *logits, const int *targets, int N, int K,
                            long *count, long *correct) {
    double total = 0.0;
    long cnt = 0, ok = 0;
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * K;
        float *p = probs + (long)n * K;
        int arg = 0;
        for (int k = 1; k < K; k++)
            if (l[k] > l[arg]) arg = k;
        float mx = l[arg], sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int k = 0; k < K; k++) {
            p[k] = exp_fast(l[k] - mx);
            sum += p[k];
        }
        float inv = 1.0f / sum;
        for (int k = 0; k < K; k++) p[k] *= inv;
        int t = targets[n];
        if (t < 0) continue;
        total += -(double)(l[t] - mx) + log((double)sum);  // −log p[t] without underflow
        cnt++;
        ok += arg == t;
    }
    *count = cnt;
    *correct = ok;
    return total;
}

KERNEL_TARGETS
void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float scale,
                           int N, int K) {
    for (int n = 0; n < N; n++) {
        const int t = targets[n];
        const float *p = probs + (long)n * K;
        float *d = dlogits + (long)n * K;
        if (t < 0) {
            memset(d, 0, (size_t)K * sizeof(float));
            continue;
        }
        for (int k = 0; k < K; k++) d[k] = scale * p[k];
        d[t] -= scale;
    }
}
