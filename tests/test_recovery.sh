#!/usr/bin/env bash
# End-to-end tests of what issue 15 asked of `attnsweep run`: nothing lost, nothing stuck.
#   1. mid-trial checkpoints: a trial killed with kill -9 of its whole job after a
#      checkpoint, then --resume: it continues from the checkpoint (not step 0) and ends
#      with the numbers of an uninterrupted run, bit for bit (summary row, curve, weights);
#   2. one writer per sweep: a second `run --resume` on a running sweep's output gets one
#      line naming the holder (host, pid, since when) and exit 2, and the first run
#      finishes with every trial;
#   3. poison trials: a trial running each time its job is killed (kill -9, as the kernel
#      kills a worker out of memory) twice is recorded failed with that reason on the next
#      --resume, and the sweep goes on to the end; but a trial whose worker was stopped
#      (the coordinator killed: mpirun sends the worker SIGTERM) twice is no poison: it
#      finishes (3b);
#   4. outputs never through planted links: run, train and score refuse a symbolic link
#      as their output with one line, exit 2, and leave its target as it was;
#   5. a full disk (a 200 KB tmpfs; skipped when mount is not allowed): one line with
#      "No space left on device", exit 1, no temporary file left, the results file reads
#      (report: the trials flushed before), and --resume completes the sweep once there
#      is room; on a read-only file system one line with the reason and exit 1;
#   6. SIGINT or SIGTERM to the ranks (not to mpirun: Open MPI 4.1's mpirun kills its job
#      on either and exits 1) stops the sweep with exit code 3, and --resume completes it;
#   7. resources.mem refuses, before it starts, a trial whose estimated peak exceeds it.
# Usage: bash tests/test_recovery.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh

