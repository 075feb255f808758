// coordinator.c: rank 0. Hands out trials to worker groups as they ask, decides ASHA
// rungs, journals and stores every finished trial, prints progress, and stops cleanly
// on SIGTERM/SIGUSR1, or when the first trials of a run all fail the same way.
//
// A sweep shared by several jobs (run --shared: store/journal.h) has one coordinator per
// job. Each reads what the others appended to the journal before it hands out a trial or
// records one, under the journal's append lock, so that a trial is handed out by one job
// at a time and recorded once: done, held (handed out by a job whose lease has not run
// out), or free. A job renews its lease every LEASE_RENEWALS-th of the lease; one whose
// lease ran out (it died) has its running trials taken by the next job that looks, each
// counting a death as a single job's resume counts it (sweep/recovery.h). The other jobs'
// trials reach this one's sampler and ASHA's rungs as they are read; ASHA decides on the
// rung values this job knows: its own trials' reports and the others' finished curves.
// One job at a time keeps the results file (journal_take_writer): it writes the others'
// trials as it reads them, and the last job to end leaves it whole.
#define _POSIX_C_SOURCE 200809L
#include <gsl/gsl_rng.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "common/outfile.h"
#include "common/util.h"
#include "params/config_json.h"
#include "space/asha.h"
#include "space/space.h"
#include "store/h5store.h"
#include "store/journal.h"
#include "sweep/coordinator.h"
#include "sweep/protocol.h"
#include "sweep/recovery.h"
#include "trial/trialdir.h"

enum { PROGRESS_SECONDS = 5, MAX_WAIT_SECONDS = 60 };
// Shared: how often a job reads the journal while nothing else makes it (its waiting
// groups may get a trial a dead job held), and renews its lease (this many times a lease).
enum { SYNC_SECONDS = 1, LEASE_RENEWALS = 4 };
// A resume that writes the results file anew does it between polls, this long at a time
// (about 20 trials), so that its workers start at once and wait at most this for an answer.
#define CATCH_UP_SECONDS 0.02
// A stop (a signal: Slurm's time limit) leaves those still unwritten after this long to the
// next resume, so that it ends in time (docs/run.md).
#define STOP_CATCH_UP_SECONDS 2.0
// A single job writes a snapshot of what its journal amounts to (store/journal.h) every
// run --snapshot-every seconds while it journals, and at its end, so that a resume
// replays only the records after the last one. Its state bytes begin with SNAPSHOT_VERSION.
enum { SNAPSHOT_VERSION = 1 };

typedef struct {
    const SweepSpec *spec;
    const SweepComms *sc;
    const RunOptions *options;
    Sampler *sampler;
    char *done;             // [trials]: recorded (from the journal or this run)
    int *order;             // [trials]: the order trial ids are handed out in
    int next;               // position in order of the next trial to hand out
    int n_done, n_ok, n_pruned, n_failed, n_running, n_resumed;
    int n_retried;          // failed trials of the journal run again (--retry-failed)
    long steps_run;         // optimizer steps of the trials recorded this run
    double best;            // best final metric so far (larger is better)
    int best_id;
    char first_failure[300];  // "trial N: reason" of the first failed trial recorded
    // budget.max_failures: the trials this run recorded, while all of them failed the same
    // way (-1 once one did not), that way (trial_reason_key), and "trial N: reason" of the
    // one that made them max_failures (the sweep then stops).
    int same_failures;
    char failure_key[256];
    char failure_stop[300];
    int stopping;           // no more trials are handed out, the running ones are stopped
    double stop_time;
    int *busy;              // [groups]: trial id a group is running, -1 idle
    TrialAssign *sent;      // [groups]: the last trial handed to a group, while MPI sends it
    MPI_Request *sending;   // [groups]: that send (MPI_REQUEST_NULL once complete)
    int finished_groups;
    Asha asha;              // the rungs and every metric reported at them
    Journal *journal;
    H5Store *store;
    const char *output;     // the results file: its trials' directories are beside it
    Recovery recovery;      // the journal's hand-outs: trials whose worker died
    // Trials journaled in the current group commit (journal_group_begin): once it is
    // synced (commit), their checkpoints go and they are written to the results file.
    TrialResult *pending;
    long *pending_at;       // where each is in the journal
    int n_pending, cap_pending;
    StoreMeta meta;         // the results file's root attributes
    const char *objective[SPACE_MAX_OBJECTIVES];  // meta's objectives
    // A shared sweep: each job seen in the journal, its lease (lease_live), its YAML's
    // crc32; this job's, and when it last read the journal and renewed its lease.
    struct {
        long job;
        double written_until;   // Unix time, on the clock of the job that wrote it
        double seconds;         // its lease (0: it ended)
        double observed_until;  // now_seconds() when this job saw it renewed, + seconds
        unsigned yaml_crc;
    } *leases;
    int n_leases;
    unsigned yaml_crc;
    double last_sync, last_renew;
    int same_yaml;          // every run in the journal so far started from this YAML text (resumed; the trials
                            // of a snapshot this text's run wrote count as its own)
    double t0, last_progress;
    double handling;        // seconds spent answering messages (journal and HDF5 writes included)
    // Every trial recorded, in journal order: what a resume's replay takes from its record
    // (digest_trial) and where the record stands: the content of a snapshot.
    Bytes digests;
    JournalStanding *standing;
    size_t n_standing, cap_standing;
    double *numbers;        // scratch: sampler_report_size numbers
    double last_snapshot;   // when this run last wrote one
    int snapshot_due;       // this run journaled something since (or replayed a journal without one)
    long snapshot_end, snapshot_bytes;  // where the last one (written or read) ends, and its size
    long snapshot_at;       // the snapshot this resume started from (-1: none)
    long tail_records;      //   and the records replayed after it
} Coordinator;

// ASHA's reports of a recorded trial as the run that recorded it made them: each rung its
// curve passed (metric[k] at rung k), where it went on, and the last where it was pruned
// (go_on 0: so its configuration's other repeats follow the same decisions). A program's
// trial has no step budget (its rungs go on as long as its lines do), and its own metric
// is not in its curve: a sweep on such a metric has none. Their count (<= MAX_RUNGS).
static int asha_reports(const Coordinator *co, const TrialResult *r, double *metric, int *go_on) {
    const Asha *a = &co->asha;
    if (metric_is_program(co->sc->goal.metric)) return 0;
    const long total = space_is_program(co->spec) ? LONG_MAX : r->config.steps;
    const int counted = co->spec->program.count_reports;  // rungs count the evaluations (worker.c)
    int next = 0;
    for (int i = 0, reports = 0; i < r->n_curve; i++) {
        const CurvePoint *pt = &r->curve[i];
        const EvalPoint e = trial_eval_point(r, pt, &co->spec->reward);
        const double m = sweep_eval_metric(&co->sc->goal, &e);
        if (counted && !isfinite(m)) continue;
        if (!asha_at_rung(a->steps, a->n_rungs, next, counted ? ++reports : pt->step, total)) continue;
        metric[next] = m;
        go_on[next++] = !(r->status == TRIAL_PRUNED && i == r->n_curve - 1);
    }
    return next;
}

