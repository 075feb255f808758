// sweep.h: the distributed sweep — rank 0 coordinates, the other ranks form worker
// groups of group_size ranks that ask for trials as soon as they are free.
#ifndef ATTN_SWEEP_H
#define ATTN_SWEEP_H

enum { SWEEP_MAX_GROUP_SIZE = 4096 };  // what run --group-size and slurm --group-size allow

typedef struct {
    const char *spec_path;  // the YAML search space
    const char *output;     // results file (default results/NAME.h5); journal beside it
    int resume;             // continue from the journal (starts afresh when there is none)
    int retry_failed;       // with resume: the journal's failed trials run again
    int group_size;         // ranks per worker group (>= 1)
    int quiet;              // no progress lines
    int gpus_per_group;     // a program's GPUs per worker group, over resources.gpus (-1: the YAML's)
    int shared;             // share the sweep with other jobs (starting it or joining it), through the journal
    double lease;           // shared: seconds a job's hand-outs stay its own after its last sign of life
    double snapshot_every;  // a single job: seconds between snapshots in the journal (0: at its end only)
} RunOptions;

// Collective over MPI_COMM_WORLD (MPI initialised, at least 1 + group_size ranks).
// Returns the process exit code: 0 when the sweep finished with at least one trial ok,
// 1 on a run-time failure, when every trial failed (or was pruned), or when the first
// budget.max_failures trials of the run all failed the same way (it stopped there), 2 on
// bad input, 3 when SIGTERM, SIGINT or SIGUSR1 stopped it. A stopped sweep keeps every
// finished trial and `--resume` continues it.
int sweep_run(const RunOptions *o);

#endif
