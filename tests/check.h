// check.h: the small assertion kit shared by the C tests.
// A failed check prints both values and the place, counts the failure and goes on,
// so one run shows every disagreement; main returns check_report().
//
// Numbers are compared through worst_diff, CHECK_CLOSE and CHECK_ALL_CLOSE only: there a
// NaN or an Inf on either side is a failure, never a pass. (fmax(worst, NaN) is worst, so
// a worst difference kept with fmax drops a NaN, and `if (diff > tol) fail` lets it by.)
#ifndef ATTN_CHECK_H
#define ATTN_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int check_failures = 0, check_count = 0;

// Counts a failure and prints it with the caller's place.
static inline void check_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void check_fail(const char *file, int line, const char *fmt, ...) {
    check_failures++;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        check_count++;                                                        \
        if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__);             \
    } while (0)

// The worst |got − want| so far, for a loop: worst = worst_diff(worst, got, want) from
// worst = 0. It becomes NaN as soon as either operand is NaN and stays NaN (Inf for an
// infinite difference), so a later `CHECK(worst <= tol, ...)` fails. worst_diff(m, x, 0)
// keeps max |x| the same way.
static inline double worst_diff(double worst, double got, double want) {
    const double d = fabs(got - want);
    return d > worst || isnan(d) ? d : worst;
}

// A float or a double array (one pointer is set), so that one comparison serves both.
typedef struct {
    const float *f;
    const double *d;
} CheckArray;
static inline CheckArray check_floats(const float *p) { return (CheckArray){.f = p}; }
static inline CheckArray check_doubles(const double *p) { return (CheckArray){.d = p}; }
static inline double check_at(CheckArray a, long i) { return a.f ? a.f[i] : a.d[i]; }
#define CHECK_ARRAY(p)                                                                                   \
    _Generic((p), float *: check_floats, const float *: check_floats, double *: check_doubles,           \
             const double *: check_doubles)(p)

// One check that every |got[i] − want[i]| <= atol + rtol·|want[i]| with got[i] and want[i]
// finite; a failure names the first failing index with both values, how many of n fail
// and the worst difference. Returns the worst |got − want| (as worst_diff) for the test's
// own summary line. The helper behind CHECK_ALL_CLOSE and CHECK_CLOSE; what and its
// arguments (printf) name the array.
static inline double check_all_close(const char *file, int line, CheckArray got, CheckArray want, long n,
                                     double atol, double rtol, const char *what, ...)
    __attribute__((format(printf, 8, 9)));
static inline double check_all_close(const char *file, int line, CheckArray got, CheckArray want, long n,
                                     double atol, double rtol, const char *what, ...) {
    long bad = 0, first = 0;
    double worst = 0.0;
    for (long i = 0; i < n; i++) {
        const double g = check_at(got, i), w = check_at(want, i);
        worst = worst_diff(worst, g, w);
        if (!(isfinite(g) && isfinite(w) && fabs(g - w) <= atol + rtol * fabs(w))) {
            if (bad == 0) first = i;
            bad++;
        }
    }
    check_count++;
    if (bad) {
        char name[256];
        va_list ap;
        va_start(ap, what);
        vsnprintf(name, sizeof name, what, ap);
        va_end(ap);
        const double g = check_at(got, first), w = check_at(want, first);
        if (n == 1)
            check_fail(file, line, "%s: got %.9g want %.9g (diff %.3g)", name, g, w, fabs(g - w));
        else
            check_fail(file, line, "%s[%ld]: got %.9g want %.9g (diff %.3g); %ld of %ld outside %.3g + %.3g·|want|, "
                       "worst diff %.3g", name, first, g, w, fabs(g - w), bad, n, atol, rtol, worst);
    }
    return worst;
}

// got and want: n floats or doubles each, in any mix; then what (printf) names them.
#define CHECK_ALL_CLOSE(got, want, n, atol, rtol, ...) \
    check_all_close(__FILE__, __LINE__, CHECK_ARRAY(got), CHECK_ARRAY(want), (long)(n), atol, rtol, __VA_ARGS__)
// The same for one pair of numbers: |got − want| <= atol + rtol·|want|, both finite.
#define CHECK_CLOSE(got, want, atol, rtol, ...)                                                          \
    check_all_close(__FILE__, __LINE__, check_doubles((const double[1]){(double)(got)}),                \
                    check_doubles((const double[1]){(double)(want)}), 1, atol, rtol, __VA_ARGS__)

// Forgets the failures counted since check_failures was `mark` and returns how many there
// were: how tests/test_check.c sees a check fail without failing itself.
static inline int check_forget(int mark) {
    const int n = check_failures - mark;
    check_failures = mark;
    return n;
}

static inline int check_report(const char *name) {
    if (check_failures)
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, check_failures, check_count);
    else
        printf("%s: all %d checks passed\n", name, check_count);
    return check_failures ? 1 : 0;
}

#endif
