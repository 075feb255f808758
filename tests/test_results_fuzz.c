// test_results_fuzz: a mutation fuzz run of the results-file readers, as `attnsweep report`
// (summary_read, here without its guarding child: summary_read_here) and `attnsweep score`
// (h5store_read_trial) call them, run in the suite
// under AddressSanitizer. The corpus is tests/fuzz/results/: base.h5, a real sweep's file
// (4 trials of `attnsweep run`: mha and grassmann, ok and failed; results format 5, given
// format 6's root attributes in place with h5py: format_version, schema, metric, goal,
// objectives, until_stopped), and
// files that crashed, hung or exhausted memory before the checks of store/h5read.c, kept
// as regressions: a /summary, curves or invariants column moved past its row's end
// (*-member-offset.h5), damaged global heap objects (heap-*.h5: two crashed HDF5, one made
// it loop), and a curves table of 2^27 unallocated rows (empty-curve-rows.h5: 7 GB). The
// heap-* and summary-member-offset.h5 are mutants of the format-4 base with their
// format_version set to 5 (their damage is met before any column of format 5 is looked
// for); the other three are the same damage made again on this base.h5; those four were
// given format 6's root attributes as base.h5 was (each still reports the damage it was
// kept for). Each
// file of the corpus and N_MUTANTS mutants of base.h5 (1-4 bytes changed: flipped, set to
// 0x00 or 0xff, a run of 0xff over a count; three in four land on a non-zero byte, where the
// structure is) are read in a child process with a time limit and an address-space limit:
// the child must end normally, every read either succeeding or failing with one line
// naming the file. Mutants that fail are written to the temporary directory for triage.
// Usage: test_results_fuzz [N_MUTANTS [SEED]]   (from the repository root, as ctest runs it)
// modules: store
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "splitmix.h"
#include "common/util.h"
#include "store/h5read.h"
#include "store/h5store.h"
#include "store/summary.h"

enum { TIME_LIMIT_S = 20, MAX_TRIALS_READ = 4 };
static const char CORPUS[] = "tests/fuzz/results";

static uint64_t rng_state = 0x0ddba11c0ffee123ull;
static uint64_t rnd(void) { return splitmix64(&rng_state); }

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = xfopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = xmalloc(*n);
    if (fread(b, 1, *n, f) != *n) die(EXIT_RUNTIME, "%s: short read", path);
    fclose(f);
    return b;
}

static void write_file(const char *path, const unsigned char *b, size_t n) {
    FILE *f = xfopen(path, "wb");
    if (fwrite(b, 1, n, f) != n) die(EXIT_RUNTIME, "%s: short write", path);
    fclose(f);
}

// A message from a reader: one line that names the file.
static int good_message(const char *err, const char *path) { return strstr(err, path) && !strchr(err, '\n'); }

// In the child: every reader on path. 0 when each succeeded or failed with a good message.
static int read_all(const char *path) {
    char err[1024];
    int bad = 0;
    SweepSummary s;
    if (summary_read_here(path, SUMMARY_PAGE, &s, err, sizeof err) == 0)
        summary_free(&s);
    else if (!good_message(err, path))
        bad = 1, fprintf(stderr, "summary_read: '%s'\n", err);
    for (int id = 0; id < MAX_TRIALS_READ; id++) {
        TrialResult r;
        if (h5store_read_trial(path, id, &r, err, sizeof err) == 0)
            trial_result_free(&r);
        else if (!good_message(err, path))
            bad = 1, fprintf(stderr, "h5store_read_trial %d: '%s'\n", id, err);
    }
    return bad;
}

