// journal.c: the locked, append-only, fsync'ed journal of a sweep (journal.h).
#define _GNU_SOURCE  // pread, pwrite, fsync, ftruncate, gethostname, localtime_r, memmem, memrchr
#define _FILE_OFFSET_BITS 64
#include "store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/outfile.h"
#include "common/util.h"

_Static_assert(sizeof(long) >= 8 && sizeof(off_t) >= 8, "journal offsets are long: needs 64-bit long and off_t");

enum {
    RECORD_MAGIC = 0x364E524A,  // "JRN6"
    RECORD_HEADER = 20,         // magic, kind, length, body crc, header crc
    SCAN_CHUNK = 1 << 16,       // bytes searched at a time for the next record's magic
    SCAN_WINDOW = 1 << 20,      // bytes read at a time by a pass over the journal
    MAX_STRETCHES = 4,          // damaged stretches named in the warning
    HOLDER_TRIES = 10,          // reads of a locked journal's last start record, 0.1 s apart
};
static const char JOURNAL_MAGIC[] = "attnsweep-journal 6\n";
#define JOURNAL_MAGIC_LEN (sizeof JOURNAL_MAGIC - 1)

struct Journal {
    char *path;
    int fd;
    long end;          // where the next record goes: the end of the last intact one after a replay
    int fix_magic;     // the magic line is damaged: journal_begin writes it again
    int shared;        // journal_open_shared: other jobs append too, each append under the append lock
    int locked;        // shared: the depth of journal_lock calls (the lock is held while > 0)
    int writer;        // shared: this process holds the writer lock (journal_take_writer)
    long job;          // shared: the offset of this job's start record (journal_begin), else -1
    long seen;         // shared: every record before this offset has been read or written here
    int group;         // journal_group_begin: trial records wait for journal_group_end's fsync
    int unsynced;      // a record of the group is not yet synced
};

const char *journal_path(const Journal *j) { return j->path; }

long journal_length(const Journal *j) { return j->end; }

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

static int pwrite_full(int fd, const void *buf, size_t n, off_t off) {
    size_t done = 0;
    while (done < n) {
        ssize_t k = pwrite(fd, (const char *)buf + done, n - done, off + (off_t)done);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        done += (size_t)k;
    }
    return 0;
}

// ---------------------------------------------------------------- reading records

// A pass over the journal, read through a window of SCAN_WINDOW bytes (or one record's,
// when larger) so that a replay makes a read a megabyte rather than two a record.
typedef struct {
    int fd;
    off_t size;
    Bytes body;
    unsigned char *win;
    off_t win_at;
    size_t win_len, win_cap;
} Scan;

static void scan_free(Scan *s) {
    bytes_free(&s->body);
    free(s->win);
}

// The file's bytes [off, off + n), or fewer where it ends first (*got): a pointer into the
// window, good until the next call; NULL on an I/O error.
static const unsigned char *scan_bytes(Scan *s, off_t off, size_t n, size_t *got) {
    if (off < s->win_at || off + (off_t)n > s->win_at + (off_t)s->win_len) {
        const size_t want = n > SCAN_WINDOW ? n : SCAN_WINDOW;
        if (want > s->win_cap) s->win = xrealloc(s->win, s->win_cap = want);
        const ssize_t k = pread_full(s->fd, s->win, want, off);
        if (k < 0) return NULL;
        s->win_at = off;
        s->win_len = (size_t)k;
    }
    const size_t left = (size_t)(s->win_at + (off_t)s->win_len - off);
    *got = n < left ? n : left;
    return s->win + (off - s->win_at);
}

typedef struct {
    JournalKind kind;
    off_t at, end;  // the record's first byte and the byte after it
} Frame;

// A body as stored: every byte equal to the record magic's first (ESCAPED, 'J') is followed
// by a 0, so the magic, whose second byte is not 0, never appears inside a body. What a
// trial program made (its metrics, its checkpoint's weights, copied into its trial's
// bytes) can then never be taken for a record by the scan that looks for the next one.
enum { ESCAPED = RECORD_MAGIC & 0xff };
_Static_assert(((RECORD_MAGIC >> 8) & 0xff) != 0, "the magic's second byte tells it from an escaped byte");

static void escape_body(Bytes *out, const unsigned char *body, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += body[i] == ESCAPED;
    unsigned char *o = bytes_extend(out, n + k);
    for (size_t i = 0; i < n; i++) {
        *o++ = body[i];
        if (body[i] == ESCAPED) *o++ = 0;
    }
}

