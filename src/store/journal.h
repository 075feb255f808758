// journal.h: the crash-safe record of finished trials.
//
// The coordinator appends every finished trial to the journal (with fsync) before
// writing it into the HDF5 file. A record's payload is the trial's bytes (trial_pack,
// trial/pack.h: what the worker sent), so the journal holds everything the HDF5 file
// holds and a results file can always be rebuilt from it.
//
// Journal file: the magic line "attnsweep-journal 2\n", then records
//   u32 magic 0x4A524E4C ("JRNL"), u32 payload length n, u32 crc32 of the payload
//   (zlib), payload (trial_pack bytes)
// little-endian. A record cut short or failing its CRC (a kill during the write) ends
// the replay; everything before it is intact. A new journal appears whole (magic line
// written and synced under PATH.tmp, then renamed), so PATH never lacks its magic line.
// The trial byte format (versioned, little-endian) is described at the top of trial/pack.c.
// Resuming a sweep from the journal: h5store_rebuild (store/h5store.h).
#ifndef ATTN_JOURNAL_H
#define ATTN_JOURNAL_H

#include <stddef.h>

#include "trial/pack.h"

typedef struct Journal Journal;

// Open PATH for appending, creating it (with the magic line) if it does not exist.
// Exits with one clear line (code 1) if it cannot be created or is not a journal.
// If a replay found a torn tail, valid_bytes (from journal_replay) truncates it away
// first; pass 0 to keep the file as it is.
Journal *journal_open(const char *path, long valid_bytes);
// Append one record and fsync: when this returns, the trial survives a crash.
void journal_append(Journal *j, const TrialResult *r);
// The same for a trial already in byte form (trial_pack's output, as a worker sends it:
// the coordinator journals the bytes it received once they unpack).
void journal_append_packed(Journal *j, int id, const unsigned char *payload, size_t n);
void journal_close(Journal *j);

// Calls fn for every intact record in file order (fn owns the TrialResult's arrays: it
// must trial_result_free(r) or keep a copy of *r). Sets *valid_bytes to the length of
// the intact prefix. Returns the number of records, 0 for a missing file, or -1 with a
// reason if PATH is not a journal ("PATH: not an attnsweep journal") or cannot be read.
// When it returns >= 0, err is "" if the file ended cleanly, or one line saying where
// the torn or damaged record that ended the replay starts (for a warning).
long journal_replay(const char *path, void (*fn)(void *ctx, TrialResult *r), void *ctx, long *valid_bytes,
                    char *err, size_t errlen);

#endif
