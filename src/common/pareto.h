// pareto.h: several objectives at once, for motpe's sampler (space/tpe.c) and the report's
// Pareto table (report/report.c), written once. Points are rows of d coordinates, each
// to be maximised (a minimised objective enters negated).
#ifndef ATTN_PARETO_H
#define ATTN_PARETO_H

// Whether a dominates b: at least as large in every coordinate, larger in one.
int pareto_dominates(const double *a, const double *b, int d);
// The points (n × d, row-major) that no other dominates, a row with a NaN left out (it
// neither dominates nor is on the front): their indices into front[] (n entries), largest
// first coordinate first (ties in index order); returns how many. O(n²·d).
int pareto_front_of(const double *points, int n, int d, int *front);
// Hypervolume of the points dominating ref: the measure of the union of the boxes
// [ref, p]. Exact (slicing), O(n^(d−1)) for d ≥ 3 (a front of 600 points in 4
// objectives: 0.06 s, tests/test_tpe.c).
double pareto_hypervolume(const double *points, int n, int d, const double *ref);

#endif