// The stored body at src (n bytes) into b, unescaped: the runs between escape bytes copied
// whole (memchr finds them; a byte at a time was a fifth of a replay). -1 when it is no
// escaped body (an escape byte not followed by 0).
static int unescape_into(Bytes *b, const unsigned char *src, size_t n) {
    b->len = 0;
    unsigned char *o = bytes_extend(b, n);
    const unsigned char *p = src, *end = src + n;
    while (p < end) {
        const unsigned char *e = memchr(p, ESCAPED, (size_t)(end - p));
        const size_t run = (size_t)((e ? e + 1 : end) - p);  // through the escape byte
        memcpy(o, p, run);
        o += run, p += run;
        if (!e) break;
        if (p == end || *p != 0) return -1;
        p++;
    }
    b->len = (size_t)(o - b->data);
    return 0;
}

// Whether an intact record starts at off: its frame, its body (unescaped) in s->body.
// -1 on an I/O error.
static int frame_at(Scan *s, off_t off, Frame *f) {
    size_t got;
    const unsigned char *h = scan_bytes(s, off, RECORD_HEADER, &got);
    if (!h) return -1;
    if (got < RECORD_HEADER || (uint32_t)load_le(h, 4) != RECORD_MAGIC ||
        (uint32_t)load_le(h + 16, 4) != (uint32_t)crc32(0L, h, 16))
        return 0;
    f->kind = (JournalKind)load_le(h + 4, 4);
    const uint32_t n = (uint32_t)load_le(h + 8, 4), crc = (uint32_t)load_le(h + 12, 4);
    const int head = RECORD_HEADER;
    // The length decides the allocation: no more than the file still holds.
    if ((off_t)n > s->size - off - head) return 0;
    const unsigned char *b = scan_bytes(s, off + head, n, &got);
    if (!b) return -1;
    if (got < n || (uint32_t)crc32(0L, b, (uInt)n) != crc || unescape_into(&s->body, b, n) != 0) return 0;
    f->at = off;
    f->end = off + head + (off_t)n;
    return 1;
}

// The record magic as a header holds it.
static const unsigned char m4[4] = {RECORD_MAGIC & 0xff, (RECORD_MAGIC >> 8) & 0xff, (RECORD_MAGIC >> 16) & 0xff,
                                    (unsigned)RECORD_MAGIC >> 24};

// The first intact record at or after off (1), none before the end (0), or -1 (I/O error).
// Candidates are the places a record magic appears, each checked whole.
static int next_frame(Scan *s, off_t off, Frame *f) {
    while (off < s->size) {
        size_t got;
        const unsigned char *buf = scan_bytes(s, off, SCAN_CHUNK, &got);
        if (!buf) return -1;
        const unsigned char *m = got >= 4 ? memmem(buf, got, m4, 4) : NULL;
        if (!m) {  // a magic cut by the chunk's end is found from the next chunk's start
            if (got < SCAN_CHUNK) return 0;
            off += SCAN_CHUNK - 3;
            continue;
        }
        const off_t at = off + (m - buf);
        const int found = frame_at(s, at, f);
        if (found) return found;
        off = at + 1;
    }
    return 0;
}

// A start, handout, release or lease body into rec; 0, or -1 with the reason in err.
static int decode_small(JournalRecord *rec, const Bytes *body, char *err, size_t errlen) {
    ByteReader rd = byte_reader(body->data, body->len, "journal record", err, errlen);
    size_t n = 0;
    const char *text = NULL;
    switch (rec->kind) {
    case JOURNAL_START:
        rec->pid = br_i64(&rd);
        rec->time = br_f64(&rd);
        text = br_text(&rd, sizeof rec->host, &n, "host");
        if (text) memcpy(rec->host, text, n), rec->host[n] = 0;
        rec->yaml_crc = rd.left ? br_u32(&rd) : 0;  // its sweep's YAML, after the host
        break;
    case JOURNAL_HANDOUT:
        rec->id = br_i32(&rd);
        rec->rank = br_i32(&rd);
        rec->time = br_f64(&rd);
        text = br_text(&rd, SIZE_MAX, &n, "configuration");
        if (text) rec->config = strndup(text, n);
        rec->job = rd.left ? br_i64(&rd) : -1;  // a shared sweep's job, after the configuration
        break;
    case JOURNAL_RELEASE: rec->id = br_i32(&rd); break;
    case JOURNAL_LEASE:
        rec->job = br_i64(&rd);
        rec->time = br_f64(&rd);
        rec->seconds = br_f64(&rd);
        rec->yaml_crc = (unsigned)br_u32(&rd);
        break;
    default: br_fail(&rd, "unknown record kind %d", (int)rec->kind);
    }
    if (!rd.failed && rd.left) br_fail(&rd, "%zu bytes after its end", rd.left);
    if (rd.failed) free((char *)rec->config), rec->config = NULL;
    return rd.failed ? -1 : 0;
}

// The damaged stretches a replay skipped, for its warning.
typedef struct {
    int n;
    long from[MAX_STRETCHES], to[MAX_STRETCHES];
    char first_why[256];  // why the first undecodable intact record was skipped
    int undecodable;
} Damage;

