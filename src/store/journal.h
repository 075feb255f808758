// journal.h: the crash-safe record of a sweep, and its lock.
//
// The coordinator appends every finished trial to the journal (with fsync) before writing
// it into the HDF5 file. A trial record's body is the trial's bytes (trial_pack,
// trial/pack.h: what the worker sent), so the journal holds everything the HDF5 file holds
// and a results file can always be rebuilt from it. It also records each start of the
// sweep (who holds it) and each trial handed out and given back, so a trial whose worker
// died while running it can be counted (sweep/recovery.h).
//
// One writer per sweep: journal_open takes an exclusive POSIX fcntl lock on the whole
// journal (NFS and Lustre honour these), held until journal_close; a second run is told
// who holds it. Every other file of the sweep is written only under this lock.
// Or several jobs share one sweep (journal_open_shared): each appends under a short lock
// (journal_lock) after reading what the others appended since its last look
// (journal_tail), and one at a time keeps the results file (journal_take_writer). The
// journal is then the only place the jobs meet: which trials are done, which are held
// (handed out by a job whose lease has not run out), and which are free again.
//
// Journal file, version 6: the magic line "attnsweep-journal 6\n", then records
//   u32 magic 0x364E524A ("JRN6"), u32 kind, u32 body length n, u32 crc32 of the body,
//   u32 crc32 of these 16 header bytes, then the body (n bytes), escaped: every byte 'J'
//   (the magic's first) is followed by a 0 byte, so no body holds the magic and nothing a
//   trial program made (its bytes are copied into its trial's record) can pass for a
//   record when a reader looks for the next one past damage
// little-endian (common/bytes.h), crc32 as zlib's. Bodies by kind:
//   1 trial    trial_pack bytes of a finished trial
//   2 start    i64 pid, f64 Unix time, text host, u32 crc32 of its sweep's YAML (absent
//              in older journals: 0): a run took the lock
//   3 handout  i32 trial id, i32 world rank of the group's leader, f64 Unix time,
//              text configuration (config_to_json)
//   4 release  i32 trial id: given back unfinished on a stop (no worker died)
//   5 lease    i64 job, f64 Unix time, f64 seconds, u32 crc32 of the sweep's YAML: a job
//              sharing the sweep is alive, and its hand-outs are its own until time +
//              seconds (0 seconds: it ended)
//   6 snapshot u32 n, n × (i32 trial id, i64 offset of the record that stands for it), in
//              journal order, then the coordinator's state (coordinator.c write_snapshot): what the
//              records before it amount to, so that a resume replays only the ones after
//              (journal_last_snapshot). Replays skip it.
// A job sharing the sweep (run --shared, journal_open_shared) is named by the offset of
// its start record; its hand-outs carry it (i64 job after the configuration).
// A trial is recorded once, but for a failed trial run again (attnsweep run --resume
// --retry-failed): each attempt is a record, and the trial is the latest. The record that
// stands for a trial is its first that did not fail, else its last; journal_replay marks
// the trial's other records superseded (a trial recorded ok twice, which attnsweep never
// writes, keeps its first).
// A record is intact when its header's CRC, its length (within the file) and its body's
// CRC agree. A damaged record is skipped and reported: the reader looks for the next
// intact record byte by byte, so one damaged record costs only itself. Damage that runs
// to the end of the file (a kill during a write) is cut away before the next append.
// Journals of versions 2 to 5 (of earlier attnsweeps: version 5's bodies are not escaped,
// 4's rewards charge the invariant terms as measured, 2 and 3's trials' weights and scores
// are of each layer alone) are refused with one line that says so; a journal of version 1
// or another is refused too. A damaged magic line is rewritten at the
// first append when intact records follow it.
// A new journal appears whole (its magic line written and synced in a temporary file,
// then linked in), so PATH never lacks its magic line. Resuming a sweep from the journal:
// h5store_rebuild (store/h5store.h).
#ifndef ATTN_JOURNAL_H
#define ATTN_JOURNAL_H

#include <stddef.h>

#include "trial/pack.h"

typedef struct Journal Journal;

typedef enum {
    JOURNAL_TRIAL = 1,
    JOURNAL_START,
    JOURNAL_HANDOUT,
    JOURNAL_RELEASE,
    JOURNAL_LEASE,
    JOURNAL_SNAPSHOT
} JournalKind;

// One intact record, as journal_replay gives it.
typedef struct {
    JournalKind kind;
    long offset;         // where it starts in the file
    TrialResult trial;   // trial: the trial (the visitor owns its arrays: trial_result_free or keep)
    int superseded;      // trial: another record of the same trial stands for it (see above)
    int id;              // handout, release: the trial
    int rank;            // handout: the world rank of the group's leader
    long job;            // handout, lease: the job sharing the sweep (-1: a single job's hand-out)
    double time;         // start, handout, lease: Unix time
    double seconds;      // lease: how long after time the job's hand-outs stay its own
    unsigned yaml_crc;   // start, lease: crc32 of the run's sweep YAML (0: not recorded)
    long pid;            // start
    char host[64];       // start
    const char *config;  // handout: the configuration handed out, JSON (valid during the call)
} JournalRecord;

typedef void (*JournalVisit)(void *ctx, JournalRecord *rec);