# A grid sweep of recall trials (2 heads, 1 layer). sweep_yaml NAME STEPS BUDGET-EXTRA
# [PARAMETER-LINES (default: d_model 16)]
sweep_yaml() {
    local params="  d_model: {value: 16}"
    [[ $# -lt 4 ]] || params=$4
    cat >"$tmp/$1.yaml" <<YAML
name: $1
method: grid
metric: {name: reward, goal: maximize}
task: recall
seed: 3
budget: {steps: $2, eval_every: $(($2 / 4))$3}
reward: {beta: 0.2, gamma: 0.3, modes: [heads], energy: 0.99}
parameters:
  attention: {values: [mha]}
  heads: {value: 2}
  layers: {value: 1}
  batch: {value: 16}
  eval_batches: {value: 2}
  recall_pairs: {value: 4}
$params
YAML
}
# start_until_running NAME: sweep NAME (a YAML made by sweep_yaml) in the background with
# --resume into NAME.h5, once its trial 0 writes a new checkpoint (so it is running); its
# mpirun's pid in pid, its stderr in $tmp/NAME.err.
start_until_running() {
    rm -rf "$1.trials/000000/checkpoint.bin"
    mpirun -np 2 "$bin" run "$tmp/$1.yaml" -o "$1.h5" --resume --quiet 2>>"$tmp/$1.err" &
    pid=$!
    background+=("$pid")
    wait_for "$1.trials/000000/checkpoint.bin" 120 "$tmp/$1.err"
}
# wait_for FILE SECONDS LOG [BYTES]: until FILE exists and is longer than BYTES (LOG: the
# stderr of the run that makes it).
wait_for() {
    local t=$((SECONDS + $2))
    while [[ ! -e $1 ]] || (($(stat -c %s "$1") <= ${4:-0})); do
        ((SECONDS < t)) || fail "no $1 after $2 s: $(cat "$3")"
        sleep 0.05
    done
}

echo "== 1. kill -9 mid-trial, --resume continues from the checkpoint, bit for bit"
sweep_yaml ckpt 800 ", checkpoint_every: 100"
mpi 2 run "$tmp/ckpt.yaml" -o whole.h5 --quiet
[[ $rc == 0 ]] || fail "the uninterrupted run: exit code $rc"
mpirun -np 2 "$bin" run "$tmp/ckpt.yaml" -o cut.h5 2>"$tmp/err" >"$tmp/out" &
pid=$!
background+=("$pid")
wait_for cut.trials/000000/checkpoint.bin 120 "$tmp/err"
kill_job "$pid" "$tmp/ckpt.yaml"
[[ $("$py" -c 'from journal import trial_ids; print(len(trial_ids("cut.h5.journal")))') == 0 ]] ||
    fail "the trial was recorded before the kill: make it longer"
mpi 2 run "$tmp/ckpt.yaml" -o cut.h5 --resume
[[ $rc == 0 ]] || fail "--resume after the kill: exit code $rc"
at=$(sed -n 's/^sweep: trial 0 continues from its checkpoint after step \([0-9]*\) of .*/\1/p' "$tmp/err" | head -1)
[[ -n $at && $at -gt 0 ]] || fail "the resumed trial did not continue from its checkpoint"
[[ ! -e cut.trials ]] || fail "the checkpoint is left after the trial was recorded: $(find cut.trials)"
"$py" - whole.h5 cut.h5 <<'PY' || fail "the resumed trial differs from the uninterrupted one"
import sys, h5py, numpy  # raw on purpose: the two files compared value by value, every group
a, b = (h5py.File(p, "r") for p in sys.argv[1:])
timing = {"seconds", "started", "host"}  # when and where, not what
ra, rb = a["summary"][0], b["summary"][0]
for name in ra.dtype.names:
    if name not in timing:
        assert ra[name].tobytes() == rb[name].tobytes(), f"summary {name}: {ra[name]} != {rb[name]}"
ta, tb = a["trials/000000"], b["trials/000000"]
def same(x, y, where):
    if isinstance(x, h5py.Group):
        assert sorted(x.keys()) == sorted(y.keys()), where
        for k in x:
            same(x[k], y[k], f"{where}/{k}")
    else:
        u, v = x[()], y[()]
        if u.dtype.names:  # a table: every column but the timing ones
            for n in u.dtype.names:
                if n not in timing:
                    assert u[n].tobytes() == v[n].tobytes(), f"{where}.{n}"
        else:
            assert u.tobytes() == v.tobytes(), where
same(ta, tb, "trials/000000")
print(f"{len(ta['curves'])} curve rows and every stored array equal bit for bit")
PY
pass "kill -9 after the checkpoint at step $at: --resume continued from it; summary, curve and weights bit for bit"

echo "== 2. one writer: a second run on the same output is refused, the first finishes"
sweep_yaml lock 800 "" "  d_model: {value: 16}
  lambda_orth: {values: [0, 0.01, 0.02, 0.03, 0.04, 0.05]}"
mpirun -np 2 "$bin" run "$tmp/lock.yaml" -o lock.h5 --resume --quiet 2>"$tmp/first.err" &
pid=$!
background+=("$pid")
# Past its magic line (20 bytes): the holder's start record, which the refusal quotes.
wait_for lock.h5.journal 60 "$tmp/first.err" 20
# The first run is paused while the second tries (its lock stays held), so that a quick
# machine cannot finish the first sweep before the second starts.
pkill -STOP -f "$tmp/lock.yaml"
mpi 2 run "$tmp/lock.yaml" -o lock.h5 --resume --quiet
pkill -CONT -f "$tmp/lock.yaml"
[[ $rc == 2 ]] || fail "a second run on a running sweep: exit code $rc, expected 2"
[[ $(grep -c '^attnsweep: ' "$tmp/err") == 1 ]] ||
    fail "a second run: expected one line of attnsweep's, got: $(cat "$tmp/err")"
grep -qE "lock.h5.journal: this sweep is being run by attnsweep on $(hostname), pid [0-9]+, since [0-9-]+ [0-9:]+: wait for it to end" \
    "$tmp/err" || fail "a second run: the line does not name the holder: $(cat "$tmp/err")"
rc=0
wait "$pid" || rc=$?
[[ $rc == 0 ]] || fail "the first run: exit code $rc after the second was refused: $(cat "$tmp/first.err")"
"$py" - <<'PY' || fail "the first run's results"
from journal import trial_ids
from attnsweep.results import Results
ids = Results("lock.h5").summary.trial.tolist()
assert ids == list(range(6)), ids
assert sorted(trial_ids("lock.h5.journal")) == list(range(6)), trial_ids("lock.h5.journal")
PY
pass "a second --resume: exit 2 and one line naming the holder; the first run kept all 6 trials, each once"

echo "== 3. a trial running at two deaths of its job is recorded failed; the sweep goes on"
# trial 0 (d_model 64) is killed at its first checkpoint; trial 1 (d_model 16) is quick;
# one worker runs them in turn
sweep_yaml poison 800 ", checkpoint_every: 20" "  d_model: {values: [64, 16]}"
for death in 1 2; do
    start_until_running poison
    kill_job "$pid" "$tmp/poison.yaml"
done
mpi 2 run "$tmp/poison.yaml" -o poison.h5 --resume --quiet
[[ $rc == 0 ]] || fail "--resume after two deaths: exit code $rc"
"$py" - <<'PY' || fail "the poison trial's record"
from attnsweep.results import Results
f = Results("poison.h5")
s = dict(zip(f.summary.trial, f.summary.status))
assert s == {0: "failed", 1: "ok"}, s
reason = f.trial_attrs(0)["reason"]
assert "its worker died twice while running it: out of memory?" in reason, reason
PY
pass "trial 0, running at both kills, recorded failed ('its worker died twice while running it: out of memory?'); trial 1 ran"

echo "== 3b. a stop of the job is no death: the coordinator killed twice, the trial finishes"
# kill -9 of the coordinator alone: mpirun then sends SIGTERM to the worker, whose handler
# marks its running trial stopped (trials/000000/stopped); twice, and --resume runs
# trial 0 to the end instead of recording it failed as a trial that killed its worker
sweep_yaml stopped 800 ", checkpoint_every: 20" "  d_model: {values: [64, 16]}"
for stop in 1 2; do
    start_until_running stopped
    for p in $(pgrep -f "attnsweep run $tmp/stopped.yaml"); do  # the coordinator: world rank 0
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=0 && kill -9 "$p"
    done
    wait "$pid" 2>/dev/null || true
    pkill -9 -f "attnsweep run $tmp/stopped.yaml" || true  # nothing should be left; if it is, a death
done
[[ $(wc -l <stopped.trials/000000/stopped) == 2 ]] ||
    fail "the worker should have marked two stops of trial 0, got: $(cat stopped.trials/000000/stopped 2>&1)"
mpi 2 run "$tmp/stopped.yaml" -o stopped.h5 --resume --quiet
[[ $rc == 0 ]] || fail "--resume after two stops: exit code $rc"
"$py" - <<'PY' || fail "the stopped trial's record"
from attnsweep.results import Results
f = Results("stopped.h5")
s = dict(zip(f.summary.trial, f.summary.status))
assert s == {0: "ok", 1: "ok"}, s
PY
[[ ! -e stopped.trials/000000 ]] || fail "trial 0's directory outlived its record: $(ls stopped.trials/000000)"
pass "trial 0, running at two kills of the coordinator (stops, marked by its worker), finished ok; its directory cleared"

echo "== 4. outputs never through planted links"
echo "keep" >victim
ln -s victim link.h5
sweep_yaml links 8 ""
mpi 2 run "$tmp/links.yaml" -o link.h5 --quiet
[[ $rc == 2 && $(grep -c '^attnsweep: ' "$tmp/err") == 1 ]] ||
    fail "run -o LINK: exit code $rc, stderr: $(cat "$tmp/err")"
grep -qF "link.h5: it is a symbolic link" "$tmp/err" || fail "run -o LINK: message: $(cat "$tmp/err")"
run train --task recall --d-model 16 --heads 2 --layers 1 --steps 8 -o link.h5
[[ $rc == 2 && $(wc -l <"$tmp/err") == 1 ]] || fail "train -o LINK: exit code $rc, stderr: $(cat "$tmp/err")"
grep -qF "link.h5: it is a symbolic link" "$tmp/err" || fail "train -o LINK: message: $(cat "$tmp/err")"
mpi 2 run "$tmp/links.yaml" -o model.h5 --quiet
run score model.h5 --trial 0 -o link.h5
[[ $rc == 2 && $(wc -l <"$tmp/err") == 1 ]] || fail "score -o LINK: exit code $rc, stderr: $(cat "$tmp/err")"
grep -qF "link.h5: it is a symbolic link" "$tmp/err" || fail "score -o LINK: message: $(cat "$tmp/err")"
[[ $(cat victim) == keep && -L link.h5 ]] || fail "a link's target was written"
no_partial link.h5 || fail "a temporary file of link.h5 is left"
pass "run, train and score -o LINK: one line, exit 2, the link and its target untouched"

echo "== 5. a full disk: one line with the reason, exit 1, nothing half-written; --resume afterwards"
mkdir disk
if mount -t tmpfs -o size=200k tmpfs disk 2>/dev/null; then  # the sweep needs about 280 KB
    trap 'umount "$tmp/disk" 2>/dev/null || true; cleanup' EXIT
    sweep_yaml full 8 ", checkpoint_every: 0" "  d_model: {value: 16}
  lambda_orth: {values: [0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09]}"
    mpi 2 run "$tmp/full.yaml" -o disk/full.h5 --quiet
    [[ $rc == 1 ]] || fail "a full disk: exit code $rc, expected 1"
    grep -q "No space left on device" "$tmp/err" || fail "a full disk: no reason in: $(cat "$tmp/err")"
    [[ $(grep -c '^attnsweep: ' "$tmp/err") == 1 ]] || fail "a full disk: expected one line, got: $(cat "$tmp/err")"
    no_partial disk/full.h5 || fail "a full disk: a temporary file is left: $(ls disk)"
    line=$(grep '^attnsweep: ' "$tmp/err")
    # what was flushed before the failure reads (the trials the journal holds, or fewer)
    journaled=$("$py" -c 'from journal import trial_ids; print(len(trial_ids("disk/full.h5.journal")))')
    run report disk/full.h5 --json
    [[ $rc == 0 ]] || fail "report on the file a full disk stopped: exit code $rc"
    kept=$(jfield trials)
    [[ $kept -ge 1 && $kept -le $journaled ]] || fail "report after a full disk: $kept trials, the journal holds $journaled"
    mount -o remount,size=64m disk
    mpi 2 run "$tmp/full.yaml" -o disk/full.h5 --resume --quiet
    [[ $rc == 0 ]] || fail "--resume with room again: exit code $rc"
    "$py" -c 'from attnsweep.results import Results; ids = Results("disk/full.h5").summary.trial.tolist(); assert ids == list(range(10)), ids' ||
        fail "--resume with room again: not every trial once"
    pass "ENOSPC: '$line', exit 1, no temporary file, the file reads ($kept trials); --resume with room: 10 trials once"
    # A read-only file system: one line with the reason, exit 1, nothing changed.
    cp disk/full.h5 full.before.h5
    mount -o remount,ro disk
    mpi 2 run "$tmp/full.yaml" -o disk/full.h5 --resume --quiet
    [[ $rc == 1 ]] || fail "--resume on a read-only file system: exit code $rc, expected 1"
    grep -qF "attnsweep: disk/full.h5.journal: cannot open the journal: Read-only file system" "$tmp/err" ||
        fail "--resume on a read-only file system: $(cat "$tmp/err")"
    mpi 2 run "$tmp/full.yaml" -o disk/new.h5 --quiet
    [[ $rc == 1 ]] || fail "a new sweep on a read-only file system: exit code $rc, expected 1"
    grep -qF "attnsweep: disk/new.h5.journal: cannot create the journal: Read-only file system" "$tmp/err" ||
        fail "a new sweep on a read-only file system: $(cat "$tmp/err")"
    cmp -s disk/full.h5 full.before.h5 && [[ ! -e disk/new.h5 ]] || fail "a read-only file system: files changed"
    umount disk
    pass "a read-only file system: one line with 'Read-only file system', exit 1, for a resume and a new sweep"
else
    echo "skip 5: mount -t tmpfs is not allowed here"
fi

echo "== 6. SIGINT or SIGTERM to the ranks stops the sweep with exit 3; --resume completes it"
# Trials of 2400 steps (about a second each here): long enough that a stop lands while one runs.
sweep_yaml stop 2400 "" "  d_model: {value: 16}
  lambda_orth: {values: [0, 0.01, 0.02, 0.03, 0.04]}"
for sig in INT TERM; do
    size=$(stat -c %s stop.h5.journal 2>/dev/null || echo 0)
    mpirun -np 3 "$bin" run "$tmp/stop.yaml" -o stop.h5 --resume --quiet 2>"$tmp/err" &
    pid=$!
    background+=("$pid")
    t=$((SECONDS + 60))
    until (($(stat -c %s stop.h5.journal 2>/dev/null || echo 0) > size + 200)); do  # a trial handed out
        ((SECONDS < t)) || fail "SIG$sig: the sweep did not start: $(cat "$tmp/err")"
        sleep 0.05
    done
    sleep 0.5
    pkill "-$sig" -P "$pid" # the ranks (mpirun's children), as Ctrl-C or Slurm's scancel reach them
    rc=0
    wait "$pid" || rc=$?
    [[ $rc == 3 ]] || fail "SIG$sig to the ranks: exit code $rc, expected 3"
done
mpi 3 run "$tmp/stop.yaml" -o stop.h5 --resume --quiet
[[ $rc == 0 ]] || fail "--resume after the stops: exit code $rc"
"$py" -c 'from attnsweep.results import Results; ids = Results("stop.h5").summary.trial.tolist(); assert ids == list(range(5)), ids' ||
    fail "--resume after the stops: not every trial once"
pass "SIGINT, then SIGTERM, to the ranks: exit 3 each time; --resume completed the 5 trials once"

echo "== 7. resources.mem refuses, before it starts, a trial whose estimated peak exceeds it"
sweep_yaml mem 20 "" "  d_model: {values: [16, 2048]}"
echo "resources: {mem: 600M}" >>"$tmp/mem.yaml"
mpi 2 run "$tmp/mem.yaml" -o mem.h5 --quiet
[[ $rc == 0 ]] || fail "a sweep with resources.mem: exit code $rc"
"$py" - <<'PY' || fail "resources.mem"
from attnsweep.results import Results
f = Results("mem.h5")
s = dict(zip(f.summary.trial, f.summary.status))
assert s == {0: "ok", 1: "failed"}, s
reason = f.trial_attrs(1)["reason"]
assert "needs an estimated" in reason and "more than resources.mem 600 MB" in reason, reason
PY
pass "resources.mem 600M: d_model 16 ran, d_model 2048 recorded failed before it started ('needs an estimated ... MB')"

echo "PASS: $checks checks of recovery in $((SECONDS - start)) s"
