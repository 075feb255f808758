// attnsweep run: the distributed sweep (under mpirun or Slurm, or with --workers N on one
// machine, where this process starts mpirun itself).
#define _GNU_SOURCE  // prctl's PR_SET_PDEATHSIG, pipe2
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "common/util.h"
#include "invariants/grid.h"
#include "sweep/sweep.h"

enum { EXIT_STOPPED = 3, MAX_LOCAL_WORKERS = 4096 };

char *self_exe(void) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return xstrdup("attnsweep");
    buf[n] = 0;
    return xstrdup(buf);
}

// The mpirun that --workers started; the stop signals become SIGUSR1 to it, which it
// relays to every rank (SIGINT or SIGTERM to mpirun itself would make it kill the ranks
// and exit 1: docs/run.md, "Signals").
static volatile sig_atomic_t launcher_pid;

static void forward_stop(int sig) {
    (void)sig;
    if (launcher_pid > 0) kill((pid_t)launcher_pid, SIGUSR1);
}

// mpirun's command line for the ranks: this executable's `run` with o's settings.
typedef struct {
    char *argv[26];
    char np[16], group[16], gpus[16], lease[32], snapshot[32];  // the numbers argv points to
    char *exe;                         // self_exe(), freed by the caller
} LaunchLine;

static void launch_line(LaunchLine *l, const RunOptions *o, int workers) {
    static const char *const launcher[] = {
        "mpirun", "--quiet",     // Open MPI's notices on a rank's non-zero exit: attnsweep says why itself
        "--oversubscribe",       // permission only: mpirun counts physical cores as slots
        "--bind-to", "none",     // a program's threads must not share their rank's one core
        "-np",
    };
    int n = 0;
    for (size_t i = 0; i < sizeof launcher / sizeof launcher[0]; i++) l->argv[n++] = (char *)launcher[i];
    snprintf(l->np, sizeof l->np, "%d", workers + 1);
    snprintf(l->group, sizeof l->group, "%d", o->group_size);
    snprintf(l->gpus, sizeof l->gpus, "%d", o->gpus_per_group);
    snprintf(l->lease, sizeof l->lease, "%.17g", o->lease);
    snprintf(l->snapshot, sizeof l->snapshot, "%.17g", o->snapshot_every);
    l->exe = self_exe();
    l->argv[n++] = l->np;
    l->argv[n++] = l->exe;
    l->argv[n++] = "run";
    l->argv[n++] = (char *)o->spec_path;
    if (o->output) l->argv[n++] = "--output", l->argv[n++] = (char *)o->output;
    if (o->resume) l->argv[n++] = "--resume";
    if (o->retry_failed) l->argv[n++] = "--retry-failed";
    if (o->shared) l->argv[n++] = "--shared", l->argv[n++] = "--lease", l->argv[n++] = l->lease;
    l->argv[n++] = "--snapshot-every", l->argv[n++] = l->snapshot;
    l->argv[n++] = "--group-size", l->argv[n++] = l->group;
    if (o->gpus_per_group >= 0) l->argv[n++] = "--gpus-per-group", l->argv[n++] = l->gpus;
    if (o->quiet) l->argv[n++] = "--quiet";
    l->argv[n] = NULL;  // at most 6 + 19 of the 26
}

// In the child, between fork and exec (async-signal-safe calls only): mpirun in a process
// group of its own, so that a terminal's Ctrl-C reaches this process alone and becomes a
// stop; no terminal input for it (a background group reading one would be stopped);
// SIGUSR1 when this process dies (SIGKILL, a closed terminal's SIGHUP), so that the
// sweep stops then too.
static void exec_launcher(char **argv, const sigset_t *mask, pid_t parent, int report_fd) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGUSR1);
    if (getppid() != parent) _exit(EXIT_STOPPED);  // the parent died before prctl
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvp(argv[0], argv);
    const int e = errno;
    if (write(report_fd, &e, sizeof e) < 0) {}  // nothing more to do: the parent sees exit code 1
    _exit(EXIT_RUNTIME);
}

