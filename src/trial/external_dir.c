// external_dir.c: a program's trial directory (external_impl.h): made fresh for each
// attempt, an earlier attempt's set aside as NNNNNN.resume when it holds files of the
// program's own, the runner's files opened in it without following a link, and the tail
// of the program's stderr read back. Whatever the program left there is untrusted: no
// read blocks on it or leaves the directory through it.
#define _GNU_SOURCE
#include "trial/external_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "trial/trialdir.h"

enum {
    TAIL_LINES = 20,            // stderr lines kept with a trial
    TAIL_BYTES = 4096,          //   at most so many bytes of them
};

// ---------------------------------------------------------------- files

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

// rm -rf that never follows a symbolic link.
static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

// mkdir -p.
static int make_dirs(const char *path) {
    char *d = xstrdup(path);
    int rc = 0;
    for (char *c = d + 1; rc == 0; c++) {
        const int end = *c == 0;
        if (*c == '/' || end) {
            *c = 0;
            if (mkdir(d, 0777) != 0 && errno != EEXIST) rc = -1;
            if (end) break;
            *c = '/';
        }
    }
    free(d);
    return rc;
}

char *external_path_join(const char *dir, const char *name) {
    char *p = xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

// The files attnsweep writes into a trial's directory; anything else is the program's.
static const char *const own_files[] = {"stdout", "stderr", "metrics.jsonl", "args.json", "curve.jsonl"};

// What dir holds: DIR_NONE (no directory of its own: absent, or a link, never followed),
// DIR_EMPTY, DIR_RUNNERS (attnsweep's files alone) or DIR_PROGRAMS (a file of the program's).
enum { DIR_NONE, DIR_EMPTY, DIR_RUNNERS, DIR_PROGRAMS };
static int dir_holds(const char *dir) {
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return DIR_NONE;
    }
    int holds = DIR_EMPTY;
    for (struct dirent *e; holds != DIR_PROGRAMS && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        holds = DIR_PROGRAMS;
        for (size_t k = 0; k < sizeof own_files / sizeof own_files[0]; k++)
            if (!strcmp(e->d_name, own_files[k])) holds = DIR_RUNNERS;
    }
    closedir(d);
    return holds;
}

// The last TAIL_LINES lines of the file (at most TAIL_BYTES bytes of them, cut at a line);
// "" when it is no regular file of its own (the program may have put a FIFO or a link at
// its name: a read must not block or leave the directory).
char *external_file_tail(const char *path) {
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    FILE *f = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return xstrdup("");
    }
    char buf[TAIL_BYTES + 1];
    fseeko(f, 0, SEEK_END);
    const off_t size = ftello(f);
    const off_t from = size > TAIL_BYTES ? size - TAIL_BYTES : 0;
    fseeko(f, from, SEEK_SET);
    size_t n = fread(buf, 1, TAIL_BYTES, f);
    fclose(f);
    buf[n] = 0;
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = 0;
    const char *start = buf;
    if (from > 0) {  // a cut line is not a line
        const char *nl = strchr(buf, '\n');
        start = nl ? nl + 1 : buf + n;
    }
    int lines = 0;
    const char *p = buf + n;
    while (p > start && lines < TAIL_LINES) {
        p--;
        if (*p == '\n') lines++;
    }
    if (lines == TAIL_LINES) p++;
    return xstrdup(p > start ? p : start);
}

// A file of the trial that could not be made or written: the reason in run->why.
void external_file_failure(Run *run, const char *what, const char *path) {
    run->no_space = errno == ENOSPC || errno == EDQUOT;
    snprintf(run->why, sizeof run->why, "cannot %s %s: %s", what, path, strerror(errno));
}

// The trial's directory, fresh; an earlier attempt's with files of the program's own
// becomes NNNNNN.resume (*resume gets its path). 0, or -1 with the reason in run->why.
int external_trial_dir(Run *run, char **resume) {
    char name[32];
    snprintf(name, sizeof name, "%06d", run->r->id);
    if (make_dirs(run->spec->trials_dir) != 0) {
        external_file_failure(run, "make", run->spec->trials_dir);
        return -1;
    }
    struct stat st;
    if (lstat(run->spec->trials_dir, &st) == 0 && S_ISLNK(st.st_mode)) {
        snprintf(run->why, sizeof run->why, "%s is a symbolic link: attnsweep never writes through one",
                 run->spec->trials_dir);
        return -1;
    }
    char *top = realpath(run->spec->trials_dir, NULL);
    if (!top) {
        snprintf(run->why, sizeof run->why, "%s: %s", run->spec->trials_dir, strerror(errno));
        return -1;
    }
    run->dir = external_path_join(top, name);
    // The stop marks of its earlier hand-outs (trial/trialdir.h) are the sweep's: they are
    // set aside beside the directory and outlive it, or at the next resume every earlier
    // stop of a trial run again counted as a death (scripts/redteam/kill_campaign.sh found
    // trials failed after one kill of their worker).
    char marks[4096], kept[4096];
    const int keep = trial_dir_stopped(marks, sizeof marks, run->dir) == 0 &&
                     snprintf(kept, sizeof kept, "%s.stopped", run->dir) < (int)sizeof kept && rename(marks, kept) == 0;
    char *old = xmalloc(strlen(run->dir) + sizeof ".resume");
    sprintf(old, "%s.resume", run->dir);
    *resume = NULL;
    const int holds = dir_holds(run->dir);
    if (holds == DIR_PROGRAMS) {
        remove_tree(old);
        if (rename(run->dir, old) == 0) *resume = old;
    }
    if (!*resume) free(old);
    free(top);
    // The empty directory the worker made for this hand-out is fresh already: kept, not
    // removed and made again (two inodes fewer a trial on the trials' shared directory).
    int made = holds == DIR_EMPTY;
    if (!made) {
        remove_tree(run->dir);
        made = mkdir(run->dir, 0777) == 0;
    }
    const int e = errno;
    if (keep) rename(kept, marks);
    if (!made) {
        errno = e;
        external_file_failure(run, "make", run->dir);
        return -1;
    }
    run->metrics_path = external_path_join(run->dir, "metrics.jsonl");
    run->stdout_path = external_path_join(run->dir, "stdout");
    run->stderr_path = external_path_join(run->dir, "stderr");
    return 0;
}

// A file the runner writes in the trial's directory, never through a link planted at its name.
int external_open_output(const char *path) {
    return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
}
