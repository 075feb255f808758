// external.c: the researcher's program as a trial runner (external.h): its process (the
// command comes from program.c), the metric lines it writes, its stop, its containment,
// and the checkpoint scored.
//
// One trial, on the group's leader: make the trial's directory (an earlier attempt's
// goes to NNNNNN.resume), expand the command, fork and exec the program in a process
// group of its own with stdout and stderr in files, then poll every POLL_MS: reap it,
// read the complete lines the metrics file gained, watch the output sizes and the time
// limit. Each poll is one step of the whole group (collectives over hooks->group): the
// stop requests are combined, the leader broadcasts the new evaluations, and every rank
// asks on_eval about each (ASHA), so a stop is the same everywhere. A stop sends
// SIGTERM to the program's group, SIGKILL `grace` seconds later. At the end every rank
// reads the checkpoint (io/safetensors.h, as `attnsweep score` does) for
// trial_run to score.
#define _GNU_SOURCE  // execvpe, pipe2, close_range
#include "trial/external.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "io/safetensors.h"
#include "params/config_json.h"
#include "trial/curvefile.h"
#include "trial/trialdir.h"

extern char **environ;

enum {
    POLL_MS = 20,               // between two looks at the program
    MAX_LINE = 1 << 20,         // longest metric line (bytes)
    TAIL_LINES = 20,            // stderr lines kept with a trial
    TAIL_BYTES = 4096,          //   at most so many bytes of them
    MAX_POINTS_PER_POLL = 4096, // evaluations broadcast at once (more wait for the next poll)
    MAX_METRIC_LINES = 100000,  // metric lines a trial may write: past them it is stopped and failed
    MAX_KEYS_SEEN = 16,         // the metric lines' keys a failure names
                                // (1 M lines cost a 208 MB journal record and an equal HDF5 curve)
};

// ---------------------------------------------------------------- devices

int program_devices(int slot, int gpus, const char *visible, char *out, size_t outlen, char *err, size_t errlen) {
    char *list = visible ? xstrdup(visible) : NULL, *save = NULL;
    const char *ids[1024];
    int n = 0;
    for (char *t = list ? strtok_r(list, ",", &save) : NULL; t && n < 1024; t = strtok_r(NULL, ",", &save)) ids[n++] = t;
    int rc = 0;
    out[0] = 0;
    if (visible && (slot + 1) * gpus > n) {
        snprintf(err, errlen, "resources: the group in device slot %d needs entries %d..%d of CUDA_VISIBLE_DEVICES=%s, "
                              "which has %d", slot, slot * gpus, (slot + 1) * gpus - 1, visible, n);
        rc = -1;
    }
    for (int k = 0; rc == 0 && k < gpus; k++) {
        const size_t used = strlen(out);
        if (visible)
            snprintf(out + used, outlen - used, "%s%s", k ? "," : "", ids[slot * gpus + k]);
        else
            snprintf(out + used, outlen - used, "%s%d", k ? "," : "", slot * gpus + k);
    }
    free(list);
    return rc;
}

// ---------------------------------------------------------------- files

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

// rm -rf that never follows a symbolic link.
static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

// mkdir -p.
static int make_dirs(const char *path) {
    char *d = xstrdup(path);
    int rc = 0;
    for (char *c = d + 1; rc == 0; c++) {
        const int end = *c == 0;
        if (*c == '/' || end) {
            *c = 0;
            if (mkdir(d, 0777) != 0 && errno != EEXIST) rc = -1;
            if (end) break;
            *c = '/';
        }
    }
    free(d);
    return rc;
}

static char *path_join(const char *dir, const char *name) {
    char *p = xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

// The files attnsweep writes into a trial's directory; anything else is the program's.
static const char *const own_files[] = {"stdout", "stderr", "metrics.jsonl", "args.json", "curve.jsonl"};

static int holds_program_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        found = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
        for (size_t k = 0; k < sizeof own_files / sizeof own_files[0]; k++)
            if (!strcmp(e->d_name, own_files[k])) found = 0;
    }
    closedir(d);
    return found;
}

// The last TAIL_LINES lines of the file (at most TAIL_BYTES bytes of them, cut at a line);
// "" when it is no regular file of its own (the program may have put a FIFO or a link at
// its name: a read must not block or leave the directory).
static char *file_tail(const char *path) {
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    FILE *f = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return xstrdup("");
    }
    char buf[TAIL_BYTES + 1];
    fseeko(f, 0, SEEK_END);
    const off_t size = ftello(f);
    const off_t from = size > TAIL_BYTES ? size - TAIL_BYTES : 0;
    fseeko(f, from, SEEK_SET);
    size_t n = fread(buf, 1, TAIL_BYTES, f);
    fclose(f);
    buf[n] = 0;
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = 0;
    const char *start = buf;
    if (from > 0) {  // a cut line is not a line
        const char *nl = strchr(buf, '\n');
        start = nl ? nl + 1 : buf + n;
    }
    int lines = 0;
    const char *p = buf + n;
    while (p > start && lines < TAIL_LINES) {
        p--;
        if (*p == '\n') lines++;
    }
    if (lines == TAIL_LINES) p++;
    return xstrdup(p > start ? p : start);
}

