# lib.sh: what the tests/test_*.sh scripts share. A script starts with
#     set -euo pipefail
#     source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
# and gets: bin (the attnsweep binary, absolute; ctest passes it as $1), here (tests/),
# py (Debian's python with h5py; its checks compare numbers with close() of
# tests/numcheck.py and python/attnsweep (the results reader), on PYTHONPATH), tmp (a scratch directory, the working directory,
# removed at exit), checks and start (for the last line), the Open MPI environment for
# root and oversubscription, and the helpers below (pycheck: numpy checks on stdin).
bin=${1:?usage: bash tests/$(basename "$0") /path/to/attnsweep}
[[ -x $bin ]] || { echo "FAIL: $bin is not an executable" >&2; exit 1; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
export ATTNSWEEP_BIN=$bin  # the binary scripts/analyze.py runs for the report's numbers
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
export PYTHONPATH=$here:$(dirname "$here")/python${PYTHONPATH:+:$PYTHONPATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
leaks=0  # a script sets leaks=1 around the runs that leak-check each code path once
# shellcheck source=tests/sanitizer_env.sh
source "$here/sanitizer_env.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX")
# Jobs a script starts in the background (add their pids to `background`) are stopped at
# exit, so a failure leaves no sweep running (mpirun passes SIGTERM on to its ranks).
background=()
cleanup() {
    local p
    for p in "${background[@]}"; do
        kill -TERM "$p" 2>/dev/null && { wait "$p" 2>/dev/null || true; }  # killed: not the script's failure
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"  # anything written by mistake lands here and is removed
start=$SECONDS
checks=0

# The parameters of the smallest recall model (a trial of 40 steps takes a fraction of a
# second), for a sweep YAML's parameters: section.
tiny_recall_params='  d_model: {value: 16}
  heads: {value: 2}
  layers: {value: 1}
  batch: {value: 16}
  eval_batches: {value: 2}
  recall_pairs: {value: 4}'

# random_recall_yaml NAME TRIALS STEPS SEED: $tmp/NAME.yaml, a random sweep of TRIALS
# trials of the smallest recall model (mha or linear, a log-uniform lr), STEPS steps each
# with one evaluation at the end.
random_recall_yaml() {
    cat >"$tmp/$1.yaml" <<EOF
name: $1
method: random
task: recall
seed: $4
trials: $2
budget: {steps: $3, eval_every: $3}
parameters:
  attention: {values: [mha, linear]}
  lr: {distribution: log_uniform_values, min: 0.001, max: 0.01}
$tiny_recall_params
EOF
}

# program_grid_yaml NAME PROGRAM LINE... -- PARAMETER-LINE...: $tmp/NAME.yaml, a grid sweep
# of the trial program PROGRAM run by Debian's python, with the top-level LINEs and then
# `parameters:` with each PARAMETER-LINE under it.
program_grid_yaml() {
    local name=$1 program=$2
    shift 2
    {
        echo "name: $name"
        echo "program: $program"
        echo "command: [$py, \"\${program}\", \"\${args}\"]"
        echo "method: grid"
        while [[ $# -gt 0 && $1 != -- ]]; do echo "$1"; shift; done
        [[ $# -gt 0 ]] && shift
        echo "parameters:"
        printf '  %s\n' "$@"
    } >"$tmp/$name.yaml"
}

# The e2e tier's shared results file (issue 28): tests/fixture_sweep.yaml, run once by
# ctest's fixture_sweep (tests/fixture_sweep.sh) into the build tree, whose path CMakeLists.txt
# gives the tests that read it (FIXTURES_REQUIRED e2e_sweep) in ATTN_FIXTURE_SWEEP.
# run_fixture_sweep OUT: run it under mpirun -np 3 into OUT.
run_fixture_sweep() {
    mpi 3 run "$here/fixture_sweep.yaml" -o "$1" --quiet
    [[ $rc == 0 ]] || fail "the fixture sweep tests/fixture_sweep.yaml: exit code $rc"
}
# fixture_sweep COPY: a copy of the fixture's file at COPY, the test's own to change and to
# write beside. Under ctest a missing file fails the test; a script run by hand (no
# ATTN_FIXTURE_SWEEP) runs the sweep itself.
fixture_sweep() {
    if [[ -z ${ATTN_FIXTURE_SWEEP:-} ]]; then
        echo "   (ATTN_FIXTURE_SWEEP is not set: running tests/fixture_sweep.yaml here)"
        run_fixture_sweep "$1"
        return
    fi
    [[ -f $ATTN_FIXTURE_SWEEP ]] || fail "no fixture results file $ATTN_FIXTURE_SWEEP: ctest's fixture_sweep writes it before this test (it failed, or was left out with -FA/-FS)"
    cp "$ATTN_FIXTURE_SWEEP" "$1"
}

# kill_job PID YAML: kill -9 every rank of this sweep (matched by the binary and the YAML's
# absolute path, so no other checkout's test is touched), then mpirun: ranks first, as the
# kernel kills a worker out of memory (a rank outliving its mpirun gets SIGTERM from the
# kernel and marks its trial stopped: sweep_internal.c).
kill_job() {
    pkill -9 -f "^$bin run $2" || true
    kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# results_format: the results format this attnsweep writes (attnsweep schema).
results_format() { "$bin" schema --json | "$py" -c 'import json, sys; print(json.load(sys.stdin)["format_version"])'; }

fail() {
    echo "FAIL: $*" >&2
    for f in out err; do
        [[ -s $tmp/$f ]] && { echo "--- std$f of the last run:" >&2; tail -c 3000 "$tmp/$f" >&2; echo >&2; }
    done
    exit 1
}
pass() { checks=$((checks + 1)); echo "ok   $*"; }

# run ARGS...: run the binary; stdout in $tmp/out, stderr in $tmp/err, exit code in $rc.
# Under AddressSanitizer with leak detection when $leaks is 1 (tests/sanitizer_env.sh).
run() {
    local opts=$asan_noleaks
    [[ $leaks == 1 ]] && opts=$asan_leaks
    rc=0
    ASAN_OPTIONS=$opts "$bin" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
# mpi NP ARGS...: the same under mpirun -np NP (never leak-checked: see sanitizer_env.sh).
mpi() {
    local np=$1
    shift
    rc=0
    ASAN_OPTIONS=$asan_noleaks mpirun -np "$np" "$bin" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}

# pycheck WHAT ARGS... <<'EOF' ... EOF: run the Python on stdin with ARGS; it prints one
# line per problem ("what: expected X, got Y") and exits non-zero if there were any.
pycheck() {
    local what=$1
    shift
    "$py" - "$@" >"$tmp/check" 2>&1 || { sed 's/^/  /' "$tmp/check" >&2; fail "$what (details above)"; }
}

# JSON field of $tmp/out (the one object --json prints).
jfield() { "$py" -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v))' "$tmp/out" "$1"; }

# no_partial FILE: true when no temporary file of FILE (FILE.partial-XXXXXX, common/outfile.h) is left.
no_partial() { ! compgen -G "$1.partial*" >/dev/null; }

expect_rc() {  # expect_rc WANT WHAT
    [[ $rc == "$1" ]] || fail "$2: exit code: expected $1, got $rc"
}
expect_quiet_stderr() {  # expect_quiet_stderr WHAT
    [[ ! -s $tmp/err ]] || fail "$1: stderr: expected nothing, got '$(head -c 500 "$tmp/err")'"
}
expect_one_error_line() {  # expect_one_error_line WHAT
    local n
    n=$(wc -l <"$tmp/err")
    [[ $n == 1 ]] || fail "$1: stderr: expected exactly one line, got $n lines"
    grep -q '^attnsweep: ' "$tmp/err" || fail "$1: stderr: expected a line starting 'attnsweep: ', got '$(cat "$tmp/err")'"
}
# expect_bad_input WHAT PHRASE OUTPUT ARGS...: `attnsweep ARGS...` must exit 2 with one
# stderr line 'attnsweep: ...' containing PHRASE (exact text, grep -F), print nothing on
# stdout, and leave neither OUTPUT nor a temporary file of it (OUTPUT.partial-XXXXXX).
expect_bad_input() {
    local what=$1 phrase=$2 output=$3
    shift 3
    run "$@"
    expect_rc 2 "$what"
    expect_one_error_line "$what"
    grep -qF -- "$phrase" "$tmp/err" ||
        fail "$what: stderr: expected the phrase '$phrase', got '$(cat "$tmp/err")'"
    [[ ! -s $tmp/out ]] || fail "$what: stdout: expected nothing, got '$(head -c 200 "$tmp/out")'"
    [[ ! -e $output ]] && no_partial "$output" ||
        fail "$what: expected no $(basename "$output") or $(basename "$output").partial-*, got: $(ls "$tmp")"
    pass "$what -> $(cat "$tmp/err")"
}
