// test_check: the comparisons of check.h cannot miss a NaN.
//
//  * CHECK_ALL_CLOSE fails once, naming the index, for a NaN in got or in want, an Inf in
//    either, the same Inf in both and a value just beyond the tolerance, each planted at
//    the first, a middle and the last index; its worst difference then fails `<= tol`
//    too. Values just within the tolerance and clean arrays pass, float and double arrays
//    in any mix; the name is a printf format;
//  * CHECK_CLOSE the same for one pair (an Inf want with rtol > 0 included);
//  * worst_diff ends NaN (Inf) wherever in the loop the NaN (Inf) was.
// The planted failures print their FAIL line into a captured stderr, are checked there
// and then forgotten (check_forget), so they do not fail this program.
// modules: none
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <unistd.h>

#include "check.h"

enum { N = 9 };
static const double ATOL = 1e-9, RTOL = 1e-6;

static char said[1024];  // what the last CAPTURED call printed on stderr
static FILE *capture;
static int saved_stderr;

static void capture_begin(void) {
    fflush(stderr);
    capture = tmpfile();
    saved_stderr = dup(2);
    dup2(fileno(capture), 2);
}

static void capture_end(void) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(capture);
    said[fread(said, 1, sizeof said - 1, capture)] = 0;
    fclose(capture);
}

// CAPTURED(failed, call): runs call with its stderr in `said`; failed = the failures it
// counted, which are then forgotten.
#define CAPTURED(failed, call)                     \
    do {                                           \
        const int mark_ = check_failures;          \
        capture_begin();                           \
        call;                                      \
        capture_end();                             \
        (failed) = check_forget(mark_);            \
    } while (0)

static double tol_at(double want) { return ATOL + RTOL * fabs(want); }

// want[i] = 0.5 + i/4 (exact in float too), got[i] = want[i] + tol/2.
static void clean_pair(double *got, double *want) {
    for (int i = 0; i < N; i++) {
        want[i] = 0.5 + 0.25 * i;
        got[i] = want[i] + 0.5 * tol_at(want[i]);
    }
}

enum { NAN_GOT, NAN_WANT, INF_GOT, INF_WANT, SAME_INF, BEYOND, KINDS };
static const char *kind_names[KINDS] = {"NaN in got", "NaN in want", "+Inf in got", "-Inf in want",
                                        "+Inf in both", "just beyond the tolerance"};

static void plant(double *got, double *want, int kind, int at) {
    switch (kind) {
    case NAN_GOT: got[at] = NAN; break;
    case NAN_WANT: want[at] = NAN; break;
    case INF_GOT: got[at] = INFINITY; break;
    case INF_WANT: want[at] = -INFINITY; break;
    case SAME_INF: got[at] = want[at] = INFINITY; break;
    default: got[at] = want[at] + 1.001 * tol_at(want[at]); break;
    }
}

static void test_all_close_fails_on_each_plant(void) {
    const int places[3] = {0, N / 2, N - 1};
    int caught = 0;
    for (int kind = 0; kind < KINDS; kind++)
        for (int p = 0; p < 3; p++) {
            double got[N], want[N], worst;
            clean_pair(got, want);
            const double tol = tol_at(want[places[p]]);
            plant(got, want, kind, places[p]);
            int failed;
            CAPTURED(failed, worst = CHECK_ALL_CLOSE(got, want, N, ATOL, RTOL, "planted"));
            char index[32];
            snprintf(index, sizeof index, "planted[%d]: ", places[p]);
            CHECK(failed == 1 && strstr(said, index) && strstr(said, "1 of 9 outside"),
                  "%s at index %d: %d failures, printed '%s' (want one naming %s)", kind_names[kind], places[p],
                  failed, said, index);
            CHECK(!(worst <= tol), "%s at index %d: the returned worst difference %g passes <= %g",
                  kind_names[kind], places[p], worst, tol);
            caught += failed == 1;
        }
    printf("  CHECK_ALL_CLOSE: %d of %d planted values fail it (NaN, Inf, beyond tolerance; first, middle, "
           "last index)\n", caught, 3 * KINDS);
}

