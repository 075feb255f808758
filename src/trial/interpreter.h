// interpreter.h: what `attnsweep validate` says about the interpreter of a program's
// sweep. W&B's ${interpreter} is the word python, found on the PATH the program runs
// with (PROGRAM_INTERPRETER, wandb/wandb_agent.py): validate names the file that word
// finds here and the Python behind it, and tries the program's first imports with it,
// so that a PATH whose python lacks torch shows before any trial fails.
#ifndef ATTN_INTERPRETER_H
#define ATTN_INTERPRETER_H

#include <stddef.h>

#include "trial/external.h"

enum { INTERPRETER_MAX_IMPORTS = 8, INTERPRETER_TIMEOUT_S = 20 };

// Whether word names an executable regular file: itself when it has a '/', else the first
// on PATH; its path into full.
int program_on_path(const char *word, char *full, size_t len);

// The top-level modules the Python program at path imports (`import a.b, c as d` and
// `from a import b` at the start of a line; relative imports and __future__ left out),
// the first `cap` of them, each once, into names (64 bytes each). A file that is not a
// Python program (neither *.py nor a python #! line) or cannot be read gives 0.
int interpreter_program_imports(const char *path, char names[][64], int cap);

// For a sweep whose command uses ${interpreter}: a line saying which interpreter it finds
// (into found), and, when it cannot import some of the program's first imports (or does
// not answer within INTERPRETER_TIMEOUT_S), a warning line (into warning, else ""). 0
// when the command does not use ${interpreter} (both lines empty), 1 otherwise.
int interpreter_check(const ProgramSpec *spec, char *found, size_t found_len, char *warning, size_t warning_len);

#endif
