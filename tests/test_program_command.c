// test_program_command.c: the parts of the external runner (trial/external.c) that need no child
// process: a program's parameters from the YAML into the command's words (every macro:
// ${env}, ${interpreter}, ${program}, ${args} with a condition leaving a parameter out,
// ${args_no_hyphens}, ${args_json}, ${args_json_file}, ${envvar:NAME}; an unknown macro
// refused by validate's check), the ProgramSpec bytes the worker groups get, and the
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
    const char *want0 = "/usr/bin/env|python3|tests/programs/protocol_program.py|--fixed|--lr=0.5|--layers=3|"
                        "--optimizer=adam|lr=0.5|layers=3|optimizer=adam|{\"lr\":0.5,\"layers\":3,\"optimizer\":\"adam\"}|"
                        "/t/args.json|from env";
    CHECK(!strcmp(got, want0), "trial 0's command\n  got  %s\n  want %s", got, want0);
    command_of(&s, 3, got, sizeof got);
    const char *want3 = "/usr/bin/env|python3|tests/programs/protocol_program.py|--fixed|--lr=0.25|--layers=3|"
                        "--optimizer=sgd|--momentum=0.9|lr=0.25|layers=3|optimizer=sgd|momentum=0.9|"
                        "{\"lr\":0.25,\"layers\":3,\"optimizer\":\"sgd\",\"momentum\":0.9}|/t/args.json|from env";
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
    test_devices();
    return check_report("test_program_command");
}
