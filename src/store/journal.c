// journal.c: the append-only, fsync'ed journal of finished trials (journal.h); each
// record's payload is a trial's bytes (trial/pack.h).
#define _POSIX_C_SOURCE 200809L  // pread, fsync, ftruncate
#define _FILE_OFFSET_BITS 64
#include "store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/util.h"

_Static_assert(sizeof(long) >= 8 && sizeof(off_t) >= 8, "journal offsets are long: needs 64-bit long and off_t");

enum {
    RECORD_MAGIC = 0x4A524E4C,  // "JRNL"
    RECORD_HEADER = 12,         // magic, payload length, crc32
};
// Version 2 holds trials of byte format 2; a journal of version 1 is refused whole, never
// replayed as torn (which would cut its records away).
static const char JOURNAL_MAGIC[] = "attnsweep-journal 2\n";
#define JOURNAL_MAGIC_LEN (sizeof JOURNAL_MAGIC - 1)

// ---------------------------------------------------------------- the journal file

struct Journal {
    char *path;
    int fd;
};

// Read n bytes at off unless the file ends first: the count read, or -1 on an I/O error.
static ssize_t pread_full(int fd, void *buf, size_t n, off_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        if (k == 0) break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

static int write_full(int fd, const void *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, (const char *)buf + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        done += (size_t)k;
    }
    return 0;
}

// 0 if fd starts with the magic line, else -1 with "PATH: why" in err.
static int check_magic(int fd, const char *path, char *err, size_t errlen) {
    char head[JOURNAL_MAGIC_LEN];
    ssize_t got = pread_full(fd, head, sizeof head, 0);
    if (got < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if ((size_t)got == sizeof head && memcmp(head, JOURNAL_MAGIC, sizeof head) == 0) return 0;
    static const char family[] = "attnsweep-journal ";
    if ((size_t)got == sizeof head && memcmp(head, family, sizeof family - 1) == 0)
        snprintf(err, errlen, "%s: a journal of another attnsweep version (this one reads \"%.*s\")", path,
                 (int)JOURNAL_MAGIC_LEN - 1, JOURNAL_MAGIC);
    else
        snprintf(err, errlen, "%s: not an attnsweep journal", path);
    return -1;
}

// fsync the directory holding path, so a newly created or renamed entry survives a crash
// (file systems that cannot sync a directory say EINVAL and are left to themselves).
static void fsync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = slash ? xstrdup(path) : xstrdup(".");
    if (slash) dir[slash == path ? 1 : slash - path] = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        die(EXIT_RUNTIME, "%s: cannot sync directory: %s", dir, strerror(errno));
    close(fd);
    free(dir);
}

// A new journal, created whole: the magic line is written and synced under PATH.tmp,
// which is then renamed, so PATH never exists without its magic line.
static int create_journal(const char *path) {
    char *tmp = xmalloc(strlen(path) + 5);
    sprintf(tmp, "%s.tmp", path);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || write_full(fd, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN) != 0 || fsync(fd) != 0 ||
        rename(tmp, path) != 0)
        die(EXIT_RUNTIME, "%s: cannot create journal: %s", path, strerror(errno));
    free(tmp);
    fsync_dir(path);
    return fd;
}

Journal *journal_open(const char *path, long valid_bytes) {
    int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        fd = create_journal(path);
    else if (fd < 0)
        die(EXIT_RUNTIME, "%s: cannot open journal: %s", path, strerror(errno));
    char err[1024];
    if (check_magic(fd, path, err, sizeof err) != 0) die(EXIT_RUNTIME, "%s", err);
    if (valid_bytes > 0) {
        struct stat st;
        if (fstat(fd, &st) != 0) die(EXIT_RUNTIME, "%s: %s", path, strerror(errno));
        if (valid_bytes < (long)JOURNAL_MAGIC_LEN || valid_bytes > st.st_size)
            die(EXIT_RUNTIME, "%s: internal error: intact length %ld outside the file (%lld bytes)", path,
                valid_bytes, (long long)st.st_size);
        if (valid_bytes < st.st_size && (ftruncate(fd, (off_t)valid_bytes) != 0 || fsync(fd) != 0))
            die(EXIT_RUNTIME, "%s: cannot cut off the torn record: %s", path, strerror(errno));
    }
    Journal *j = xmalloc(sizeof *j);
    j->path = xstrdup(path);
    j->fd = fd;
    return j;
}

