// stats.h: the statistics attnsweep report draws its conclusions from: mean and standard
// deviation over repeats, Welch's two-sample t-test (unequal variances) with the
// p-value from GSL's t distribution, and Holm's adjustment of a family of p-values.
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

// Holm–Bonferroni over the m p-values of p[0..n) that are not NaN (the tests made):
// with them sorted, p_(1) ≤ … ≤ p_(m), the adjusted p_(i) is max over j ≤ i of
// min(1, (m − j + 1)·p_(j)), so rejecting where adjusted < α keeps the chance of any false
// claim in the family at most α. NaN stays NaN. adjusted may be p.
void holm_adjust(const double *p, int n, double *adjusted);

#endif
