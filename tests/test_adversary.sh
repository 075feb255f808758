#!/usr/bin/env bash
# Trial programs as adversaries (issue 32): each attack of tests/programs/adversary_program.py
# on the runner, as a sweep under mpirun; the job survives it, the trial gets its status and
# reason, the trials beside it are ok.
# Usage: bash tests/test_adversary.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh
prog=$here/programs/adversary_program.py

# sweep NAME BUDGET EXTRA-LINE PARAMETER-LINES...: a grid sweep of the program on val_loss.
sweep() {
    local name=$1 budget=$2 extra=$3
    shift 3
    program_grid_yaml "$name" "$prog" "metric: {name: val_loss, goal: minimize}" "$budget" "$extra" -- "$@"
}

# statuses FILE: "status:reason" of every trial, by id, one a line.
statuses() {
    "$py" - "$1" <<'PY'
import sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
for t, status in zip(rs.summary.trial, rs.summary.status):
    print(f"{status}:{rs.trial_attrs(t)['reason']}")
PY
}

# longest FILE: the seconds of the trial that took longest, from its start to its result
# (the worker's reads after the program included), a trial's own clock rather than the
# sweep's, which a loaded machine's mpirun start-up and Python starts stretch.
longest() {
    "$py" - "$1" <<'PY'
import sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
print(int(max(rs.trial_attrs(t)['end_time'] - rs.trial_attrs(t)['start_time'] for t in rs.summary.trial)))
PY
}

# ---------------------------------------------------------------------------
echo "== floods: 200,000 metric lines; stdout without end, SIGTERM ignored  [$((SECONDS - start)) s]"
sweep flood "budget: {time_limit: 30, grace: 2, max_output_mb: 5}" "" \
    "kind: {values: [flood, spew, ok]}" "lines: {value: 200000}"
t0=$SECONDS
mpi 2 run "$tmp/flood.yaml" -o "$tmp/flood.h5"
[[ $rc == 0 ]] || fail "a sweep with floods exits 0 (got $rc)"
got=$(statuses "$tmp/flood.h5")
grep -q "^failed:the program wrote more than 100000 metric lines" <<<"$got" ||
    fail "200,000 metric lines: failed, the lines past 100,000 refused: got $got"
grep -q "^failed:the program wrote more than 5 MiB to stdout" <<<"$got" || fail "stdout flood: failed: got $got"
[[ $(sed -n 3p <<<"$got") == ok:* ]] || fail "the trial beside the floods: ok, got $got"
size=$(stat -c %s "$tmp/flood.trials/000001/stdout")
# Cut at the first look past the limit (every 20 ms), not after the 2 s grace: a program
# writing at memory speed wrote 2.26 GB against 5 MB in the grace.
((size < 200 * 1048576)) || fail "stdout flood: $size bytes written against max_output_mb 5"
pass "200,000 lines refused past 100,000; a stdout flood ignoring SIGTERM cut at $((size / 1048576)) MiB of 5; $((SECONDS - t0)) s"

# ---------------------------------------------------------------------------
echo "== no hangs, no survivors: a FIFO checkpoint or stderr, a child left in the group, a setsid() grandchild  [$((SECONDS - start)) s]"
sweep hang "budget: {time_limit: 10, grace: 1}" "" "kind: {values: [fifo, linger, setsid, ok, big_params, fifo_stderr]}"
t0=$SECONDS
mpi 2 run "$tmp/hang.yaml" -o "$tmp/hang.h5"
[[ $rc == 0 ]] || fail "a sweep with hanging programs exits 0 (got $rc)"
got=$(statuses "$tmp/hang.h5" | tr '\n' '|')
[[ $got == "failed:checkpoint "*"model.safetensors: not a regular file|ok:|ok:|ok:|failed:metrics line 1: \"n_params\" must be a count"*"|failed:the program exited with code 1|" ]] ||
    fail "FIFO checkpoint failed at once, the program that left a child and the setsid one ok, n_params 1e300 refused, a FIFO for stderr read as no tail: got $got"
long=$(longest "$tmp/hang.h5")
((long < 10)) || fail "no trial waited for its time limit (10 s): one took $long s"
pid=$(cat "$tmp/hang.trials/000002/escaped.pid")
[[ ! -e /proc/$pid ]] || fail "the setsid() grandchild $pid is alive after the sweep"
pass "a FIFO checkpoint fails its trial at once; a FIFO put for its stderr is not read (no hang, no tail); a child left in the group and a setsid() grandchild are killed; n_params 1e300 refused (the longest trial $long s, the sweep $((SECONDS - t0)) s)"
# Where cgroup v2 is writable (root, or delegated) the trial had a cgroup of its own, removed
# after it; elsewhere the worker as subreaper alone held it (checked above either way).
v2=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
joined=$(cat "$tmp/hang.trials/000002/cgroup")
if [[ -n $v2 && -w $v2${own%/}/cgroup.procs ]]; then
    [[ $joined == "${own%/}/attnsweep-"*-2 ]] || fail "cgroup v2 is writable here ($v2): the setsid() grandchild was in '$joined', not its trial's cgroup"
    [[ ! -e $v2$joined ]] || fail "the trial's cgroup $v2$joined is left after the sweep"
    pass "cgroup v2 writable at $v2: the trial's processes in $joined, removed after it"