static void test_all_close_passes_clean_arrays(void) {
    double got[N], want[N], worst;
    clean_pair(got, want);
    got[N / 2] = want[N / 2] + 0.999 * tol_at(want[N / 2]);  // just within
    int failed;
    CAPTURED(failed, worst = CHECK_ALL_CLOSE(got, want, N, ATOL, RTOL, "clean"));
    CHECK(failed == 0 && said[0] == 0, "clean arrays: %d failures, printed '%s'", failed, said);
    CHECK(worst == fabs(got[N / 2] - want[N / 2]), "clean arrays: worst difference %g, want %g", worst,
          fabs(got[N / 2] - want[N / 2]));

    // float against double and back: the values are exact in float
    float gotf[N], wantf[N];
    for (int i = 0; i < N; i++) gotf[i] = wantf[i] = (float)want[i];
    CAPTURED(failed, CHECK_ALL_CLOSE(gotf, want, N, 0.0, 0.0, "float vs double"));
    CHECK(failed == 0, "clean float vs double: %d failures, printed '%s'", failed, said);
    CAPTURED(failed, CHECK_ALL_CLOSE(want, (const float *)wantf, N, 0.0, 0.0, "double vs float"));
    CHECK(failed == 0, "clean double vs float: %d failures, printed '%s'", failed, said);
    gotf[N - 1] = NAN;
    CAPTURED(failed, CHECK_ALL_CLOSE(gotf, want, N, ATOL, RTOL, "%s array", "float"));
    CHECK(failed == 1 && strstr(said, "float array[8]: got nan"), "NaN in a float array: %d failures, printed '%s'",
          failed, said);
    CAPTURED(failed, CHECK_ALL_CLOSE(gotf, want, 0, ATOL, RTOL, "empty"));
    CHECK(failed == 0, "no elements: %d failures", failed);
}

static void test_close_fails_on_each_plant(void) {
    const struct {
        double got, want;
        int fails;
    } pairs[] = {
        {NAN, 1.0, 1}, {1.0, NAN, 1}, {INFINITY, 1.0, 1}, {1.0, INFINITY, 1}, {-INFINITY, -INFINITY, 1},
        {1.0 + 1.001 * tol_at(1.0), 1.0, 1}, {1.0 - 0.999 * tol_at(1.0), 1.0, 0}, {0.0, 0.0, 0},
    };
    const int n = (int)(sizeof pairs / sizeof pairs[0]);
    for (int k = 0; k < n; k++) {
        int failed;
        double diff;
        CAPTURED(failed, diff = CHECK_CLOSE(pairs[k].got, pairs[k].want, ATOL, RTOL, "pair"));
        CHECK(failed == pairs[k].fails && (failed == 0) == (said[0] == 0) && (!failed || strstr(said, "pair: got ")),
              "CHECK_CLOSE(%g, %g): %d failures (want %d), printed '%s'", pairs[k].got, pairs[k].want, failed,
              pairs[k].fails, said);
        CHECK((diff <= tol_at(1.0)) == !pairs[k].fails, "CHECK_CLOSE(%g, %g) returned %g",
              pairs[k].got, pairs[k].want, diff);
    }
}

static void test_worst_diff_keeps_nan(void) {
    for (int at = 0; at < N; at += N / 2) {
        double got[N], want[N], worst_nan = 0.0, worst_inf = 0.0;
        clean_pair(got, want);
        for (int i = 0; i < N; i++) worst_nan = worst_diff(worst_nan, i == at ? NAN : got[i], want[i]);
        for (int i = 0; i < N; i++) worst_inf = worst_diff(worst_inf, got[i], i == at ? INFINITY : want[i]);
        CHECK(isnan(worst_nan), "worst_diff with a NaN at %d of %d: %g", at, N, worst_nan);
        CHECK(isinf(worst_inf), "worst_diff with an Inf at %d of %d: %g", at, N, worst_inf);
    }
    CHECK(isnan(worst_diff(NAN, 1.0, 1.0)) && isnan(worst_diff(0.0, INFINITY, INFINITY)),
          "worst_diff: NaN stays NaN, Inf − Inf is NaN");
    CHECK(worst_diff(2.0, -3.0, 0.0) == 3.0 && worst_diff(2.0, 1.0, 0.5) == 2.0, "worst_diff of finite values");
}

int main(void) {
    test_all_close_fails_on_each_plant();
    test_all_close_passes_clean_arrays();
    test_close_fails_on_each_plant();
    test_worst_diff_keeps_nan();
    return check_report("test_check");
}
