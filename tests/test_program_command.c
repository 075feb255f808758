// test_program_command.c: the parts of the external runner (trial/external.c) that need no child
// process: a program's parameters from the YAML into the command's words (every macro:
// ${env}, ${interpreter}, ${program}, ${args} with a condition leaving a parameter out,
// ${args_no_hyphens}, ${args_json}, ${args_json_file}, ${envvar:NAME}; an unknown macro
// refused by validate's check), W&B's forms of values (booleans, None, lists, mappings,
// nested parameters) in every ${args...} macro, the ProgramSpec bytes the worker groups get, and the
// devices of each group's slot (CUDA_VISIBLE_DEVICES as Slurm gives it, or none).
// tests/test_external.sh runs the programs.
// modules: trial space
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/bytes.h"
#include "common/util.h"
#include "space/space.h"
#include "trial/external.h"

static const char yaml[] =
    "program: tests/programs/protocol_program.py\n"
    "command: [\"${env}\", \"${interpreter}\", \"${program}\", \"--fixed\", \"${args}\", \"${args_no_hyphens}\",\n"
    "          \"${args_json}\", \"${args_json_file}\", \"${envvar:ATTNSWEEP_TEST_VAR}\"]\n"
    "method: grid\n"
    "metric: {name: val_loss, goal: minimize}\n"
    "parameters:\n"
    "  lr: {values: [0.5, 0.25]}\n"
    "  layers: {value: 3}\n"
    "  optimizer: {values: [adam, sgd]}\n"
    "  momentum: {value: 0.9, when: {optimizer: sgd}}\n";

// The words of trial id's command, joined by '|'.
static void command_of(const SweepSpec *s, int id, char *out, size_t len) {
    Sampler *sm = sampler_create(s);
    TrialConfig c;
    CHECK(sampler_config(sm, id, &c) == 0, "trial %d", id);
    char **argv, err[256];
    int argc;
    CHECK(program_command(&s->program, &c, "/t/args.json", &argv, &argc, err, sizeof err) == 0, "%s", err);
    out[0] = 0;
    for (int k = 0; k < argc; k++) snprintf(out + strlen(out), len - strlen(out), "%s%s", k ? "|" : "", argv[k]);
    CHECK(argv[argc] == NULL, "argv ends in NULL");
    program_argv_free(argv);
    sampler_free(sm);
}

static void test_command(void) {
    SweepSpec s;
    char err[512], got[2048];
    setenv("ATTNSWEEP_TEST_VAR", "from env", 1);
    CHECK(space_parse(&s, "mem.yaml", yaml, strlen(yaml), err, sizeof err) == 0, "%s", err);
    command_of(&s, 0, got, sizeof got);  // grid order: lr, then optimizer
    const char *want0 = "/usr/bin/env|python|tests/programs/protocol_program.py|--fixed|--lr=0.5|--layers=3|"
                        "--optimizer=adam|lr=0.5|layers=3|optimizer=adam|"
                        "{\"lr\": 0.5, \"layers\": 3, \"optimizer\": \"adam\"}|/t/args.json|from env";
    CHECK(!strcmp(got, want0), "trial 0's command\n  got  %s\n  want %s", got, want0);
    command_of(&s, 3, got, sizeof got);
    const char *want3 = "/usr/bin/env|python|tests/programs/protocol_program.py|--fixed|--lr=0.25|--layers=3|"
                        "--optimizer=sgd|--momentum=0.9|lr=0.25|layers=3|optimizer=sgd|momentum=0.9|"
                        "{\"lr\": 0.25, \"layers\": 3, \"optimizer\": \"sgd\", \"momentum\": 0.9}|/t/args.json|"
                        "from env";
    CHECK(!strcmp(got, want3), "trial 3's command\n  got  %s\n  want %s", got, want3);

    Bytes b = {0};  // what a worker group gets is what the coordinator parsed (and gave a trials directory)
    s.program.trials_dir = xstrdup("/t/results/NAME.trials");
    program_spec_pack(&b, &s.program);
    ProgramSpec back;
    CHECK(program_spec_unpack(&back, b.data, b.len) == 0, "unpack");
    CHECK(back.n_command == s.program.n_command && !strcmp(back.program, s.program.program) &&
              !strcmp(back.command[8], "${envvar:ATTNSWEEP_TEST_VAR}") && back.grace == 10 &&
              !strcmp(back.trials_dir, s.program.trials_dir) &&
              !strcmp(back.metric, s.program.metric) && back.needs_checkpoint == 0,
          "the spec back from its bytes");
    program_spec_free(&back);
    CHECK(program_spec_unpack(&back, b.data, b.len / 2) == -1, "half a spec refused");
    program_spec_free(&back);  // a refused one is left empty
    bytes_free(&b);
    space_free(&s);

    CHECK(program_macro_known("${args}", err, sizeof err) && program_macro_known("--plain", err, sizeof err),
          "known words");
    CHECK(!program_macro_known("${arg}", err, sizeof err) && strstr(err, "${arg}"), "an unknown macro: '%s'", err);
}

