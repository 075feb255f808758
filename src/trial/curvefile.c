// curvefile.c: a program trial's curve record, TRIAL_DIR/curve.jsonl (curvefile.h).
#define _POSIX_C_SOURCE 200809L  // O_NOFOLLOW, O_CLOEXEC
#include "trial/curvefile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

enum { MAX_RECORD = 4096 };  // bytes of one line: the runner's own lines are under 300

// The fields of a record besides step, and where each lives.
typedef struct {
    const char *name;
    size_t at;  // offset in CurveRecord
} Field;

static const Field fields[] = {
    {"val_accuracy", offsetof(CurveRecord, pt.val_accuracy)},
    {"val_loss", offsetof(CurveRecord, pt.val_loss)},
    {"train_loss", offsetof(CurveRecord, pt.train_loss)},
    {"lr", offsetof(CurveRecord, pt.lr)},
    {"seconds", offsetof(CurveRecord, pt.seconds)},
    {"metric", offsetof(CurveRecord, metric)},
};
enum { N_FIELDS = sizeof fields / sizeof fields[0] };

static double *field(CurveRecord *r, int k) { return (double *)((char *)r + fields[k].at); }

int curve_file_write(int fd, const CurveRecord *rec, int n) {
    for (int i = 0; i < n; i++) {
        char line[MAX_RECORD];
        size_t o = (size_t)snprintf(line, sizeof line, "{\"step\": %d", rec[i].pt.step);
        for (int k = 0; k < N_FIELDS; k++) {
            const double v = *(const double *)((const char *)&rec[i] + fields[k].at);
            o += (size_t)(isfinite(v) ? snprintf(line + o, sizeof line - o, ", \"%s\": %.17g", fields[k].name, v)
                                      : snprintf(line + o, sizeof line - o, ", \"%s\": null", fields[k].name));
        }
        o += (size_t)snprintf(line + o, sizeof line - o, "}\n");
        for (size_t done = 0; done < o;) {  // a whole line, also after a short write
            const ssize_t w = write(fd, line + done, o - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return -1;
            done += (size_t)w;
        }
    }
    return 0;
}

// One line as a record: 0, or -1 when it is not one.
static int parse_record(const char *line, CurveRecord *r) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(o, "step");
    int rc = cJSON_IsObject(o) && cJSON_IsNumber(step) && step->valuedouble >= 0 &&
                     step->valuedouble <= 2147483647.0 && step->valuedouble == floor(step->valuedouble)
                 ? 0
                 : -1;
    memset(r, 0, sizeof *r);
    if (rc == 0) r->pt.step = (int)step->valuedouble;
    for (int k = 0; k < N_FIELDS && rc == 0; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, fields[k].name);
        if (cJSON_IsNumber(x)) *field(r, k) = x->valuedouble;
        else if (!x || cJSON_IsNull(x)) *field(r, k) = NAN;
        else rc = -1;
    }
    cJSON_Delete(o);
    return rc;
}

void curve_file_read(const char *path, int max, CurveRecord **out, int *n, char *why, size_t len) {
    *out = NULL, *n = 0, why[0] = 0;
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) snprintf(why, len, "%s: %s", path, strerror(errno));
        return;
    }
    struct stat st;
    FILE *f = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
    if (!f) {
        close(fd);
        snprintf(why, len, "%s is not a regular file", path);
        return;
    }
    int cap = 0;
    char line[MAX_RECORD + 2];
    for (long number = 1; fgets(line, sizeof line, f); number++) {
        const size_t l = strlen(line);
        CurveRecord r;
        if ((l == sizeof line - 1 && line[l - 1] != '\n') || parse_record(line, &r) != 0) {
            snprintf(why, len, "%s: line %ld is not a curve record; the curve is read up to it", path, number);
            break;
        }
        if (*n == max) {
            snprintf(why, len, "%s holds more than %d points; the first %d are read", path, max, max);
            break;
        }
        if (*n == cap) *out = xrealloc(*out, (size_t)(cap = 2 * cap + 16) * sizeof **out);
        (*out)[(*n)++] = r;
    }
    fclose(f);
}