static void note_damage(Damage *d, long from, long to) {
    if (d->n < MAX_STRETCHES) d->from[d->n] = from, d->to[d->n] = to;
    d->n++;
}

static void damage_line(const Damage *d, const char *path, int bad_magic, char *err, size_t errlen) {
    err[0] = 0;
    if (!d->n && !d->undecodable && !bad_magic) return;
    size_t len = (size_t)snprintf(err, errlen, "%s:", path);
    if (bad_magic && len < errlen) len += (size_t)snprintf(err + len, errlen - len, " its first line is damaged (rewritten when the sweep resumes);");
    if (d->n && len < errlen) {
        len += (size_t)snprintf(err + len, errlen - len, " %d damaged stretch%s skipped (bytes", d->n, d->n == 1 ? "" : "es");
        for (int i = 0; i < d->n && i < MAX_STRETCHES && len < errlen; i++)
            len += (size_t)snprintf(err + len, errlen - len, "%s %ld-%ld", i ? "," : "", d->from[i], d->to[i] - 1);
        if (d->n > MAX_STRETCHES && len < errlen) len += (size_t)snprintf(err + len, errlen - len, ", ...");
        if (len < errlen) len += (size_t)snprintf(err + len, errlen - len, ");");
    }
    if (d->undecodable && len < errlen)
        len += (size_t)snprintf(err + len, errlen - len, " %d intact record%s skipped (%s);", d->undecodable,
                                d->undecodable == 1 ? "" : "s", d->first_why);
    if (len < errlen) snprintf(err + len, errlen - len, " every intact record is kept, and a trial that was only in a skipped one runs again");
}

