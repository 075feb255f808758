// outfile.c: temporary files beside their target, renamed when complete (outfile.h).
#define _GNU_SOURCE  // O_NOFOLLOW, O_CLOEXEC, getrandom
#include "common/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

enum { MAX_LIVE = 16, ATTEMPTS = 64 };

// The temporary files of this process not yet renamed or discarded, removed at exit.
static char *live[MAX_LIVE];

void outfile_discard_all(void) {
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i]) unlink(live[i]);
}

static void remember(const char *tmp) {
    static int registered;
    if (!registered) {
        registered = atexit(outfile_discard_all) == 0;
        util_at_die_now(outfile_discard_all);  // _exit skips atexit
    }
    for (int i = 0; i < MAX_LIVE; i++)
        if (!live[i]) {
            live[i] = xstrdup(tmp);
            return;
        }
}

static void forget(const char *tmp) {
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] && !strcmp(live[i], tmp)) {
            free(live[i]);
            live[i] = NULL;
        }
}

int outfile_check(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (strlen(path) + OUTFILE_SUFFIX + 1 > 4096) {
        snprintf(err, errlen, "%.200s...: the path is too long", path);
        return -1;
    }
    if (lstat(path, &st) != 0) return 0;
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s: it is a symbolic link (attnsweep never writes through one: remove it or name another file)",
                 path);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: it is a directory (name a file)", path);
        return -1;
    }
    return 0;
}

// tmp := PATH.partial-XXXXXX with six random letters.
static void temp_name(const char *path, char *tmp, size_t len) {
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char r[6];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {  // no entropy yet: time and pid
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long x = (unsigned long)ts.tv_nsec * 2654435761UL ^ (unsigned long)getpid() << 16 ^ (unsigned long)ts.tv_sec;
        for (size_t i = 0; i < sizeof r; i++, x >>= 6) r[i] = (unsigned char)x;
    }
    char suffix[7];
    for (size_t i = 0; i < sizeof r; i++) suffix[i] = letters[r[i] % (sizeof letters - 1)];
    suffix[6] = 0;
    snprintf(tmp, len, "%s.partial-%s", path, suffix);
}

long outfile_create_with(const char *path, char *tmp, size_t len, long (*create)(const char *tmp, void *ctx),
                         void *ctx) {
    if (len < strlen(path) + OUTFILE_SUFFIX + 1) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        temp_name(path, tmp, len);
        errno = 0;
        const long r = create(tmp, ctx);
        if (r >= 0) {
            remember(tmp);
            return r;
        }
        const int e = errno;
        struct stat st;
        if (lstat(tmp, &st) != 0) {  // nothing there: a real failure (ENOSPC, EROFS, EACCES, ...)
            errno = e ? e : EIO;
            return -1;
        }
    }
    errno = EEXIST;
    return -1;
}

static long open_exclusive(const char *tmp, void *ctx) {
    return open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
}

int outfile_create(const char *path, char *tmp, size_t len) {
    return (int)outfile_create_with(path, tmp, len, open_exclusive, NULL);
}

int outfile_write(int fd, const void *data, size_t n) {
    for (size_t done = 0; done < n;) {
        const ssize_t k = write(fd, (const char *)data + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        done += (size_t)k;
    }
    return 0;
}

int outfile_sync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? xstrdup(path) : xstrdup(".");
    if (slash) dir[slash == path ? 1 : slash - path] = 0;
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd >= 0 && (fsync(fd) == 0 || errno == EINVAL) ? 0 : -1;
    const int e = errno;
    if (fd >= 0) close(fd);
    free(dir);
    errno = e;
    return rc;
}

// fsync the file by name (a library wrote and closed it).
static int sync_named(const char *tmp) {
    const int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    const int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
    const int e = errno;
    if (fd >= 0) close(fd);
    errno = e;
    return rc;
}

int outfile_commit(int fd, const char *tmp, const char *path) {
    int rc = (fd >= 0 ? fsync(fd) : sync_named(tmp)) == 0 && rename(tmp, path) == 0 ? 0 : -1;
    const int e = errno;
    if (rc != 0) unlink(tmp);
    forget(tmp);
    if (rc == 0) rc = outfile_sync_dir(path);
    errno = e;
    return rc;
}

void outfile_discard(const char *tmp) {
    unlink(tmp);
    forget(tmp);
}

void outfile_remove_stale(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? xstrdup(path) : xstrdup(".");
    if (slash) dir[slash == path ? 1 : slash - path] = 0;
    const char *base = slash ? slash + 1 : path;
    const size_t n = strlen(base);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, base, n) || strncmp(e->d_name + n, ".partial-", 9) ||
            strlen(e->d_name) != n + OUTFILE_SUFFIX)
            continue;
        char *stale = xmalloc(strlen(dir) + strlen(e->d_name) + 2);
        sprintf(stale, "%s/%s", dir, e->d_name);
        unlink(stale);  // a link is removed, never followed
        free(stale);
    }
    if (d) closedir(d);
    free(dir);
}
