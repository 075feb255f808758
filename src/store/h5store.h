// h5store.h: the results file (HDF5), the one format every tool reads.
//
// Its vocabulary (the format version, the tables' columns, the statuses, the root
// attributes) is store/schema.h's.
//   /                    attributes (schema.h schema_root_attributes)
//   /summary             compound table, one row per trial (schema.h)
//   /trials/NNNNNN/      attributes (config and reward_spec as JSON, status, reason, rank,
//                        host, times; a program's trial: trial_dir, stdout, stderr,
//                        metrics, command, stderr_tail, checkpoint)
//        curves          compound table, one row per evaluation (schema_curve_columns)
//        weights/layerK  final attention tensor [groups, d_group, d_model, roles], float32
//        params          the whole parameter arena [n_params], float32 (layout
//                        attribute "name:count,...")
//        weights_out/layerK  its output side [d_model, heads·d_k] (W_O) or [d_model, pairs]
//                        (Grassmann's W_plu), float32: what the function-level scores read
//        invariants      compound table, one row per evaluation: step, correlation [layers],
//                        eff_rank [layers, 4], head_sv [layers, heads], chance [layers, 4]
//                        (the rotation nulls, trial/reward.h)
//        scores/layerK   invariants of the final tensor, all as attributes of the group
//                        (sv_mode0..3, cp_fits, cp_roles, the per-mode numbers, scalars)
//
// Only one process (the coordinator, or attnsweep train) writes a file. Every
// h5store_write_trial ends with H5Fflush, so a trial written is a trial kept (the
// coordinator's, journaled first, are flushed once a group: h5store_write_journaled).
#ifndef ATTN_H5STORE_H
#define ATTN_H5STORE_H

#include "store/h5read.h"
#include "store/journal.h"
#include "store/schema.h"
#include "trial/trial.h"


typedef struct H5Store H5Store;

typedef struct {
    const char *sweep;      // sweep name ("train" for attnsweep train)
    const char *yaml;       // the full search-space text (for train: the config as YAML)
    int seed;
    double start_time;      // Unix time
    // A program's sweep: a configuration whose program parameters (in their order) are the
    // /summary's parameter columns instead of the trial parameters, and the column of its
    // own metric (NULL: none). NULL: the built-in engine's sweep.
    const TrialConfig *program;
    const char *program_metric;
    // What the sweep is ranked by (root attributes metric and goal; NULL: reward,
    // maximised) and motpe's objectives (n_objectives 0 for one metric).
    const char *metric;
    int maximize;
    int n_objectives;
    const char *const *objective;
    const int *objective_maximize;
    int until_stopped;  // a sampled sweep without a number of trials (root attribute until_stopped)
} StoreMeta;

// Create the file and write the root attributes: into a new temporary file beside PATH
// (common/outfile.h), renamed over PATH by h5store_publish or h5store_close, so PATH is
// never half-written and a link planted at any of these names is never followed. Exits
// with one clear line (code 1) if the file cannot be created.
H5Store *h5store_create(const char *path, const StoreMeta *meta);
// Append the trial: one /summary row and its /trials/NNNNNN group; then flush. Trials
// may come in any id order (workers finish out of order): /summary rows are in the order
// written, and /trials/NNNNNN is named by id. A trial id already in the file is an error,
// unless that trial failed: its retry (run --resume --retry-failed) replaces it, the group
// written anew and the /summary row in its place.
void h5store_write_trial(H5Store *s, const TrialResult *r);
// The same for a trial the journal holds at offset (what journal_append returned, or a
// record another job appended), without the flush (h5store_flush, once for the trials
// that finished together): written now, unless trials of a rebuild are still waiting to
// be written (h5store_catch_up), when it waits behind them, read back from the journal.
// A record h5store_rebuild's replay read (before the journal's end then) is left out: the
// rebuild wrote it or left it waiting (a shared sweep's job that takes the file over while
// a trial it journaled is not yet written).
void h5store_write_journaled(H5Store *s, const TrialResult *r, long offset);
// Flush what h5store_write_journaled wrote since the last call (nothing: no flush).
void h5store_flush(H5Store *s);

