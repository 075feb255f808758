#!/usr/bin/env bash
# `attnsweep run --workers N`: a sweep on one machine without mpirun (attnsweep starts
# mpirun itself, as root with Open MPI's two root variables set by itself, which this test
# unsets), with exit codes that behave:
#   1. a tiny sweep with --workers 2 finishes (exit 0), every trial once in the file;
#   2. bad input (an existing results file, a broken YAML, groups that do not divide the
#      workers, --workers under mpirun) and a failing sweep (every trial fails: exit 1)
#      print attnsweep's one line, and none of Open MPI's notices;
#   3. SIGINT to the whole process group (a terminal's Ctrl-C) in the middle of a sweep
#      stops it with exit 3 and a resumable journal; SIGTERM to attnsweep alone does the
#      same on the resume; a last --resume completes it, every trial once.
#
# Usage: bash tests/test_local.sh /path/to/attnsweep   (ctest runs it so). About 20 s.
set -euo pipefail
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
# What lib.sh exports for the tests that call mpirun themselves: attnsweep must do without.
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe \
  OMPI_MCA_mpi_yield_when_idle

# Trials of a few tenths of a second, so that a signal finds the sweep half done (the
# sanitizer build runs about 20 times slower: fewer steps there).
steps=300
[[ -n ${ATTNSWEEP_SANITIZED:-} ]] && steps=20
random_recall_yaml quick 4 20 11
random_recall_yaml long 12 "$steps" 11

# no_mpi_notices WHAT: stderr holds none of Open MPI's boilerplate.
no_mpi_notices() {
  ! grep -qE 'Primary job|mpirun (detected|has exited|noticed)|-------------' "$tmp/err" ||
    fail "$1: Open MPI's notices on stderr"
}

# check_h5 OUT N [partial]: trials 0..N-1 once each in OUT (tests/check_sweep_h5.py).
check_h5() { "$py" "$here/check_sweep_h5.py" "$@" || fail "results file $1: see above"; }

echo "== 1. a sweep with --workers 2, no mpirun"
t0=$SECONDS
run run quick.yaml --workers 2 -o quick.h5
expect_rc 0 "run --workers 2"
grep -q "sweep quick: 4 trials .* on 2 worker group(s) of 1 rank(s)" "$tmp/err" || fail "run --workers 2: no start line"
grep -q "sweep quick: finished 4 trials" "$tmp/err" || fail "run --workers 2: no 'finished 4 trials'"
no_mpi_notices "run --workers 2"
check_h5 quick.h5 4 >/dev/null
pass "run --workers 2 (as $(id -un), no OMPI_* variables set): exit 0, 4 trials once each, in $((SECONDS - t0)) s"

echo "== 2. bad input and failure: attnsweep's line, not Open MPI's"
# The results file exists: the coordinator (rank 0) ends the job with exit 2 by itself
# (--quiet: no start line before it).
run run quick.yaml --workers 2 -o quick.h5 --quiet
expect_rc 2 "an existing results file"
expect_one_error_line "an existing results file"
grep -qF "quick.h5.journal already holds a sweep; pass --resume" "$tmp/err" || fail "an existing results file: $(cat "$tmp/err")"
pass "an existing results file -> exit 2, one line: $(cat "$tmp/err")"
printf 'name: x\nmethod: random\nparameters: [\n' >"$tmp/broken.yaml"
expect_bad_input "a broken YAML" "broken.yaml:" "$tmp/broken.h5" run broken.yaml --workers 2 -o broken.h5
expect_bad_input "--workers 3 in groups of 2" "--workers 3 cannot form groups of --group-size 2" "$tmp/q3.h5" \
  run quick.yaml --workers 3 --group-size 2 -o q3.h5
rc=0
ASAN_OPTIONS=$asan_noleaks mpirun --allow-run-as-root --quiet -np 1 "$bin" run quick.yaml --workers 2 -o q4.h5 >"$tmp/out" 2>"$tmp/err" || rc=$?
expect_rc 2 "--workers under mpirun"
expect_one_error_line "--workers under mpirun"
grep -qF -- "--workers starts its own mpirun" "$tmp/err" || fail "--workers under mpirun: $(cat "$tmp/err")"
pass "--workers under mpirun -> exit 2, one line: $(cat "$tmp/err")"

# Every trial fails (the program exits 1): exit 1, the sweep's own last line.
printf 'import sys\nsys.exit(1)\n' >"$tmp/fails.py"
program_grid_yaml fails fails.py 'metric: {name: val_loss, goal: minimize}' -- 'lr: {values: [0.1, 0.2]}'
run run fails.yaml --workers 2 -o fails.h5
expect_rc 1 "a sweep whose trials all fail"
grep -qF "sweep fails: no trial finished ok (0 ok, 0 pruned, 2 failed" "$tmp/err" ||
  fail "a sweep whose trials all fail: $(cat "$tmp/err")"
no_mpi_notices "a sweep whose trials all fail"
pass "every trial failed -> exit 1, the sweep's last line and no Open MPI notice"

echo "== 3. Ctrl-C and SIGTERM stop it with exit 3; --resume completes it"
# journaled: the trials long.h5.journal holds (0 when there is none).
journaled() {
  "$py" -c 'import sys; from journal import trial_ids; print(len(trial_ids(sys.argv[1]) or []))' \
    long.h5.journal 2>/dev/null || echo 0
}
# start_long ARGS...: attnsweep run long.yaml --workers 2 ARGS in the background, in a
# process group of its own (set -m: as a terminal's foreground job), until it has
# journaled a trial more; its pid in $pid.
start_long() {
  local before t=$((SECONDS + 60))
  before=$(journaled)
  set -m
  ASAN_OPTIONS=$asan_noleaks "$bin" run long.yaml --workers 2 -o long.h5 "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  set +m
  background+=("$pid")
  while ((SECONDS < t)); do
    (($(journaled) > before)) && return 0
    kill -0 "$pid" 2>/dev/null || fail "the sweep ended before a trial was journaled"
    sleep 0.1
  done
  fail "no trial journaled after 60 s"
}
# stopped HOW: the sweep in the background ends with exit 3, some trials kept.
stopped() {
  rc=0
  wait "$pid" || rc=$?
  expect_rc 3 "$1"
  no_mpi_notices "$1"
  kept=$(check_h5 long.h5 12 partial)
  pass "$1: exit 3, $kept of 12 trials kept, no Open MPI notice"
}
start_long
kill -INT -- "-$pid"  # the whole process group, as Ctrl-C at a terminal
stopped "SIGINT to the process group (Ctrl-C)"
start_long --resume
kill -TERM "$pid"
stopped "SIGTERM to attnsweep"
run run long.yaml --workers 2 -o long.h5 --resume
expect_rc 0 "the last --resume"
no_mpi_notices "the last --resume"
check_h5 long.h5 12 >/dev/null
pass "--resume --workers 2 completed the sweep: 12 trials once each"
echo "all $checks checks passed in $((SECONDS - start)) s"