// Open PATH, creating it when missing, and lock it for this process. NULL with one line
// in err when another process holds the lock: "PATH: this sweep is being run by attnsweep
// on HOST, pid PID, since DATE (...)". Exits with one clear line (code 1) when the file
// cannot be opened or created (a read-only file system, a full disk, no permission).
Journal *journal_open(const char *path, char *err, size_t errlen);
const char *journal_path(const Journal *j);
// Where the next record goes: after a replay, the end of the last intact record.
long journal_length(const Journal *j);
// Calls fn for every intact record in file order (after a first look through the file
// that finds the superseded ones). Returns the number of intact records,
// or -1 with one line in err when the file is not a journal ("PATH: not an attnsweep
// journal"), is of another version, or cannot be read. When it returns >= 0, err is "" if
// every byte belonged to an intact record, or one line (for a warning) saying how many
// damaged stretches were skipped and where.
long journal_replay(Journal *j, JournalVisit fn, void *ctx, char *err, size_t errlen);
// Before the first append of a run, after a replay: cut away damage at the end of the
// file, write the magic line over a damaged one, and record the start (pid, host,
// time) that journal_open names to a second run, with the crc32 of the run's YAML.
void journal_begin(Journal *j, unsigned yaml_crc);
// Append one trial record and fsync: when this returns, the trial survives a crash. A
// failed write (a full disk) leaves the journal as it was and ends the program (code 1).
// Returns where its record starts.
long journal_append(Journal *j, const TrialResult *r);
// The same for a trial already in byte form (trial_pack's output, as a worker sends it:
// the coordinator journals the bytes it received once they unpack).
long journal_append_packed(Journal *j, int id, const unsigned char *payload, size_t n);
// Group commit: between journal_group_begin and journal_group_end, a trial record's
// fsync waits for journal_group_end, which makes every record of the group durable with
// one fsync (the trials that finished together). Whatever the caller does because a trial
// is recorded (removing its checkpoint, writing it to the results file) waits for
// journal_group_end too, so that a crash before it loses no trial: nothing has acted on
// a record not yet synced, and a resume runs its trial again. journal_group_end ends the
// program (code 1) when fsync fails.
void journal_group_begin(Journal *j);
void journal_group_end(Journal *j);
// A trial handed out to the group led by world rank `rank`, with its configuration as
// JSON; and one given back unfinished. Written without fsync (a kill keeps what was
// written; the next trial's fsync makes them durable). journal_handout returns the time it
// recorded (the stamp a stop of that run leaves: sweep/sweep_internal.h).
double journal_handout(Journal *j, int id, int rank, const char *config_json);
void journal_release(Journal *j, int id);
// Close the file, which releases the lock.
void journal_close(Journal *j);

// ---- a sweep shared by several jobs (attnsweep run --shared)
// Open PATH as journal_open does, for a job that shares the sweep with others: NULL with
// the holder's line in err while a single job runs it (and a single job's journal_open
// is refused while shared ones run it, told to add --shared).
Journal *journal_open_shared(const char *path, char *err, size_t errlen);
int journal_shared(const Journal *j);
// The append lock, waited for; nested calls count. Every append of a shared journal, and
// every journal_tail, must be under it (the program ends with a line otherwise). For a
// single job's journal both do nothing.
void journal_lock(Journal *j);
void journal_unlock(Journal *j);
// Under the lock: the records the other jobs appended since this process last read or
// appended (trials decoded; none superseded), in file order, as journal_replay gives
// them; bytes after the last intact record (a job killed while appending) are cut away.
// The count, or -1 with one line in err; err holds a warning line when it skipped damage.
long journal_tail(Journal *j, JournalVisit fn, void *ctx, char *err, size_t errlen);
// Become the job that keeps the results file, unless another one is: 1 when this one is
// (held until journal_close), 0 otherwise. A single job's journal: always 1.
int journal_take_writer(Journal *j);
// This job (after journal_begin): the offset of its start record, which its hand-outs
// and leases carry; -1 for a single job.
long journal_job(const Journal *j);
// This job is alive, and its hand-outs are its own for `seconds` from now (0: it ended).
// Under the lock, without fsync. Returns the time it recorded.
double journal_lease(Journal *j, double seconds, unsigned yaml_crc);

// journal_replay of the records from offset `from` on (a snapshot's end): the trial
// records superseded are found among them alone, and *j's end is the end of the last.
long journal_replay_from(Journal *j, long from, JournalVisit fn, void *ctx, char *err, size_t errlen);

// ---- snapshots: a resume replays only the records after the last one
typedef struct {
    int id;
    long offset;  // where the record that stands for the trial starts
} JournalStanding;
typedef struct {
    long at, end;              // where the snapshot record starts and ends
    JournalStanding *trials;   // the trials recorded before it, in journal order
    size_t n_trials;
    unsigned char *state;      // the caller's bytes
    size_t state_len;
} JournalSnapshot;
// Append a snapshot record and fsync it (in a group commit: at journal_group_end).
void journal_snapshot(Journal *j, const JournalStanding *trials, size_t n, const unsigned char *state, size_t len);
// The journal's last intact snapshot record, found from the end backwards (reading only
// what follows it): 1 with *out set, 0 when there is none (err then holds a warning line
// if one is intact but does not decode), -1 with one line in err on an I/O error.
int journal_last_snapshot(Journal *j, JournalSnapshot *out, char *err, size_t errlen);
void journal_snapshot_free(JournalSnapshot *snap);

// Read a journal without locking it (tests, tools): journal_replay of PATH. A missing file
// is 0 records.
long journal_replay_path(const char *path, JournalVisit fn, void *ctx, char *err, size_t errlen);

// Trial records read back by their offsets (a replay's JournalRecord.offset, or what an
// append returned), in order of the file for one read a megabyte: the results file written
// from the journal while a sweep goes on (store/h5store.h). The journal stays open meanwhile.
typedef struct JournalReader JournalReader;
JournalReader *journal_reader(const Journal *j);
// The trial whose record starts at offset: 0, or -1 with one line in err.
int journal_reader_trial(JournalReader *rd, long offset, TrialResult *r, char *err, size_t errlen);
void journal_reader_free(JournalReader *rd);

#endif
