// stats.h: the statistics attnsweep report draws its conclusions from: mean and standard
// deviation over repeats, Welch's two-sample t-test (unequal variances) and the paired
// t-test with the p-value from GSL's t distribution, Holm's adjustment of a family of
// p-values, and Kendall's rank correlation τ-b.
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

typedef struct {
    double t;   // mean(d) / (sd(d) / √n) of the n differences d
    double df;  // n − 1
    double p;   // two-sided: P(|T_df| ≥ |t|)
} PairedTest;

// The paired t-test of the differences d[0..n) (arm − control, one per shared seed) against
// 0. Returns -1 below 2 differences (no test). When the differences are all equal the test
// is undefined: t, df and p are NaN (returns 0).
int paired_t_test(const double *d, int n, PairedTest *out);

// Kendall's τ-b of the pairs (x[i], y[i]), i < n, where both are finite: (concordant −
// discordant) / √((n0 − n1)(n0 − n2)), n0 = n(n − 1)/2 pairs, n1 of them tied in x and n2
// tied in y (a pair tied in both counts in each), as scipy.stats.kendalltau. NaN when
// fewer than 2 pairs are left or x or y holds one value only among them.
double kendall_tau_b(const double *x, const double *y, int n);

// The same over many samples of the same pairs, each pair i taken w[i] times (a bootstrap
// resample: w its multiplicities), without sorting each sample: kendall_prepare sorts the
// finite pairs by x then y once and ranks their y; kendall_tau_b_weighted then counts the
// discordant pairs of a sample in one pass over that order (a Fenwick tree of the weight
// seen at each rank of y, O(n log n) additions rather than a sort) and the ties from the
// runs of equal values. Every count is an integer, so τ-b of w is exactly that of the
// list holding pair i w[i] times, bit for bit.
enum { KENDALL_NEW_X = 1, KENDALL_NEW_XY = 2 };
typedef struct {
    int n;         // the finite pairs
    int *index;    // their i, by x then y
    int *y_rank;   // per place in that order: the rank of its y among the distinct ys, 1..n_y
    char *run;     // per place: KENDALL_NEW_X where x differs from the place before, else
                   // KENDALL_NEW_XY where y does, else 0
    int n_y;
    long *tree;      // the Fenwick tree, n_y + 1
    long *y_weight;  // the weight at each rank of y, n_y + 1
} KendallSample;
void kendall_prepare(KendallSample *k, const double *x, const double *y, int n);
// w[i] ≥ 0 for every i < n of kendall_prepare (NULL: 1 each).
double kendall_tau_b_weighted(KendallSample *k, const int *w);
void kendall_free(KendallSample *k);

// Holm–Bonferroni over the m p-values of p[0..n) that are not NaN (the tests made):
// with them sorted, p_(1) ≤ … ≤ p_(m), the adjusted p_(i) is max over j ≤ i of
// min(1, (m − j + 1)·p_(j)), so rejecting where adjusted < α keeps the chance of any false
// claim in the family at most α. NaN stays NaN. adjusted may be p.
void holm_adjust(const double *p, int n, double *adjusted);

#endif
