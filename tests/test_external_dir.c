// test_external_dir.c: a program trial's directory (trial/external_dir.c), on a real file
// system. Each attempt gets a fresh, empty TRIALS_DIR/NNNNNN: made when absent; the empty
// one the worker made for the hand-out kept as it is (not removed and made again); one
// holding only attnsweep's own files (an attempt stopped before its program wrote
// anything) emptied; one holding a file of the program's set aside as NNNNNN.resume (its
// path for ATTNSWEEP_RESUME_DIR) with the new one empty; a symbolic link planted at its
// name removed, never followed (the directory it pointed to untouched).
// modules: trial
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/util.h"
#include "trial/external_impl.h"

static char top[256];

static void touch(const char *dir, const char *name) {
    char *p = external_path_join(dir, name);
    const int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0, "cannot make %s", p);
    if (fd >= 0) close(fd);
    free(p);
}

// Entries of dir besides . and .. (-1: not a directory).
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

// One attempt of trial 7: its directory made by external_trial_dir, checked real and
// empty; *resume_out gets the resume path (or NULL).
static void attempt(const char *what, char **resume_out) {
    ProgramSpec spec = {.trials_dir = top};
    TrialResult r = {.id = 7};
    Run run = {.spec = &spec, .r = &r};
    char *resume = NULL;
    CHECK(external_trial_dir(&run, &resume) == 0, "%s: external_trial_dir failed: %s", what, run.why);
    struct stat st = {0};
    CHECK(run.dir && lstat(run.dir, &st) == 0 && S_ISDIR(st.st_mode), "%s: no real directory at %s", what,
          run.dir ? run.dir : "(none)");
    CHECK(run.dir && entries(run.dir) == 0, "%s: the new directory holds %d entries", what,
          run.dir ? entries(run.dir) : -1);
    free(run.dir), free(run.metrics_path), free(run.stdout_path), free(run.stderr_path);
    *resume_out = resume;
}

int main(void) {
    snprintf(top, sizeof top, "/tmp/test_external_dir.%ld", (long)getpid());
    char dir[300], elsewhere[300], *resume;
    snprintf(dir, sizeof dir, "%s/000007", top);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", top);

    // Absent: made.
    attempt("absent", &resume);
    CHECK(!resume, "absent: a resume directory %s", resume);

    // Empty, as the worker makes it for each hand-out: kept, not made again. A mode no
    // mkdir here gives marks it (an inode number is no mark: a freed one comes back).
    CHECK(chmod(dir, 0700) == 0, "cannot chmod %s", dir);
    attempt("empty", &resume);
    struct stat st;
    CHECK(lstat(dir, &st) == 0 && (st.st_mode & 0777) == 0700,
          "empty: the directory was made again (mode %o), not kept", (unsigned)(st.st_mode & 0777));
    CHECK(!resume, "empty: a resume directory %s", resume);

    // attnsweep's files alone: emptied, no resume.
    touch(dir, "stdout"), touch(dir, "metrics.jsonl"), touch(dir, "curve.jsonl");
    attempt("attnsweep's files", &resume);
    CHECK(!resume, "attnsweep's files: a resume directory %s", resume);

    // A file of the program's: set aside as 000007.resume, which holds it.
    touch(dir, "stdout"), touch(dir, "model.pt");
    attempt("the program's file", &resume);
    char want[400], *kept = NULL;
    snprintf(want, sizeof want, "%s.resume", dir);
    CHECK(resume && !strcmp(resume, want), "the program's file: resume %s, want %s", resume ? resume : "NULL", want);
    if (resume) kept = external_path_join(resume, "model.pt");
    CHECK(kept && access(kept, F_OK) == 0, "the program's file is not in %s", want);
    free(kept), free(resume);

    // A link at its name, to a directory with a file: the link goes, its target stays.
    CHECK(mkdir(elsewhere, 0755) == 0, "cannot make %s", elsewhere);
    touch(elsewhere, "model.pt");
    CHECK(rmdir(dir) == 0 && symlink(elsewhere, dir) == 0, "cannot plant a link at %s", dir);
    attempt("a link", &resume);
    CHECK(!resume, "a link: its target was taken for an earlier attempt (%s)", resume);
    CHECK(entries(elsewhere) == 1, "a link: its target holds %d entries, not its 1 file", entries(elsewhere));

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", top);
    CHECK(system(cmd) == 0, "%s", cmd);
    return check_report("test_external_dir");
}
