// recovery.h: what a resumed sweep learns from its journal's hand-outs. A trial handed
// out and neither finished nor given back (on a stop) was running when its job died: a
// kill -9, a lost node, or a worker the kernel killed for its memory. A run that a stop of
// the job ended is no death: the worker marks it when the stop signal comes
// (sweep/sweep_internal.h sweep_stop_marker), as mpirun's SIGTERM reaches every worker but
// the one the kernel killed, so only the trial whose own worker died counts one. A trial that died
// with its worker max_deaths times (budget.max_deaths, 2) is recorded failed with that
// reason instead of being handed out again, so a trial that kills its worker cannot stop
// the sweep. Deaths count from the trial's last record: a failed trial run again
// (--retry-failed) has its max_deaths afresh.
#ifndef ATTN_RECOVERY_H
#define ATTN_RECOVERY_H

#include "common/bytes.h"
#include "store/journal.h"
#include "trial/trial.h"

typedef struct {
    int trials;
    int *deaths;       // [trials]: hand-outs that ended with the job (the last counted by recovery_finish)
    char *running;     // [trials]: handed out and not yet concluded, in the records so far
    char **config;     // [trials]: the configuration of the last hand-out (JSON), or NULL
    int *rank;         // [trials]: the group leader it went to
    long *job;         // [trials]: the job sharing the sweep it went to (-1: a single job)
    double *time;      // [trials]: when
    char *output;      // the results file, whose trials' directories hold the stop marks
} Recovery;

void recovery_init(Recovery *rc, int trials, const char *output);
void recovery_free(Recovery *rc);
// A journal record, in file order.
void recovery_visit(Recovery *rc, const JournalRecord *rec);
// After the last record: a hand-out still running is a death, unless a stop marked it.
void recovery_finish(Recovery *rc);
// The same for one trial still running whose job's lease ran out (a shared sweep, which
// keeps the hand-outs of live jobs running): a death, unless a stop marked it.
void recovery_end_run(Recovery *rc, int id);
// The state a snapshot keeps (sweep/coordinator.c): each trial running or dead, with its
// last hand-out; and back into a Recovery just made (0, or -1 with rd's failure set).
void recovery_save(const Recovery *rc, Bytes *b);
int recovery_load(Recovery *rc, ByteReader *rd);
// Trial id as recorded failed after `deaths` deaths: its configuration as handed out, the
// sweep's reward specification, metrics NaN, the reason. Returns 0, or -1 when the
// hand-out's configuration does not decode (the trial is then simply handed out again).
int recovery_failed_trial(const Recovery *rc, int id, const RewardSpec *reward, TrialResult *r);
// A trial recorded failed for `reason` without a result of its own (metrics NaN): one whose
// worker died, or whose result bytes the coordinator could not unpack.
void recovery_failed_result(TrialResult *r, int id, const TrialConfig *c, const RewardSpec *reward, int rank,
                            double start_time, const char *reason);

#endif
