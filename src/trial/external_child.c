// external_child.c: a trial program's processes (external_impl.h): its environment, its
// start in a process group of its own, its reaping, its stop (SIGTERM, then SIGKILL after
// the grace), and its containment: the worker is the subreaper of everything it starts,
// and where cgroup v2 is writable the program runs in a cgroup of the trial's own.
#define _GNU_SOURCE  // execvpe, pipe2, close_range
#include "trial/external_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

extern char **environ;

// Where the Python helper (the package attnsweep, python/attnsweep/trial.py) is: beside an
// installed binary, PREFIX/ATTNSWEEP_PYTHON_RELDIR for PREFIX/bin/attnsweep, else the
// source tree it was built from (ATTNSWEEP_PYTHON_SOURCE); NULL when neither holds it.
// Looked for once a process (helper_dir), not in every trial.
static char *find_helper_dir(void) {
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;  // the binary's directory
    char *installed = xmalloc(strlen(exe) + sizeof "/../" ATTNSWEEP_PYTHON_RELDIR);
    sprintf(installed, "%s/../%s", exe, ATTNSWEEP_PYTHON_RELDIR);
    const char *const dirs[] = {installed, ATTNSWEEP_PYTHON_SOURCE};
    char *found = NULL;
    for (size_t k = 0; k < 2 && !found; k++) {
        char *module = external_path_join(dirs[k], "attnsweep/trial.py");
        if (access(module, R_OK) == 0) found = realpath(dirs[k], NULL);
        free(module);
    }
    free(installed);
    return found;
}

static const char *helper_dir(void) {
    static char *dir;
    static int looked;
    if (!looked) dir = find_helper_dir(), looked = 1;
    return dir;
}

// The program's environment: attnsweep's own without the MPI job's variables (and the
// ones set here), then the protocol's, the Python helper's directory first on PYTHONPATH,
// and the resources'.
char **external_environment(const Run *run, const char *resume, const char *devices, char *err, size_t errlen) {
    static const char *const dropped[] = {"OMPI_", "PMIX_", "PMI_", "ATTNSWEEP_"};
    const ProgramSpec *ps = run->spec;
    const char *helper = helper_dir();
    const char *pythonpath = getenv("PYTHONPATH");
    Words w = {0};
    words_add(&w, NULL), w.n = 0;
    for (char **e = environ; *e; e++) {
        int drop = helper && !strncmp(*e, "PYTHONPATH=", 11);
        for (size_t k = 0; k < sizeof dropped / sizeof dropped[0]; k++) drop |= !strncmp(*e, dropped[k], strlen(dropped[k]));
        drop |= devices && !strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21);
        drop |= ps->cpus && (!strncmp(*e, "OMP_NUM_THREADS=", 16) || !strncmp(*e, "OPENBLAS_NUM_THREADS=", 21) ||
                             !strncmp(*e, "MKL_NUM_THREADS=", 16));
        if (!drop) words_add(&w, xstrdup(*e));
    }
    char text[8192];
    snprintf(text, sizeof text, "ATTNSWEEP_TRIAL=%d", run->r->id), words_add(&w, xstrdup(text));
    snprintf(text, sizeof text, "ATTNSWEEP_SEED=%d", run->r->config.seed), words_add(&w, xstrdup(text));
    snprintf(text, sizeof text, "ATTNSWEEP_TRIAL_DIR=%s", run->dir), words_add(&w, xstrdup(text));
    snprintf(text, sizeof text, "ATTNSWEEP_METRICS=%s", run->metrics_path), words_add(&w, xstrdup(text));
    if (resume) snprintf(text, sizeof text, "ATTNSWEEP_RESUME_DIR=%s", resume), words_add(&w, xstrdup(text));
    if (helper) {
        char *word = xmalloc(strlen(helper) + (pythonpath ? strlen(pythonpath) : 0) + sizeof "PYTHONPATH=:");
        sprintf(word, "PYTHONPATH=%s%s%s", helper, pythonpath && pythonpath[0] ? ":" : "", pythonpath ? pythonpath : "");
        words_add(&w, word);
    }
    if (devices) snprintf(text, sizeof text, "CUDA_VISIBLE_DEVICES=%s", devices), words_add(&w, xstrdup(text));
    static const char *const threads[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"};
    for (size_t k = 0; ps->cpus && k < 3; k++)
        snprintf(text, sizeof text, "%s=%d", threads[k], ps->cpus), words_add(&w, xstrdup(text));
    (void)err, (void)errlen;
    return w.v;
}

