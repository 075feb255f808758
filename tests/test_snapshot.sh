#!/usr/bin/env bash
# End-to-end test of the journal's snapshots (issue 31: a resume replays only the records
# after the last one). A TPE sweep under ASHA (its proposals and its decisions depend on
# every result before them) on one worker group, so that every run of it hands out the same
# trials in the same order:
#   A  run uninterrupted;
#   B  run with a snapshot every 0.3 s, killed with kill -9 of every rank after a snapshot
#      and more trials, then resumed: from the snapshot and the records after it (hand-outs
#      and trials), to the end;
#   C  B's journal as the kill left it with its snapshots taken out, resumed: a whole replay.
# A, B and C hold the same trials (configuration, status, metrics, the curves ASHA read);
# the trial the kill interrupts runs again from its start in both (no mid-trial
# checkpoints here: C's trial directories are not B's; E continues one from its checkpoint);
# a resume of the finished B starts from the snapshot its last run wrote at its end, with
# no record after it; one that raises `trials` replays the whole journal (the new space
# checks every trial), and the resume after it starts from the snapshot it wrote.
#   E  the sweep with a checkpoint every 20 steps, killed after a third trial's checkpoint
#      past its second rung: the resumed trial continues from it and tells ASHA again of the
#      rungs it passed, so the sweep again holds A's trials and decisions;
#   D  a sweep of instant trials with a snapshot due every 10 ms: each is written only once
#      the journal has grown by the size of the one before (snapshots stay at most half
#      of the journal at any size), and the last and the trials after it are every trial.
# Usage: bash tests/test_snapshot.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh

cat >snap.yaml <<YAML
name: snap
method: tpe
tpe: {n_startup: 4}
scheduler: {name: asha, min_steps: 10, eta: 2}
metric: {name: val_loss, goal: minimize}  # continuous: ASHA's quantiles move with every value
task: recall
seed: 5
trials: 24
budget: {steps: 40, eval_every: 10, checkpoint_every: 0}  # a killed trial starts again (E: not)
parameters:
  attention: {values: [mha, linear]}
  lr: {distribution: log_uniform_values, min: 0.0005, max: 0.02}
$tiny_recall_params
YAML

# journal JOURNAL [OUT]: "SNAPSHOTS TRIALS AFTER" (its snapshot records, trial records,
# and records after the last snapshot: tests/journal.py reads them), or OUT written as the
# journal without its snapshots.
journal() {
    "$py" - "$@" <<'PY'
import sys
import journal
recs = journal.records(sys.argv[1])
kinds = [r["kind"] for r in recs]
if len(sys.argv) > 2:
    data = open(sys.argv[1], "rb").read()
    kept = [data[r["at"]:r["end"]] for r in recs if r["kind"] != journal.SNAPSHOT]
    open(sys.argv[2], "wb").write(journal.MAGIC_LINE + b"".join(kept))
else:
    after = kinds[::-1].index(journal.SNAPSHOT) if journal.SNAPSHOT in kinds else len(kinds)
    print(kinds.count(journal.SNAPSHOT), kinds.count(journal.TRIAL), after)
PY
}

echo "== A: uninterrupted"
mpi 2 run snap.yaml -o A.h5 --quiet
[[ $rc == 0 ]] || fail "sweep A: exit $rc"
pass "A: 24 trials"

echo "== B: a snapshot every 0.3 s, kill -9 after one, with 10 trials and records after it"
mpirun -np 2 "$bin" run "$tmp/snap.yaml" -o B.h5 --snapshot-every 0.3 --quiet 2>"$tmp/b.err" &
pid=$!
background+=("$pid")
deadline=$((SECONDS + 120))
while :; do
    ((SECONDS < deadline)) || fail "B: no snapshot and 10 trials after 120 s: $(cat "$tmp/b.err")"
    if [[ -f B.h5.journal ]]; then
        read -r snapshots trials after < <(journal B.h5.journal)
        if ((snapshots >= 1 && trials >= 10 && after >= 1)); then
            # Its ranks stopped, the journal is what the kill leaves: look again (another
            # snapshot may have come since), and go on if it has no record after it.
            pkill -STOP -f "^$bin run $tmp/snap.yaml" || true
            read -r snapshots trials after < <(journal B.h5.journal)
            ((after >= 1)) && break
            pkill -CONT -f "^$bin run $tmp/snap.yaml" || true
        fi
    fi
    sleep 0.05
