// external.h: the runner of the researcher's own training program, behind the runner
// interface (runner.h). A sweep that names a `program` or a `command` (W&B's keys,
// space.h) runs one child process per trial and talks to it by the trial protocol:
//
//   environment   ATTNSWEEP_TRIAL       the trial's id in the sweep
//                 ATTNSWEEP_SEED        its seed (sweep seed·1000 + repeat)
//                 ATTNSWEEP_TRIAL_DIR   a fresh directory for the trial's files (absolute):
//                                       TRIALS_DIR/NNNNNN, TRIALS_DIR = results/NAME.trials
//                 ATTNSWEEP_METRICS     TRIAL_DIR/metrics.jsonl, empty: the program appends
//                                       one JSON object per evaluation to it
//                 ATTNSWEEP_RESUME_DIR  only when an earlier attempt of this trial was
//                                       stopped and left files of the program's own: that
//                                       attempt's directory, TRIALS_DIR/NNNNNN.resume
//                 CUDA_VISIBLE_DEVICES  with resources.gpus: the group's devices
//                 OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS   with resources.cpus
//   metrics       {"step": 200, "val_accuracy": 0.81, "val_loss": 0.52, ...}: "step" (an
//                 integer >= 0) in every line; numbers (or null) for the values, NaN and
//                 Infinity as Python's json writes them; the last line is the final
//                 result; "checkpoint": PATH (relative to the working directory) names the
//                 weights to score instead of TRIAL_DIR/model.safetensors
//   stopping      ASHA's stop, the time limit and a stop of the sweep send SIGTERM to the
//                 program's process group, then SIGKILL after `grace` seconds
//   failing       exit code != 0, death by a signal, no metrics, a malformed line, more
//                 than max_output bytes in stdout, stderr or the metrics, or no readable
//                 checkpoint where the sweep scores one: status failed with the reason;
//                 the last 20 lines of stderr are kept with the trial
//
// stdout and stderr go to TRIAL_DIR/stdout and TRIAL_DIR/stderr. The child runs in the
// working directory of attnsweep, in a process group of its own, without the MPI
// job's OMPI_*, PMIX_* and PMI_* variables (it is not a rank of the sweep's job), and is
// killed if its worker dies (PR_SET_PDEATHSIG).
#ifndef ATTN_EXTERNAL_H
#define ATTN_EXTERNAL_H

#include <stddef.h>

#include "common/bytes.h"
#include "params/config.h"
#include "trial/runner.h"

enum { PROGRAM_KEY = 32 };  // longest metric key + 1

typedef struct {
    int n_command;          // words of the command; 0: not a program's sweep
    char **command;         // as written, macros in them (program_command expands them)
    char *program;          // `program:`, or NULL when only a command is given
    char *trials_dir;       // where the trials' directories go (the sweep sets it from its output)
    double grace;           // seconds between SIGTERM and SIGKILL [10]
    double max_output;      // bytes each of stdout, stderr and the metrics may reach
    int needs_checkpoint;   // the sweep scores the program's weights (metric reward, or a reward section)
    char accuracy[PROGRAM_KEY];  // the key read as val_accuracy [val_accuracy] (reward.accuracy)
    char metric[PROGRAM_KEY];    // the sweep's metric when it is a name of the program's own, else ""
    int gpus, cpus;         // per worker group; 0: not given (resources)
    unsigned char form[MAX_PROGRAM_PARAMS];  // per parameter slot: PROGRAM_FORM_* bits
    int count_reports;      // ASHA's rungs count the lines holding the metric (W&B's hyperband
                            // iterations), not the lines' steps
} ProgramSpec;

// How a parameter reaches the program (W&B's meaning). JSON: its values are JSON texts
// (a boolean, null, a list or a mapping among them in the file). NESTED: it is one of a
// parameter's `parameters`, named PARENT.NAME, and reaches the program inside PARENT's
// mapping.
enum { PROGRAM_FORM_JSON = 1, PROGRAM_FORM_NESTED = 2 };

// W&B's ${interpreter} (wandb/wandb_agent.py): the word python, found on the PATH the
// program runs with.
#define PROGRAM_INTERPRETER "python"

// The default command, W&B's.
#define PROGRAM_DEFAULT_COMMAND "${env} ${interpreter} ${program} ${args}"

void program_spec_free(ProgramSpec *p);
// For the worker groups: the spec as bytes (common/bytes.h), and back; unpack returns
// -1 on bytes that are not a spec.
void program_spec_pack(Bytes *b, const ProgramSpec *p);
int program_spec_unpack(ProgramSpec *p, const unsigned char *data, size_t len);

// The command of configuration c as argv words (NULL-terminated, *argc of them; free
// with program_argv_free), as W&B's agent builds it. Macros, each a whole word: ${env}
// (/usr/bin/env), ${interpreter} (PROGRAM_INTERPRETER), ${program}, ${args}
// (--name=value for each parameter c has), ${args_no_hyphens} (name=value),
// ${args_no_boolean_flags} (as ${args}, but a true boolean --name and a false one left
// out), ${args_no_equals} (--name value: two words), ${args_append_hydra} (+name=value),
// ${args_override_hydra} (++name=value), ${args_json} (one word: the parameters as a JSON
// object), ${args_json_file} (the path args_json_path, where the caller writes that
// object); ${envvar:NAME} anywhere in a word is the value of environment variable NAME (or
// NAME when it is unset, as W&B's). A value is written as Python's str() writes it
// (True, None, [1, 2], {'lr': 0.1}); nested parameters as their parent's mapping. Any other
// ${...} is an error. Returns 0, or -1 with the reason in err.
int program_command(const ProgramSpec *spec, const TrialConfig *c, const char *args_json_path, char ***argv,
                    int *argc, char *err, size_t errlen);
void program_argv_free(char **argv);
// The parameters c has, as the JSON object ${args_json} gives (json.dumps' spacing; free).
char *program_args_json(const ProgramSpec *spec, const TrialConfig *c);
// A real as Python's repr writes it (W&B writes values so): the fewest digits that read
// back, positional with at least one decimal for exponents -4..15 (0.1, 1.0, 1e-05), else
// d.ddde±XX (1e+16); NaN and infinities as JSON's readers take them.
void program_real_text(double v, char *out, size_t len);
// Whether word (a macro or a plain word) is a macro program_command knows; 0 with a
// message in err otherwise.
int program_macro_known(const char *word, char *err, size_t errlen);

// The devices of the group in device slot `slot` of its node (TrialHooks.device_slot):
// gpus of them, entries slot·gpus .. slot·gpus + gpus − 1 of `visible` (the
// CUDA_VISIBLE_DEVICES the worker got, as Slurm sets it), or those numbers when visible is
// NULL. Writes the comma-separated list to out and returns 0, or -1 with the reason in
// err when visible has too few.
int program_devices(int slot, int gpus, const char *visible, char *out, size_t outlen, char *err, size_t errlen);

// The runner (runner.h) for spec, which must outlive it. With a group of several ranks
// the group's leader runs the program; every rank follows its evaluations and scores.
TrialRunner *trial_external_runner(const ProgramSpec *spec);

#endif