// ---------------------------------------------------------------- one run

// What the group shares at each poll: the new evaluations and whether the program ended.
typedef struct {
    int n_points;
    int ended;            // the program and its whole process group are gone
    int stopping;         // the program is being stopped: ASHA is not asked again
} PollHeader;

typedef CurveRecord Eval;  // an evaluation: its curve point and the sweep's program metric

typedef enum { END_NONE, END_PRUNED, END_STOPPED, END_TIME, END_OUTPUT, END_BAD_LINE } EndCause;

typedef struct {
    const ProgramSpec *spec;
    const TrialHooks *hooks;
    TrialResult *r;
    int leader;
    // the leader's
    pid_t pid;                 // the program; its process group has the same id
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

// A file of the trial that could not be made or written: the reason in run->why.
static void file_failure(Run *run, const char *what, const char *path) {
    run->no_space = errno == ENOSPC || errno == EDQUOT;
    snprintf(run->why, sizeof run->why, "cannot %s %s: %s", what, path, strerror(errno));
}

static void pending_add(Run *run, const Eval *e) {
    if (run->n_pending == run->cap_pending)
        run->pending = xrealloc(run->pending, (size_t)(run->cap_pending = 2 * run->cap_pending + 16) * sizeof *e);
    run->pending[run->n_pending++] = *e;
}

// NaN, Infinity and -Infinity outside strings (Python's json writes them) as null.
static char *json_text_clean(const char *line, size_t len) {
    char *out = xmalloc(2 * len + 1);
    size_t o = 0;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        const char c = line[i];
        if (in_string) {
            out[o++] = c;
            if (c == '\\' && i + 1 < len) out[o++] = line[++i];
            else if (c == '"') in_string = 0;
            continue;
        }
        static const char *const words[] = {"-Infinity", "Infinity", "NaN"};
        int replaced = 0;
        for (size_t k = 0; k < 3 && !replaced; k++) {
            const size_t n = strlen(words[k]);
            if (len - i >= n && !memcmp(line + i, words[k], n)) {
                memcpy(out + o, "null", 4), o += 4, i += n - 1, replaced = 1;
            }
        }
        if (replaced) continue;
        if (c == '"') in_string = 1;
        out[o++] = c;
    }
    out[o] = 0;
    return out;
}

// A metric's value in a line: a number, or NaN for null or absence; -1 for another type.
static int line_number(const cJSON *o, const char *key, double *v) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *v = NAN;
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsNumber(x)) return -1;
    *v = x->valuedouble;
    return 0;
}

// One line of the metrics file: an evaluation, or nothing for a blank line; -1 with the
// reason in run->why when it is not one.
static int read_line(Run *run, const char *line, size_t len) {
    size_t lead = 0;  // line[0..len) is not NUL-terminated
    while (lead < len && (line[lead] == ' ' || line[lead] == '\t' || line[lead] == '\r')) lead++;
    if (lead == len) return 0;
    if (run->lines == MAX_METRIC_LINES) {
        snprintf(run->why, sizeof run->why, "the program wrote more than %d metric lines (the rest are refused)",
                 MAX_METRIC_LINES);
        return -1;
    }
    const int shown = len - lead < 60 ? (int)(len - lead) : 60;  // what a message quotes
    run->lines++;
    char *text = json_text_clean(line, len);
    cJSON *o = cJSON_Parse(text);
    free(text);
    int rc = -1;
    const cJSON *step = o ? cJSON_GetObjectItemCaseSensitive(o, "step") : NULL;
    const ProgramSpec *ps = run->spec;
    const char *keys[] = {ps->accuracy, "val_loss", "train_loss", "lr", "test_accuracy", "test_loss", "n_params",
                          ps->metric[0] ? ps->metric : NULL};
    double v[8] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    const char *bad = NULL;
    for (size_t k = 0; o && k < sizeof keys / sizeof keys[0] && !bad; k++)
        if (keys[k] && line_number(o, keys[k], &v[k])) bad = keys[k];
    const cJSON *ck = o ? cJSON_GetObjectItemCaseSensitive(o, "checkpoint") : NULL;
    if (!cJSON_IsObject(o))
        snprintf(run->why, sizeof run->why, "metrics line %ld is not a JSON object: '%.*s'", run->lines, shown, line + lead);
    else if (!cJSON_IsNumber(step) || step->valuedouble < 0 || step->valuedouble > 2147483647.0 ||
             step->valuedouble != floor(step->valuedouble))
        snprintf(run->why, sizeof run->why, "metrics line %ld has no \"step\" (an integer >= 0): '%.*s'", run->lines,
                 shown, line + lead);
    else if (bad)
        snprintf(run->why, sizeof run->why, "metrics line %ld: \"%s\" must be a number or null", run->lines, bad);
    else if (!isnan(v[6]) && !(v[6] >= 0 && v[6] < 9.2e18))  // a long: 1e300 would convert to anything
        snprintf(run->why, sizeof run->why, "metrics line %ld: \"n_params\" must be a count from 0 to 9.2e18, got %g",
                 run->lines, v[6]);
    else if (ck && (!cJSON_IsString(ck) || !ck->valuestring[0]))
        snprintf(run->why, sizeof run->why, "metrics line %ld: \"checkpoint\" must be a path", run->lines);
    else
        rc = 0;
    if (rc == 0) {
        run->metric_seen |= !isnan(v[7]);
        for (const cJSON *x = o->child; x && run->n_keys < MAX_KEYS_SEEN; x = x->next) {  // what a failure names
            int known = !cJSON_IsNumber(x) || !strcmp(x->string, "step") || strlen(x->string) >= PROGRAM_KEY;
            for (int k = 0; k < run->n_keys && !known; k++) known = !strcmp(run->keys[k], x->string);
            if (!known) snprintf(run->keys[run->n_keys++], PROGRAM_KEY, "%s", x->string);
        }
        Eval e = {.pt = {.step = (int)step->valuedouble, .val_accuracy = v[0], .val_loss = v[1], .train_loss = v[2],
                         .lr = v[3], .seconds = run->seconds_before + now_seconds() - run->t0},
                  .metric = v[7]};
        pending_add(run, &e);
        if (!isnan(v[4])) run->test_accuracy = v[4];
        if (!isnan(v[5])) run->test_loss = v[5];
        if (!isnan(v[6])) run->n_params = (long)v[6];
        if (ck) {
            free(run->checkpoint);
            run->checkpoint = xstrdup(ck->valuestring);
        }
    }
    cJSON_Delete(o);
    return rc;
}