// The magic line: 1 (this version's), 0 when it is damaged but intact records follow
// (*bad_magic set), -1 with the reason when the file is no journal this attnsweep reads:
// versions 2 to 5 are of earlier attnsweeps (5: bodies not escaped; 4: rewards as
// measured; 2 and 3: each layer's weights and scores alone).
static int check_magic(Scan *s, const char *path, int *bad_magic, char *err, size_t errlen) {
    char head[JOURNAL_MAGIC_LEN];
    const ssize_t got = pread_full(s->fd, head, sizeof head, 0);
    if (got < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    *bad_magic = 0;
    if ((size_t)got == sizeof head && !memcmp(head, JOURNAL_MAGIC, sizeof head)) return 1;
    static const char family[] = "attnsweep-journal ";
    const int ours = (size_t)got == sizeof head && !memcmp(head, family, sizeof family - 1);
    const char v = ours ? head[sizeof family - 1] : 0;
    // A damaged first line (one flipped bit can make it an older version's): this
    // version's intact records after it say what it is.
    Frame f;
    const int found = next_frame(s, 0, &f);
    if (found < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (found) {
        *bad_magic = 1;
        return 0;
    }
    if (v >= '2' && v <= '5' && head[sizeof head - 1] == '\n') {
        snprintf(err, errlen,
                 "%s: a sweep of an earlier attnsweep (journal version %c: %s): finish it with the attnsweep that "
                 "started it, or start a new sweep",
                 path, v,
                 v == '5'   ? "its records' bodies are not escaped, so a trial's own bytes could pass for a record"
                 : v == '4' ? "its rewards charge the invariant terms as measured, not beyond chance"
                            : "its trials' weights and scores are of each layer alone, not the whole network's");
        return -1;
    }
    if (ours)
        snprintf(err, errlen, "%s: a journal of another attnsweep version (this one reads \"%.*s\")", path,
                 (int)JOURNAL_MAGIC_LEN - 1, JOURNAL_MAGIC);
    else
        snprintf(err, errlen, "%s: not an attnsweep journal", path);
    return -1;
}

// Every intact record from off (the magic line's end, or where a tail read begins), in
// file order, to visit (its body in s->body); the stretches between them noted in d, the
// end of the last in *end. 0, or -1 on an I/O error (errno).
typedef void (*FrameVisit)(void *ctx, const Frame *f, const Bytes *body);
static int each_frame(Scan *s, off_t off, FrameVisit visit, void *ctx, Damage *d, long *end) {
    *end = (long)off;
    for (;;) {
        Frame f;
        int found = frame_at(s, off, &f);
        if (found == 0) found = next_frame(s, off + 1, &f);
        if (found < 0) return -1;
        if (found == 0) {
            if (off < s->size) note_damage(d, (long)off, (long)s->size);
            return 0;
        }
        if (f.at > off) note_damage(d, (long)off, (long)f.at);
        off = f.end;
        *end = (long)f.end;
        visit(ctx, &f, &s->body);
    }
}

// ---------------------------------------------------------------- the record that stands for a trial

// One trial record as a first look at the journal sees it.
typedef struct {
    int id;
    int failed;
    long at;
} Attempt;

typedef struct {
    Attempt *a;
    size_t n, cap;
} Attempts;

static void add_attempt(void *ctx, const Frame *f, const Bytes *body) {
    Attempts *all = ctx;
    int id;
    TrialStatus status;
    if (f->kind != JOURNAL_TRIAL || trial_peek(body->data, body->len, &id, &status) != 0) return;
    if (all->n == all->cap) all->a = xrealloc(all->a, (all->cap = 2 * all->cap + 64) * sizeof *all->a);
    all->a[all->n++] = (Attempt){id, status == TRIAL_FAILED, (long)f->at};
}

static int by_id_then_place(const void *x, const void *y) {
    const Attempt *a = x, *b = y;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

static int by_place(const void *x, const void *y) {
    const long a = *(const long *)x, b = *(const long *)y;
    return (a > b) - (a < b);
}

// Where the trial records from `from` on start that do not stand for their trial
// (journal.h: a trial is its first record that did not fail, else its last), ascending;
// their count in *n.
static long *superseded_records(Scan *s, off_t from, size_t *n) {
    Attempts all = {0};
    Damage ignored = {0};
    long end;
    each_frame(s, from, add_attempt, &all, &ignored, &end);  // an I/O error: the replay's own pass says it
    if (all.n) qsort(all.a, all.n, sizeof *all.a, by_id_then_place);
    long *out = xmalloc((all.n ? all.n : 1) * sizeof *out);
    *n = 0;
    for (size_t i = 0, j; i < all.n; i = j) {  // the records of one id: a[i..j)
        size_t stands = i;  // moves on while the one standing failed: the first that did not, else the last
        for (j = i; j < all.n && all.a[j].id == all.a[i].id; j++) stands = all.a[stands].failed ? j : stands;
        for (size_t k = i; k < j; k++)
            if (k != stands) out[(*n)++] = all.a[k].at;
    }
    free(all.a);
    if (*n) qsort(out, *n, sizeof *out, by_place);
    return out;
}

// ---------------------------------------------------------------- replay

typedef struct {
    int trials;              // decode trial records and visit them (else skipped)
    JournalVisit fn;
    void *ctx;
    const long *superseded;  // ascending: the trial records that do not stand for their trial
    size_t n_superseded, next;
    Damage d;
    long count;
} Replay;

static void replay_record(void *arg, const Frame *f, const Bytes *body) {
    Replay *rp = arg;
    if (f->kind == JOURNAL_SNAPSHOT) return;  // read by journal_last_snapshot alone
    JournalRecord rec = {.kind = f->kind, .offset = (long)f->at};
    char why[384];
    int ok;
    if (f->kind == JOURNAL_TRIAL) {
        while (rp->next < rp->n_superseded && rp->superseded[rp->next] < (long)f->at) rp->next++;
        rec.superseded = rp->next < rp->n_superseded && rp->superseded[rp->next] == (long)f->at;
        ok = !rp->trials || trial_unpack(&rec.trial, body->data, body->len, why, sizeof why) == 0;
    } else {
        ok = decode_small(&rec, body, why, sizeof why) == 0;
    }
    if (!ok) {
        if (!rp->d.undecodable++)
            snprintf(rp->d.first_why, sizeof rp->d.first_why, "at byte %ld: %.200s", (long)f->at, why);
        return;
    }
    rp->count++;
    if (f->kind != JOURNAL_TRIAL || rp->trials) rp->fn(rp->ctx, &rec);
    free((char *)rec.config);
}

// Every intact record from `from` on (the magic line's end, or a snapshot's); trials
// decoded only when `trials` is set (otherwise they are not visited), after a first look
// that finds the records superseded. *end: the end of the last intact record;
// *fix_magic: the magic line is damaged.
static long replay_fd(int fd, const char *path, off_t from, int trials, JournalVisit fn, void *ctx, long *end,
                      int *fix_magic, char *err, size_t errlen) {
    err[0] = 0;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    Scan s = {.fd = fd, .size = st.st_size};
    int bad_magic = 0;
    if (check_magic(&s, path, &bad_magic, err, errlen) < 0) {
        scan_free(&s);
        return -1;
    }
    Replay rp = {.trials = trials, .fn = fn, .ctx = ctx};
    long *superseded = trials ? superseded_records(&s, from, &rp.n_superseded) : NULL;
    rp.superseded = superseded;
    const int rc = each_frame(&s, from, replay_record, &rp, &rp.d, end), e = errno;
    free(superseded);
    scan_free(&s);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -1;
    }
    damage_line(&rp.d, path, bad_magic, err, errlen);
    *fix_magic = bad_magic;  // the first append writes the line again
    return rp.count;
}

long journal_replay(Journal *j, JournalVisit fn, void *ctx, char *err, size_t errlen) {
    return journal_replay_from(j, (long)JOURNAL_MAGIC_LEN, fn, ctx, err, errlen);
}

long journal_replay_from(Journal *j, long from, JournalVisit fn, void *ctx, char *err, size_t errlen) {
    return replay_fd(j->fd, j->path, (off_t)from, 1, fn, ctx, &j->end, &j->fix_magic, err, errlen);
}

long journal_replay_path(const char *path, JournalVisit fn, void *ctx, char *err, size_t errlen) {
    err[0] = 0;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    long end;
    int bad_magic;
    const long n = replay_fd(fd, path, (off_t)JOURNAL_MAGIC_LEN, 1, fn, ctx, &end, &bad_magic, err, errlen);
    close(fd);
    return n;
}

// ---------------------------------------------------------------- reading trials back

struct JournalReader {
    const Journal *j;
    Scan s;
};

JournalReader *journal_reader(const Journal *j) {
    JournalReader *rd = xcalloc(1, sizeof *rd);
    rd->j = j;
    rd->s.fd = j->fd;
    return rd;
}

int journal_reader_trial(JournalReader *rd, long offset, TrialResult *r, char *err, size_t errlen) {
    rd->s.size = rd->j->end;  // what was appended since is read too
    Frame f;
    const int found = offset >= (long)JOURNAL_MAGIC_LEN && offset < rd->j->end ? frame_at(&rd->s, (off_t)offset, &f) : 0;
    if (found < 0) {
        snprintf(err, errlen, "%s: %s", rd->j->path, strerror(errno));
        return -1;
    }
    char why[384] = "";
    if (!found || f.kind != JOURNAL_TRIAL || trial_unpack(r, rd->s.body.data, rd->s.body.len, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: no trial record at byte %ld %s", rd->j->path, offset, why);
        return -1;
    }
    return 0;
}

void journal_reader_free(JournalReader *rd) {
    if (!rd) return;
    scan_free(&rd->s);
    free(rd);
}

// ---------------------------------------------------------------- snapshots

// The last intact record of `kind`, searched from the end back a chunk at a time (1 with
// *f, its body in s->body), 0 when there is none, -1 on an I/O error. No body holds the
// record magic (escape_body): every one found starts a record, or is damage.
static int last_frame_of(Scan *s, JournalKind kind, Frame *f) {
    unsigned char *buf = xmalloc(SCAN_CHUNK + RECORD_HEADER);
    int found = 0;
    for (off_t hi = s->size; hi > (off_t)JOURNAL_MAGIC_LEN && !found;) {  // records starting in [lo, hi)
        const off_t lo = hi - (off_t)JOURNAL_MAGIC_LEN > SCAN_CHUNK ? hi - SCAN_CHUNK : (off_t)JOURNAL_MAGIC_LEN;
        const ssize_t got = pread_full(s->fd, buf, (size_t)(hi - lo) + RECORD_HEADER, lo);
        if (got < 0) {
            found = -1;
            break;
        }
        for (size_t len = (size_t)(hi - lo); len > 0 && !found;) {
            const unsigned char *m = memrchr(buf, m4[0], len);
            if (!m) break;
            const size_t p = (size_t)(m - buf);
            len = p;
            if (p + RECORD_HEADER <= (size_t)got && !memcmp(m, m4, 4) && load_le(m + 4, 4) == (uint64_t)kind)
                found = frame_at(s, lo + (off_t)p, f);
        }
        hi = lo;
    }
    free(buf);
    return found;
}

int journal_last_snapshot(Journal *j, JournalSnapshot *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    err[0] = 0;
    struct stat st;
    Scan s = {.fd = j->fd};
    Frame f;
    const int found = fstat(j->fd, &st) == 0 ? (s.size = st.st_size, last_frame_of(&s, JOURNAL_SNAPSHOT, &f)) : -1;
    if (found < 0) snprintf(err, errlen, "%s: %s", j->path, strerror(errno));
    if (found <= 0) {
        scan_free(&s);
        return found;
    }
    char why[256];
    ByteReader rd = byte_reader(s.body.data, s.body.len, "snapshot", why, sizeof why);
    const size_t n = br_u32(&rd);
    const unsigned char *t = br_take_array(&rd, n, 12);
    if (t) {
        out->trials = xmalloc((n ? n : 1) * sizeof *out->trials);
        for (size_t i = 0; i < n; i++)
            out->trials[i] = (JournalStanding){(int)(int32_t)load_le(t + 12 * i, 4), (long)load_le(t + 12 * i + 4, 8)};
        out->n_trials = n;
        out->state_len = rd.left;
        out->state = xmalloc(rd.left ? rd.left : 1);
        if (rd.left) memcpy(out->state, rd.p, rd.left);
        out->at = (long)f.at;
        out->end = (long)f.end;
    }
    scan_free(&s);
    if (!t) snprintf(err, errlen, "%s: the snapshot at byte %ld does not decode (%s)", j->path, (long)f.at, why);
    return t ? 1 : 0;
}

void journal_snapshot_free(JournalSnapshot *snap) {
    free(snap->trials);
    free(snap->state);
    memset(snap, 0, sizeof *snap);
}

// ---------------------------------------------------------------- the lock

// The journal's fcntl locks, by byte range. A single job holds every byte for its run.
// Jobs sharing a sweep each hold SWEEP_BYTE for reading for their run (so a single job and
// shared ones exclude each other, and shared ones do not), take APPEND_BYTE for writing
// around each read of the tail and the appends that follow it (journal_lock), and the one
// that keeps the results file holds WRITER_BYTE (journal_take_writer). A lock is the
// process's until it closes the file: nothing else in it may open the journal.
enum { SWEEP_BYTE = 0, APPEND_BYTE = 1, WRITER_BYTE = 2 };

static int lock_range(int fd, short type, int cmd, off_t start, off_t len) {
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    int rc;
    while ((rc = fcntl(fd, cmd, &fl)) != 0 && errno == EINTR && cmd == F_SETLKW) continue;
    return rc;
}

// A single job's write lock on every byte, or a shared job's read lock on SWEEP_BYTE.
static int lock_sweep(int fd, int shared) {
    return shared ? lock_range(fd, F_RDLCK, F_SETLK, SWEEP_BYTE, 1) : lock_range(fd, F_WRLCK, F_SETLK, 0, 0);
}

static void last_start(void *ctx, JournalRecord *rec) {
    if (rec->kind == JOURNAL_START) *(JournalRecord *)ctx = *rec;
}

// "PATH: this sweep is being run by ..." from the holder's start record (written right
// after it took the lock: read again while it is not there yet) and F_GETLK's pid.
static void holder_line(int fd, const char *path, char *err, size_t errlen) {
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    JournalRecord start = {0};
    struct flock fl = {0};
    for (int attempt = 0; attempt < HOLDER_TRIES; attempt++) {
        fl = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_GETLK, &fl) != 0) fl.l_pid = 0, fl.l_type = F_WRLCK;
        start = (JournalRecord){0};
        long end;
        int bad;
        char why[512];
        replay_fd(fd, path, (off_t)JOURNAL_MAGIC_LEN, 0, last_start, &start, &end, &bad, why, sizeof why);
        const int same = start.kind == JOURNAL_START && (fl.l_pid <= 0 || strcmp(start.host, host) || start.pid == fl.l_pid);
        if (same) break;
        nanosleep(&(struct timespec){.tv_nsec = 100000000L}, NULL);
    }
    const char *advice = "wait for it to end, or stop it first (SIGUSR1 to its mpirun)";
    if (fl.l_type == F_RDLCK) advice = "it is shared (run --shared): add --shared to join it";
    if (start.kind != JOURNAL_START) {
        snprintf(err, errlen, "%s: this sweep is being run by another process (pid %ld): %s", path, (long)fl.l_pid, advice);
        return;
    }
    char when[64];
    const time_t t = (time_t)start.time;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
    snprintf(err, errlen, "%s: this sweep is being run by attnsweep on %s, pid %ld, since %s: %s", path, start.host,
             start.pid, when, advice);
}

enum { CREATED_ELSEWHERE = -2 };

// A new journal, whole: the magic line written and synced in a temporary file that is
// locked as the job's (lock_sweep: a shared job's lock lets the others of an array that
// start with it join at once), then linked in as PATH. The descriptor, locked;
// CREATED_ELSEWHERE when PATH appeared meanwhile (the caller opens that one); or -1 with
// errno.
static int create_journal(const char *path, int shared) {
    char tmp[4096];
    const int fd = outfile_create(path, tmp, sizeof tmp);
    if (fd < 0) return -1;
    int rc = lock_sweep(fd, shared) == 0 && pwrite_full(fd, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN, 0) == 0 && fsync(fd) == 0 &&
                     link(tmp, path) == 0
                 ? 0
                 : errno == EEXIST ? CREATED_ELSEWHERE : -1;
    int e = errno;
    outfile_discard(tmp);
    if (rc == 0 && outfile_sync_dir(path) != 0) rc = -1, e = errno;
    if (rc == 0) return fd;
    close(fd);
    errno = e;
    return rc;
}

static Journal *open_journal(const char *path, int shared, char *err, size_t errlen) {
    int fd = -1, created = 0;
    for (int attempt = 0; fd < 0 && attempt < 3; attempt++) {
        fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ENOENT) {
            fd = create_journal(path, shared);
            if (fd == -1) die(EXIT_RUNTIME, "%s: cannot create the journal: %s", path, strerror(errno));
            created = fd >= 0;
        } else if (fd < 0) {
            die(EXIT_RUNTIME, "%s: cannot open the journal: %s", path,
                errno == ELOOP ? "it is a symbolic link (attnsweep never writes through one)" : strerror(errno));
        }
    }
    if (fd < 0) die(EXIT_RUNTIME, "%s: cannot open the journal (it keeps disappearing)", path);
    if (!created && lock_sweep(fd, shared) != 0) {
        if (errno != EACCES && errno != EAGAIN) die(EXIT_RUNTIME, "%s: cannot lock the journal: %s", path, strerror(errno));
        holder_line(fd, path, err, errlen);
        close(fd);
        return NULL;
    }
    Journal *j = xcalloc(1, sizeof *j);
    j->path = xstrdup(path);
    j->fd = fd;
    j->shared = shared;
    j->job = -1;
    j->seen = (long)JOURNAL_MAGIC_LEN;
    struct stat st;
    j->end = fstat(fd, &st) == 0 ? (long)st.st_size : 0;
    return j;
}