// How the child reading path ended: "" when well, else a description.
static const char *verdict(const char *path, char *why, size_t len) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        // Memory bounded by the file: a few hundred MB at most for files of 100 KB (the
        // address space of a sanitized process is reserved up front, so no limit there).
        if (!getenv("ATTNSWEEP_SANITIZED")) setrlimit(RLIMIT_AS, &(struct rlimit){1L << 31, 1L << 31});
        alarm(TIME_LIMIT_S);
        _exit(read_all(path) ? 3 : 0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    why[0] = 0;
    if (WIFSIGNALED(status))
        snprintf(why, len, "killed by signal %d%s", WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (a hang)" : "");
    else if (WEXITSTATUS(status) == 3)
        snprintf(why, len, "a reader's message is not one line naming the file");
    else if (WEXITSTATUS(status) != 0)
        snprintf(why, len, "exit code %d (a sanitizer's report, or out of memory)", WEXITSTATUS(status));
    return why;
}

// 1-4 changes at random places, three in four on a byte that is not zero.
static void mutate(unsigned char *b, size_t n, char *what, size_t len) {
    const int k = 1 + (int)(rnd() % 4);
    size_t used = (size_t)snprintf(what, len, "%d change%s:", k, k > 1 ? "s" : "");
    for (int i = 0; i < k; i++) {
        size_t at = rnd() % n;
        for (int tries = 0; rnd() % 4 && !b[at] && tries < 64; tries++) at = rnd() % n;
        const int kind = (int)(rnd() % 4);
        if (kind == 0) b[at] ^= (unsigned char)(1u << (rnd() % 8));
        else if (kind == 1) b[at] = 0;
        else if (kind == 2) b[at] = 0xff;
        else for (size_t j = at; j < at + 4 && j < n; j++) b[j] = 0xff;
        if (used < len)
            used += (size_t)snprintf(what + used, len - used, " %s at %zu", (const char *[]){"flip", "0x00", "0xff", "4 x 0xff"}[kind], at);
    }
}

// Readers for h5read_survives, by what ctx names: a clean read, a failed one, a crash.
static int survival_reader(const void *ctx, char *err, size_t errlen) {
    const char *how = ctx;
    if (!strcmp(how, "fail")) return snprintf(err, errlen, "f.h5: no /summary table"), -1;
    if (!strcmp(how, "crash")) raise(SIGSEGV);  // as libhdf5 does in H5HG_read on a damaged heap
    return 0;
}

// test_survives_a_dying_reader: the report's guard (store/h5read.h h5read_survives) answers
// a read that crashed with one line naming the file, passes a failed read's own message
// on, and lets a good read through; the caller lives on.
static void test_survives_a_dying_reader(void) {
    char err[512] = "";
    const H5Reader rd = {.path = "f.h5", .err = err, .errlen = sizeof err};
    CHECK(h5read_survives(&rd, survival_reader, "ok") == 0, "a good read: 0, got '%s'", err);
    CHECK(h5read_survives(&rd, survival_reader, "fail") == -1 && !strcmp(err, "f.h5: no /summary table"),
          "a failed read: -1 with its own message, got '%s'", err);
    static const char died[] = "f.h5: damaged (the HDF5 library failed reading it: ";  // signal 11; ASan's abort
    CHECK(h5read_survives(&rd, survival_reader, "crash") == -1 && !strncmp(err, died, sizeof died - 1),
          "a read that crashed: -1, '%s...', got '%s'", died, err);
}

int main(int argc, char **argv) {
    test_survives_a_dying_reader();
    const long n_mutants = argc > 1 ? atol(argv[1]) : 300;
    if (argc > 2) rng_state = strtoull(argv[2], NULL, 0);
    char dir[] = "/tmp/test_results_fuzz_XXXXXX";
    if (!mkdtemp(dir)) die(EXIT_RUNTIME, "cannot create a temporary directory");
    const double t0 = now_seconds();

    // The corpus: every file must read cleanly (regressions: each crashed an earlier version).
    DIR *d = opendir(CORPUS);
    if (!d) die(EXIT_RUNTIME, "%s: %s (run from the repository root)", CORPUS, strerror(errno));
    int files = 0;
    char base[512] = "";
    for (struct dirent *e; (e = readdir(d));) {
        const size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".h5")) continue;
        char path[512], why[256];
        snprintf(path, sizeof path, "%s/%s", CORPUS, e->d_name);
        if (!strcmp(e->d_name, "base.h5")) snprintf(base, sizeof base, "%s", path);
        CHECK(!verdict(path, why, sizeof why)[0], "corpus file %s: %s", path, why);
        files++;
    }
    closedir(d);
    CHECK(base[0], "%s/base.h5 is missing", CORPUS);

    size_t n;
    unsigned char *orig = read_file(base, &n), *b = xmalloc(n);
    int failed = 0;
    for (long m = 0; m < n_mutants; m++) {
        memcpy(b, orig, n);
        char what[256], why[256], path[600];
        mutate(b, n, what, sizeof what);
        snprintf(path, sizeof path, "%s/mutant.h5", dir);
        write_file(path, b, n);
        if (verdict(path, why, sizeof why)[0]) {
            char keep[600];
            snprintf(keep, sizeof keep, "%s/failed-%04ld.h5", dir, m);
            rename(path, keep);
            CHECK(0, "mutant %ld (%s): %s; kept as %s", m, what, why, keep);
            failed++;
        }
    }
    char path[600];
    snprintf(path, sizeof path, "%s/mutant.h5", dir);
    unlink(path);
    if (!failed) rmdir(dir);
    printf("test_results_fuzz: %d corpus files and %ld mutants of %s read in %.1f s, %d failed\n", files, n_mutants, base,
           now_seconds() - t0, failed);
    free(orig);
    free(b);
    return check_report("test_results_fuzz");
}