else
    pass "cgroup v2 not writable here: the subreaper alone (the grandchild was in '$joined')"
fi

# ---------------------------------------------------------------------------
echo "== bounded reads: a FIFO, a 2 GB sparse file, /dev/zero as config.json; a FIFO shard; 2 GB of metrics  [$((SECONDS - start)) s]"
sweep reads "budget: {time_limit: 10, grace: 1}" "" \
    "kind: {values: [fifo_config, sparse_config, zero_config, fifo_shard, sparse_metrics, ok]}"
t0=$SECONDS
mpi 2 run "$tmp/reads.yaml" -o "$tmp/reads.h5"
[[ $rc == 0 ]] || fail "a sweep whose programs leave unreadable files exits 0 (got $rc)"
got=$(statuses "$tmp/reads.h5")
heads="number of heads unknown: $tmp/reads.trials/00000[0-2]/config.json is not a regular file of at most 16777216 bytes"
for t in 1 2 3; do
    [[ $(sed -n ${t}p <<<"$got") == "failed:checkpoint $tmp/reads.trials/00000$((t - 1))/model.safetensors: "$heads* ]] ||
        fail "trial $((t - 1)): config.json a FIFO, a 2 GB sparse file, a link to /dev/zero: not read, got $(sed -n ${t}p <<<"$got")"
done
[[ $(sed -n 4p <<<"$got") == "failed:checkpoint $tmp/reads.trials/000003/model-00001-of-00001.safetensors: not a regular file" ]] ||
    fail "a FIFO shard fails its trial at once: got $(sed -n 4p <<<"$got")"
[[ $(sed -n 5p <<<"$got") == "failed:metrics line 2 is longer than 1048576 bytes" ]] ||
    fail "a 2 GB sparse metrics file: read no further than its 1 MiB line, got $(sed -n 5p <<<"$got")"
[[ $(sed -n 6p <<<"$got") == ok:* ]] || fail "the trial beside them: ok, got $(sed -n 6p <<<"$got")"
long=$(longest "$tmp/reads.h5")
((long < 10)) || fail "no read waited for the time limit (10 s): a trial took $long s"
pass "config.json as a FIFO, a 2 GB sparse file or a link to /dev/zero, a FIFO shard, 2 GB of metrics: each trial failed at once with its reason (the longest trial $long s, the sweep $((SECONDS - t0)) s)"

# ---------------------------------------------------------------------------
echo "== a program replaces its trial directory by a link to another directory  [$((SECONDS - start)) s]"
mkdir -p "$tmp/victim"
echo precious >"$tmp/victim/checkpoint.bin"
sweep swap "budget: {time_limit: 10}" "" "kind: {value: swap_dir}" "victim: {value: $tmp/victim}"
mpi 2 run "$tmp/swap.yaml" -o "$tmp/swap.h5"
[[ $rc == 0 ]] || fail "the sweep whose program swapped its directory exits 0 (got $rc)"
[[ -f $tmp/victim/checkpoint.bin ]] || fail "the coordinator deleted victim/checkpoint.bin through the link"
pass "nothing deleted through a link that replaced a trial directory"

# ---------------------------------------------------------------------------
echo "== a full disk: the trials' files cannot be written  [$((SECONDS - start)) s]"
mkdir -p "$tmp/full.trials"
if mount -t tmpfs -o size=64k tmpfs "$tmp/full.trials" 2>/dev/null; then
    unmount() { umount "$tmp/full.trials" 2>/dev/null || true; }
    trap 'unmount; cleanup' EXIT
    dd if=/dev/zero of="$tmp/full.trials/filler" bs=4k 2>/dev/null || true  # until no space is left
    sweep full "budget: {time_limit: 10}" "" "kind: {value: ok}" "x: {values: [1, 2]}"
    mpi 2 run "$tmp/full.yaml" -o "$tmp/full.h5"
    [[ $rc == 3 ]] || fail "a sweep whose trials cannot write their files stops resumable: exit 3 (got $rc)"
    grep -q "no space left on device.*given back" "$tmp/err" || grep -qi "No space left on device: given back" "$tmp/err" ||
        fail "the trial given back for want of space says so"
    rm "$tmp/full.trials/filler"
    mpi 2 run "$tmp/full.yaml" -o "$tmp/full.h5" --resume
    [[ $rc == 0 ]] || fail "--resume with space again exits 0 (got $rc)"
    got=$(statuses "$tmp/full.h5" | tr '\n' '|')
    [[ $got == "ok:|ok:|" ]] || fail "the trials that could not write args.json run on --resume: got $got"
    unmount
    pass "trials that could not write their files for want of space are given back, and --resume runs them"
else
    echo "skip: a full disk (mounting a tmpfs needs root)"
fi

echo "test_adversary: all $checks checks passed in $((SECONDS - start)) s"
