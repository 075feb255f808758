// trialdir.h: a trial's own directory beside its sweep's results file,
// results/NAME.trials/NNNNNN/ for results/NAME.h5: where a running trial's checkpoint goes
// (checkpoint.bin, written whole through a temporary file and renamed) and where a
// researcher's program works. The group leader running the trial makes it when first
// needed; the coordinator clears the checkpoint once the trial is journaled. A link planted
// at any of these names is refused, never followed.
#ifndef ATTN_TRIALDIR_H
#define ATTN_TRIALDIR_H

#include <stddef.h>

// "results/NAME.trials/NNNNNN" for trial id of results file "results/NAME.h5" (a results
// file not ending in .h5 keeps its whole name: "out" -> "out.trials/000007"). 0, or -1
// when it does not fit in len.
int trial_dir_path(char *out, size_t len, const char *results, int id);
// Make dir and its parent NAME.trials when missing. 0, or -1 with errno (ELOOP: a symbolic
// link is in the way, ENOTDIR: a file).
int trial_dir_make(const char *dir);
// dir/checkpoint.bin. 0, or -1 when it does not fit.
int trial_dir_checkpoint(char *out, size_t len, const char *dir);
// dir/stopped: the hand-out times of the runs a stop interrupted, one "%.17g" a line
// (sweep/sweep_internal.h sweep_stop_marker). 0, or -1 when it does not fit.
int trial_dir_stopped(char *out, size_t len, const char *dir);
// Whether dir/stopped holds handout_time: the run of that hand-out ended in a stop of the
// job, not by its own death (read without following a link, at most 64 KiB).
int trial_dir_was_stopped(const char *dir, double handout_time);
// The trial is recorded: its checkpoint and stop marks go, and dir and NAME.trials too when empty.
void trial_dir_finish(const char *dir);

#endif
