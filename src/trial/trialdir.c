// trialdir.c: a trial's directory and its checkpoint's place (trialdir.h).
#define _POSIX_C_SOURCE 200809L  // lstat, openat, unlinkat
#include "trial/trialdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int trial_dir_path(char *out, size_t len, const char *results, int id) {
    size_t stem = strlen(results);
    if (stem > 3 && !strcmp(results + stem - 3, ".h5")) stem -= 3;
    const int n = snprintf(out, len, "%.*s.trials/%06d", (int)stem, results, id);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

// mkdir, and a real directory (not a link) at path afterwards.
static int make_one(const char *path) {
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    if (S_ISLNK(st.st_mode)) return errno = ELOOP, -1;
    if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
    return 0;
}

int trial_dir_make(const char *dir) {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) *slash = 0;
    return (slash && make_one(parent) != 0) || make_one(dir) != 0 ? -1 : 0;
}

int trial_dir_checkpoint(char *out, size_t len, const char *dir) {
    const int n = snprintf(out, len, "%s/checkpoint.bin", dir);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

int trial_dir_stopped(char *out, size_t len, const char *dir) {
    const int n = snprintf(out, len, "%s/stopped", dir);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

int trial_dir_was_stopped(const char *dir, double handout_time) {
    char path[4096], text[65536];
    if (trial_dir_stopped(path, sizeof path, dir) != 0) return 0;
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof text - 1) : -1;
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    for (char *line = text, *end; *line; line = end + (*end != 0)) {
        end = line + strcspn(line, "\n");
        if (strtod(line, NULL) == handout_time) return 1;
    }
    return 0;
}

// Every step from a directory descriptor, never through a link: a program that replaced its
// trial directory (or the trials' directory) by a symbolic link gets nothing deleted through it.
void trial_dir_finish(const char *dir) {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (!slash) return;
    *slash = 0;
    const char *name = slash + 1;
    const int up = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (up < 0) return;
    const int fd = openat(up, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        unlinkat(fd, "checkpoint.bin", 0);
        unlinkat(fd, "stopped", 0);
        // and what a worker killed while writing its checkpoint (after a stop) left of it
        const int scan = dup(fd);
        DIR *d = scan >= 0 ? fdopendir(scan) : NULL;
        for (struct dirent *e; d && (e = readdir(d));)
            if (!strncmp(e->d_name, "checkpoint.bin.partial-", sizeof "checkpoint.bin.partial-" - 1))
                unlinkat(fd, e->d_name, 0);
        if (d) closedir(d);
        else if (scan >= 0) close(scan);
        close(fd);
        if (unlinkat(up, name, AT_REMOVEDIR) == 0) {  // else the program's files are in it
            char *top = strrchr(parent, '/');  // the trials' directory, if now empty
            if (top) *top = 0;
            const int grand = open(top ? parent : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (grand >= 0) unlinkat(grand, top ? top + 1 : parent, AT_REMOVEDIR), close(grand);
        }
    }
    close(up);
}