Journal *journal_open(const char *path, char *err, size_t errlen) { return open_journal(path, 0, err, errlen); }

Journal *journal_open_shared(const char *path, char *err, size_t errlen) { return open_journal(path, 1, err, errlen); }

int journal_shared(const Journal *j) { return j->shared; }

long journal_job(const Journal *j) { return j->job; }

void journal_lock(Journal *j) {
    if (!j->shared || j->locked++ > 0) return;
    if (lock_range(j->fd, F_WRLCK, F_SETLKW, APPEND_BYTE, 1) != 0)
        die(EXIT_RUNTIME, "%s: cannot lock the journal: %s", j->path, strerror(errno));
}

void journal_unlock(Journal *j) {
    if (!j->shared || --j->locked > 0) return;
    if (lock_range(j->fd, F_UNLCK, F_SETLK, APPEND_BYTE, 1) != 0)
        die(EXIT_RUNTIME, "%s: cannot unlock the journal: %s", j->path, strerror(errno));
}

int journal_take_writer(Journal *j) {
    if (!j->shared || j->writer) return 1;
    j->writer = lock_range(j->fd, F_WRLCK, F_SETLK, WRITER_BYTE, 1) == 0;
    return j->writer;
}

long journal_tail(Journal *j, JournalVisit fn, void *ctx, char *err, size_t errlen) {
    err[0] = 0;
    if (!j->locked) die(EXIT_RUNTIME, "%s: its tail read without the journal's lock", j->path);
    struct stat st;
    if (fstat(j->fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", j->path, strerror(errno));
        return -1;
    }
    if (st.st_size <= j->seen) return 0;
    Scan s = {.fd = j->fd, .size = st.st_size};
    Replay rp = {.trials = 1, .fn = fn, .ctx = ctx};
    long end;
    const int rc = each_frame(&s, (off_t)j->seen, replay_record, &rp, &rp.d, &end), e = errno;
    scan_free(&s);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", j->path, strerror(e));
        return -1;
    }
    damage_line(&rp.d, j->path, 0, err, errlen);
    // Under the lock no append is under way: bytes past the last intact record are what a
    // job killed while appending left.
    if (st.st_size > end && (ftruncate(j->fd, (off_t)end) != 0 || fsync(j->fd) != 0))
        die(EXIT_RUNTIME, "%s: cannot cut off the damaged end: %s", j->path, strerror(errno));
    j->end = j->seen = end;
    return rp.count;
}

