// cmds.h: one function per command-line verb; argv[0] is the verb itself.
#ifndef ATTN_CMDS_H
#define ATTN_CMDS_H

int cmd_train(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_slurm(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_rerun(int argc, char **argv);

// The executable running now (/proc/self/exe; "attnsweep" when unknown), so that a job or
// the ranks that a verb starts run the same build; free() it (run.c).
char *self_exe(void);

// A verb of the command line: its name, its function, and its line in `attnsweep --help`
// (also its manual page's NAME line).
typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int sweep_file;  // 1: it reads a sweep file, and its page lists the trial parameters as YAML keys
} Verb;

#include "trial/trial.h"

// Before the work: make sure PATH can be written (exit 2 naming the verb otherwise: a
// symbolic link, a directory, a directory that cannot be written), so a typo in -o does
// not cost a whole run. Creates and removes a temporary file beside it.
void check_output(const char *verb, const char *path);
// A results file holding one trial, written through a temporary file beside PATH and
// renamed (common/outfile.h), so an interrupted run leaves no half file and a planted link
// is never followed. sweep: the file's "sweep" attribute.
void write_trial_file(const char *path, const TrialResult *r, const char *sweep);
// The same with the root "yaml" attribute given rather than the configuration's lines and
// what it is ranked by (attnsweep rerun: the sweep's YAML and metric, so that the file
// can itself be rerun; metric NULL: reward, maximised).
void write_trial_file_yaml(const char *path, const TrialResult *r, const char *sweep, const char *yaml,
                           const char *metric, int maximize);

#endif
