// recovery.c: deaths of trials from the journal's hand-outs (recovery.h).
#define _POSIX_C_SOURCE 200809L  // strndup
#include "sweep/recovery.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"
#include "trial/trialdir.h"

void recovery_init(Recovery *rc, int trials, const char *output) {
    rc->trials = trials;
    rc->output = xstrdup(output);
    rc->deaths = xcalloc((size_t)trials, sizeof *rc->deaths);
    rc->running = xcalloc((size_t)trials, 1);
    rc->config = xcalloc((size_t)trials, sizeof *rc->config);
    rc->rank = xcalloc((size_t)trials, sizeof *rc->rank);
    rc->job = xcalloc((size_t)trials, sizeof *rc->job);
    rc->time = xcalloc((size_t)trials, sizeof *rc->time);
}

void recovery_free(Recovery *rc) {
    for (int i = 0; i < rc->trials; i++) free(rc->config[i]);
    free(rc->deaths);
    free(rc->running);
    free(rc->config);
    free(rc->rank);
    free(rc->job);
    free(rc->time);
    free(rc->output);
    memset(rc, 0, sizeof *rc);
}

// The run of trial id's last hand-out ended with its job: a death, unless a stop marked it.
void recovery_end_run(Recovery *rc, int id) {
    char dir[4096];
    const int stopped = trial_dir_path(dir, sizeof dir, rc->output, id) == 0 && trial_dir_was_stopped(dir, rc->time[id]);
    rc->deaths[id] += !stopped;
    rc->running[id] = 0;
}

void recovery_visit(Recovery *rc, const JournalRecord *rec) {
    const int id = rec->kind == JOURNAL_TRIAL ? rec->trial.id : rec->id;
    if (id < 0 || id >= rc->trials) return;  // beyond the sweep: refused elsewhere
    if (rec->kind != JOURNAL_TRIAL && rec->kind != JOURNAL_HANDOUT && rec->kind != JOURNAL_RELEASE) return;
    if (rec->kind != JOURNAL_HANDOUT) {
        rc->running[id] = 0;  // finished, or given back on a stop
        if (rec->kind == JOURNAL_TRIAL) {  // a failed trial run again counts its deaths afresh
            rc->deaths[id] = 0;
            free(rc->config[id]);
            rc->config[id] = NULL;
        }
        return;
    }
    if (rc->running[id]) recovery_end_run(rc, id);  // handed out again: the last run ended with its job
    rc->running[id] = 1;
    free(rc->config[id]);
    rc->config[id] = xstrdup(rec->config);
    rc->rank[id] = rec->rank;
    rc->job[id] = rec->job;
    rc->time[id] = rec->time;
}

void recovery_finish(Recovery *rc) {
    for (int i = 0; i < rc->trials; i++)
        if (rc->running[i]) recovery_end_run(rc, i);
}

// Each trial running or dead: i32 id, i32 deaths, u8 running, i32 rank, i64 job, f64 time,
// text configuration; after their u32 count.
void recovery_save(const Recovery *rc, Bytes *b) {
    uint32_t n = 0;
    for (int i = 0; i < rc->trials; i++) n += rc->running[i] || rc->deaths[i];
    bytes_put_u32(b, n);
    for (int i = 0; i < rc->trials; i++) {
        if (!rc->running[i] && !rc->deaths[i]) continue;
        bytes_put_i32(b, i);
        bytes_put_i32(b, rc->deaths[i]);
        bytes_put_u8(b, rc->running[i]);
        bytes_put_i32(b, rc->rank[i]);
        bytes_put_i64(b, rc->job[i]);
        bytes_put_f64(b, rc->time[i]);
        const char *config = rc->config[i] ? rc->config[i] : "";
        bytes_put_text(b, config, strlen(config));
    }
}

int recovery_load(Recovery *rc, ByteReader *rd) {
    const int n = br_count(rd, 29, "trials running or dead");
    for (int k = 0; k < n && !rd->failed; k++) {
        const int i = br_i32(rd), deaths = br_i32(rd), running = (int)br_u8(rd), rank = br_i32(rd);
        const long job = br_i64(rd);
        const double time = br_f64(rd);
        size_t len = 0;
        const char *config = br_text(rd, SIZE_MAX, &len, "configuration");
        if (rd->failed) break;
        if (i < 0 || i >= rc->trials) {
            br_fail(rd, "trial %d beyond the sweep's %d", i, rc->trials);
            break;
        }
        rc->deaths[i] = deaths, rc->running[i] = (char)running, rc->rank[i] = rank, rc->job[i] = job, rc->time[i] = time;
        free(rc->config[i]);
        rc->config[i] = len ? strndup(config, len) : NULL;
    }
    return rd->failed ? -1 : 0;
}

static const char *times(int n, char *buf, size_t len) {
    if (n == 1) return "once";
    if (n == 2) return "twice";
    snprintf(buf, len, "%d times", n);
    return buf;
}

void recovery_failed_result(TrialResult *r, int id, const TrialConfig *c, const RewardSpec *reward, int rank,
                            double start_time, const char *reason) {
    memset(r, 0, sizeof *r);
    r->config = *c;
    r->id = id;
    r->status = TRIAL_FAILED;
    snprintf(r->reason, sizeof r->reason, "%s", reason);
    r->val_accuracy = r->val_loss = r->val_bits_per_byte = NAN;
    r->test_accuracy = r->test_loss = r->test_bits_per_byte = NAN;
    const RewardTerms none = reward_terms_none();
    trial_set_terms(r, &none);
    r->reward = NAN;
    r->program_metric = NAN;
    r->reward_spec = *reward;
    r->rank = rank;
    r->start_time = start_time;
    r->end_time = unix_seconds();
}

int recovery_failed_trial(const Recovery *rc, int id, const RewardSpec *reward, TrialResult *r) {
    cJSON *json = rc->config[id] ? cJSON_Parse(rc->config[id]) : NULL;
    char msg[256];
    TrialConfig c;
    const int bad = !json || config_from_json(&c, json, msg, sizeof msg) != 0;
    cJSON_Delete(json);
    if (bad) return -1;
    char n[32], reason[sizeof r->reason];
    snprintf(reason, sizeof reason,
             "its worker died %s while running it: out of memory? (resources.mem refuses such a trial before it starts)",
             times(rc->deaths[id], n, sizeof n));
    recovery_failed_result(r, id, &c, reward, rc->rank[id], rc->time[id], reason);
    return 0;
}