// The complete lines the metrics file gained (and, once the program ended, its last line
// without a line break); -1 on a malformed line.
static int read_metrics(Run *run, int final) {
    char buf[65536];
    for (;;) {
        const ssize_t n = pread(run->metrics_fd, buf, sizeof buf, run->metrics_read);
        if (n <= 0) break;
        run->metrics_read += n;
        run->partial = xrealloc(run->partial, run->partial_len + (size_t)n + 1);
        memcpy(run->partial + run->partial_len, buf, (size_t)n);
        run->partial_len += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < run->partial_len; i++) {
            if (run->partial[i] != '\n') continue;
            if (read_line(run, run->partial + start, i - start)) return -1;
            start = i + 1;
        }
        memmove(run->partial, run->partial + start, run->partial_len - start);
        run->partial_len -= start;
        if (run->partial_len > MAX_LINE) {
            snprintf(run->why, sizeof run->why, "metrics line %ld is longer than %d bytes", run->lines + 1, MAX_LINE);
            return -1;
        }
    }
    if (final && run->partial_len) {
        const size_t len = run->partial_len;
        run->partial_len = 0;
        return read_line(run, run->partial, len);
    }
    return 0;
}

// Where the Python helper (the package attnsweep, python/attnsweep/trial.py) is: beside an
// installed binary, PREFIX/ATTNSWEEP_PYTHON_RELDIR for PREFIX/bin/attnsweep, else the
// source tree it was built from (ATTNSWEEP_PYTHON_SOURCE); NULL when neither holds it.
static char *helper_dir(void) {
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
        char *module = path_join(dirs[k], "attnsweep/trial.py");
        if (access(module, R_OK) == 0) found = realpath(dirs[k], NULL);
        free(module);
    }
    free(installed);
    return found;
}