// ---------------------------------------------------------------- writing

// One record at the end, its body escaped (escape_body), synced if asked. A failed write is
// cut away again (the journal stays as it was) and ends the program with the reason.
// Returns where the record starts.
static long append_record(Journal *j, JournalKind kind, const unsigned char *body, size_t len, int sync, int id) {
    if (j->shared && !j->locked) die(EXIT_RUNTIME, "%s: a record appended without the journal's lock", j->path);
    Bytes b = {0};
    bytes_extend(&b, RECORD_HEADER);
    escape_body(&b, body, len);
    const size_t n = b.len - RECORD_HEADER;
    if (n > UINT32_MAX - RECORD_HEADER) die(EXIT_RUNTIME, "%s: trial %d is %zu bytes, more than a record holds", j->path, id, n);
    unsigned char *rec = b.data;
    store_le(rec, RECORD_MAGIC, 4);
    store_le(rec + 4, kind, 4);
    store_le(rec + 8, n, 4);
    store_le(rec + 12, crc32(0L, rec + RECORD_HEADER, (uInt)n), 4);
    store_le(rec + 16, crc32(0L, rec, 16), 4);
    if (sync && j->group) j->unsynced = 1, sync = 0;
    if (pwrite_full(j->fd, rec, RECORD_HEADER + n, (off_t)j->end) != 0 || (sync && fsync(j->fd) != 0)) {
        const int e = errno;
        if (ftruncate(j->fd, (off_t)j->end) == 0) fsync(j->fd);
        if (kind == JOURNAL_TRIAL)
            die(EXIT_RUNTIME, "%s: cannot record trial %d: %s (the trial runs again on --resume)", j->path, id, strerror(e));
        die(EXIT_RUNTIME, "%s: cannot write: %s", j->path, strerror(e));
    }
    const long at = j->end;
    j->end += (long)(RECORD_HEADER + n);
    if (j->shared) j->seen = j->end;
    bytes_free(&b);
    return at;
}