// Hand out no more trials and stop the running ones: they are given back unfinished and
// run again on --resume.
static void begin_stop(Coordinator *co) {
    co->stopping = 1;
    co->stop_time = now_seconds();
    for (int k = 0; k < co->sc->n_groups; k++)
        if (co->busy[k] >= 0) MPI_Send(NULL, 0, MPI_BYTE, group_leader(co->sc, k), TAG_STOP, MPI_COMM_WORLD);
}

// budget.max_failures: a run whose first trials all fail the same way stops at the
// max_failures-th (a program that cannot start, a missing module: every trial would
// fail so, each costing a start). A trial that did not fail, or failed another way, ends
// the watch for the run.
static void watch_failures(Coordinator *co, const TrialResult *r) {
    if (co->spec->max_failures == 0 || co->same_failures < 0) return;
    char key[sizeof co->failure_key];
    trial_reason_key(r->reason, key, sizeof key);
    if (r->status != TRIAL_FAILED || (co->same_failures > 0 && strcmp(key, co->failure_key))) {
        co->same_failures = -1;
        return;
    }
    memcpy(co->failure_key, key, sizeof key);
    if (++co->same_failures < co->spec->max_failures || co->n_done == co->spec->trials || co->stopping) return;
    snprintf(co->failure_stop, sizeof co->failure_stop, "trial %d: %s", r->id, r->reason);
    begin_stop(co);
}

// This job's own record, told to the recovery as another job's is: a shared sweep's search
// for free trials reads it there, and a snapshot keeps what the records amount to.
static void own_record(Coordinator *co, const JournalRecord *rec) {
    recovery_visit(&co->recovery, rec);
    co->snapshot_due = 1;  // (a hand-out, too: the recovery's running trials)
}

// What a resume's replay takes from trial r's record, appended to co->digests: u8 status,
// f64 final metric (sweep_final_metric), the sampler's numbers (sampler_report_take),
// u8 k and ASHA's k reports (f64 metric, u8 go_on: asha_reports).
static void digest_trial(Coordinator *co, const TrialResult *r) {
    Bytes *b = &co->digests;
    bytes_put_u8(b, (unsigned)r->status);
    bytes_put_f64(b, sweep_final_metric(&co->sc->goal, r));
    sampler_report_take(co->sampler, r, co->numbers);
    for (int k = 0; k < sampler_report_size(co->sampler); k++) bytes_put_f64(b, co->numbers[k]);
    double metric[MAX_RUNGS];
    int go_on[MAX_RUNGS];
    const int k = asha_reports(co, r, metric, go_on);
    bytes_put_u8(b, (unsigned)k);
    for (int i = 0; i < k; i++) bytes_put_f64(b, metric[i]), bytes_put_u8(b, (unsigned)go_on[i]);
}

// Trial id recorded by its digest (read from rd): done, counted, the best so far, told to
// the sampler (failed ones too: evolution counts on every result) and, for a trial from
// the journal, to ASHA (this run's told it as they ran). 0, or -1 when rd fails.
static int apply_digest(Coordinator *co, int id, ByteReader *rd, int from_journal) {
    const unsigned status = br_u8(rd);
    const double m = br_f64(rd);
    for (int k = 0; k < sampler_report_size(co->sampler); k++) co->numbers[k] = br_f64(rd);
    const int n_reports = (int)br_u8(rd);
    if (rd->failed || status > TRIAL_FAILED || n_reports > co->asha.n_rungs) return -1;
    co->done[id] = 1;
    co->n_done++;
    if (status == TRIAL_PRUNED) co->n_pruned++;
    else if (status == TRIAL_FAILED) co->n_failed++;
    else co->n_ok++;
    if (!isnan(m) && (co->best_id < 0 || m > co->best)) co->best = m, co->best_id = id;
    sampler_report_numbers(co->sampler, id, (TrialStatus)status, co->numbers);
    for (int k = 0; k < n_reports; k++) {
        const double metric = br_f64(rd);
        const int go_on = (int)br_u8(rd);
        if (from_journal) asha_replay(&co->asha, id, k, metric, go_on);
    }
    co->n_resumed += from_journal;
    return rd->failed ? -1 : 0;
}

// Trial id's record, at `at`, stands for it.
static void stand(Coordinator *co, int id, long at) {
    if (co->n_standing == co->cap_standing)
        co->standing = xrealloc(co->standing, (co->cap_standing = 2 * co->cap_standing + 1024) * sizeof *co->standing);
    co->standing[co->n_standing++] = (JournalStanding){id, at};
}

// Trial r, journaled at `at`, recorded: from the journal (a resume's replay, or another
// job's) or run now.
static void record(Coordinator *co, const TrialResult *r, int from_journal, long at) {
    if (!from_journal) own_record(co, &(JournalRecord){.kind = JOURNAL_TRIAL, .trial = *r});
    if (r->status == TRIAL_FAILED && !co->first_failure[0])
        snprintf(co->first_failure, sizeof co->first_failure, "trial %d: %s", r->id, r->reason);
    const size_t from = co->digests.len;
    digest_trial(co, r);
    char err[128];
    ByteReader rd = byte_reader(co->digests.data + from, co->digests.len - from, "trial digest", err, sizeof err);
    if (apply_digest(co, r->id, &rd, from_journal) != 0) die(EXIT_RUNTIME, "internal error: %s", err);
    stand(co, r->id, at);
    co->snapshot_due = 1;  // another job's trial too (the resume's replay sets it afresh after)
    if (!from_journal) co->steps_run += r->steps, watch_failures(co, r);
}