// The program's environment: attnsweep's own without the MPI job's variables (and the
// ones set here), then the protocol's, the Python helper's directory first on PYTHONPATH,
// and the resources'.
static char **child_environment(const Run *run, const char *resume, const char *devices, char *err, size_t errlen) {
    static const char *const dropped[] = {"OMPI_", "PMIX_", "PMI_", "ATTNSWEEP_"};
    const ProgramSpec *ps = run->spec;
    char *helper = helper_dir();
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
        free(helper);
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
static int spawn(Run *run, char **argv, char **envp) {
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
    return 0;
}

// Reap what has exited in the program's group; 1 once the program and every process of
// its group are gone (the worker is their subreaper, so orphans come back to it). What is
// left in the group once the program exited is killed: it cannot hold the trial open.
static int group_gone(Run *run) {
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
static int own_cgroup(char *out, size_t len) {
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

// Every process of the cgroup at dir SIGKILLed: cgroup.kill, or pid by pid from cgroup.procs
// before Linux 5.14.
static void cgroup_kill(const char *dir) {
    char *path = path_join(dir, "cgroup.kill");
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    free(path);
    if (fd < 0 || write(fd, "1", 1) != 1) {
        path = path_join(dir, "cgroup.procs");
        FILE *f = fopen(path, "r");
        for (long pid; f && fscanf(f, "%ld", &pid) == 1;) kill((pid_t)pid, SIGKILL);
        if (f) fclose(f);
        free(path);
    }
    if (fd >= 0) close(fd);
}

// The cgroups of workers that died while their trial ran (kill -9, out of memory): what is
// left in them is killed (no longer anyone's descendant) and they are removed; one whose
// processes are still dying is left to the next trial's look.
static void cgroup_sweep_dead(const char *base) {
    DIR *d = opendir(base);
    for (struct dirent *e; d && (e = readdir(d));) {
        long pid;
        int id, end = 0;
        if (sscanf(e->d_name, "attnsweep-%ld-%d%n", &pid, &id, &end) != 2 || e->d_name[end] ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char *dir = path_join(base, e->d_name);
        cgroup_kill(dir);
        rmdir(dir);
        free(dir);
    }
    if (d) closedir(d);
}

static void cgroup_make(Run *run) {
    char base[4096];
    if (own_cgroup(base, sizeof base) != 0) return;
    cgroup_sweep_dead(base);
    char *dir = xmalloc(strlen(base) + 64), *procs = NULL;
    sprintf(dir, "%s/attnsweep-%ld-%d", base, (long)getpid(), run->r->id);
    const int fd = mkdir(dir, 0755) == 0 || errno == EEXIST ? open(procs = path_join(dir, "cgroup.procs"),
                                                                  O_WRONLY | O_CLOEXEC)
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
static void kill_survivors(Run *run) {
    if (run->cgroup) cgroup_kill(run->cgroup);
    kill_descendants();
    // A killed process leaves its cgroup once reaped; one still leaving is waited for.
    for (int k = 0; run->cgroup && k < 100 && rmdir(run->cgroup) != 0 && errno == EBUSY; k++) {
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
        kill_descendants();
    }
}

// SIGTERM to the program's group (once), SIGKILL when the grace is over.
static void terminate(Run *run, EndCause cause) {
    if (run->cause == END_NONE) run->cause = cause;
    const double now = now_seconds();
    if (run->kill_at == 0) {
        kill(-run->pid, SIGTERM);
        run->kill_at = now + run->spec->grace;
    } else if (now >= run->kill_at) {
        kill(-run->pid, SIGKILL);
    }
}

static off_t fd_size(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : 0;
}

// One look at the program (the leader): its exit, its new metric lines, its output, its
// time. Returns whether it is gone.
static int poll_program(Run *run) {
    const int gone = group_gone(run);
    if (run->cause != END_BAD_LINE && read_metrics(run, gone) != 0) {
        terminate(run, END_BAD_LINE);
        return group_gone(run);
    }
    const struct {
        int fd;
        const char *what;
    } outputs[] = {{run->out_fd, "stdout"}, {run->err_fd, "stderr"}, {run->metrics_fd, "its metrics file"}};
    for (size_t k = 0; k < 3 && run->cause == END_NONE; k++)  // also once it is gone: it may write fast and end
        if ((double)fd_size(outputs[k].fd) > run->spec->max_output) {
            snprintf(run->why, sizeof run->why, "the program wrote more than %.0f MiB to %s (budget max_output_mb)",
                     run->spec->max_output / 1048576.0, outputs[k].what);
            run->cause = END_OUTPUT;
            if (!gone) kill(-run->pid, SIGKILL);  // at once: a flood that ignores SIGTERM fills the disk in its grace
        }
    if (gone) return 1;
    const double limit = run->hooks->time_limit;
    if (limit > 0 && now_seconds() - run->t0 > limit && run->cause == END_NONE) terminate(run, END_TIME);
    if (run->cause != END_NONE) terminate(run, run->cause);  // SIGKILL once the grace is over
    return 0;
}

// The trial's directory, fresh; an earlier attempt's with files of the program's own
// becomes NNNNNN.resume (*resume gets its path). 0, or -1 with the reason in run->why.
static int trial_dir(Run *run, char **resume) {
    char name[32];
    snprintf(name, sizeof name, "%06d", run->r->id);
    if (make_dirs(run->spec->trials_dir) != 0) {
        file_failure(run, "make", run->spec->trials_dir);
        return -1;
    }
    struct stat st;
    if (lstat(run->spec->trials_dir, &st) == 0 && S_ISLNK(st.st_mode)) {
        snprintf(run->why, sizeof run->why, "%s is a symbolic link: attnsweep never writes through one",
                 run->spec->trials_dir);
        return -1;
    }
    char *top = realpath(run->spec->trials_dir, NULL);
    if (!top) {
        snprintf(run->why, sizeof run->why, "%s: %s", run->spec->trials_dir, strerror(errno));
        return -1;
    }
    run->dir = path_join(top, name);
    // The stop marks of its earlier hand-outs (trial/trialdir.h) are the sweep's: they are
    // set aside beside the directory and outlive it, or at the next resume every earlier
    // stop of a trial run again counted as a death (scripts/redteam/kill_campaign.sh found
    // trials failed after one kill of their worker).
    char marks[4096], kept[4096];
    const int keep = trial_dir_stopped(marks, sizeof marks, run->dir) == 0 &&
                     snprintf(kept, sizeof kept, "%s.stopped", run->dir) < (int)sizeof kept && rename(marks, kept) == 0;
    char *old = xmalloc(strlen(run->dir) + sizeof ".resume");
    sprintf(old, "%s.resume", run->dir);
    *resume = NULL;
    if (holds_program_files(run->dir)) {
        remove_tree(old);
        if (rename(run->dir, old) == 0) *resume = old;
    }
    if (!*resume) free(old);
    remove_tree(run->dir);
    free(top);
    const int made = mkdir(run->dir, 0777) == 0, e = errno;
    if (keep) rename(kept, marks);
    if (!made) {
        errno = e;
        file_failure(run, "make", run->dir);
        return -1;
    }
    run->metrics_path = path_join(run->dir, "metrics.jsonl");
    run->stdout_path = path_join(run->dir, "stdout");
    run->stderr_path = path_join(run->dir, "stderr");
    return 0;
}

// A file the runner writes in the trial's directory, never through a link planted at its name.
static int open_output(const char *path) {
    return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
}

// This attempt's curve record: e's n evaluations appended to TRIAL_DIR/curve.jsonl, or in
// place of what it held (rewrite; the leader). A record that cannot be written is given up
// with a warning: only a continued attempt would miss it.
static void record(Run *run, const Eval *e, int n, int rewrite) {
    const int fd = run->curve_fd;
    if (fd < 0 || ((!rewrite || (ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0)) && curve_file_write(fd, e, n) == 0))
        return;
    warnf("trial %d: cannot write %s/curve.jsonl: %s (a continued attempt would start without this curve)",
          run->r->id, run->dir, strerror(errno));
    close(run->curve_fd);
    run->curve_fd = -1;
}

// The leader starts the program: 0, or -1 with the reason in run->why. A continued attempt
// (resume) first reads the curve of the attempts before it, as far as their record reads.
static int start(Run *run) {
    char *resume = NULL;
    if (trial_dir(run, &resume) != 0) return -1;
    if (resume) {
        char *path = path_join(resume, "curve.jsonl"), why[600];
        curve_file_read(path, MAX_METRIC_LINES, &run->earlier, &run->n_earlier, why, sizeof why);
        if (why[0]) warnf("trial %d: %s", run->r->id, why);
        free(path);
    }
    cgroup_make(run);
    char *args_path = path_join(run->dir, "args.json");
    char *args = program_args_json(run->spec, &run->r->config);
    const int args_fd = open_output(args_path);
    FILE *f = args_fd >= 0 ? fdopen(args_fd, "w") : NULL;
    if (!f && args_fd >= 0) close(args_fd);
    int rc = f && fputs(args, f) >= 0 && fputc('\n', f) >= 0 ? 0 : -1;
    if (f && fclose(f) != 0) rc = -1;
    free(args);
    char **argv = NULL, **envp = NULL;
    int argc = 0;
    char devices[4096] = "", err[200];
    if (rc != 0) file_failure(run, "write", args_path);
    if (rc == 0 && program_command(run->spec, &run->r->config, args_path, &argv, &argc, err, sizeof err) != 0) {
        snprintf(run->why, sizeof run->why, "command: %s", err);
        rc = -1;
    }
    if (rc == 0 && run->spec->gpus > 0) {
        if (program_devices(run->hooks->device_slot, run->spec->gpus, getenv("CUDA_VISIBLE_DEVICES"), devices,
                            sizeof devices, err, sizeof err) != 0) {
            snprintf(run->why, sizeof run->why, "%s", err);
            rc = -1;
        }
    }
    if (rc == 0) {
        cJSON *words = json_must(cJSON_CreateStringArray((const char *const *)argv, argc));
        run->r->run.command = cJSON_PrintUnformatted(words);
        cJSON_Delete(words);
        run->out_fd = open_output(run->stdout_path);
        run->err_fd = open_output(run->stderr_path);
        const int m = open_output(run->metrics_path);
        if (m >= 0) close(m);
        run->metrics_fd = open(run->metrics_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char *curve_path = path_join(run->dir, "curve.jsonl");
        run->curve_fd = open_output(curve_path);
        free(curve_path);
        if (run->out_fd < 0 || run->err_fd < 0 || run->metrics_fd < 0 || run->curve_fd < 0) {
            file_failure(run, "open the files of", run->dir);
            rc = -1;
        }
        record(run, run->earlier, run->n_earlier, 0);
    }
    if (rc == 0) envp = child_environment(run, resume, run->spec->gpus > 0 ? devices : NULL, err, sizeof err);
    run->t0 = now_seconds();
    if (rc == 0) rc = spawn(run, argv, envp);
    program_argv_free(argv);
    program_argv_free(envp);
    free(args_path);
    free(resume);
    return rc;
}

static int group_size(const TrialHooks *h) {
    int n = 1;
    if (h->group) MPI_Comm_size(*h->group, &n);
    return n;
}

static void group_bcast(const TrialHooks *h, void *buf, int bytes) {
    if (h->group && group_size(h) > 1) MPI_Bcast(buf, bytes, MPI_BYTE, 0, *h->group);
}

// Every rank's answer combined (any nonzero counts).
static int group_any(const TrialHooks *h, int v) {
    if (h->group && group_size(h) > 1) MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, *h->group);
    return v;
}

// Doubling: a flood of lines is appended in linear time.
static void append_curve(TrialResult *r, int *cap, const CurvePoint *pt) {
    if (r->n_curve == *cap) r->curve = xrealloc(r->curve, (size_t)(*cap = 2 * *cap + 16) * sizeof *r->curve);
    r->curve[r->n_curve++] = *pt;
}

// Every rank, before the program's first poll: the curve of the earlier attempts (the
// leader's, shared) begins this trial's curve; their last program metric stands until this
// attempt reports one, and this attempt's seconds go on from their last evaluation's.
static void continue_curve(Run *run) {
    const TrialHooks *h = run->hooks;
    group_bcast(h, &run->n_earlier, sizeof run->n_earlier);
    if (!run->n_earlier) return;
    if (!run->leader) run->earlier = xmalloc((size_t)run->n_earlier * sizeof *run->earlier);
    group_bcast(h, run->earlier, run->n_earlier * (int)sizeof *run->earlier);
    TrialResult *r = run->r;
    r->curve = xrealloc(r->curve, (size_t)(r->n_curve + run->n_earlier) * sizeof *r->curve);
    for (int k = 0; k < run->n_earlier; k++) {
        const Eval *e = &run->earlier[k];
        r->curve[r->n_curve++] = e->pt;
        if (e->pt.seconds > run->seconds_before) run->seconds_before = e->pt.seconds;  // NaN: not
        run->metric_seen |= !isnan(e->metric);
    }
    r->program_metric = run->earlier[run->n_earlier - 1].metric;
}

// Every rank, at this attempt's first evaluation, at step `step`: the earlier attempts'
// evaluations at that step or later are replaced by this attempt's (it went back to a
// checkpoint taken before them, or started afresh), so the curve holds each step once and in
// order. The leader rewrites the record without them.
static void supersede(Run *run, int step) {
    TrialResult *r = run->r;
    int kept = 0;
    for (int k = 0; k < run->n_earlier; k++)
        if (run->earlier[k].pt.step < step) run->earlier[kept++] = run->earlier[k];
    for (int k = 0; k < kept; k++) r->curve[k] = run->earlier[k].pt;
    const int dropped = run->n_earlier - kept;
    r->n_curve = kept;  // the curve held the earlier evaluations alone
    run->n_earlier = 0;
    if (run->leader && dropped) record(run, run->earlier, kept, 1);
}

// The program runs; every rank of the group follows it until it is gone.
static void follow(Run *run, int started) {
    const TrialHooks *h = run->hooks;
    int curve_cap = run->r->n_curve;
    for (;;) {
        PollHeader head = {0};
        if (run->leader) head.ended = !started || poll_program(run);
        const int stop = group_any(h, h->should_stop && h->should_stop(h->ctx));
        if (run->leader) head.n_points = run->n_pending < MAX_POINTS_PER_POLL ? run->n_pending : MAX_POINTS_PER_POLL;
        if (head.ended && run->leader && run->n_pending > head.n_points) head.ended = 0;  // the rest next time
        if (run->leader) head.stopping = run->cause != END_NONE;
        group_bcast(h, &head, sizeof head);
        Eval *ev = run->leader ? run->pending : xmalloc((size_t)(head.n_points ? head.n_points : 1) * sizeof *ev);
        group_bcast(h, ev, head.n_points * (int)sizeof *ev);
        int prune = 0;
        for (int k = 0; k < head.n_points; k++) {
            if (run->n_earlier) supersede(run, ev[k].pt.step);
            append_curve(run->r, &curve_cap, &ev[k].pt);
            if (run->leader) record(run, &ev[k], 1, 0);
            run->r->program_metric = ev[k].metric;
            if (prune || head.stopping || !h->on_eval) continue;
            EvalPoint e = trial_eval_point(run->r, &ev[k].pt, h->reward);  // no invariants traced: no reward
            e.program_metric = ev[k].metric;
            prune = h->on_eval(h->ctx, &e, LONG_MAX);
        }
        if (run->leader && head.n_points) {
            memmove(run->pending, run->pending + head.n_points, (size_t)(run->n_pending - head.n_points) * sizeof *ev);
            run->n_pending -= head.n_points;
        } else if (!run->leader) {
            free(ev);
        }
        if (head.ended) return;
        if (run->leader && (prune || stop)) terminate(run, stop ? END_STOPPED : END_PRUNED);
        nanosleep(&(struct timespec){0, POLL_MS * 1000000L}, NULL);
    }
}

static const char *signal_text(int sig) {
    const char *s = strsignal(sig);
    return s ? s : "unknown";
}

// The reason of a trial whose lines never held the sweep's own metric: the keys they held
// and the closest of them (a typo in the sweep's metric: name).
static void never_reported(Run *run) {
    const char *names[MAX_KEYS_SEEN], *metric = run->spec->metric;
    char held[160] = "";
    for (int k = 0; k < run->n_keys; k++) {
        names[k] = run->keys[k];
        snprintf(held + strlen(held), sizeof held - strlen(held), "%s%s", k ? ", " : "", run->keys[k]);
    }
    const char *closest = closest_name(metric, names, run->n_keys);
    char line[512];  // fits whole; the reason keeps what its field holds
    snprintf(line, sizeof line, "the program never reported the sweep's metric \"%s\" (its lines held %s%s%s%s)", metric,
             run->n_keys ? held : "no other number", closest ? "; did you mean \"" : "", closest ? closest : "",
             closest ? "\"?" : "");
    snprintf(run->r->reason, sizeof run->r->reason, "%.*s", (int)sizeof run->r->reason - 1, line);
}

// The leader's verdict once the program is gone (status and reason of r).
static void verdict(Run *run) {
    TrialResult *r = run->r;
    const int last = r->n_curve ? r->curve[r->n_curve - 1].step : 0;
    r->steps = last;
    switch (run->cause) {
    case END_PRUNED:
        r->status = TRIAL_PRUNED;
        snprintf(r->reason, sizeof r->reason, "stopped by the scheduler at step %d", last);
        return;
    case END_STOPPED:
        r->status = TRIAL_INTERRUPTED;
        return;
    case END_TIME:
        r->status = TRIAL_FAILED;
        snprintf(r->reason, sizeof r->reason, "time limit of %g s exceeded at step %d (SIGTERM, then SIGKILL after %g s)",
                 run->hooks->time_limit, last, run->spec->grace);
        return;
    case END_OUTPUT:
    case END_BAD_LINE:
        r->status = TRIAL_FAILED;
        snprintf(r->reason, sizeof r->reason, "%s", run->why);
        return;
    case END_NONE: break;
    }
    if (!run->exited && run->no_space) {  // the disk's fault, not the trial's: --resume runs it
        warnf("trial %d: %s: given back, --resume runs it", r->id, run->why);
        r->status = TRIAL_INTERRUPTED;
        return;
    }
    r->status = TRIAL_FAILED;
    if (!run->exited)
        snprintf(r->reason, sizeof r->reason, "%s", run->why);
    else if (WIFSIGNALED(run->status))
        snprintf(r->reason, sizeof r->reason, "the program was killed by signal %d (%s)", WTERMSIG(run->status),
                 signal_text(WTERMSIG(run->status)));
    else if (WEXITSTATUS(run->status) != 0)
        snprintf(r->reason, sizeof r->reason, "the program exited with code %d", WEXITSTATUS(run->status));
    else if (r->n_curve == 0)  // in this attempt or an earlier one
        snprintf(r->reason, sizeof r->reason, "the program wrote no metrics to ATTNSWEEP_METRICS");
    else if (run->spec->metric[0] && !run->metric_seen)
        never_reported(run);
    else
        r->status = TRIAL_OK;
}

// The checkpoint: the one a line named, else TRIAL_DIR/model.safetensors, or its sharded
// index; NULL when there is none.
static char *checkpoint_path(const Run *run) {
    if (run->checkpoint) return xstrdup(run->checkpoint);
    static const char *const names[] = {"model.safetensors", "model.safetensors.index.json"};
    for (size_t k = 0; k < 2; k++) {
        char *p = path_join(run->dir, names[k]);
        if (access(p, F_OK) == 0) return p;
        free(p);
    }
    return NULL;
}

// Layers of the checkpoint as r's final weights (every rank reads it); 0, or -1 with the
// reason in why. The reader takes regular files only, opened without blocking, with each
// header and config.json bounded: a FIFO, a device or a sparse giant the program left fails
// the trial at once.
static int read_checkpoint(TrialResult *r, const char *path, TensorView view, char *why, size_t len) {
    AttentionLayers a;
    char err[1024];
    if (safetensors_attention(path, 0, &a, err, sizeof err) != 0) {
        snprintf(why, len, "checkpoint %s", err);
        return -1;
    }
    if (!a.out && view == TENSOR_FUNCTION) {
        snprintf(why, len, "checkpoint %s has no output projections, which the function-level tensor needs (reward "
                           "tensor: parameters scores Q, K and V alone)", path);
        attention_layers_free(&a);
        return -1;
    }
    attention_layers_whole_network(&a);
    r->n_layers = a.n_layers;
    memcpy(r->dims, a.dims, sizeof r->dims);
    memcpy(r->out_dims, a.out_dims, sizeof r->out_dims);
    r->weights = a.weights;
    r->weights_out = a.out ? a.out : xcalloc((size_t)a.n_layers, sizeof *r->weights_out);
    a.weights = a.out = NULL;  // the trial's now
    attention_layers_free(&a);
    return 0;
}

// Text the group's leader has, to every rank (NULL stays NULL).
static char *share_text(const TrialHooks *h, int leader, const char *text) {
    int n = leader ? (text ? (int)strlen(text) + 1 : 0) : 0;
    group_bcast(h, &n, sizeof n);
    if (!n) return NULL;
    char *s = leader ? xstrdup(text) : xmalloc((size_t)n);
    group_bcast(h, s, n);
    return s;
}

// After the program: the verdict, the files, the checkpoint (read by every rank).
static void finish(Run *run) {
    const TrialHooks *h = run->hooks;
    TrialResult *r = run->r;
    if (run->leader) {
        verdict(run);
        r->run.dir = xstrdup(run->dir ? run->dir : "");
        r->run.stdout_path = xstrdup(run->stdout_path ? run->stdout_path : "");
        r->run.stderr_path = xstrdup(run->stderr_path ? run->stderr_path : "");
        r->run.metrics_path = xstrdup(run->metrics_path ? run->metrics_path : "");
        r->run.stderr_tail = run->stderr_path ? file_tail(run->stderr_path) : xstrdup("");
        if (!r->run.command) r->run.command = xstrdup("[]");
        r->seconds = r->train_seconds = run->t0 > 0 ? now_seconds() - run->t0 : 0;
        r->test_accuracy = run->test_accuracy, r->test_loss = run->test_loss, r->n_params = run->n_params;
    }
    int head[3] = {r->status, r->steps, (int)(r->n_params > 2147483647L ? 2147483647L : r->n_params)};
    group_bcast(h, head, sizeof head);
    r->status = head[0], r->steps = head[1], r->n_params = head[2];
    char *path = run->leader && trial_status_measured(r->status) ? checkpoint_path(run) : NULL;
    char *shared = share_text(h, run->leader, path);
    free(path);
    path = shared;
    char why[1200] = "";
    int failed = 0;
    if (path) failed = read_checkpoint(r, path, h->reward->tensor, why, sizeof why) != 0;
    else if (run->leader && trial_status_measured(r->status) && run->spec->needs_checkpoint)
        failed = 1, snprintf(why, sizeof why, "no checkpoint: the program wrote no %s/model.safetensors and named none "
                                             "(this sweep scores the program's attention weights)", run->dir);
    if (group_any(h, failed)) {  // a failure on any rank fails the trial everywhere
        if (run->leader) {
            r->status = TRIAL_FAILED;
            snprintf(r->reason, sizeof r->reason, "%.*s", (int)sizeof r->reason - 1,  // a long path's end is cut
                     why[0] ? why : "the checkpoint is unreadable on another rank of the group");
        }
        r->status = TRIAL_FAILED;
        for (int l = 0; l < r->n_layers; l++) free(r->weights[l]), free(r->weights_out[l]);
        free(r->weights), free(r->weights_out);
        r->weights = r->weights_out = NULL, r->n_layers = 0;
    }
    if (run->leader) r->run.checkpoint = xstrdup(path && r->n_layers ? path : "");
    if (run->leader && r->status == TRIAL_FAILED) trial_reason_add_stderr(r);  // the why, beside the what
    free(path);
}

static void close_run(Run *run) {
    const int fds[] = {run->out_fd, run->err_fd, run->metrics_fd, run->curve_fd, run->cgroup_procs};
    for (size_t k = 0; k < sizeof fds / sizeof fds[0]; k++)
        if (fds[k] > 0) close(fds[k]);
    free(run->cgroup), free(run->dir), free(run->metrics_path), free(run->stdout_path), free(run->stderr_path),
        free(run->checkpoint);
    free(run->partial), free(run->pending), free(run->earlier);
}

typedef struct {
    TrialRunner runner;
    const ProgramSpec *spec;
} External;

static void external_run(TrialRunner *self, const TrialConfig *c, const TrialHooks *hooks, TrialResult *r) {
    const External *x = (const External *)self;
    int rank = 0;
    if (hooks->group) MPI_Comm_rank(*hooks->group, &rank);
    Run run = {.spec = x->spec, .hooks = hooks, .r = r, .leader = rank == 0, .out_fd = -1, .err_fd = -1,
               .metrics_fd = -1, .curve_fd = -1, .cgroup_procs = -1, .test_accuracy = NAN, .test_loss = NAN};
    r->program_metric = NAN;
    int started = 0;
    if (run.leader) started = start(&run) == 0;
    continue_curve(&run);
    follow(&run, started);
    if (run.leader) kill_survivors(&run);
    finish(&run);
    close_run(&run);
    (void)c;
}

static void external_free(TrialRunner *self) { free(self); }

TrialRunner *trial_external_runner(const ProgramSpec *spec) {
    // Orphans of a program (its children, once it exited) come back to the worker, which
    // reaps them: the program's process group is empty when they are gone.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    External *x = xcalloc(1, sizeof *x);
    x->runner = (TrialRunner){.run = external_run, .free = external_free};
    x->spec = spec;
    return &x->runner;
}
