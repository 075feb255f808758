// interpreter.c: the interpreter of a program's sweep and the program's imports
// (interpreter.h).
#define _GNU_SOURCE  // pipe2
#include "trial/interpreter.h"

#include <ctype.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

int program_on_path(const char *word, char *full, size_t len) {
    struct stat st;
    if (strchr(word, '/')) {
        snprintf(full, len, "%s", word);
        return access(word, X_OK) == 0 && stat(word, &st) == 0 && S_ISREG(st.st_mode);
    }
    const char *path = getenv("PATH");
    char *dirs = xstrdup(path ? path : "/usr/bin:/bin"), *save = NULL;
    int found = 0;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        snprintf(full, len, "%s/%s", d, word);
        found = access(full, X_OK) == 0 && stat(full, &st) == 0 && S_ISREG(st.st_mode);
    }
    free(dirs);
    return found;
}

// Whether the file's first line names python (#!/usr/bin/env python3, #!/usr/bin/python).
static int python_shebang(FILE *f) {
    char line[256];
    return fgets(line, sizeof line, f) && !strncmp(line, "#!", 2) && strstr(line, "python");
}

// The module name at t (letters, digits, '_' up to the first '.'), into out; its length.
static size_t module_at(const char *t, char *out) {
    size_t n = 0;
    while ((isalnum((unsigned char)t[n]) || t[n] == '_') && n < 63) n++;
    memcpy(out, t, n);
    out[n] = 0;
    return n;
}

static int add_name(char names[][64], int n, int cap, const char *name) {
    if (!name[0] || !strcmp(name, "__future__") || n >= cap) return n;
    for (int k = 0; k < n; k++)
        if (!strcmp(names[k], name)) return n;
    snprintf(names[n], 64, "%s", name);
    return n + 1;
}

int interpreter_program_imports(const char *path, char names[][64], int cap) {
    const size_t plen = strlen(path);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    const int python = (plen > 3 && !strcmp(path + plen - 3, ".py")) || python_shebang(f);
    int n = 0;
    char line[4096], name[64];
    for (int lines = 0; python && n < cap && lines < 100000 && fgets(line, sizeof line, f); lines++) {
        if (!strncmp(line, "from ", 5)) {  // from a.b import c: a (from . import: relative, left out)
            const char *t = line + 5 + strspn(line + 5, " \t");
            if (module_at(t, name)) n = add_name(names, n, cap, name);
        } else if (!strncmp(line, "import ", 7)) {  // import a.b as c, d: a and d
            for (const char *t = line + 7; t && n < cap; t = strchr(t, ',') ? strchr(t, ',') + 1 : NULL) {
                t += strspn(t, " \t");
                if (module_at(t, name)) n = add_name(names, n, cap, name);
            }
        }
    }
    fclose(f);
    return n;
}

// What the interpreter says to the script below (its executable and version, then one
// line per module it cannot import), within the timeout; -1 when it did not answer.
static const char probe_script[] =
    "import importlib, sys\n"
    "print(sys.executable, sys.version.split()[0])\n"
    "for m in sys.argv[1:]:\n"
    "    try:\n"
    "        importlib.import_module(m)\n"
    "    except BaseException as e:\n"
    "        print(m, type(e).__name__)\n";

static int run_probe(const char *exe, char names[][64], int n, char *out, size_t len) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    const char *argv[INTERPRETER_MAX_IMPORTS + 4] = {exe, "-c", probe_script};
    for (int k = 0; k < n; k++) argv[3 + k] = names[k];
    const pid_t pid = fork();
    if (pid == 0) {
        const int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(fds[1], 1), dup2(null, 2);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t used = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int done = pid < 0, timed_out = 0;
    while (!done) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        const double left = INTERPRETER_TIMEOUT_S - (double)(t.tv_sec - t0.tv_sec) - (t.tv_nsec - t0.tv_nsec) * 1e-9;
        struct pollfd p = {fds[0], POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) == 0) {
            timed_out = 1;
            break;
        }
        char buf[512];
        const ssize_t got = read(fds[0], buf, sizeof buf);
        if (got <= 0) break;
        const size_t keep = used + (size_t)got < len ? (size_t)got : len - 1 - used;
        memcpy(out + used, buf, keep);
        used += keep;
    }
    out[used] = 0;
    close(fds[0]);
    if (pid > 0 && timed_out) kill(pid, SIGKILL);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    return pid < 0 || timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? -1 : 0;
}

int interpreter_check(const ProgramSpec *spec, char *found, size_t found_len, char *warning, size_t warning_len) {
    found[0] = warning[0] = 0;
    int uses = 0;
    for (int k = 0; k < spec->n_command; k++) uses |= !strcmp(spec->command[k], "${interpreter}");
    if (!uses) return 0;
    char exe[4096];
    if (!program_on_path(PROGRAM_INTERPRETER, exe, sizeof exe)) {
        snprintf(found, found_len, "${interpreter} is %s (W&B's), which is not on PATH", PROGRAM_INTERPRETER);
        return 1;
    }
    char names[INTERPRETER_MAX_IMPORTS][64];
    const int n = spec->program ? interpreter_program_imports(spec->program, names, INTERPRETER_MAX_IMPORTS) : 0;
    char said[4096];
    if (run_probe(exe, names, n, said, sizeof said) != 0) {
        snprintf(found, found_len, "${interpreter} is %s (W&B's): %s here", PROGRAM_INTERPRETER, exe);
        snprintf(warning, warning_len, "%s did not run a Python script within %d s: the trials may not start", exe,
                 INTERPRETER_TIMEOUT_S);
        return 1;
    }
    char *save = NULL, *first = strtok_r(said, "\n", &save);  // "EXECUTABLE VERSION"
    char *version = first ? strrchr(first, ' ') : NULL;
    if (version) *version++ = 0;
    snprintf(found, found_len, "${interpreter} is %s (W&B's): %s here, Python %s at %s", PROGRAM_INTERPRETER, exe,
             version ? version : "?", first ? first : "?");
    char missing[1024] = "";
    for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        const size_t used = strlen(missing);
        snprintf(missing + used, sizeof missing - used, "%s%s", used ? ", " : "", l);
    }
    if (missing[0])
        snprintf(warning, warning_len, "%s cannot import %s, among the first imports of %s: its trials would fail "
                 "(run attnsweep where python is the one with them, e.g. in the program's environment, or name "
                 "the interpreter in command)", PROGRAM_INTERPRETER, missing, spec->program);
    return 1;
}
