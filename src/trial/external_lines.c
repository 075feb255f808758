// external_lines.c: the metric lines a program writes to ATTNSWEEP_METRICS
// (external_impl.h), read as they come: one JSON object a line with an integer "step",
// numbers or null for the metrics (Python's NaN and Infinity read as null), an optional
// "checkpoint" path. The file is untrusted input: a malformed or overlong line, or one
// past MAX_METRIC_LINES, fails the trial with one reason naming it.
#define _GNU_SOURCE
#include "trial/external_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

enum { MAX_LINE = 1 << 20 };  // longest metric line (bytes)

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
int external_read_metrics(Run *run, int final) {
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
