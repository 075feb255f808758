// python_ref.h: the C tests' way of running Debian's python (/usr/bin/python3, with numpy,
// h5py and pandas) as an independent reference. Include it after defining
// _POSIX_C_SOURCE (popen, mkstemp).
#ifndef ATTN_PYTHON_REF_H
#define ATTN_PYTHON_REF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

// `/usr/bin/python3 - ARGS` reading script from its stdin: a check that it exits 0 (its
// traceback, if any, is on stderr above the failure). what names the check.
static inline void check_python(const char *script, const char *args, const char *what) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 - %s", args);
    FILE *py = popen(cmd, "w");
    CHECK(py != NULL, "cannot run %s", cmd);
    if (!py) return;
    fputs(script, py);
    int status = pclose(py);
    CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the %s check failed (status %d); see its traceback above", what, status);
}

// numpy on n float tensors of four modes each: numpy_start writes them back to back to a
// temporary file and starts `/usr/bin/python3 -c SCRIPT FILE d0 d1 d2 d3 ...` (the dims
// of each tensor in turn); the caller reads r->out (NULL if python could not start),
// then numpy_finish closes it and removes the file. SCRIPT must hold no double quote.
typedef struct {
    FILE *out;
    char path[40];
} NumpyRun;

static inline void numpy_start(NumpyRun *r, const char *script, float *const *W, const int (*dims)[4], int n) {
    r->out = NULL;
    snprintf(r->path, sizeof r->path, "/tmp/attnsweep_numpy_XXXXXX");
    int fd = mkstemp(r->path);
    if (fd < 0) return;
    FILE *f = fdopen(fd, "wb");
    for (int k = 0; k < n; k++) fwrite(W[k], sizeof(float), (size_t)dims[k][0] * dims[k][1] * dims[k][2] * dims[k][3], f);
    fclose(f);
    size_t size = strlen(script) + sizeof r->path + 64 + 48 * (size_t)n;
    char *cmd = malloc(size);
    if (!cmd) return;
    int len = snprintf(cmd, size, "/usr/bin/python3 -c \"%s\" %s", script, r->path);
    for (int k = 0; k < n; k++)
        len += snprintf(cmd + len, size - (size_t)len, " %d %d %d %d", dims[k][0], dims[k][1], dims[k][2], dims[k][3]);
    r->out = popen(cmd, "r");
    free(cmd);
}

static inline void numpy_finish(NumpyRun *r) {
    if (r->out) pclose(r->out);
    r->out = NULL;
    unlink(r->path);
}

#endif