done
kill_job "$pid" "$tmp/snap.yaml"
read -r snapshots trials after < <(journal B.h5.journal)
((trials < 24 && after >= 1)) || fail "B: killed too late ($trials trials, $after records after the last snapshot)"
journal B.h5.journal C.h5.journal
pass "B killed with $trials trials, $snapshots snapshots and $after records after the last in its journal"

mpi 2 run snap.yaml -o B.h5 --resume
[[ $rc == 0 ]] || fail "B's resume: exit $rc"
grep -Eq "resuming with [0-9]+ of 24 trials recorded in B.h5.journal \(its snapshot at byte [0-9]+ and the [1-9][0-9]* records after it\)" "$tmp/err" ||
    fail "B's resume did not start from its snapshot: $(grep resuming "$tmp/err")"
pass "B resumed from its snapshot: $(grep -o 'its snapshot.*after it' "$tmp/err")"

echo "== C: B's journal without its snapshots"
mpi 2 run snap.yaml -o C.h5 --resume
[[ $rc == 0 ]] || fail "C's resume: exit $rc"
if ! grep -q "resuming with" "$tmp/err" || grep -q "its snapshot" "$tmp/err"; then fail "C: $(grep resuming "$tmp/err")"; fi
pass "C resumed by a whole replay"

# same_trials WHAT A OTHER...: the sweeps hold A's trials (configuration, status, metrics,
# curve), and ASHA pruned some.
same_trials() {
    local what=$1
    shift
    pycheck "$what" "$@" <<'PY'

import sys, h5py, numpy as np
def trials(path):
    f = h5py.File(path, 'r')
    s = f['summary'][:]
    out = {}
    for row in s:
        t = f['trials/%06d' % row['trial']]
        curve = t['curves'][:]
        out[int(row['trial'])] = (t.attrs['config'], t.attrs['status'],
                                  [float(row[c]) for c in ('val_accuracy', 'val_loss', 'reward')],
                                  curve['step'].tolist(), curve['val_loss'].tolist())
    return out
a, others = trials(sys.argv[1]), {p: trials(p) for p in sys.argv[2:]}
bad = [] if sorted(a) == list(range(24)) else [f"A's trials: {sorted(a)}"]
for name, other in others.items():
    for i in sorted(a):
        if i not in other:
            bad.append(f"{name} lacks trial {i}")
        elif other[i] != a[i]:
            bad.append(f"{name}'s trial {i} differs from A's:\n  A {a[i]}\n  {name} {other[i]}")
statuses = [a[i][1] for i in sorted(a)]
if 'pruned' not in statuses:
    bad.append(f"ASHA pruned no trial: the test would not see its decisions {statuses}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}
same_trials "A, B and C hold the same trials" A.h5 B.h5 C.h5
pass "A, B and C: the same 24 trials (configurations, statuses, metrics, curves; ASHA pruned some)"

mpi 2 run snap.yaml -o B.h5 --resume
if [[ $rc != 0 ]] || ! grep -q "its snapshot at byte [0-9]* and the 0 records after it" "$tmp/err"; then
    fail "a resume of the finished B: exit $rc, $(grep resuming "$tmp/err")"
fi
pass "a resume of the finished sweep reads its last snapshot alone"

# trials raised: the YAML's text changed, so the resume replays the whole journal to check
# every trial against the new space; the snapshot it writes at its end is the new text's.
sed 's/^trials: 24$/trials: 26/' snap.yaml >more.yaml
mpi 2 run more.yaml -o B.h5 --resume
if [[ $rc != 0 ]] || ! grep -q "resuming with 24 of 26 trials" "$tmp/err" || grep -q "its snapshot" "$tmp/err"; then
    fail "trials raised to 26: exit $rc, $(grep resuming "$tmp/err")"
fi
mpi 2 run more.yaml -o B.h5 --resume
if [[ $rc != 0 ]] || ! grep -q "resuming with 26 of 26 trials .*(its snapshot at byte [0-9]* and the 0 records after it)" "$tmp/err"; then
    fail "a resume after raising trials: exit $rc, $(grep resuming "$tmp/err")"
fi
pass "trials raised: a whole replay, then a resume from the snapshot the raised run wrote"

echo "== E: checkpoints every 20 steps, kill -9 of a trial past its second rung"
# The same trials (checkpoints change no number): the trial continued from its checkpoint
# tells ASHA again of the rungs it passed before it, so the decisions after the resume
# are the uninterrupted run's.
sed 's/checkpoint_every: 0}/checkpoint_every: 20}/' snap.yaml >ckpt.yaml
mpirun -np 2 "$bin" run "$tmp/ckpt.yaml" -o E.h5 --quiet 2>"$tmp/e.err" &
pid=$!
background+=("$pid")
deadline=$((SECONDS + 120))
while :; do
    ((SECONDS < deadline)) || fail "E: no checkpoint of a third trial after 120 s: $(cat "$tmp/e.err")"
    if [[ -f E.h5.journal ]]; then
        ids=$("$py" -c "import journal, sys; print(' '.join('%06d' % r['id'] for r in journal.records(sys.argv[1]) if r['kind'] == journal.HANDOUT))" E.h5.journal)
        read -ra handed <<<"$ids"
        for id in "${handed[@]:2}"; do
            if [[ -f E.trials/$id/checkpoint.bin ]]; then
                pkill -STOP -f "^$bin run $tmp/ckpt.yaml" || true
                [[ -f E.trials/$id/checkpoint.bin ]] && break 2
                pkill -CONT -f "^$bin run $tmp/ckpt.yaml" || true
            fi
        done
    fi
    sleep 0.02
done
kill_job "$pid" "$tmp/ckpt.yaml"
mpi 2 run ckpt.yaml -o E.h5 --resume
[[ $rc == 0 ]] || fail "E's resume: exit $rc"
grep -q "sweep: trial $((10#$id)) continues from its checkpoint after step 20 of 40" "$tmp/err" ||
    fail "E: trial $((10#$id)) did not continue from its checkpoint: $(grep -E 'resuming|continues' "$tmp/err")"
same_trials "E, resumed with a trial continued from its checkpoint, holds A's trials" A.h5 E.h5
pass "E: trial $((10#$id)) continued from its checkpoint after step 20; the sweep holds A's trials and decisions"

echo "== D: snapshots as often as allowed, bounded by the journal's growth"
# 150 trials of a program that returns at once, a snapshot due every 10 ms: one is written
# only once the journal has grown by the last one's size since it.
cat >grow.yaml <<YAML
name: grow
program: $(dirname "$here")/scripts/bench/scale_trial.sh
command: [/bin/sh, "\${program}", "\${args}"]
method: random
trials: 150
seed: 2
metric: {name: val_loss, goal: minimize}
parameters:
  x: {min: 0.0, max: 1.0}
  sleep: {value: 0}
YAML
mpi 3 run grow.yaml -o D.h5 --snapshot-every 0.01 --quiet
[[ $rc == 0 ]] || fail "sweep D: exit $rc"
pycheck "D's snapshots: each after the journal grew by the one before" D.h5.journal <<'PY'
import sys
import journal
recs = journal.records(sys.argv[1])
snaps = [i for i, r in enumerate(recs) if r["kind"] == journal.SNAPSHOT]
bad = [] if len(snaps) >= 3 else [f"{len(snaps)} snapshots: expected several"]
for a, b in zip(snaps, snaps[1:]):
    grown = recs[b]["at"] - recs[a]["end"]
    size = recs[a]["end"] - recs[a]["at"]
    if grown < size:
        bad.append(f"snapshot at {recs[b]['at']}: {grown} bytes after the one before, which is {size} bytes")
after = sum(r["kind"] == journal.TRIAL for r in recs[snaps[-1]:]) if snaps else 0
if snaps and len(recs[snaps[-1]]["trials"]) + after != 150:
    bad.append(f"the last snapshot holds {len(recs[snaps[-1]]['trials'])} trials and {after} follow it, not 150")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "D: $(journal D.h5.journal | cut -d' ' -f1) snapshots in 150 trials, each after the journal grew by the size of the one before"

expect_bad_input "--snapshot-every -1" "--snapshot-every must be a number in [0, 86400], got '-1'" "$tmp/bad.h5" \
    run snap.yaml -o "$tmp/bad.h5" --snapshot-every -1
expect_bad_input "--snapshot-every soon" "--snapshot-every must be a number in [0, 86400], got 'soon'" "$tmp/bad.h5" \
    run snap.yaml -o "$tmp/bad.h5" --snapshot-every soon
pass "--snapshot-every out of range or not a number: one line, exit 2, no file"

echo "test_snapshot: all $checks checks passed in $((SECONDS - start)) s"