// attnsweep run --workers N: mpirun -np N+1 of this executable, its exit code returned as
// the sweep's (0, 1, 2 or 3); SIGINT, SIGTERM and SIGUSR1 stop the sweep (exit code 3).
static int run_local(const RunOptions *o, int workers) {
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK"))
        die(EXIT_BADINPUT, "run: --workers starts its own mpirun: under mpirun or srun, leave it out");
    if (workers % o->group_size)
        die(EXIT_BADINPUT, "run: --workers %d cannot form groups of --group-size %d (give a multiple of %d)", workers,
            o->group_size, o->group_size);
    if (geteuid() == 0) {  // Open MPI refuses root without both
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    // More ranks than CPUs: a waiting rank gives its CPU away (ENVIRONMENT.md: otherwise
    // ranks busy-poll and a 0.08 s SVD takes 8 s). A setting the user made wins.
    if (workers + 1 > sysconf(_SC_NPROCESSORS_ONLN)) setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    LaunchLine line;
    launch_line(&line, o, workers);

    static const int stops[] = {SIGINT, SIGTERM, SIGUSR1};
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) sigaddset(&block, stops[i]);
    sigprocmask(SIG_BLOCK, &block, &old);  // until launcher_pid is known
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) die(EXIT_RUNTIME, "run: pipe: %s", strerror(errno));
    const pid_t parent = getpid(), pid = fork();
    if (pid < 0) die(EXIT_RUNTIME, "run: cannot start mpirun: %s", strerror(errno));
    if (pid == 0) exec_launcher(line.argv, &old, parent, report[1]);
    close(report[1]);
    setpgid(pid, pid);  // the child does the same: whichever comes first
    launcher_pid = pid;
    struct sigaction sa = {.sa_handler = forward_stop};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) sigaction(stops[i], &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);

    int exec_errno = 0;
    ssize_t got;
    while ((got = read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {}
    close(report[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) die(EXIT_RUNTIME, "run: waiting for mpirun: %s", strerror(errno));
    launcher_pid = 0;
    free(line.exe);
    if (got == (ssize_t)sizeof exec_errno)
        die(EXIT_RUNTIME, "run: --workers: cannot run mpirun: %s (Open MPI's mpirun must be on PATH)",
            strerror(exec_errno));
    if (WIFSIGNALED(status))
        die(EXIT_RUNTIME, "run: mpirun was killed by signal %d; finished trials are kept (--resume continues)",
            WTERMSIG(status));
    const int rc = WEXITSTATUS(status);
    if (rc > 128)  // mpirun --quiet says nothing of a rank killed by a signal (SIGKILL: out of memory?)
        die(EXIT_RUNTIME, "run: a rank was killed by signal %d (%s); finished trials are kept (--resume continues)",
            rc - 128, strsignal(rc - 128));
    if (rc > EXIT_STOPPED)  // mpirun's own trouble, which it has printed
        die(EXIT_RUNTIME, "run: mpirun ended with exit code %d; finished trials are kept (--resume continues)", rc);
    return rc;
}

int cmd_run(int argc, char **argv) {
    RunOptions o = {.group_size = 1, .gpus_per_group = -1, .lease = 60, .snapshot_every = 60};
    int workers = 0;
    const Option options[] = {
        OPT_INT("--workers", &workers, 1, MAX_LOCAL_WORKERS, "N",
                "on this machine without mpirun: start mpirun -np N+1 itself\n"
                "(the coordinator and N worker ranks); not under mpirun or srun"),
        OPT_STRING("--output", "-o", &o.output, "FILE", "results file (default results/NAME.h5; the journal is FILE.journal)"),
        OPT_FLAG("--resume", NULL, &o.resume, 1, "continue from the journal; a sweep not started yet simply starts"),
        OPT_FLAG("--retry-failed", NULL, &o.retry_failed, 1,
                 "with --resume: run the failed trials again (the journal keeps\nevery attempt, the results file the latest)"),
        OPT_FLAG("--shared", NULL, &o.shared, 1,
                 "share the sweep with other jobs running it (a Slurm array, or\na job added later): start it, or join it"),
        OPT_NUMBER("--lease", &o.lease, 1, 86400, "SECONDS",
                   "with --shared: a job's trials go back to the others this long\nafter it was last seen alive (default 60)"),
        OPT_NUMBER("--snapshot-every", &o.snapshot_every, 0, 86400, "SECONDS",
                   "a snapshot of what the journal holds, written into it this often\nwhile trials finish and at the end, so that a resume reads only\nwhat follows the last (0: at the end only; default 60)"),
        OPT_INT("--group-size", &o.group_size, 1, SWEEP_MAX_GROUP_SIZE, "G", "ranks per worker group"),
        OPT_INT("--gpus-per-group", &o.gpus_per_group, 0, 1024, "K",
                "a program's sweep: GPUs per worker group (CUDA_VISIBLE_DEVICES),\nover the YAML's resources.gpus"),
        OPT_FLAG("--quiet", "-q", &o.quiet, 1, "no progress lines"),
        OPT_END,
    };
    const Command cmd = {"run",
                         "attnsweep run SWEEP.yaml --workers N [options]\n"
                         "       mpirun -np N attnsweep run SWEEP.yaml [-o results/NAME.h5] [--resume [--retry-failed]]\n"
                         "                  [--shared [--lease SECONDS]] [--snapshot-every SECONDS] [--group-size G]\n"
                         "                  [--gpus-per-group K] [--quiet]",
                         "Rank 0 coordinates; the other N-1 ranks form worker groups of G (default 1) that\n"
                         "train trials as they become free (G > 1: data-parallel within a group).\n",
                         options,
                         "SIGTERM, SIGINT or SIGUSR1 to the ranks (SIGUSR1 to mpirun) stop the sweep within\n"
                         "seconds (exit code 3); --resume continues it. With --workers, SIGINT (Ctrl-C),\n"
                         "SIGTERM or SIGUSR1 to attnsweep does the same. Under your own mpirun, pass\n"
                         "mpirun --quiet to keep Open MPI's notices off a failure's exit.\n"
                         "With --shared, any number of jobs run one sweep together, each started the same\n"
                         "way (a Slurm job array, or another mpirun added later); the journal is where they\n"
                         "meet. A job that dies loses only its running trials, which the others run again\n"
                         "once its lease has run out. Not with a single job's run of the same sweep.\n",
                         {1, "one sweep file only",
                          "which sweep? (attnsweep run SWEEP.yaml)"}};
    args_parse(&cmd, argc, argv, &o.spec_path);
    if (o.retry_failed && !o.resume)
        die(EXIT_BADINPUT, "run: --retry-failed runs a sweep's failed trials again: pass it with --resume");
    if (o.retry_failed && o.shared)
        die(EXIT_BADINPUT, "run: --retry-failed is for one job alone: run it without --shared while no other job runs the sweep");
    if (workers) return run_local(&o, workers);
    grid_mpi_start();
    return sweep_run(&o);
}