void journal_begin(Journal *j, unsigned yaml_crc) {
    struct stat st;
    if (fstat(j->fd, &st) != 0) die(EXIT_RUNTIME, "%s: %s", j->path, strerror(errno));
    if (st.st_size > j->end && (ftruncate(j->fd, (off_t)j->end) != 0 || fsync(j->fd) != 0))
        die(EXIT_RUNTIME, "%s: cannot cut off the damaged end: %s", j->path, strerror(errno));
    if (j->fix_magic && (pwrite_full(j->fd, JOURNAL_MAGIC, JOURNAL_MAGIC_LEN, 0) != 0 || fsync(j->fd) != 0))
        die(EXIT_RUNTIME, "%s: cannot write its first line: %s", j->path, strerror(errno));
    j->fix_magic = 0;
    Bytes b = {0};
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    bytes_put_i64(&b, (long)getpid());
    bytes_put_f64(&b, unix_seconds());
    bytes_put_text(&b, host, strlen(host));
    bytes_put_u32(&b, yaml_crc);
    if (j->shared) j->job = j->end;
    append_record(j, JOURNAL_START, b.data, b.len, 1, -1);
    bytes_free(&b);
}

long journal_append_packed(Journal *j, int id, const unsigned char *payload, size_t n) {
    return append_record(j, JOURNAL_TRIAL, payload, n, 1, id);
}