// Resume (`attnsweep run --resume`). The journal is the truth: the coordinator appends
// every finished trial to it (with fsync) before writing the trial here, so a kill at any
// moment may leave this file cut short but never the journal short of a trial. A file a
// run closed after h5store_mark_journal (a sweep stopped by a signal, or complete), of
// this format and this YAML, is kept: opened for appending (its mark taken away first),
// the journal's trials before the mark checked to be the file's and the ones after it
// to be written (a file holding a trial its journal does not is refused with one line
// that says to move it aside). Any other file (one a kill left) is written anew: a fresh
// temporary file with meta's root attributes, to hold the intact trial record that stands
// for each trial (journal.h: a failed attempt retried later is left out for its retry; a
// trial recorded twice otherwise keeps its first record, with a warning) in journal order
// (damaged records are reported with a warning). Either way the store is returned open
// for appending, as h5store_create's, after one replay of the locked journal; the trials
// to write are not written here but wait, by their records' offsets, for h5store_catch_up
// (which the coordinator calls while it has nothing else to do, so that workers are not
// kept idle while thousands of trials are written) or for h5store_mark_journal,
// h5store_close or h5store_write_trial, which write every one first. A new file is renamed
// over PATH once they are all in (at once when there are none); until then, and after a
// kill before then, PATH is as it was. seen (may be NULL) gets every record
// but the superseded trials (a trial before it is written; the trial is freed after the
// call), to check it and
// rebuild the caller's own state (ids done, evolution's population, the hand-outs); it
// returns 0, or -1 with one line in err to refuse the sweep. A journal with no records
// gives an empty file. Returns NULL with one line in err, PATH as it was and no temporary
// file left, when the journal is not a journal or cannot be read, or seen refused;
// exits (code 1) if the file cannot be written. The journal stays open while trials wait.
// With snap (journal_last_snapshot; NULL: none), its trials stand for the records before
// it (seen is not called for them) and only the records after it are replayed.
typedef int (*RebuildSeen)(void *ctx, const JournalRecord *rec, char *err, size_t errlen);
H5Store *h5store_rebuild(const char *path, const StoreMeta *meta, Journal *journal, const JournalSnapshot *snap,
                         RebuildSeen seen, void *ctx, char *err, size_t errlen);
// The same replay to seen alone, no file written (a job sharing a sweep whose results
// file another job keeps): 0, or -1 with one line in err.
int h5store_replay(Journal *journal, const JournalSnapshot *snap, RebuildSeen seen, void *ctx, char *err,
                   size_t errlen);
// Write the trials still waiting (h5store_rebuild) for about `seconds` at most (at least
// one; INFINITY: all), and when none is left, rename a new file over PATH. Returns how many
// still wait.
size_t h5store_catch_up(H5Store *s, double seconds);
// How many trials wait to be written.
size_t h5store_waiting(const H5Store *s);
// Rename the temporary file h5store_create writes to over PATH now, keeping it open for
// appending (h5store_close otherwise renames it when it closes).
void h5store_publish(H5Store *s);
// Mark the file as holding every trial its journal records before journal_end (the
// journal's length), before h5store_close: a resume then keeps it (h5store_rebuild).
// Trials still waiting (h5store_catch_up) are written for about `seconds` at most
// (INFINITY: all); those left then are the resume's to write: the file is marked up to
// the first of them and renamed over PATH as it is (a stopped run ends in time, and the
// trials it wrote are kept).
void h5store_mark_journal(H5Store *s, long journal_end, double seconds);
// Write end_time and close.
void h5store_close(H5Store *s, double end_time);

// A scores file for a model that is not a trial (attnsweep score MODEL.safetensors):
// root attributes version, format_version, reward_terms, source, family, beta, gamma,
// reward_spec (JSON, as a trial's), the reward's terms (RewardTerms' fields by name);
// scores/layerK as in a trial, each with its "name".
// Written through a temporary file and renamed, as h5store_create.
typedef struct {
    const char *source, *family;
    char **names;  // n_layers layer names
    RewardSpec spec;
    RewardTerms terms;
} ModelScoresMeta;
void h5store_write_model_scores(const char *path, const ModelScoresMeta *meta, const LayerScore *scores,
                                int n_layers);

// Read trial `id` back (config, status, metrics, curve, weights). Returns 0, or -1
// with a one-line reason in err (not an HDF5 file, no such trial, other version...).
int h5store_read_trial(const char *path, int id, TrialResult *out, char *err, size_t errlen);
// What the report reads of the trial in group g (/trials/NNNNNN) of an open file, beside
// its /summary row (out->status): its attributes (config, reason, host, rank, times,
// reward_spec, a program's run), its curves and invariants (the trace, absent without a
// grid), and where it has a trace the shapes of its weights (dims and out_dims: what
// trial_eval_point scores the trace by), not the weights themselves (n_layers stays 0),
// params or scores; at level
typedef enum {
    TRIAL_DETAILS_ALL,   // all of that
    TRIAL_DETAILS_ROW,   // what the report's rows take (store/summary.h): config, reward_spec,
                         // status, reason, and the curves, trace and shapes of a trial that finished ok
    TRIAL_DETAILS_PAGE,  // what the HTML page adds to a row: reward_spec, host, rank, times, a
                         // program's command and stderr tail, curves, trace and shapes (out's
                         // config and reason are left as they are)
} TrialDetails;
// Returns 0, or -1 with the reason in rd's err; what it allocated trial_result_free frees.
int h5store_read_trial_details(const H5Reader *rd, hid_t g, TrialDetails level, TrialResult *out);

#endif