// Fork and exec argv in a process group of its own, stdout and stderr in run's files,
// stdin from /dev/null; 0, or -1 with the reason (a program that cannot be run) in why.
int external_spawn(Run *run, char **argv, char **envp) {
    int report[2];
    const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || pipe2(report, O_CLOEXEC) != 0) {
        snprintf(run->why, sizeof run->why, "cannot start the program: %s", strerror(errno));
        if (devnull >= 0) close(devnull);
        return -1;
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {  // the child: only async-signal-safe calls until exec
        if (run->cgroup_procs >= 0) {  // first, so that nothing it starts is outside
            const ssize_t joined = write(run->cgroup_procs, "0", 1);
            (void)joined;  // not joined: the subreaper still holds it
        }
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        const int sigs[] = {SIGTERM, SIGINT, SIGUSR1, SIGPIPE, SIGCHLD, SIGHUP};
        for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) signal(sigs[k], SIG_DFL);
        if (dup2(devnull, 0) < 0 || dup2(run->out_fd, 1) < 0 || dup2(run->err_fd, 2) < 0 || dup2(report[1], 3) < 0 ||
            fcntl(3, F_SETFD, FD_CLOEXEC) != 0)
            _exit(127);
        if (close_range(4, ~0U, 0) != 0)  // the MPI job's sockets and files are not the program's
            for (int fd = 4; fd < 65536; fd++) close(fd);
        execvpe(argv[0], argv, envp);
        const int e = errno;
        if (write(3, &e, sizeof e) < 0) _exit(126);
        _exit(127);
    }
    close(devnull);
    close(report[1]);
    if (pid < 0) {
        snprintf(run->why, sizeof run->why, "cannot start the program: fork: %s", strerror(errno));
        close(report[0]);
        return -1;
    }
    setpgid(pid, pid);  // also here, so the group exists before the first signal
    int e = 0;
    ssize_t n;
    while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(report[0]);
    run->pid = pid;
    if (n == (ssize_t)sizeof e) {  // exec failed: the child exits at once
        waitpid(pid, NULL, 0);
        run->pid = 0;
        snprintf(run->why, sizeof run->why, "cannot run %s: %s", argv[0], strerror(e));
        return -1;
    }
    run->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);  // -1 before Linux 5.3: external_wait sleeps
    return 0;
}