long journal_append(Journal *j, const TrialResult *r) {
    Bytes b = {0};
    trial_pack(&b, r);
    const long at = journal_append_packed(j, r->id, b.data, b.len);
    bytes_free(&b);
    return at;
}

double journal_handout(Journal *j, int id, int rank, const char *config_json) {
    Bytes b = {0};
    const double now = unix_seconds();
    bytes_put_i32(&b, id);
    bytes_put_i32(&b, rank);
    bytes_put_f64(&b, now);
    bytes_put_text(&b, config_json, strlen(config_json));
    if (j->shared) bytes_put_i64(&b, j->job);
    append_record(j, JOURNAL_HANDOUT, b.data, b.len, 0, id);
    bytes_free(&b);
    return now;
}

void journal_release(Journal *j, int id) {
    unsigned char body[4];
    store_le(body, (uint32_t)id, 4);
    append_record(j, JOURNAL_RELEASE, body, sizeof body, 0, id);
}

double journal_lease(Journal *j, double seconds, unsigned yaml_crc) {
    Bytes b = {0};
    const double now = unix_seconds();
    bytes_put_i64(&b, j->job);
    bytes_put_f64(&b, now);
    bytes_put_f64(&b, seconds);
    bytes_put_u32(&b, yaml_crc);
    append_record(j, JOURNAL_LEASE, b.data, b.len, 0, -1);
    bytes_free(&b);
    return now;
}

// A snapshot's body: u32 n, n × (i32 trial id, i64 offset of its standing record), then the caller's
// state bytes.
void journal_snapshot(Journal *j, const JournalStanding *trials, size_t n, const unsigned char *state, size_t len) {
    Bytes b = {0};
    bytes_put_u32(&b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) bytes_put_i32(&b, trials[i].id), bytes_put_i64(&b, trials[i].offset);
    if (len) memcpy(bytes_extend(&b, len), state, len);
    append_record(j, JOURNAL_SNAPSHOT, b.data, b.len, 1, -1);
    bytes_free(&b);
}

void journal_group_begin(Journal *j) { j->group = 1; }

void journal_group_end(Journal *j) {
    j->group = 0;
    if (!j->unsynced) return;
    j->unsynced = 0;
    if (fsync(j->fd) != 0) die(EXIT_RUNTIME, "%s: cannot record the trials that just finished: %s (they run again on "
                               "--resume)", j->path, strerror(errno));
}

void journal_close(Journal *j) {
    if (close(j->fd) != 0) warnf("%s: closing the journal: %s", j->path, strerror(errno));
    free(j->path);
    free(j);
}
