// outfile.h: writing an output so that no reader ever sees half of it and no planted link
// redirects it. The bytes go to a new temporary file beside the target, PATH.partial-XXXXXX
// (six random letters), created with O_CREAT|O_EXCL|O_NOFOLLOW: it cannot be a file or a
// link that was there before. When complete it is synced and renamed over PATH (rename
// replaces a link at PATH, never writes through it), and the directory is synced. A target
// that is a symbolic link or a directory is refused before any work. A temporary file not
// yet renamed is removed when the process exits (die() included); one left by a kill -9 is
// only ever a PATH.partial-XXXXXX.
#ifndef ATTN_OUTFILE_H
#define ATTN_OUTFILE_H

#include <stddef.h>

enum { OUTFILE_SUFFIX = sizeof ".partial-XXXXXX" - 1 };  // what a temporary name adds to PATH

// 0 when PATH may be written (it does not exist, or it is a regular file), else -1 with
// "PATH: it is a symbolic link (...)" in err, or a directory, or too long a path.
int outfile_check(const char *path, char *err, size_t errlen);
// A new temporary file for PATH, open for reading and writing (mode 0666 less the umask): returns its
// descriptor, its name in tmp (len >= strlen(path) + OUTFILE_SUFFIX + 1), or -1 with errno.
int outfile_create(const char *path, char *tmp, size_t len);
// Write all n bytes to fd. 0, or -1 with errno.
int outfile_write(int fd, const void *data, size_t n);
// The same for a library that creates the file itself, by name, exclusively (HDF5's
// H5F_ACC_EXCL, which opens with O_CREAT|O_EXCL): create(tmp, ctx) is tried on fresh names
// until it succeeds (>= 0) or fails while nothing is at the name; its result is returned.
long outfile_create_with(const char *path, char *tmp, size_t len, long (*create)(const char *tmp, void *ctx),
                         void *ctx);
// The temporary file is complete: fsync it (through fd, or by name when fd is -1: a
// library wrote it), rename it over PATH and sync the directory. 0, or -1 with errno and
// tmp removed. The caller closes fd.
int outfile_commit(int fd, const char *tmp, const char *path);
// Give up a temporary file: remove it (and forget it).
void outfile_discard(const char *tmp);
// Every temporary file of this process not yet renamed (what exit does; for die_now).
void outfile_discard_all(void);
// Remove the temporary files a killed writer of PATH left (PATH.partial-XXXXXX). Only for
// the one writer of PATH (a sweep under its journal's lock).
void outfile_remove_stale(const char *path);
// fsync the directory that holds path, so an entry created or renamed there survives a
// crash (file systems that cannot sync a directory are left to themselves). 0 or -1, errno.
int outfile_sync_dir(const char *path);

#endif