static void progress(Coordinator *co, int final) {
    double now = now_seconds();
    if (!final && now - co->last_progress < PROGRESS_SECONDS) return;
    co->last_progress = now;
    const int total = co->spec->trials, run_now = co->n_done - co->n_resumed;
    double elapsed = now - co->t0, per_hour = elapsed > 0 ? 3600.0 * run_now / elapsed : 0.0;
    double eta = run_now > 0 ? (total - co->n_done) * elapsed / run_now : 0.0;
    char of[32] = "";  // W&B's sweep without run_cap has no end to count to
    if (!co->spec->until_stopped) snprintf(of, sizeof of, "/%d", total);
    fprintf(stderr, "sweep %s: %d%s done%s (%d ok, %d pruned, %d failed), %d running", co->spec->name, co->n_done, of,
            co->spec->until_stopped ? ", until stopped" : "", co->n_ok, co->n_pruned, co->n_failed, co->n_running);
    if (co->best_id >= 0)
        fprintf(stderr, " | best %s %.4f (trial %d)", co->spec->metric, co->sc->goal.maximize ? co->best : -co->best,
                co->best_id);
    fprintf(stderr, " | %.0f trials/h", per_hour);
    if (!final && run_now > 0 && !co->spec->until_stopped) fprintf(stderr, " | ETA %.0f min", eta / 60.0);
    fprintf(stderr, "\n");
}

// Trial r, journaled at byte `at`, into the results file (flushed by the next commit).
static void store_trial(Coordinator *co, const TrialResult *r, long at) {
    if (co->store) h5store_write_journaled(co->store, r, at);  // a shared sweep's other jobs: the writer writes it
}

// A trial this job journaled: taken over (its arrays too) until commit.
static void defer(Coordinator *co, TrialResult *r, long at) {
    if (co->n_pending == co->cap_pending) {
        co->cap_pending = co->cap_pending ? 2 * co->cap_pending : 8;
        co->pending = xrealloc(co->pending, (size_t)co->cap_pending * sizeof *co->pending);
        co->pending_at = xrealloc(co->pending_at, (size_t)co->cap_pending * sizeof *co->pending_at);
    }
    co->pending_at[co->n_pending] = at;
    co->pending[co->n_pending++] = *r;
}

// The group commit: one fsync for the trials journaled since journal_group_begin, then
// what waits for it (their checkpoints removed, the results file written).
static void commit(Coordinator *co) {
    journal_group_end(co->journal);
    for (int i = 0; i < co->n_pending; i++) {
        TrialResult *r = &co->pending[i];
        char dir[PROTOCOL_PATH_MAX];
        trial_dir_path(dir, sizeof dir, co->output, r->id);
        trial_dir_finish(dir);  // its checkpoint is no longer needed
        store_trial(co, r, co->pending_at[i]);
        trial_result_free(r);
    }
    co->n_pending = 0;
    if (co->store) h5store_flush(co->store);  // once for the group (and other jobs' trials read since)
}

// Trial id, dead with its worker max_deaths times, recorded failed with that reason: 1
// when it was.
static int fail_dead(Coordinator *co, int id) {
    TrialResult r;
    if (co->recovery.deaths[id] < co->spec->max_deaths ||
        recovery_failed_trial(&co->recovery, id, &co->spec->reward, &r) != 0)
        return 0;
    warnf("sweep %s: trial %d failed: %s", co->spec->name, id, r.reason);
    const long at = journal_append(co->journal, &r);
    record(co, &r, 0, at);
    defer(co, &r, at);
    return 1;
}

// Whether a job's hand-outs are still its own: this job's are; another's until its lease
// has run out, which takes its end as written being past, and either a lease more past
// (its clock may be behind this one's by up to a lease) or no renewal seen by this job
// for a lease (so this job's own clock measures it); a job that ended (0 seconds), a
// single job's hand-outs (-1) and a job with no lease are over.
static int lease_live(const Coordinator *co, long job) {
    if (job == journal_job(co->journal)) return 1;
    for (int i = 0; i < co->n_leases; i++) {
        if (co->leases[i].job != job) continue;
        const double unix_now = unix_seconds(), end = co->leases[i].written_until;
        const int over = unix_now >= end + co->leases[i].seconds ||
                         (unix_now >= end && now_seconds() >= co->leases[i].observed_until);
        return co->leases[i].seconds > 0 && !over;
    }
    return 0;
}

// The position in order of the next trial to hand out, or -1 when none is free. A single
// job: the next not done (the ones before co->next are done or run here). A shared sweep:
// the first neither done nor held by a live job; a trial whose job's lease ran out is
// free again, its run a death (one dead max_deaths times is recorded failed instead).
// *held: another job holds a trial not done (a group waits for it rather than leave).
static int next_free(Coordinator *co, int *held) {
    const int n = co->spec->trials;
    *held = 0;
    while (co->next < n && co->done[co->order[co->next]]) co->next++;
    if (!journal_shared(co->journal)) return co->next < n ? co->next : -1;
    Recovery *rc = &co->recovery;
    for (int i = co->next; i < n; i++) {
        const int id = co->order[i];
        if (co->done[id]) continue;
        if (rc->running[id] && lease_live(co, rc->job[id])) {
            *held |= rc->job[id] != journal_job(co->journal);
            continue;
        }
        if (rc->running[id]) {
            recovery_end_run(rc, id);
            if (fail_dead(co, id)) continue;
        }
        return i;
    }
    return -1;
}

// The next trial for a free group: 1 with *t filled, 0 when none is left, -1 when
// evolution must wait for results first, or another job holds the trials left.
static int next_trial(Coordinator *co, TrialAssign *t) {
    int held;
    const int at = next_free(co, &held);
    if (at < 0) return held ? -1 : 0;
    memset(t, 0, sizeof *t);
    const int id = co->order[at];
    if (sampler_config(co->sampler, id, &t->config) != 0) return -1;
    t->id = id;
    if (!journal_shared(co->journal)) co->next++;
    t->n_rungs = co->asha.n_rungs;
    memcpy(t->rungs, co->asha.steps, sizeof t->rungs);
    t->time_limit = co->spec->time_limit;
    t->reward = co->spec->reward;
    t->energy = co->spec->energy;
    t->checkpoint_every = co->spec->checkpoint_every;
    t->mem_limit = co->spec->mem_bytes;
    trial_dir_path(t->trial_dir, sizeof t->trial_dir, co->output, id);
    return 1;
}

static int group_of_leader(const SweepComms *sc, int rank) { return (rank - 1) / sc->group_size; }

// ---- a sweep shared with other jobs

static void note_lease(Coordinator *co, const JournalRecord *rec) {
    int i = 0;
    while (i < co->n_leases && co->leases[i].job != rec->job) i++;
    if (i == co->n_leases) co->leases = xrealloc(co->leases, (size_t)++co->n_leases * sizeof *co->leases);
    co->leases[i].job = rec->job;
    co->leases[i].written_until = rec->time + rec->seconds;
    co->leases[i].seconds = rec->seconds;
    co->leases[i].observed_until = now_seconds() + rec->seconds;
    co->leases[i].yaml_crc = rec->yaml_crc;
}

