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

// The length of the UTF-8 sequence at s that encodes a printable character (not C1), or 0.
static int utf8_printable(const unsigned char *s) {
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 2 && s[0] == 0xC2 && s[1] < 0xA0) return 0;                    // C1 controls
    if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;  // overlong, surrogate
    if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
    return n;
}

void text_escape(char *out, size_t len, const char *text) {
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0;
    while (*s && o + 1 < len) {
        const int n = *s >= 0x80 ? utf8_printable(s) : 0;
        if (n) {
            if (o + (size_t)n >= len) break;
            memcpy(out + o, s, (size_t)n);
            o += (size_t)n, s += n;
        } else if (*s < 0x20 || *s >= 0x7F) {
            if (o + 5 > len) break;
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", *s);
            s++;
        } else {
            out[o++] = (char)*s++;
        }
    }
    out[o] = 0;
}

char *text_escaped(const char *s) {
    const size_t len = 4 * strlen(s) + 1;
    char *out = xmalloc(len);
    text_escape(out, len, s);
    return out;
}

void text_one_line(char *out, size_t len, const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text, *end = s + n;
    size_t o = 0;
    int space = 0;  // a space is owed before the next character
    while (s < end && *s && o + 1 < len) {
        int k = *s >= 0x80 ? utf8_printable(s) : 1;
        if (k > end - s) k = 0;  // a character cut by n
        if (*s <= 0x20 || *s == 0x7F) {
            space = o > 0;
            s++;
            continue;
        }
        const size_t need = (space ? 1 : 0) + (size_t)(k ? k : 1);
        if (o + need >= len) break;
        if (space) out[o++] = ' ', space = 0;
        if (k) memcpy(out + o, s, (size_t)k), o += (size_t)k, s += k;
        else out[o++] = '?', s++;
    }
    out[o] = 0;
}

// One write per message, so lines from several ranks under mpirun do not interleave;
// whatever a message quotes from a file cannot reach the terminal as a control sequence.
static void vprint(const char *fmt, va_list ap) {
    char raw[2048], line[2048];
    vsnprintf(raw, sizeof raw, fmt, ap);
    int n = snprintf(line, sizeof line, "attnsweep: ");
    text_escape(line + n, sizeof line - (size_t)n - 1, raw);
    n += (int)strlen(line + n);
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

static void (*at_die_now)(void);

void util_at_die_now(void (*fn)(void)) { at_die_now = fn; }

void die_now(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprint(fmt, ap);
    va_end(ap);
    if (at_die_now) at_die_now();
    fflush(NULL);
    _exit(code);
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

void words_add(Words *w, char *s) {
    if (w->n + 2 > w->cap) w->v = xrealloc(w->v, (size_t)(w->cap = 2 * w->cap + 8) * sizeof *w->v);
    w->v[w->n++] = s;
    w->v[w->n] = NULL;
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

size_t product_of(const int *dims, int n) {
    size_t p = 1;
    for (int i = 0; i < n; i++) p *= (size_t)dims[i];
    return p;
}
