#define _POSIX_C_SOURCE 200809L
#include "common/util.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

// One write per message, so lines from several ranks under mpirun do not interleave.
static void vprint(const char *fmt, va_list ap) {
    char line[2048];
    int n = snprintf(line, sizeof line, "attnsweep: ");
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    fwrite(line, 1, (size_t)n, stderr);
    fflush(stderr);
}

void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprint(fmt, ap);
    va_end(ap);
    exit(code);
}

void warnf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprint(fmt, ap);
    va_end(ap);
}

void *xmalloc_at(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) die(EXIT_RUNTIME, "out of memory allocating %zu bytes at %s:%d", n, file, line);
    return p;
}

void *xcalloc_at(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die(EXIT_RUNTIME, "out of memory allocating %zu x %zu bytes at %s:%d", count, size, file, line);
    return p;
}

void *xrealloc_at(void *p, size_t n, const char *file, int line) {
    void *q = realloc(p, n ? n : 1);
    if (!q) die(EXIT_RUNTIME, "out of memory reallocating %zu bytes at %s:%d", n, file, line);
    return q;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

FILE *xfopen(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) die(mode[0] == 'r' ? EXIT_BADINPUT : EXIT_RUNTIME, "%s: %s", path, strerror(errno));
    return f;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double unix_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (size_t)ru.ru_maxrss * 1024;  // Linux reports kilobytes
}

size_t current_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    const int ok = f && fscanf(f, "%lu %lu", &size, &resident) == 2;
    if (f) fclose(f);
    return ok ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

void malloc_keep_pages(void) {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
