// protocol.h: the messages between the coordinator (rank 0) and the worker groups'
// leaders. Plain structs sent as MPI_BYTE: every rank runs the same binary.
//
//   leader → coordinator   READY               give me a trial (the first time, and after
//                                              a trial abandoned on a STOP, its checkpoint
//                                              written)
//   coordinator → leader   TRIAL (TrialAssign) train this one
//                          DONE                no more trials: leave
//   leader → coordinator   EVAL (RungReport)   a trial reached an ASHA rung
//   coordinator → leader   DECISION (int)      1: go on, 0: stop (pruned); none for a
//                                              replayed report
//                          STOP                abandon the running trial (a signal)
//   leader → coordinator   RESULT (bytes)      trial_pack of the finished trial; also
//                                              asks for the next trial (no READY follows)
#ifndef ATTN_PROTOCOL_H
#define ATTN_PROTOCOL_H

#include "params/config.h"
#include "space/asha.h"
#include "trial/reward.h"

enum { TAG_READY = 1, TAG_TRIAL, TAG_DONE, TAG_EVAL, TAG_DECISION, TAG_STOP, TAG_RESULT };
enum { PROTOCOL_PATH_MAX = 1024 };  // the longest trial directory a TrialAssign carries

typedef struct {
    int id;                  // trial number in the sweep
    TrialConfig config;
    int n_rungs;
    int rungs[MAX_RUNGS];    // ASHA rung steps (empty: no early stopping)
    double time_limit;       // seconds, 0 = none
    RewardSpec reward;
    double energy;           // numerical-rank threshold for scoring
    int checkpoint_every;    // steps between checkpoints (-1: at each evaluation, 0: only on a stop)
    double mem_limit;        // bytes the group may use (resources.mem), 0 = not limited
    char trial_dir[PROTOCOL_PATH_MAX];  // results/NAME.trials/NNNNNN: the trial's checkpoints
    double handout_time;     // the journal's hand-out record's time: the stamp of a stop (sweep_internal.h)
} TrialAssign;

typedef struct {
    int id, step, rung;      // the trial, the evaluation step, the rung it stands for
    double metric;           // larger is better (the coordinator's goal already applied)
    int replayed;            // a rung a trial continued from its checkpoint passed before:
                             // ASHA records it as gone on, and no DECISION answers it
} RungReport;

#endif