// This job's lease: renewed for `seconds` (0: it ends), and noted beside the others' (a
// snapshot carries every job's).
static void renew_lease(Coordinator *co, double seconds) {
    co->last_renew = journal_lease(co->journal, seconds, co->yaml_crc);
    note_lease(co, &(JournalRecord){.kind = JOURNAL_LEASE, .job = journal_job(co->journal), .time = co->last_renew,
                                    .seconds = seconds, .yaml_crc = co->yaml_crc});
}

// A record another job appended: its trials are recorded here as the journal's are on a
// resume (the first record of a trial stands: a job whose lease ran out may have finished
// it too, and this job's own result came first then), its hand-outs and leases noted.
static void on_other(void *ctx, JournalRecord *rec) {
    Coordinator *co = ctx;
    if (rec->kind == JOURNAL_LEASE) note_lease(co, rec);
    if (rec->kind != JOURNAL_TRIAL) {
        recovery_visit(&co->recovery, rec);
        return;
    }
    TrialResult *r = &rec->trial;
    if (r->id >= 0 && r->id < co->spec->trials && !co->done[r->id]) {
        recovery_visit(&co->recovery, rec);
        record(co, r, 1, rec->offset);
        store_trial(co, r, rec->offset);
    }
    trial_result_free(r);
}

// The results file, kept by this job from now on: written afresh from the journal (the
// last writer may have died halfway through a trial).
static void become_writer(Coordinator *co) {
    char err[8192];
    outfile_remove_stale(co->output);  // a writer's, and only the writer writes them
    co->store = h5store_rebuild(co->output, &co->meta, co->journal, NULL, NULL, NULL, err, sizeof err);
    if (!co->store) die(EXIT_RUNTIME, "run: %s", err);
}

// Under the journal's lock: what the other jobs did since this one last looked, the
// results file taken over when its writer has gone, and the lease renewed when due.
static void shared_sync(Coordinator *co) {
    if (!journal_shared(co->journal)) return;
    char err[1024];
    if (journal_tail(co->journal, on_other, co, err, sizeof err) < 0) die(EXIT_RUNTIME, "run: %s", err);
    if (err[0]) warnf("%s", err);
    if (!co->store && journal_take_writer(co->journal)) become_writer(co);
    if (unix_seconds() - co->last_renew >= co->options->lease / LEASE_RENEWALS) renew_lease(co, co->options->lease);
    co->last_sync = now_seconds();
}

// Group k is free: send it the next trial, or tell it to leave when none is left;
// returns 0, or −1 (nothing sent) while the sampler cannot yet sample (evolution waits
// for results). The trial goes out without waiting for its delivery (MPI_Isend): a
// blocking send spun in MPI's progress loop until the worker's process ran, which on an
// oversubscribed node cost the coordinator 0.3-0.5 ms of CPU per trial. The group asks
// again only after running the trial, so its previous send is long complete by then.
static int hand_out(Coordinator *co, int k) {
    const int leader = group_leader(co->sc, k);
    MPI_Wait(&co->sending[k], MPI_STATUS_IGNORE);
    journal_lock(co->journal);
    shared_sync(co);
    const int got = co->stopping ? 0 : next_trial(co, &co->sent[k]);
    if (got < 0) {
        journal_unlock(co->journal);
        return -1;
    }
    if (got > 0) {
        char *config = config_to_json_text(&co->sent[k].config);
        const double at = journal_handout(co->journal, co->sent[k].id, leader, config);
        co->sent[k].handout_time = at;
        own_record(co, &(JournalRecord){.kind = JOURNAL_HANDOUT, .id = co->sent[k].id, .rank = leader, .time = at,
                                        .config = config, .job = journal_job(co->journal)});
        cJSON_free(config);
        MPI_Isend(&co->sent[k], sizeof co->sent[k], MPI_BYTE, leader, TAG_TRIAL, MPI_COMM_WORLD, &co->sending[k]);
        co->busy[k] = co->sent[k].id;
        co->n_running++;
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, leader, TAG_DONE, MPI_COMM_WORLD);
        co->finished_groups++;
    }
    journal_unlock(co->journal);
    return 0;
}

