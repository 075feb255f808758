// external.c: the researcher's program as a trial runner (external.h): one trial driven
// through the program, on every rank of its group, and the checkpoint scored. The command
// comes from program.c, the trial's directory from external_dir.c, the metric lines from
// external_lines.c, the process and its containment from external_child.c.
//
// One trial, on the group's leader: make the trial's directory (an earlier attempt's
// goes to NNNNNN.resume), expand the command, fork and exec the program in a process
// group of its own with stdout and stderr in files, then look at it every POLL_MS, and at
// once when it exits (its pidfd wakes the leader): reap it, read the complete lines the
// metrics file gained, watch the output sizes and the time limit. Each look is one step
// of the whole group (collectives over hooks->group): the stop requests are combined, the
// leader broadcasts the new evaluations, and every rank asks on_eval about each (ASHA), so
// a stop is the same everywhere. A stop sends SIGTERM to the program's group, SIGKILL
// `grace` seconds later. At the end every rank reads the checkpoint (io/safetensors.h, as
// `attnsweep score` does) for trial_run to score.
#define _GNU_SOURCE
#include "trial/external_impl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
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

enum {
    POLL_MS = 20,               // between two looks at the program
    MAX_POINTS_PER_POLL = 4096, // evaluations broadcast at once (more wait for the next poll)
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

// ---------------------------------------------------------------- one run

// What the group shares at each poll: the new evaluations and whether the program ended.
typedef struct {
    int n_points;
    int ended;            // the program and its whole process group are gone
    int stopping;         // the program is being stopped: ASHA is not asked again
} PollHeader;

static off_t fd_size(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : 0;
}

// One look at the program (the leader): its exit, its new metric lines, its output, its
// time. Returns whether it is gone.
static int poll_program(Run *run) {
    const int gone = external_group_gone(run);
    if (run->cause != END_BAD_LINE && external_read_metrics(run, gone) != 0) {
        external_terminate(run, END_BAD_LINE);
        return external_group_gone(run);
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
    if (limit > 0 && now_seconds() - run->t0 > limit && run->cause == END_NONE) external_terminate(run, END_TIME);
    if (run->cause != END_NONE) external_terminate(run, run->cause);  // SIGKILL once the grace is over
    return 0;
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
    if (external_trial_dir(run, &resume) != 0) return -1;
    if (resume) {
        char *path = external_path_join(resume, "curve.jsonl"), why[600];
        curve_file_read(path, MAX_METRIC_LINES, &run->earlier, &run->n_earlier, why, sizeof why);
        if (why[0]) warnf("trial %d: %s", run->r->id, why);
        free(path);
    }
    external_cgroup_make(run);
    char *args_path = external_path_join(run->dir, "args.json");
    char *args = program_args_json(run->spec, &run->r->config);
    const int args_fd = external_open_output(args_path);
    FILE *f = args_fd >= 0 ? fdopen(args_fd, "w") : NULL;
    if (!f && args_fd >= 0) close(args_fd);
    int rc = f && fputs(args, f) >= 0 && fputc('\n', f) >= 0 ? 0 : -1;
    if (f && fclose(f) != 0) rc = -1;
    free(args);
    char **argv = NULL, **envp = NULL;
    int argc = 0;
    char devices[4096] = "", err[200];
    if (rc != 0) external_file_failure(run, "write", args_path);
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
        run->out_fd = external_open_output(run->stdout_path);
        run->err_fd = external_open_output(run->stderr_path);
        const int m = external_open_output(run->metrics_path);
        if (m >= 0) close(m);
        run->metrics_fd = open(run->metrics_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char *curve_path = external_path_join(run->dir, "curve.jsonl");
        run->curve_fd = external_open_output(curve_path);
        free(curve_path);
        if (run->out_fd < 0 || run->err_fd < 0 || run->metrics_fd < 0 || run->curve_fd < 0) {
            external_file_failure(run, "open the files of", run->dir);
            rc = -1;
        }
        record(run, run->earlier, run->n_earlier, 0);
    }
    if (rc == 0) envp = external_environment(run, resume, run->spec->gpus > 0 ? devices : NULL, err, sizeof err);
    run->t0 = now_seconds();
    if (rc == 0) rc = external_spawn(run, argv, envp);
    external_cgroup_sweep_dead();  // while the program starts
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
        if (run->leader && (prune || stop)) external_terminate(run, stop ? END_STOPPED : END_PRUNED);
        if (run->leader)
            external_wait(run, POLL_MS);  // its exit is seen at once, not at the next look
        else
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
        char *p = external_path_join(run->dir, names[k]);
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
        r->run.stderr_tail = run->stderr_path ? external_file_tail(run->stderr_path) : xstrdup("");
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
    const int fds[] = {run->out_fd, run->err_fd, run->metrics_fd, run->curve_fd, run->cgroup_procs, run->pidfd};
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
               .metrics_fd = -1, .curve_fd = -1, .cgroup_procs = -1, .pidfd = -1, .test_accuracy = NAN,
               .test_loss = NAN};
    r->program_metric = NAN;
    int started = 0;
    if (run.leader) started = start(&run) == 0;
    continue_curve(&run);
    follow(&run, started);
    if (run.leader) external_kill_survivors(&run);
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