void journal_append_packed(Journal *j, int id, const unsigned char *payload, size_t n) {
    if (n > UINT32_MAX) die(EXIT_RUNTIME, "%s: trial %d is %zu bytes, more than a record holds", j->path, id, n);
    unsigned char *rec = xmalloc(RECORD_HEADER + n);
    store_le(rec, RECORD_MAGIC, 4);
    store_le(rec + 4, n, 4);
    store_le(rec + 8, crc32(0L, payload, (uInt)n), 4);
    memcpy(rec + RECORD_HEADER, payload, n);
    if (write_full(j->fd, rec, RECORD_HEADER + n) != 0 || fsync(j->fd) != 0)
        die(EXIT_RUNTIME, "%s: cannot append trial %d: %s", j->path, id, strerror(errno));
    free(rec);
}

void journal_append(Journal *j, const TrialResult *r) {
    Bytes b = {0};
    trial_pack(&b, r);
    journal_append_packed(j, r->id, b.data, b.len);
    bytes_free(&b);
}

void journal_close(Journal *j) {
    if (close(j->fd) != 0) warnf("%s: closing the journal: %s", j->path, strerror(errno));
    free(j->path);
    free(j);
}

long journal_replay(const char *path, void (*fn)(void *ctx, TrialResult *r), void *ctx, long *valid_bytes,
                    char *err, size_t errlen) {
    err[0] = 0;
    *valid_bytes = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (check_magic(fd, path, err, errlen) != 0) {
        close(fd);
        return -1;
    }

    off_t off = (off_t)JOURNAL_MAGIC_LEN;
    long count = 0;
    Bytes payload = {0};
    char why[512] = "";
    for (;;) {
        unsigned char head[RECORD_HEADER];
        ssize_t got = pread_full(fd, head, sizeof head, off);
        if (got == 0) break;  // the clean end
        if (got < 0) goto io_error;
        if (got < RECORD_HEADER) {
            snprintf(why, sizeof why, "header cut short");
            break;
        }
        const uint32_t magic = (uint32_t)load_le(head, 4), n = (uint32_t)load_le(head + 4, 4),
                       crc = (uint32_t)load_le(head + 8, 4);
        if (magic != RECORD_MAGIC) {
            snprintf(why, sizeof why, "bad record magic");
            break;
        }
        // The length decides the allocation: no more than the file can still hold.
        const off_t room = st.st_size - off - RECORD_HEADER;
        if (room < 0 || (off_t)n > room) {
            snprintf(why, sizeof why, "payload cut short");
            break;
        }
        payload.len = 0;
        bytes_extend(&payload, n);
        got = pread_full(fd, payload.data, n, off + RECORD_HEADER);
        if (got < 0) goto io_error;
        if ((size_t)got < n) {
            snprintf(why, sizeof why, "payload cut short");
            break;
        }
        if (crc32(0L, payload.data, (uInt)n) != crc) {
            snprintf(why, sizeof why, "bad CRC");
            break;
        }
        TrialResult r;
        char msg[384];
        if (trial_unpack(&r, payload.data, n, msg, sizeof msg) != 0) {
            snprintf(why, sizeof why, "undecodable: %s", msg);
            break;
        }
        fn(ctx, &r);
        count++;
        off += RECORD_HEADER + (off_t)n;
    }
    bytes_free(&payload);
    close(fd);
    *valid_bytes = (long)off;
    if (why[0])
        snprintf(err, errlen, "%s: the record at byte %lld is torn or damaged (%s); the %ld records before it are intact",
                 path, (long long)off, why, count);
    return count;

io_error:
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    bytes_free(&payload);
    close(fd);
    *valid_bytes = 0;
    return -1;
}
