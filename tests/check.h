// check.h: the small assertion kit shared by the C tests.
// A failed check prints both values and the place, counts the failure and goes on,
// so one run shows every disagreement; main returns check_report().
#ifndef ATTN_CHECK_H
#define ATTN_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_failures = 0, check_count = 0;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        check_count++;                                                        \
        if (!(cond)) {                                                        \
            check_failures++;                                                 \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
    } while (0)

// |got - want| <= atol + rtol * |want|
#define CHECK_CLOSE(got, want, atol, rtol, what)                                        \
    do {                                                                                \
        double g_ = (double)(got), w_ = (double)(want);                                 \
        CHECK(isfinite(g_) && fabs(g_ - w_) <= (atol) + (rtol) * fabs(w_),              \
              "%s: got %.9g want %.9g (diff %.3g)", what, g_, w_, fabs(g_ - w_));       \
    } while (0)

static inline int check_report(const char *name) {
    if (check_failures)
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, check_failures, check_count);
    else
        printf("%s: all %d checks passed\n", name, check_count);
    return check_failures ? 1 : 0;
}

#endif
