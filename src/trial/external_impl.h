// external_impl.h: what the files of the external runner share; not for other modules.
//
// external.c drives a trial through the program (external.h); external_dir.c makes the
// trial's directory and reads its files, external_lines.c reads the metric lines the
// program writes (untrusted input), external_child.c starts the program and holds, stops
// and reaps its processes. All work on the Run of one trial.
#ifndef ATTN_EXTERNAL_IMPL_H
#define ATTN_EXTERNAL_IMPL_H

#include <sys/types.h>

#include "trial/curvefile.h"
#include "trial/external.h"

enum {
    MAX_METRIC_LINES = 100000,  // metric lines a trial may write: past them it is stopped and failed
                                // (1 M lines cost a 208 MB journal record and an equal HDF5 curve)
    MAX_KEYS_SEEN = 16,         // the metric lines' keys a failure names
};

typedef CurveRecord Eval;  // an evaluation: its curve point and the sweep's program metric

typedef enum { END_NONE, END_PRUNED, END_STOPPED, END_TIME, END_OUTPUT, END_BAD_LINE } EndCause;

typedef struct {
    const ProgramSpec *spec;
    const TrialHooks *hooks;
    TrialResult *r;
    int leader;
    // the leader's
    pid_t pid;                 // the program; its process group has the same id
    int pidfd;                 // readable once the program exits (pidfd_open; -1: none)
    int status, exited;        // waitpid's status of the program, once it exited
    int out_fd, err_fd, metrics_fd;
    int curve_fd;              // TRIAL_DIR/curve.jsonl (trial/curvefile.h): the curve as read
    char *cgroup;              // the trial's cgroup (a directory), or NULL: the subreaper alone
    int cgroup_procs;          // its cgroup.procs, open for the program to join (-1: none)
    char *dir, *metrics_path, *stdout_path, *stderr_path, *checkpoint;
    off_t metrics_read;        // bytes of the metrics file consumed
    char *partial;             // a line read in part
    size_t partial_len;
    long lines;                // metric lines read
    double t0, kill_at;        // start; when SIGKILL follows the SIGTERM sent (0: none sent)
    EndCause cause;
    char why[256];             // the reason of a failure found while running
    Eval *pending;             // evaluations read, not yet broadcast
    int n_pending, cap_pending;
    double test_accuracy, test_loss;
    long n_params;
    int no_space;              // its files could not be written for want of space: released, not failed
    int metric_seen;           // a line held the sweep's own metric (spec->metric)
    int n_keys;                // the number keys the lines held (step aside), the first MAX_KEYS_SEEN
    char keys[MAX_KEYS_SEEN][PROGRAM_KEY];
    // every rank's: the curve of the earlier attempts, from NNNNNN.resume/curve.jsonl, at the
    // start of r->curve until this attempt's first evaluation settles which of them stay
    Eval *earlier;
    int n_earlier;
    double seconds_before;     // the earlier attempts' seconds up to their last evaluation
} Run;

// ---- the trial's directory and its files (external_dir.c)
char *external_path_join(const char *dir, const char *name);
// A file of the trial that could not be made or written: the reason in run->why.
void external_file_failure(Run *run, const char *what, const char *path);
// The trial's directory, fresh; an earlier attempt's with files of the program's own
// becomes NNNNNN.resume (*resume gets its path). 0, or -1 with the reason in run->why.
int external_trial_dir(Run *run, char **resume);
// A file the runner writes in the trial's directory, never through a link planted at its name.
int external_open_output(const char *path);
// The last lines of the file (stderr's tail kept with a trial); "" when it is no regular
// file of its own.
char *external_file_tail(const char *path);

// ---- the metric lines (external_lines.c)
// The complete lines the metrics file gained (and, once the program ended, its last line
// without a line break) into run->pending; -1 on a malformed line, the reason in run->why.
int external_read_metrics(Run *run, int final);

// ---- the program's processes (external_child.c)
// The program's environment (NULL-terminated, for program_argv_free).
char **external_environment(const Run *run, const char *resume, const char *devices, char *err, size_t errlen);
// Fork and exec argv in a process group of its own; 0, or -1 with the reason in run->why.
int external_spawn(Run *run, char **argv, char **envp);
// Until the program exits or ms milliseconds pass, whichever is first (or a signal).
void external_wait(Run *run, int ms);
// Reaps what has exited in the program's group; 1 once the program and its whole group are gone.
int external_group_gone(Run *run);
// The trial's cgroup, where cgroup v2 is writable (else the subreaper alone).
void external_cgroup_make(Run *run);
// The cgroups of dead workers (kill -9) beside this worker's: what is left in them killed,
// and they removed.
void external_cgroup_sweep_dead(void);
// What the program left once it is gone, killed and reaped; its cgroup removed.
void external_kill_survivors(Run *run);
// SIGTERM to the program's group (once), SIGKILL when the grace is over.
void external_terminate(Run *run, EndCause cause);

#endif