// A free group asks for work: its first request, or the one after a trial abandoned
// on a stop (a finished trial's RESULT is its next request).
static void on_ready(Coordinator *co, int leader, int *waiting) {
    MPI_Recv(NULL, 0, MPI_BYTE, leader, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const int k = group_of_leader(co->sc, leader);
    journal_lock(co->journal);
    if (co->busy[k] >= 0) {  // its trial was abandoned on a stop: it will run again on --resume
        journal_release(co->journal, co->busy[k]);
        own_record(co, &(JournalRecord){.kind = JOURNAL_RELEASE, .id = co->busy[k]});
        co->busy[k] = -1;
        co->n_running--;
    }
    if (hand_out(co, k) < 0) waiting[k] = 1;  // evolution: ask the sampler again after a result
    journal_unlock(co->journal);
}

// A trial at a rung: ASHA decides whether it goes on. Once the sweep is stopping it goes
// on undecided until its stop reaches it, and is given back: a "no" would record it
// pruned by a scheduler that never judged it (the stop may cross its report). A replayed
// report (a rung passed before the trial's checkpoint) is recorded as gone on, unanswered.
static void on_eval(Coordinator *co, int leader) {
    RungReport rep;
    MPI_Recv(&rep, sizeof rep, MPI_BYTE, leader, TAG_EVAL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rep.replayed) {  // a rung a trial continued from its checkpoint passed (worker.c on_resume)
        asha_replay(&co->asha, rep.id, rep.rung, rep.metric, 1);
        return;
    }
    int go_on = co->stopping || asha_continue(&co->asha, rep.id, rep.rung, rep.metric);
    MPI_Send(&go_on, 1, MPI_INT, leader, TAG_DECISION, MPI_COMM_WORLD);
}

// A finished trial, which is also its group's request for the next one: journaled, then
// the group gets its next trial; its record's fsync (one for the trials that finished
// together) comes before anything acts on it: its checkpoint removed and the results file
// written (commit), while the group already trains. In a shared sweep, a trial another
// job recorded first (this job's lease had run out) is dropped: each trial is recorded
// once.
static void on_result(Coordinator *co, int leader, const MPI_Status *st, int *waiting) {
    int n;
    MPI_Get_count(st, MPI_BYTE, &n);
    unsigned char *buf = xmalloc((size_t)n);
    MPI_Recv(buf, n, MPI_BYTE, leader, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    TrialResult r;
    char err[256] = "";  // set when the result is refused
    const int k = group_of_leader(co->sc, leader);
    if (co->busy[k] < 0) die(EXIT_RUNTIME, "coordinator: rank %d returned a result but runs no trial", leader);
    if (trial_unpack(&r, buf, (size_t)n, err, sizeof err) == 0 && r.id != co->busy[k]) {
        snprintf(err, sizeof err, "its result is for trial %d", r.id);
        trial_result_free(&r);
    }
    if (err[0]) {  // the trial's own bytes, not the job, are at fault: that trial fails
        char reason[sizeof r.reason];
        snprintf(reason, sizeof reason, "the coordinator could not take its result: %.200s", err);
        recovery_failed_result(&r, co->busy[k], &co->sent[k].config, &co->spec->reward, leader, unix_seconds(), reason);
    }
    journal_lock(co->journal);
    shared_sync(co);
    const int taken = co->done[r.id];
    long at = -1;
    if (taken)
        warnf("sweep %s: trial %d was recorded by another job first (this job's lease had run out): this result "
              "is left out", co->spec->name, r.id);
    else if (err[0]) {
        warnf("sweep %s: trial %d failed: %s", co->spec->name, r.id, r.reason);
        at = journal_append(co->journal, &r);
    } else
        at = journal_append_packed(co->journal, r.id, buf, (size_t)n);
    co->busy[k] = -1;
    co->n_running--;
    free(buf);
    if (!taken) record(co, &r, 0, at);  // before the hand-out: evolution samples from the results so far
    if (hand_out(co, k) < 0) waiting[k] = 1;
    journal_unlock(co->journal);
    if (taken)
        trial_result_free(&r);
    else
        defer(co, &r, at);
}

// On --resume, each trial the journal holds must be the one this search space gives its
// id (configuration, seed and reward), or a YAML edited since the sweep began would mix
// two sweeps in one file. Raising `trials` passes; changing a range, the budget, the
// repeats or β does not. Evolution's later trials depend on results, so for it only
// the reward is compared. While every run the journal has recorded so far started from
// this YAML's very text (its start records' crc32), the configurations are not compared:
// the same text gives the same trials (half a resume's CPU at 20,000 trials).
typedef struct {
    Coordinator *co;
    const char *journal;
} Resumed;

static int same_reward(const RewardSpec *a, const RewardSpec *b) {
    int same = a->tensor == b->tensor && a->beta == b->beta && a->gamma == b->gamma;
    for (int n = 0; n < 4; n++) same &= a->use_mode[n] == b->use_mode[n] && a->ideal_rank[n] == b->ideal_rank[n];
    return same;
}

// A record of the journal (h5store_rebuild's seen): a trial is checked against the space,
// then done and known to the sampler; hand-outs count the deaths of trials.
static int resumed(void *ctx, const JournalRecord *rec, char *err, size_t errlen) {
    const Resumed *c = ctx;
    const SweepSpec *spec = c->co->spec;
    c->co->tail_records++;
    recovery_visit(&c->co->recovery, rec);
    if (rec->kind == JOURNAL_LEASE) note_lease(c->co, rec);
    if (rec->kind == JOURNAL_START) c->co->same_yaml &= rec->yaml_crc == c->co->yaml_crc && rec->yaml_crc != 0;
    if (rec->kind != JOURNAL_TRIAL) return 0;
    const TrialResult *r = &rec->trial;
    const char *what = NULL;
    if (r->id < 0 || r->id >= spec->trials) {
        what = "an id beyond the search space's trials";
    } else if (!same_reward(&r->reward_spec, &spec->reward)) {
        what = "a different reward section";
    } else if (!space_adaptive(spec) && !c->co->same_yaml) {  // the same YAML text gives the same trials
        TrialConfig want;
        sampler_config(c->co->sampler, r->id, &want);
        if (!config_same_json(&r->config, &want)) what = "a different configuration than the YAML now gives it";
    }
    if (what) {
        snprintf(err, errlen,
                 "%s: trial %d was run with %s: the search space changed since the sweep began; resume it with its "
                 "original YAML (the results file keeps it, attribute 'yaml'), or start a new sweep with -o",
                 c->journal, r->id, what);
        return -1;
    }
    if (r->status == TRIAL_FAILED && c->co->options->retry_failed) {  // handed out again; its retry replaces it
        sampler_retry(c->co->sampler, r);
        c->co->n_retried++;
        return 0;
    }
    record(c->co, r, 1, rec->offset);
    return 0;
}

// ---- snapshots

// Whether this job writes a snapshot now: something was journaled since the last, and the
// journal has grown by the last one's size since it (so that snapshots take at most half
// of it, and a resume reads at most as much after one as the one itself); a single job
// does, unless it runs failed trials again (its replay left them out for their retries:
// sampler_retry); of a shared sweep's jobs, the one that keeps the results file (one at
// a time).
static int snapshot_now(const Coordinator *co) {
    return co->snapshot_due && journal_length(co->journal) - co->snapshot_end >= co->snapshot_bytes &&
           !co->options->retry_failed && (!co->options->shared || co->store);
}

// State bytes: u32 SNAPSHOT_VERSION, u32 the crc32 of this run's YAML (every trial in it
// is this space's: checked against it on the resume, or run by it), text first failure,
// the recovery's (recovery_save), the leases (u32 count; i64 job, f64 until, f64 seconds,
// u32 its YAML's crc32 each), and the trials' digests (digest_trial) as one blob, in the
// order of the standing records. Under the journal's lock, after a look at what the other
// jobs of a shared sweep appended (what it sums up is every record before it).
static void write_snapshot(Coordinator *co) {
    journal_lock(co->journal);
    shared_sync(co);
    Bytes b = {0};
    bytes_put_u32(&b, SNAPSHOT_VERSION);
    bytes_put_u32(&b, co->yaml_crc);
    bytes_put_text(&b, co->first_failure, strlen(co->first_failure));
    recovery_save(&co->recovery, &b);
    bytes_put_u32(&b, (uint32_t)co->n_leases);
    for (int i = 0; i < co->n_leases; i++) {
        bytes_put_i64(&b, co->leases[i].job);
        bytes_put_f64(&b, co->leases[i].written_until);
        bytes_put_f64(&b, co->leases[i].seconds);
        bytes_put_u32(&b, co->leases[i].yaml_crc);
    }
    bytes_put_text(&b, co->digests.len ? (const char *)co->digests.data : "", co->digests.len);
    const long at = journal_length(co->journal);
    journal_snapshot(co->journal, co->standing, co->n_standing, b.data, b.len);
    co->snapshot_end = journal_length(co->journal);
    co->snapshot_bytes = co->snapshot_end - at;
    journal_unlock(co->journal);
    bytes_free(&b);
    co->last_snapshot = now_seconds();
    co->snapshot_due = 0;
}

// The records after a snapshot: whether one is a trial the snapshot has (a failed trial run
// again by --retry-failed: the record that stands for it is a whole replay's to pick).
typedef struct {
    const char *in_snapshot;  // [trials]
    int trials, clash;
} TailCheck;

static void check_tail(void *ctx, JournalRecord *rec) {
    TailCheck *t = ctx;
    if (rec->kind != JOURNAL_TRIAL) return;
    t->clash |= rec->trial.id < 0 || rec->trial.id >= t->trials || t->in_snapshot[rec->trial.id];
    trial_result_free(&rec->trial);
}

// The journal's last snapshot, when this resume can start from it: written by a run of this
// very YAML text (its trials are this space's), of trials within the sweep, none of them
// recorded again after it, and not with --retry-failed. 1 with *snap, or 0 (a whole
// replay, which checks the trials against the space).
static int usable_snapshot(Coordinator *co, JournalSnapshot *snap) {
    char err[1024];
    if (co->options->retry_failed) return 0;
    const int found = journal_last_snapshot(co->journal, snap, err, sizeof err);
    if (err[0]) warnf("%s: the whole journal is replayed", err);
    if (found <= 0) return 0;
    ByteReader rd = byte_reader(snap->state, snap->state_len, "snapshot", err, sizeof err);
    const unsigned version = br_u32(&rd), yaml_crc = br_u32(&rd);
    const int trials = co->spec->trials;
    int usable = !rd.failed && version == SNAPSHOT_VERSION && yaml_crc == co->yaml_crc;
    char *in = xcalloc((size_t)trials, 1);
    for (size_t i = 0; usable && i < snap->n_trials; i++) {
        const int id = snap->trials[i].id;
        usable = id >= 0 && id < trials && !in[id];
        if (usable) in[id] = 1;
    }
    TailCheck t = {in, trials, 0};
    if (usable) usable = journal_replay_from(co->journal, snap->end, check_tail, &t, err, sizeof err) >= 0 && !t.clash;
    free(in);
    if (!usable) journal_snapshot_free(snap);
    return usable;
}

// What a replay of the journal builds, and a snapshot holds: the trials done, the counts,
// the best, the first failure, the sampler, ASHA's rungs, the recovery, the leases, and
// the digests and standing records. Made empty before a resume (and again when a snapshot
// would not load), and let go at the end.
static void replay_state_init(Coordinator *co) {
    const SweepSpec *spec = co->spec;
    co->done = xcalloc((size_t)spec->trials, 1);
    co->n_done = co->n_ok = co->n_pruned = co->n_failed = co->n_resumed = 0;
    co->best_id = -1;
    co->first_failure[0] = 0;
    co->sampler = sampler_create(spec);
    asha_init(&co->asha, spec);
    recovery_init(&co->recovery, spec->trials, co->output);
    co->n_leases = 0;
    co->digests.len = co->n_standing = 0;
}

static void replay_state_free(Coordinator *co) {
    free(co->done);
    sampler_free(co->sampler);
    asha_free(&co->asha);
    recovery_free(&co->recovery);
}

// The state a snapshot keeps into this coordinator, as a replay of the records before it
// builds it: 0, or -1 (nothing of it kept, with a warning) when it does not decode.
static int load_snapshot(Coordinator *co, const JournalSnapshot *snap) {
    char err[256];
    ByteReader rd = byte_reader(snap->state, snap->state_len, "snapshot", err, sizeof err);
    br_u32(&rd), br_u32(&rd);  // the version and the YAML's crc32 (usable_snapshot)
    size_t n = 0, len = 0;
    const char *first = br_text(&rd, sizeof co->first_failure, &n, "first failure");
    if (first) memcpy(co->first_failure, first, n), co->first_failure[n] = 0;
    recovery_load(&co->recovery, &rd);
    const int n_leases = br_count(&rd, 28, "leases");
    for (int i = 0; i < n_leases && !rd.failed; i++) {
        JournalRecord lease = {.kind = JOURNAL_LEASE, .job = br_i64(&rd)};
        lease.time = br_f64(&rd);
        lease.seconds = br_f64(&rd);
        lease.yaml_crc = br_u32(&rd);
        lease.time -= lease.seconds;  // note_lease's until is time + seconds
        if (!rd.failed) note_lease(co, &lease);
    }
    const unsigned char *digests = br_blob(&rd, &len, "trials");
    if (!rd.failed && len) memcpy(bytes_extend(&co->digests, len), digests, len);
    ByteReader dr = byte_reader(co->digests.data, co->digests.len, "snapshot's trials", err, sizeof err);
    for (size_t i = 0; i < snap->n_trials && !rd.failed && !dr.failed; i++) {
        if (apply_digest(co, snap->trials[i].id, &dr, 1) != 0) break;
        stand(co, snap->trials[i].id, snap->trials[i].offset);
    }
    if (!rd.failed && !dr.failed && !dr.left && co->n_standing == snap->n_trials) return 0;
    warnf("%s: the snapshot at byte %ld does not decode (%s): the whole journal is replayed", journal_path(co->journal),
          snap->at, err[0] ? err : "its trials do not match");
    replay_state_free(co);
    replay_state_init(co);
    return -1;
}

// A single job's resume: trials that died with their worker max_deaths times are recorded
// failed with that reason. (A shared sweep's jobs find them as they take them: next_free.)
static void fail_poisoned(Coordinator *co) {
    recovery_finish(&co->recovery);
    for (int id = 0; id < co->spec->trials; id++)
        if (!co->done[id]) fail_dead(co, id);
}

// A job joining a shared sweep runs the same YAML as the live ones, or the jobs would
// hand out different trials under the same ids.
static void check_same_sweep(const Coordinator *co, const char *journal) {
    for (int i = 0; i < co->n_leases; i++)
        if (lease_live(co, co->leases[i].job) && co->leases[i].yaml_crc != co->yaml_crc)
            die(EXIT_BADINPUT, "run: %s: a job running this sweep now runs it from a different YAML; join it with "
                "the same sweep file (the results file keeps it, attribute 'yaml')", journal);
}

// Results file and journal: fresh, or rebuilt from the journal on --resume (the
// journal is the truth: a kill may have left the HDF5 file half-written). The journal's
// lock comes first: a second run of the same sweep touches nothing.
static void open_results(Coordinator *co, const char *output) {
    char journal[4096], err[8192];
    snprintf(journal, sizeof journal, "%s.journal", output);
    if (outfile_check(output, err, sizeof err) != 0 || outfile_check(journal, err, sizeof err) != 0)
        die(EXIT_BADINPUT, "run: cannot write %s", err);
    char dir[PROTOCOL_PATH_MAX];
    if (trial_dir_path(dir, sizeof dir, output, co->spec->trials) != 0)
        die(EXIT_BADINPUT, "run: the results file's path is too long: %s", output);
    struct stat st;
    const int have_journal = lstat(journal, &st) == 0, shared = co->options->shared;
    if (!co->options->resume && !shared && (have_journal || lstat(output, &st) == 0))
        die(EXIT_BADINPUT, "run: %s already holds a sweep; pass --resume to continue it, or -o for a new file",
            have_journal ? journal : output);
    co->journal = shared ? journal_open_shared(journal, err, sizeof err) : journal_open(journal, err, sizeof err);
    if (!co->journal) die(EXIT_BADINPUT, "run: %s", err);
    const SweepSpec *spec = co->spec;
    for (int k = 0; k < spec->n_objectives; k++) co->objective[k] = spec->objective[k];
    co->meta = (StoreMeta){.sweep = spec->name, .yaml = spec->text, .seed = spec->seed, .start_time = unix_seconds(),
                           .program = space_is_program(spec) ? &spec->base : NULL,
                           .program_metric = spec->program.metric[0] ? spec->program.metric : NULL,
                           .metric = spec->metric, .maximize = spec->maximize,
                           .n_objectives = spec->n_objectives > 1 ? spec->n_objectives : 0,
                           .objective = co->objective, .objective_maximize = spec->objective_maximize,
                           .until_stopped = spec->until_stopped};
    co->yaml_crc = (unsigned)crc32(0L, (const Bytef *)spec->text, (uInt)strlen(spec->text));
    co->same_yaml = 1;
    Resumed check = {co, journal};
    if (!shared) outfile_remove_stale(journal);  // only this run writes them now (shared: another job may be creating it)
    journal_lock(co->journal);
    JournalSnapshot snap;
    const JournalSnapshot *from = usable_snapshot(co, &snap) && load_snapshot(co, &snap) == 0 ? &snap : NULL;
    co->tail_records = 0;
    if (journal_take_writer(co->journal)) {
        outfile_remove_stale(output);
        co->store = h5store_rebuild(output, &co->meta, co->journal, from, resumed, &check, err, sizeof err);
        if (!co->store) die(EXIT_BADINPUT, "run: %s", err);
    } else if (h5store_replay(co->journal, from, resumed, &check, err, sizeof err) != 0) {
        die(EXIT_BADINPUT, "run: %s", err);
    }
    co->snapshot_at = from ? from->at : -1;
    co->snapshot_end = from ? from->end : 0;
    co->snapshot_bytes = from ? from->end - from->at : 0;
    // Trials the replay read from records (none, or none but a snapshot's): the next
    // resume starts from this run's snapshot.
    co->snapshot_due = co->n_resumed > (from ? (int)from->n_trials : 0);
    if (from) journal_snapshot_free(&snap);
    if (shared) check_same_sweep(co, journal);
    char tail[96] = "";
    if (co->snapshot_at >= 0)
        snprintf(tail, sizeof tail, " (its snapshot at byte %ld and the %ld records after it)", co->snapshot_at,
                 co->tail_records);
    if (co->n_resumed + co->n_retried > 0 && !shared) {
        char retried[64] = "";
        if (co->n_retried) snprintf(retried, sizeof retried, "; %d failed ones run again", co->n_retried);
        fprintf(stderr, "sweep %s: resuming with %d of %d trials recorded in %s%s%s\n", co->spec->name, co->n_resumed,
                co->spec->trials, journal, tail, retried);
    }
    const size_t to_write = co->store ? h5store_waiting(co->store) : 0;
    if (to_write > 0)
        fprintf(stderr, "sweep %s: writing %zu trials from the journal into %s while the sweep goes on\n", spec->name,
                to_write, output);
    journal_begin(co->journal, co->yaml_crc);
    if (shared) {
        fprintf(stderr, "sweep %s: sharing the sweep as job %ld of %s (%d of %d trials recorded%s%s)\n", spec->name,
                journal_job(co->journal), journal, co->n_resumed, spec->trials, tail,
                co->store ? "; this job keeps the results file" : "");
        renew_lease(co, co->options->lease);
        co->last_sync = now_seconds();
    } else {
        fail_poisoned(co);
    }
    journal_unlock(co->journal);
}

// The order trials are handed out in: by id, except under ASHA, where a grid in id
// order would improve steadily (its slowest-varying parameter last) and so keep
// promoting the later trials: there a permutation drawn from the sweep's seed, the same
// on --resume. Ids, configurations and seeds do not change. Evolution stays in id order
// (its sampler waits for results).
static int *trial_order(const SweepSpec *spec) {
    int *order = xmalloc((size_t)spec->trials * sizeof(int));
    for (int i = 0; i < spec->trials; i++) order[i] = i;
    if (spec->asha && spec->method != METHOD_EVOLUTION) {
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, (unsigned long)spec->seed + 0x5A5A5AUL);
        for (int i = spec->trials - 1; i > 0; i--) {
            int j = (int)gsl_rng_uniform_int(rng, (unsigned long)i + 1), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        gsl_rng_free(rng);
    }
    return order;
}

// Groups kept waiting (evolution's sampler, or trials another job holds) get a trial
// when one can be had now.
static void retry_waiting(Coordinator *co, int *waiting) {
    for (int k = 0; k < co->sc->n_groups; k++)
        if (waiting[k] && hand_out(co, k) == 0) waiting[k] = 0;
}

// A shared sweep's job between its polls: every SYNC_SECONDS it reads what the others did
// (renewing its lease when due), and its waiting groups get the trials that came free.
static void shared_tick(Coordinator *co, int *waiting) {
    if (now_seconds() - co->last_sync < SYNC_SECONDS) return;
    journal_lock(co->journal);
    shared_sync(co);
    retry_waiting(co, waiting);
    journal_unlock(co->journal);
}

// A shared sweep's job ends: a last look (a job that ends while another keeps the results
// file leaves its trials to that one's next look, which comes later, as this look holds
// the lock; with no writer left, this job takes the file and writes them), and its lease
// given up. The lock is held to journal_close, which lets it and the writer's go at once.
static void leave_shared(Coordinator *co) {
    journal_lock(co->journal);
    shared_sync(co);
    renew_lease(co, 0);
}

// CPU seconds this process has used.
static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * ru.ru_stime.tv_usec;
}

int sweep_coordinate(const SweepSpec *spec, const SweepComms *sc, const char *output, const RunOptions *o) {
    const double cpu0 = cpu_seconds();
    Coordinator co = {.spec = spec, .sc = sc, .options = o, .output = output};
    replay_state_init(&co);
    co.order = trial_order(spec);
    co.busy = xmalloc((size_t)sc->n_groups * sizeof(int));
    co.sent = xcalloc((size_t)sc->n_groups, sizeof *co.sent);
    co.sending = xmalloc((size_t)sc->n_groups * sizeof *co.sending);
    for (int k = 0; k < sc->n_groups; k++) co.busy[k] = -1, co.sending[k] = MPI_REQUEST_NULL;
    co.t0 = co.last_progress = co.last_snapshot = now_seconds();
    co.numbers = xcalloc((size_t)sampler_report_size(co.sampler) + 1, sizeof *co.numbers);
    open_results(&co, output);

    int *waiting = xcalloc((size_t)sc->n_groups, sizeof(int));
    long idle_ns = SWEEP_POLL_MIN_NS;
    while (co.finished_groups < sc->n_groups) {
        if (!co.stopping && sweep_signalled()) {
            fprintf(stderr, "sweep %s: signal received: stopping the running trials\n", spec->name);
            begin_stop(&co);
        }
        // A program has its grace to end after SIGTERM before it is killed.
        if (co.stopping && now_seconds() - co.stop_time > MAX_WAIT_SECONDS + spec->program.grace)
            die(EXIT_RUNTIME, "coordinator: workers did not stop within %.0f s", MAX_WAIT_SECONDS + spec->program.grace);
        // Groups that evolution kept waiting get their trial as soon as one can be sampled
        // (a shared sweep's, too, when a trial another job held comes free).
        if (journal_shared(co.journal))
            shared_tick(&co, waiting);
        else
            retry_waiting(&co, waiting);
        commit(&co);  // a trial dead max_deaths times, recorded failed as the trial left
        if (o->snapshot_every > 0 && now_seconds() - co.last_snapshot >= o->snapshot_every && snapshot_now(&co))
            write_snapshot(&co);
        int flag;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag) {
            if (!o->quiet) progress(&co, 0);
            if (co.store && h5store_catch_up(co.store, CATCH_UP_SECONDS) > 0) continue;  // a rebuild's trials
            sweep_nap(&idle_ns);
            continue;
        }
        idle_ns = SWEEP_POLL_MIN_NS;
        const double th = now_seconds();
        // Every message waiting now (each group has at most one), then one group commit.
        journal_group_begin(co.journal);
        for (int handled = 0; flag && handled < sc->n_groups; handled++) {
            switch (st.MPI_TAG) {
            case TAG_READY: on_ready(&co, st.MPI_SOURCE, waiting); break;
            case TAG_EVAL: on_eval(&co, st.MPI_SOURCE); break;
            case TAG_RESULT: on_result(&co, st.MPI_SOURCE, &st, waiting); break;
            default: die(EXIT_RUNTIME, "coordinator: unexpected message %d from rank %d", st.MPI_TAG, st.MPI_SOURCE);
            }
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        }
        commit(&co);
        co.handling += now_seconds() - th;
        if (!o->quiet) progress(&co, 0);
    }
    MPI_Waitall(sc->n_groups, co.sending, MPI_STATUSES_IGNORE);
    if (journal_shared(co.journal)) leave_shared(&co);
    if (snapshot_now(&co)) write_snapshot(&co);  // before the mark: the file holds to past it
    if (co.store) {
        // It holds every trial journaled, a stopped run's up to STOP_CATCH_UP_SECONDS of
        // writing: a resume keeps it and writes the rest.
        h5store_mark_journal(co.store, journal_length(co.journal),
                             co.stopping && co.n_done < spec->trials ? STOP_CATCH_UP_SECONDS : INFINITY);
        h5store_close(co.store, unix_seconds());
    }
    journal_close(co.journal);  // with the locks: a shared job's last look and its file's close are one step
    progress(&co, 1);
    const int ran = co.n_done - co.n_resumed;
    if (ran > 0) {
        const double cpu = cpu_seconds() - cpu0;  // from here on: MPI's start-up is not the coordinator's
        fprintf(stderr, "sweep %s: coordinator %.3f ms CPU and %.3f ms answering (journal fsync and HDF5 included) per trial\n",
                spec->name, 1e3 * cpu / ran, 1e3 * co.handling / ran);
    }
    // The last line counts every status; a sweep in which no trial finished ok failed, and
    // so did one stopped by its failures (1, not 3: a restart would fail the same way, so
    // attnsweep slurm's script does not requeue it).
    const int complete = co.n_done == spec->trials;
    char counts[128];
    snprintf(counts, sizeof counts, "%d ok, %d pruned, %d failed", co.n_ok, co.n_pruned, co.n_failed);
    if (o->shared) snprintf(counts + strlen(counts), sizeof counts - strlen(counts), "; %d by this job", ran);
    int rc = complete ? 0 : 3;
    if (co.failure_stop[0]) {
        char *why = text_escaped(co.failure_stop);
        fprintf(stderr,
                "sweep %s: stopped: the first %d trials this run recorded all failed the same way (%s); %d of %d "
                "trials recorded (%s); fix that and continue with --resume --retry-failed, or set budget: "
                "{max_failures: K} in the YAML (%d now; 0 never stops)\n",
                spec->name, spec->max_failures, why, co.n_done, spec->trials, counts, spec->max_failures);
        free(why);
        rc = 1;
    } else if (!complete && spec->until_stopped)
        fprintf(stderr, "sweep %s: stopped with %d trials recorded (%s; it runs until stopped); continue with "
                "--resume\n", spec->name, co.n_done, counts);
    else if (!complete)
        fprintf(stderr, "sweep %s: stopped with %d of %d trials recorded (%s); continue with --resume\n", spec->name,
                co.n_done, spec->trials, counts);
    else if (co.n_ok == 0) {
        fprintf(stderr, "sweep %s: no trial finished ok (%s; first failure: %s); results in %s\n", spec->name, counts,
                co.first_failure[0] ? co.first_failure : "none", output);
        rc = 1;
    } else
        fprintf(stderr, "sweep %s: finished %d trials in %.0f s (%s); results in %s\n", spec->name, co.n_done,
                now_seconds() - co.t0, counts, output);
    replay_state_free(&co);
    free(waiting);
    free(co.sending);
    free(co.sent);
    free(co.busy);
    free(co.order);
    free(co.leases);
    free(co.pending);
    free(co.pending_at);
    free(co.standing);
    free(co.numbers);
    bytes_free(&co.digests);
    return rc;
}
