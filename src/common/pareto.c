// pareto.c: dominance, the front and the hypervolume of points to be maximised (pareto.h).
#include "common/pareto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int pareto_dominates(const double *a, const double *b, int m) {
    int better = 0;
    for (int k = 0; k < m; k++) {
        if (a[k] < b[k]) return 0;
        better |= a[k] > b[k];
    }
    return better;
}

// A point and its last coordinate, for sorting rows of any length.
typedef struct {
    double key;
    int row;
} Keyed;

static int by_key_descending(const void *x, const void *y) {
    const Keyed *a = x, *b = y;
    return (a->key < b->key) - (a->key > b->key);
}

// The n rows of pts (d each) in place, sorted by their last coordinate, descending
// (O(n log n); keyed is n scratch entries, rows n·d).
static void sort_rows(double *pts, int n, int d, Keyed *keyed, double *rows) {
    for (int i = 0; i < n; i++) keyed[i] = (Keyed){pts[(size_t)i * d + d - 1], i};
    qsort(keyed, (size_t)n, sizeof *keyed, by_key_descending);
    for (int i = 0; i < n; i++) memcpy(rows + (size_t)i * d, pts + (size_t)keyed[i].row * d, (size_t)d * sizeof(double));
    memcpy(pts, rows, (size_t)n * d * sizeof(double));
}

// The hypervolume of n points of three objectives sorted by the third, descending: each
// slice's area is that of the (x, y) staircase of the points above it, which grows by one
// point a slice (kept sorted by y in xy, 2n doubles), so d = 3 costs O(n²).
static double hv3_sorted(const double *pts, int n, const double *ref, double *xy) {
    double volume = 0.0;
    for (int i = 0; i < n; i++) {
        int at = i;  // insert point i, y descending
        while (at > 0 && xy[2 * (at - 1) + 1] < pts[i * 3 + 1]) {
            xy[2 * at] = xy[2 * (at - 1)], xy[2 * at + 1] = xy[2 * (at - 1) + 1];
            at--;
        }
        xy[2 * at] = pts[i * 3], xy[2 * at + 1] = pts[i * 3 + 1];
        const double top = pts[i * 3 + 2], next = i + 1 < n ? pts[(i + 1) * 3 + 2] : ref[2];
        if (top <= next) continue;
        double area = 0.0, widest = ref[0];
        for (int j = 0; j <= i; j++) {
            widest = xy[2 * j] > widest ? xy[2 * j] : widest;
            const double below = j < i ? xy[2 * (j + 1) + 1] : ref[1];
            area += (xy[2 * j + 1] - below) * (widest - ref[0]);
        }
        volume += (top - next) * area;
    }
    return volume;
}

// Hypervolume by slicing along the last objective: the points sorted by it descending,
// each slice between consecutive values is the (d−1)-dimensional hypervolume of the
// points above it; in two dimensions that is the largest first coordinate among them, kept
// as the sweep goes down, and three go by hv3_sorted (so d ≥ 3 objectives cost O(n^(d−1)),
// not O(n^d)).
static double hv_rec(double *pts, int n, int d, const double *ref, double *scratch, Keyed *keyed) {
    if (n == 0) return 0.0;
    if (d == 1) {
        double best = ref[0];
        for (int i = 0; i < n; i++) best = pts[i] > best ? pts[i] : best;
        return best - ref[0];
    }
    double *rows = scratch, *sub = scratch + (size_t)n * d, *rest = sub + (size_t)n * (d - 1);
    sort_rows(pts, n, d, keyed, rows);
    if (d == 3) return hv3_sorted(pts, n, ref, sub);
    double volume = 0.0, widest = ref[0];
    for (int i = 0; i < n; i++) {
        const double top = pts[i * d + d - 1], next = i + 1 < n ? pts[(i + 1) * d + d - 1] : ref[d - 1];
        if (d == 2) widest = pts[i * d] > widest ? pts[i * d] : widest;
        if (top <= next) continue;
        if (d == 2) {
            volume += (top - next) * (widest - ref[0]);
            continue;
        }
        for (int k = 0; k <= i; k++) memcpy(sub + (size_t)k * (d - 1), pts + (size_t)k * d, (size_t)(d - 1) * sizeof(double));
        volume += (top - next) * hv_rec(sub, i + 1, d - 1, ref, rest, keyed);
    }
    return volume;
}

double pareto_hypervolume(const double *points, int n, int d, const double *ref) {
    double *pts = xmalloc((size_t)(n ? n : 1) * d * sizeof(double));
    int k = 0;
    for (int i = 0; i < n; i++) {  // only the points that dominate the reference
        int above = 1;
        for (int c = 0; c < d; c++) above &= points[i * d + c] > ref[c];
        if (above) memcpy(pts + (size_t)k++ * d, points + (size_t)i * d, (size_t)d * sizeof(double));
    }
    // per level of the recursion: the sorted rows (n·d) and the slice (n·(d−1))
    double *scratch = xmalloc(((size_t)(k ? k : 1) * 2 * d * (size_t)d + 1) * sizeof(double));
    Keyed *keyed = xmalloc((size_t)(k ? k : 1) * sizeof *keyed);
    const double v = hv_rec(pts, k, d, ref, scratch, keyed);
    free(keyed);
    free(scratch);
    free(pts);
    return v;
}

static int has_nan(const double *p, int d) {
    for (int c = 0; c < d; c++)
        if (isnan(p[c])) return 1;
    return 0;
}

int pareto_front_of(const double *points, int n, int d, int *front) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        const double *p = points + (size_t)i * d;
        int dominated = has_nan(p, d);
        for (int j = 0; j < n && !dominated; j++) {
            const double *q = points + (size_t)j * d;
            dominated = j != i && !has_nan(q, d) && pareto_dominates(q, p, d);
        }
        if (dominated) continue;
        int k = m++;  // insert by the first coordinate, largest first; equal ones keep index order
        for (; k > 0 && points[(size_t)front[k - 1] * d] < p[0]; k--) front[k] = front[k - 1];
        front[k] = i;
    }
    return m;
}
