// util.h: the one error printer, checking wrappers for allocation and I/O, timers.
// Numerical code calls these and stays free of error plumbing (as in llm.c).
#ifndef ATTN_UTIL_H
#define ATTN_UTIL_H

#include <stddef.h>
#include <stdio.h>

// Exit codes (see docs/cli.md): 0 success, 1 run-time failure, 2 bad input.
enum { EXIT_RUNTIME = 1, EXIT_BADINPUT = 2 };

// Print "attnsweep: <message>" on one line to stderr and exit with `code`.
_Noreturn void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// The same, skipping the exit handlers of libraries that cannot be trusted after the
// failure (HDF5 crashes closing a file whose write failed); temporary output files are
// still removed (common/outfile.h).
_Noreturn void die_now(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// What die_now runs before _exit, which skips atexit (common/outfile.c registers the
// removal of its temporary files here, so util.c does not call outfile.c): one function.
void util_at_die_now(void (*fn)(void));
// Print "attnsweep: <message>" to stderr and go on.
void warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// s with what a terminal would act on written out: control characters (C0, DEL, and C1
// as UTF-8) and bytes that are not UTF-8 as \xNN; everything else, UTF-8 included, as it
// is. Into out (always terminated; cut short when len is too small).
// Every line die and warnf print is passed through it, and so is every text from a file
// that attnsweep prints.
void text_escape(char *out, size_t len, const char *s);
// The same, allocated (the caller frees it).
char *text_escaped(const char *s);
// The first n bytes of s as one line of printable text, for a text that goes into another
// (a program's stderr line into a trial's reason): control characters and runs of
// whitespace as one space, bytes that are not printable UTF-8 as '?', no space at either
// end. Into out (always terminated; cut short at a character when len is too small).
void text_one_line(char *out, size_t len, const char *s, size_t n);

// Allocation that reports the caller's file and line and exits on failure.
void *xmalloc_at(size_t n, const char *file, int line);
void *xcalloc_at(size_t count, size_t size, const char *file, int line);
void *xrealloc_at(void *p, size_t n, const char *file, int line);
#define xmalloc(n) xmalloc_at((n), __FILE__, __LINE__)
#define xcalloc(c, s) xcalloc_at((c), (s), __FILE__, __LINE__)
#define xrealloc(p, n) xrealloc_at((p), (n), __FILE__, __LINE__)

// A growing list of strings, NULL-terminated in v (an argv or an environ).
typedef struct {
    char **v;
    int n, cap;
} Words;
// Append s (the list takes it).
void words_add(Words *w, char *s);
char *xstrdup(const char *s);

// Keep freed memory in the process (glibc mallopt): blocks up to 64 MB come from the
// heap, and up to 256 MB of free heap stays mapped. glibc otherwise maps large blocks
// afresh and unmaps them on free, raising that threshold only after certain frees, so
// whether a buffer's pages fault in again (costly, in a VM above all) depends on the
// process's history: in a 2-rank scoring job the rank that had run one task re-faulted
// its HOOI buffers on every allocation and took twice as long as the other. Called where
// a process starts computing (train, score, a sweep's workers), not by the sweep's
// coordinator, which ran 0.1 ms per trial slower with it (its many short-lived blocks).
void malloc_keep_pages(void);

// Open a file or exit with "attnsweep: PATH: strerror" (code 2 for reading, 1 for writing).
FILE *xfopen(const char *path, const char *mode);

// Wall-clock seconds from a monotonic clock.
double now_seconds(void);
// The time of day as Unix seconds, to the microsecond (the results file's times).
double unix_seconds(void);

// Peak resident set size of this process in bytes (0 if unknown).
size_t peak_rss_bytes(void);
// Resident set size of this process now, in bytes (0 if unknown).
size_t current_rss_bytes(void);

// dims[0]·…·dims[n − 1]: the entries of a tensor of that shape.
size_t product_of(const int *dims, int n);

#endif
