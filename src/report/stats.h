// stats.h: the statistics attnsweep report draws its conclusions from: mean and standard
// deviation over repeats, and Welch's two-sample t-test (unequal variances) with the
// p-value from GSL's t distribution.
#ifndef ATTN_STATS_H
#define ATTN_STATS_H

typedef struct {
    int n;
    double mean;  // NaN when n is 0
    double sd;    // sample standard deviation (divisor n − 1); NaN when n < 2
} SampleStats;

SampleStats sample_stats(const double *x, int n);

typedef struct {
    double t;   // (mean a − mean b) / √(sd_a²/n_a + sd_b²/n_b)
    double df;  // Welch–Satterthwaite degrees of freedom
    double p;   // two-sided: P(|T_df| ≥ |t|)
} WelchTest;

// Welch's t-test of a's mean against b's. Returns -1 when either sample has fewer than
// 2 values (no test). When neither sample varies the test is undefined: t, df and p are
// NaN (returns 0).
int welch_test(SampleStats a, SampleStats b, WelchTest *out);

#endif