// W&B's forms (wandb/sdk/launch/sweeps/utils.py, create_sweep_command_args): values as
// Python's str() writes them (True, None, lists, mappings, reals with a point or e±XX),
// a nested parameter as its parent's mapping (keys by name), ${args_no_boolean_flags}
// (a true flag bare, a false one left out), ${args_no_equals}, the Hydra forms, JSON as
// json.dumps writes it, ${envvar:NAME} inside a word (an unset NAME stays NAME).
static const char wandb_yaml[] =
    "program: tests/programs/protocol_program.py\n"
    "command: [\"${interpreter}\", \"--data=${envvar:ATTNSWEEP_TEST_VAR}/d${envvar:ATTNSWEEP_UNSET_29}\", \"${args}\",\n"
    "          \"${args_no_boolean_flags}\", \"${args_no_equals}\", \"${args_append_hydra}\",\n"
    "          \"${args_override_hydra}\", \"${args_json}\"]\n"
    "method: grid\n"
    "parameters:\n"
    "  flag: {values: [true, false]}\n"
    "  sizes: {value: [16, 32]}\n"
    "  sched: {value: {kind: cosine, warmup: 0.1, names: [\"a'b\", x]}}\n"
    "  opt:\n"
    "    parameters:\n"
    "      lr: {value: 1.0}\n"
    "      beta: {values: [0.9]}\n"
    "  none: {value: null}\n"
    "  big: {value: 1e16}\n"
    "  small: {value: 0.00001}\n";

static void test_wandb_forms(void) {
    SweepSpec s;
    char err[512], got[4096];
    setenv("ATTNSWEEP_TEST_VAR", "from env", 1);
    unsetenv("ATTNSWEEP_UNSET_29");
    CHECK(space_parse(&s, "mem.yaml", wandb_yaml, strlen(wandb_yaml), err, sizeof err) == 0, "%s", err);
    const char *rest = "--sizes=[16, 32]|--sched={'kind': 'cosine', 'warmup': 0.1, 'names': [\"a'b\", 'x']}|"
                       "--opt={'beta': 0.9, 'lr': 1.0}|--none=None|--big=1e+16|--small=1e-05";
    const char *equals = "--sizes|[16, 32]|--sched|{'kind': 'cosine', 'warmup': 0.1, 'names': [\"a'b\", 'x']}|"
                         "--opt|{'beta': 0.9, 'lr': 1.0}|--none|None|--big|1e+16|--small|1e-05";
    const char *hydra = "sizes=[16, 32]|%ssched={'kind': 'cosine', 'warmup': 0.1, 'names': [\"a'b\", 'x']}|"
                        "%sopt={'beta': 0.9, 'lr': 1.0}|%snone=None|%sbig=1e+16|%ssmall=1e-05";
    const char *json_rest = "\"sizes\": [16, 32], \"sched\": {\"kind\": \"cosine\", \"warmup\": 0.1, \"names\": "
                            "[\"a'b\", \"x\"]}, \"opt\": {\"beta\": 0.9, \"lr\": 1.0}, \"none\": null, \"big\": 1e+16, "
                            "\"small\": 1e-05}";
    for (int id = 0; id < 2; id++) {
        const char *py = id ? "False" : "True";
        char plus[2048], twice[2048], want[8192];
        snprintf(plus, sizeof plus, hydra, "+", "+", "+", "+", "+");
        snprintf(twice, sizeof twice, hydra, "++", "++", "++", "++", "++");
        snprintf(want, sizeof want,
                 "python|--data=from env/dATTNSWEEP_UNSET_29|--flag=%s|%s|%s%s|--flag|%s|%s|+flag=%s|+%s|++flag=%s|++%s|"
                 "{\"flag\": %s, %s",
                 py, rest, id ? "" : "--flag|", rest, py, equals, py, plus, py, twice, id ? "false" : "true", json_rest);
        command_of(&s, id, got, sizeof got);
        CHECK(!strcmp(got, want), "W&B's forms, trial %d\n  got  %s\n  want %s", id, got, want);
    }
    Bytes b = {0};  // the worker groups get the forms with the spec
    s.program.trials_dir = xstrdup("/t");
    s.program.count_reports = 1;
    program_spec_pack(&b, &s.program);
    ProgramSpec back;
    CHECK(program_spec_unpack(&back, b.data, b.len) == 0 && !memcmp(back.form, s.program.form, sizeof back.form) &&
              back.form[0] == PROGRAM_FORM_JSON && back.form[3] == PROGRAM_FORM_NESTED && back.count_reports == 1,
          "the forms back from the spec's bytes: flag %d, opt.lr %d, count_reports %d", back.form[0], back.form[3],
          back.count_reports);
    program_spec_free(&back);
    bytes_free(&b);
    space_free(&s);
    CHECK(!program_macro_known("--x=${envvar:home}", err, sizeof err) && strstr(err, "A-Z"),
          "a lower-case ${envvar:name} refused (W&B's pattern takes A-Z, 0-9, _): '%s'", err);
    CHECK(!program_macro_known("--x=${args}", err, sizeof err) && strstr(err, "a word of its own"),
          "${args} inside a word refused: '%s'", err);
}

static void test_devices(void) {
    char out[64], err[256];
    CHECK(program_devices(0, 2, NULL, out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "0,1"), "slot 0: %s", out);
    CHECK(program_devices(2, 2, NULL, out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "4,5"), "slot 2: %s", out);
    CHECK(program_devices(1, 2, "3,5,7,9", out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "7,9"),
          "slot 1 of Slurm's devices: %s", out);
    CHECK(program_devices(1, 1, "GPU-a1,GPU-b2", out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "GPU-b2"),
          "devices by UUID: %s", out);
    CHECK(program_devices(2, 2, "3,5,7,9", out, sizeof out, err, sizeof err) == -1 && err[0],
          "too few devices refused");
}

int main(void) {
    test_command();
    test_wandb_forms();
    test_devices();
    return check_report("test_program_command");
}