// The leader between two looks at the program: a poll of its pidfd, which ends the wait
// when it exits (a sleep loop would see that half a look's interval late on average, in
// every trial); a signal (a stop) ends it too. Once the program exited (its group may
// still be ending) or without a pidfd, a plain sleep.
void external_wait(Run *run, int ms) {
    if (run->pidfd >= 0 && !run->exited)
        poll(&(struct pollfd){.fd = run->pidfd, .events = POLLIN}, 1, ms);
    else
        nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

// Reap what has exited in the program's group; 1 once the program and every process of
// its group are gone (the worker is their subreaper, so orphans come back to it). What is
// left in the group once the program exited is killed: it cannot hold the trial open.
int external_group_gone(Run *run) {
    int st;
    pid_t p;
    while ((p = waitpid(-run->pid, &st, WNOHANG)) > 0)
        if (p == run->pid) run->status = st, run->exited = 1;
    if (run->exited) kill(-run->pid, SIGKILL);
    return run->exited && kill(-run->pid, 0) != 0 && errno == ESRCH;
}

// Every process the program left behind outside its group (a setsid() grandchild): the
// worker is their subreaper, so they are its children once their parents are gone. Killed
// and reaped until none is left (a killed one's own children come back in turn).
static void kill_descendants(void) {
    for (int round = 0; round < 1000; round++) {
        int found = 0;
        DIR *tasks = opendir("/proc/self/task");
        for (struct dirent *t; tasks && (t = readdir(tasks));) {
            if (t->d_name[0] == '.') continue;
            char path[64];
            snprintf(path, sizeof path, "/proc/self/task/%.20s/children", t->d_name);
            FILE *f = fopen(path, "r");
            for (long pid; f && fscanf(f, "%ld", &pid) == 1; found++) kill((pid_t)pid, SIGKILL);
            if (f) fclose(f);
        }
        if (tasks) closedir(tasks);
        if (!found) return;
        while (waitpid(-1, NULL, 0) > 0) {
        }
    }
}

// ---------------------------------------------------------------- containment
// A trial's processes are held twice: the worker is their subreaper (orphans come back to
// it, setsid() ones included: kill_descendants), and where cgroup v2 is writable (root, or
// a delegated subtree) the program joins a cgroup of the trial's own before its exec,
// attnsweep-WORKERPID-TRIAL beside the worker's, killed whole at the end and removed (a
// dead worker's, by the next trial on that machine). Where it is not writable, the
// subreaper alone, silently.

// The directory of this process's cgroup in the cgroup v2 hierarchy; 0, or -1 without one.
static int find_own_cgroup(char *out, size_t len) {
    char mount[2048] = "", line[4096];
    FILE *f = fopen("/proc/self/mountinfo", "r");
    while (f && !mount[0] && fgets(line, sizeof line, f))
        if (strstr(line, " - cgroup2 ") && sscanf(line, "%*s %*s %*s %*s %2047s", mount) != 1) mount[0] = 0;
    if (f) fclose(f);
    int found = 0;
    f = mount[0] ? fopen("/proc/self/cgroup", "r") : NULL;
    while (f && !found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::/", 4)) continue;
        line[strcspn(line, "\n")] = 0;
        const int n = snprintf(out, len, "%s%s", mount, line[4] ? line + 3 : "");
        found = n > 0 && (size_t)n < len;
    }
    if (f) fclose(f);
    return found ? 0 : -1;
}

// The same, read once a process (/proc/self/mountinfo is long), not in every trial: NULL
// without one.
static const char *own_cgroup(void) {
    static char dir[4096];
    static int looked, found;
    if (!looked) found = find_own_cgroup(dir, sizeof dir) == 0, looked = 1;
    return found ? dir : NULL;
}

// Every process of the cgroup at dir SIGKILLed: cgroup.kill, or pid by pid from cgroup.procs
// before Linux 5.14.
static void cgroup_kill(const char *dir) {
    char *path = external_path_join(dir, "cgroup.kill");
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    free(path);
    if (fd < 0 || write(fd, "1", 1) != 1) {
        path = external_path_join(dir, "cgroup.procs");
        FILE *f = fopen(path, "r");
        for (long pid; f && fscanf(f, "%ld", &pid) == 1;) kill((pid_t)pid, SIGKILL);
        if (f) fclose(f);
        free(path);
    }
    if (fd >= 0) close(fd);
}

// The cgroups of workers that died while their trial ran (kill -9, out of memory): what is
// left in them is killed (no longer anyone's descendant) and they are removed; one whose
// processes are still dying is left to the next trial's look. Looked at once a trial's
// program has started, not before: its start waits for nothing it does not need.
void external_cgroup_sweep_dead(void) {
    const char *base = own_cgroup();
    DIR *d = base ? opendir(base) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        long pid;
        int id, end = 0;
        if (sscanf(e->d_name, "attnsweep-%ld-%d%n", &pid, &id, &end) != 2 || e->d_name[end] ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char *dir = external_path_join(base, e->d_name);
        cgroup_kill(dir);
        rmdir(dir);
        free(dir);
    }
    if (d) closedir(d);
}

void external_cgroup_make(Run *run) {
    const char *base = own_cgroup();
    if (!base) return;
    char *dir = xmalloc(strlen(base) + 64), *procs = NULL;
    sprintf(dir, "%s/attnsweep-%ld-%d", base, (long)getpid(), run->r->id);
    const int fd = mkdir(dir, 0755) == 0 || errno == EEXIST
                       ? open(procs = external_path_join(dir, "cgroup.procs"), O_WRONLY | O_CLOEXEC)
                       : -1;
    free(procs);
    if (fd < 0) {
        rmdir(dir);
        free(dir);
        return;
    }
    run->cgroup = dir, run->cgroup_procs = fd;
}

// What the program left once it is gone: its cgroup killed whole, every descendant of the
// worker killed and reaped, the cgroup removed.
void external_kill_survivors(Run *run) {
    if (run->cgroup) cgroup_kill(run->cgroup);
    kill_descendants();
    // A killed process leaves its cgroup once reaped; one still leaving is waited for.
    for (int k = 0; run->cgroup && k < 100 && rmdir(run->cgroup) != 0 && errno == EBUSY; k++) {
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
        kill_descendants();
    }
}

// SIGTERM to the program's group (once), SIGKILL when the grace is over.
void external_terminate(Run *run, EndCause cause) {
    if (run->cause == END_NONE) run->cause = cause;
    const double now = now_seconds();
    if (run->kill_at == 0) {
        kill(-run->pid, SIGTERM);
        run->kill_at = now + run->spec->grace;
    } else if (now >= run->kill_at) {
        kill(-run->pid, SIGKILL);
    }
}
