#!/usr/bin/env bash
# End-to-end tests of `attnsweep run` under mpirun:
#   1. 2, 3 and 5 ranks (oversubscribed), and 5 ranks in groups of 2: every trial in the
#      results file exactly once, reward = val_accuracy − β·RankDeviation − γ·Correlation on
#      every row, test metrics on every finished row, the file reads in h5py and pandas; regularised evolution with more
#      workers than its population, so workers wait for results before they get a trial;
#   2. a configuration that diverges (absurd learning rate) is recorded failed and the
#      sweep finishes; with every trial failed it exits 1, its last line counting them;
#   3. --resume on a sweep that has not started starts it; a second run without
#      --resume refuses to overwrite;
#   4. kill -9 of the whole job at 10 random moments, each followed by --resume: every
#      trial the journal held before a kill is in the final file unchanged, nothing is
#      duplicated, the file opens;
#   5. SIGUSR1 to mpirun stops the sweep within seconds with exit code 3, and --resume
#      completes it;
#   6. decisions read validation only: an ASHA sweep of val_accuracy on one worker
#      (trials run one after the other, so the rung reports arrive in /summary order) has
#      exactly the pruned trials that ASHA's rule replayed on the val_accuracy column of
#      the curves gives, and the best trial the coordinator reports is the best by
#      val_accuracy; the test metrics, measured once per trial, play no part (a reward
#      sweep's rungs: test_sweep_meaning.sh).
# Usage: bash tests/test_sweep.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh

# A sweep of tiny recall trials: N trials of STEPS steps, each well under a second.
sweep_yaml() {  # sweep_yaml NAME TRIALS STEPS [EXTRA-PARAMETER-LINES]
    cat >"$tmp/$1.yaml" <<YAML
name: $1
method: random
trials: $2
metric: {name: reward, goal: maximize}
task: recall
seed: 11
budget: {steps: $3, eval_every: $(($3 / 2))}
reward: {beta: 0.2, gamma: 0.3, modes: [heads], energy: 0.99}
parameters:
  attention: {values: [mha, linear, tucker, grassmann]}
  lambda_orth: {values: [0, 0.1]}
  d_model: {value: 16}
  heads: {value: 2}
  layers: {value: 1}
  batch: {value: 16}
  eval_batches: {value: 2}
  recall_pairs: {value: 4}
  grassmann_rank: {value: 4}
  core_rank: {value: 1}
${4:-}
YAML
}

# check_file FILE TRIALS [METHOD]: each trial once, the reward formula on every row, pandas
# reads it.
check_file() {
    "$py" - "$1" "$2" "${3:-random}" <<'PY' || fail "results file $1"
import sys
from numcheck import close
from attnsweep.results import Results
path, n, method = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rs = Results(path)
df = rs.summary
ids = df.trial.tolist()
assert ids == list(range(n)), f"trials {ids}, expected 0..{n-1} once each"
assert rs.trial_ids() == list(range(n)), rs.trial_ids()
ok = df[df.status == "ok"]
want = ok.val_accuracy - 0.2 * ok.rank_deviation_excess - 0.3 * ok.correlation_excess
assert close(ok.reward, want, atol=1e-12), (ok.reward - want).abs().max()
grassmann = ok[ok.attention == "grassmann"]  # no heads: no head terms, no z
assert (grassmann.rank_deviation_excess == 0).all() and (grassmann.correlation_excess == 0).all()
assert grassmann.correlation_z.isna().all() and grassmann.eff_rank_z.isna().all()
heads = ok[ok.attention != "grassmann"]
assert close(heads.correlation_excess, heads.correlation - heads.correlation_chance, atol=1e-12)
assert heads.correlation_z.notna().all() and heads.eff_rank_z.notna().all()
assert rs.attributes["format_version"] == rs.schema.format_version
measured = df[df.status != "failed"]  # the test split, measured once a trial finished
assert ((measured.test_accuracy >= 0) & (measured.test_accuracy <= 1) & (measured.test_loss > 0)).all()
assert df[df.status == "failed"].test_loss.isna().all()
assert f"method: {method}" in rs.yaml and rs.sweep in rs.yaml, rs.sweep
PY
}

echo "== 1. every trial exactly once, on 2, 3 and 5 ranks and in groups of 2"
sweep_yaml e2e 10 20
for np in 2 3 5; do
    rc=0
    mpirun -np "$np" "$bin" run e2e.yaml -o "e2e-$np.h5" --quiet 2>"$tmp/err" || rc=$?
    [[ $rc == 0 ]] || fail "run on $np ranks: exit code $rc"
    check_file "e2e-$np.h5" 10
    pass "$np ranks: 10 trials, each once; reward = val_accuracy - 0.2 RD - 0.3 Corr (beyond chance; none for grassmann) on every row; test metrics"
done
rc=0
mpirun -np 5 "$bin" run e2e.yaml -o e2e-g2.h5 --group-size 2 --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "run with --group-size 2: exit code $rc"
check_file e2e-g2.h5 10
pass "5 ranks in 2 groups of 2 (data parallel): 10 trials, each once"
# The same sweep on 2 and 3 ranks gives the same trials (configurations and results).
"$py" - e2e-2.h5 e2e-3.h5 <<'PY' || fail "the same sweep on 2 and 3 ranks differs"
import sys
from attnsweep.results import Results
a, b = (Results(p).summary.set_index("trial") for p in sys.argv[1:])
cols = ["attention", "lambda_orth", "lr", "seed", "val_accuracy", "val_loss", "test_accuracy", "test_loss", "reward"]
assert a[cols].equals(b[cols]), (a[cols].compare(b[cols]))
PY
pass "2 and 3 ranks: identical configurations and results per trial"
sweep_yaml evo 8 20
sed -i 's/^method: random$/method: evolution\nevolution: {population: 2, sample_size: 2}/' "$tmp/evo.yaml"
rc=0
mpirun -np 5 "$bin" run evo.yaml -o evo.h5 --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "evolution on 5 ranks: exit code $rc"
check_file evo.h5 8 evolution
pass "evolution, population 2, on 4 workers: 8 trials, each once"
sweep_yaml tpe 12 20 "  lr: {distribution: log_uniform_values, min: 0.0005, max: 0.01}"
sed -i 's/^method: random$/method: tpe\ntpe: {n_startup: 4}/' "$tmp/tpe.yaml"
rc=0
mpirun -np 4 "$bin" run tpe.yaml -o tpe.h5 --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "tpe on 4 ranks: exit code $rc"
check_file tpe.h5 12 tpe
pass "tpe (4 random configurations, then the model, constant liar) on 3 workers: 12 trials, each once"
sweep_yaml motpe 8 20 "  lr: {distribution: log_uniform_values, min: 0.0005, max: 0.01}"
sed -i 's/^method: random$/method: motpe\ntpe: {n_startup: 3}\nobjectives: [{name: val_accuracy, goal: maximize}, {name: correlation, goal: minimize}, {name: n_params, goal: minimize}]/' \
  "$tmp/motpe.yaml"
rc=0
mpirun -np 3 "$bin" run motpe.yaml -o motpe.h5 --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "motpe on 3 ranks: exit code $rc"
check_file motpe.h5 8 motpe
"$bin" report motpe.h5 >"$tmp/motpe.txt" || fail "report of the motpe sweep"
grep -qE "Pareto front of the sweep's objectives: [1-8] of 8 finished trials, hypervolume [0-9.e+-]+$" "$tmp/motpe.txt" ||
  fail "the motpe report's front and hypervolume: $(grep -i pareto "$tmp/motpe.txt")"
grep -qF "val_accuracy (higher is better), correlation (lower is better), n_params (lower is better)" "$tmp/motpe.txt" ||
  fail "the motpe report's objectives"
"$py" "$here/../scripts/analyze.py" motpe.h5 -o "$tmp/motpe_plots" >/dev/null || fail "analyze.py on the motpe sweep"
"$bin" report motpe.h5 --format json >"$tmp/motpe.json" || fail "the JSON report of the motpe sweep"
"$py" - "$tmp/motpe_plots/plots.json" "$tmp/motpe.txt" "$tmp/motpe.json" motpe.h5 <<'PY' || fail "objectives.png and its hypervolume"
import json, re, sys
import numpy as np
from numcheck import close
from attnsweep.results import Results
fig = json.load(open(sys.argv[1]))["figures"]["objectives.png"]
report = re.search(r"hypervolume ([0-9.e+-]+)$", open(sys.argv[2]).read(), re.M).group(1)
js = json.load(open(sys.argv[3]))
# objectives.png shows the JSON report's front and hypervolume (pareto_hypervolume), which the
# text report's title prints to 4 digits
assert float(f"{fig['hypervolume']:.4g}") == float(report), (fig["hypervolume"], report)
assert fig["hypervolume"] == js["pareto_hypervolume"]["value"], (fig["hypervolume"], js["pareto_hypervolume"])
assert fig["front_trials"] == [r["trial"] for r in js["pareto"]], (fig["front_trials"], js["pareto"])
assert fig["reference"] == [js["pareto_hypervolume"]["reference"][o["name"]] for o in fig["objectives"]]
# and the report's numbers recomputed here from /summary: the finished trials' gains (each
# objective signed by its goal), the front no other dominates, the reference (the worst of
# each objective) and the volume above it, by slicing along the first objective
df = Results(sys.argv[4]).summary
ok = df[df.status == "ok"]
up = [o["goal"] == "maximize" for o in fig["objectives"]]
gain = np.column_stack([ok[o["name"]].to_numpy(float) * (1 if u else -1) for o, u in zip(fig["objectives"], up)])
trials = ok.trial.to_numpy()[np.isfinite(gain).all(axis=1)]
gain = gain[np.isfinite(gain).all(axis=1)]
front = [i for i in range(len(gain)) if not (np.all(gain >= gain[i], axis=1) & np.any(gain > gain[i], axis=1)).any()]
assert sorted(fig["front_trials"]) == sorted(trials[front].tolist()), (fig["front_trials"], trials[front])
ref = gain.min(axis=0)
assert close(fig["reference"], [r if u else -r for r, u in zip(ref, up)], rtol=1e-12), (fig["reference"], ref)
def volume(pts, ref):
    pts = pts[np.all(pts > ref, axis=1)]
    if not len(pts):
        return 0.0
    if pts.shape[1] == 1:
        return float(pts[:, 0].max() - ref[0])
    xs, v = np.sort(np.unique(pts[:, 0]))[::-1], 0.0
    for i, x in enumerate(xs):
        v += (x - (xs[i + 1] if i + 1 < len(xs) else ref[0])) * volume(pts[pts[:, 0] >= x][:, 1:], ref[1:])
    return v
assert close(fig["hypervolume"], volume(gain[front], ref), rtol=1e-12), (fig["hypervolume"], volume(gain[front], ref))
assert [o["name"] for o in fig["objectives"]] == ["val_accuracy", "correlation", "n_params"], fig["objectives"]
assert 1 <= len(fig["front_trials"]) <= 8, fig["front_trials"]
PY
pass "motpe (val_accuracy up, correlation and n_params down) on 2 workers: 8 trials; the front over the objectives and its hypervolume, the same in the report and objectives.png"

echo "== 2. a diverging configuration is recorded failed; the sweep finishes"
sweep_yaml nan 4 20 "  lr: {value: 10}
  weight_decay: {value: 10}"
rc=0
mpirun -np 3 "$bin" run nan.yaml -o nan.h5 --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 1 ]] || fail "sweep whose every trial diverged: exit code $rc, want 1"
last=$(grep '^sweep nan: ' "$tmp/err" | tail -n 1)  # attnsweep's last line; mpirun adds its note on exit 1
[[ $last == "sweep nan: no trial finished ok (0 ok, 0 pruned, 4 failed; first failure: trial "*": diverged: "*"); results in nan.h5" ]] ||
    fail "the last line of a sweep with no trial ok: '$last'"
"$py" - nan.h5 <<'PY' || fail "failed trials"
import sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
df = rs.summary
assert len(df) == 4 and (df.status == "failed").all(), df.status.tolist()
for t in rs.trial_ids():
    assert "non-finite" in rs.trial_attrs(t)["reason"], rs.trial_attrs(t)["reason"]
PY
pass "4 diverging trials recorded failed with their reason; exit 1: $last"

echo "== 3. --resume starts a sweep that has not started; no overwrite without it"
rc=0
mpirun -np 3 "$bin" run e2e.yaml -o fresh.h5 --resume --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "--resume on a new sweep: exit code $rc"
check_file fresh.h5 10
rc=0
mpirun -np 3 "$bin" run e2e.yaml -o fresh.h5 --quiet >/dev/null 2>"$tmp/err" || rc=$?
[[ $rc == 2 ]] || fail "a second run without --resume: exit code $rc, expected 2"
grep -qF "already holds a sweep; pass --resume" "$tmp/err" || fail "a second run without --resume: message"
rc=0
mpirun -np 3 "$bin" run e2e.yaml -o fresh.h5 --resume --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "--resume of a finished sweep: exit code $rc"
check_file fresh.h5 10
pass "--resume starts a new sweep, refuses a rerun without it, and leaves a finished sweep as it is"
# An edited search space is refused on --resume, with nothing changed; more trials are not.
cp fresh.h5 before.h5
cp fresh.h5.journal before.journal
sed 's/lambda_orth: {values: \[0, 0.1\]}/lambda_orth: {values: [0, 0.2]}/' "$tmp/e2e.yaml" >"$tmp/edited.yaml"
grep -q "0.2]" "$tmp/edited.yaml" || fail "test setup: the edit did not apply"
rc=0
mpirun -np 3 "$bin" run edited.yaml -o fresh.h5 --resume --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 2 ]] || fail "--resume with an edited YAML: exit code $rc, expected 2"
grep -qF "the search space changed since the sweep began" "$tmp/err" || fail "--resume with an edited YAML: message"
cmp -s fresh.h5 before.h5 && cmp -s fresh.h5.journal before.journal || fail "--resume with an edited YAML changed files"
sed 's/^trials: 10$/trials: 12/' "$tmp/e2e.yaml" >"$tmp/more.yaml"
rc=0
mpirun -np 3 "$bin" run more.yaml -o fresh.h5 --resume --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "--resume with more trials: exit code $rc"
check_file fresh.h5 12
pass "--resume refuses an edited search space (exit 2, files untouched) and extends a sweep given more trials"

echo "== 4. kill -9 of the whole job at 10 random moments, then --resume"
sweep_yaml killed 40 60
RANDOM=7
snapshots=0
for k in $(seq 1 10); do
    # the YAML by its absolute path, so that pkill matches this test's ranks only (not
    # those of the same test running from another checkout at the same time)
    mpirun -np 3 "$bin" run "$tmp/killed.yaml" -o killed.h5 --resume --quiet 2>>"$tmp/kill.log" &
    pid=$!
    background+=("$pid")
    sleep "$((RANDOM % 3)).$((RANDOM % 10))$((RANDOM % 10))"  # 0 to 3 s: start-up, training, writing
    pkill -9 -f "attnsweep run $tmp/killed.yaml" || true
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    # What the journal holds now must survive into the final file unchanged.
    if [[ -f killed.h5.journal ]]; then
        cp killed.h5.journal "journal.$k"
        snapshots=$((snapshots + 1))
    fi
done
rc=0
mpirun -np 3 "$bin" run killed.yaml -o killed.h5 --resume --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "final --resume after the kills: exit code $rc"
check_file killed.h5 40
# Every trial a snapshot of the journal held is in the final file, none twice.
"$py" - killed.h5 journal.* <<'PY' || fail "a trial recorded before a kill differs in the final file"
import sys
from journal import trial_ids as ids_in
from attnsweep.results import Results
final = Results(sys.argv[1]).summary.set_index("trial")
seen = set()
for p in sys.argv[2:]:
    ids = ids_in(p)
    assert len(ids) == len(set(ids)), f"{p}: a trial journaled twice: {ids}"
    assert set(ids) <= set(final.index), f"{p}: trials {set(ids) - set(final.index)} lost"
    seen |= set(ids)
print(f"{len(sys.argv) - 2} snapshots, {len(seen)} trials recorded before some kill, all in the final file")
PY
pass "10 kills at random moments ($snapshots journal snapshots): nothing lost, nothing duplicated, 40 trials once"

echo "== 5. SIGUSR1 stops the sweep within seconds (exit 3); --resume completes it"
sweep_yaml signal 30 200
mpirun -np 3 "$bin" run signal.yaml -o signal.h5 --quiet 2>"$tmp/err" &
pid=$!
background+=("$pid")
for _ in $(seq 1 100); do  # wait until the first trial is recorded
    [[ -s signal.h5.journal && $(stat -c %s signal.h5.journal) -gt 100 ]] && break
    sleep 0.1
done
t0=$SECONDS
kill -USR1 "$pid"
rc=0
wait "$pid" || rc=$?
[[ $rc == 3 ]] || fail "SIGUSR1: exit code $rc, expected 3"
[[ $((SECONDS - t0)) -le 10 ]] || fail "SIGUSR1: took $((SECONDS - t0)) s to stop"
grep -qF "continue with --resume" "$tmp/err" || fail "SIGUSR1: the message should say how to continue"
rc=0
mpirun -np 3 "$bin" run signal.yaml -o signal.h5 --resume --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "--resume after SIGUSR1: exit code $rc"
check_file signal.h5 30
pass "SIGUSR1: stopped in $((SECONDS - t0)) s or less with exit 3; --resume completed all 30 trials once"

echo "== 6. decisions read validation only: ASHA replayed from the val_accuracy curves"
sweep_yaml asha 16 40 "  lr: {values: [0.0005, 0.002, 0.008]}"
sed -i 's/^method: random$/method: random\nscheduler: {name: asha, min_steps: 10, eta: 2}/; s/eval_every: 20/eval_every: 10/
        s/^metric: .*/metric: {name: val_accuracy, goal: maximize}/' "$tmp/asha.yaml"  # a reward sweep: test_sweep_meaning
rc=0
mpirun -np 2 "$bin" run asha.yaml -o asha.h5 --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "ASHA sweep on one worker: exit code $rc"
check_file asha.h5 16
"$py" - asha.h5 "$tmp/err" <<'PY' || fail "ASHA's decisions are not those of the validation column"
import re, sys, h5py
f = h5py.File(sys.argv[1], "r")  # raw on purpose: /summary's on-disk row order (attnsweep.results sorts by trial)
rows = f["summary"][:]  # in the order the trials finished: one worker ran them one by one
rungs, eta, budget = [10, 20], 2, 40
seen = [[] for _ in rungs]
bad = []
for row in rows:
    trial, status, steps = int(row["trial"]), row["status"].decode(), int(row["steps"])
    curve = f["trials"][f"{trial:06d}"]["curves"]
    val = dict(zip(curve["step"][:].tolist(), curve["val_accuracy"][:].tolist()))
    want_status, want_steps = "ok", budget
    for k, rung in enumerate(rungs):  # coordinator.c asha_continue, on the reported val_accuracy
        m = val[rung]
        seen[k].append(m)
        s = sorted(seen[k])
        pos = (1.0 - 1.0 / eta) * (len(s) - 1)
        lo = int(pos // 1)
        cut = s[lo] + (pos - lo) * (s[lo + 1] - s[lo]) if lo + 1 < len(s) else s[lo]
        if m < cut:
            want_status, want_steps = "pruned", rung
            break
    if (status, steps) != (want_status, want_steps):
        bad.append(f"trial {trial}: {status} after {steps} steps, the val column says {want_status} after {want_steps}")
pruned = sum(r["status"] == b"pruned" for r in rows)
if not 0 < pruned < len(rows):
    bad.append(f"fixture: {pruned} of {len(rows)} trials pruned; the check needs some of each")
# The coordinator's best: the first trial (in finishing order) with the highest val_accuracy.
best = max(range(len(rows)), key=lambda i: (rows[i]["val_accuracy"], -i))
m = re.findall(r"best val_accuracy (-?[0-9.]+) \(trial (\d+)\)", open(sys.argv[2]).read())
if not m or int(m[-1][1]) != int(rows[best]["trial"]) or m[-1][0] != f"{rows[best]['val_accuracy']:.4f}":
    bad.append(f"coordinator's best {m[-1] if m else None}, want trial {int(rows[best]['trial'])} "
               f"(val_accuracy {rows[best]['val_accuracy']:.4f})")
by_test = max(range(len(rows)), key=lambda i: (rows[i]["test_accuracy"], -i))
print("\n".join(bad) if bad else f"{pruned} of {len(rows)} pruned as the val column says; best by val_accuracy trial "
      f"{int(rows[best]['trial'])} (the best by test_accuracy would be trial {int(rows[by_test]['trial'])})")
sys.exit(1 if bad else 0)
PY
pass "ASHA on one worker: every rung decision equals the replay on val_accuracy; the reported best is the best by val_accuracy"

# ---------------------------------------------------------------------------
echo "== a worker done early waits without spinning a core  [$((SECONDS - start)) s]"
# Two trials on two workers, one instant and one of 4 s: the first worker waits 4 s for
# the sweep's end (in MPI_Bcast it spun a core: 4 s of CPU on a quiet machine). Each
# rank's CPU is read by time(1); on a loaded machine a spinning rank gets less CPU, so
# this cannot fail there by load, only miss a spin.
cat >"$tmp/nap.sh" <<'SH'
#!/bin/sh
for a; do case $a in --nap=*) n=${a#--nap=};; esac; done
sleep "$n"
echo "{\"step\": 1, \"val_loss\": $n}" >> "$ATTNSWEEP_METRICS"
SH
cat >"$tmp/nap.yaml" <<YAML
name: nap
program: $tmp/nap.sh
command: [/bin/sh, "\${program}", "\${args}"]
method: grid
metric: {name: val_loss, goal: minimize}
parameters:
  nap: {values: [0, 4]}
YAML
cat >"$tmp/cpu.sh" <<'SH'
#!/bin/sh
exec /usr/bin/time -f "%U %S %e" -o "$CPU_DIR/rank$OMPI_COMM_WORLD_RANK" "$@"
SH
chmod +x "$tmp/cpu.sh"
# timed NAME ARGS...: attnsweep ARGS on 3 ranks, each rank's user, system and wall seconds
# in $tmp/NAME/rankR; rc its exit code.
timed() {
    local name=$1
    shift
    mkdir -p "$tmp/$name"
    rc=0
    CPU_DIR=$tmp/$name ASAN_OPTIONS=$asan_noleaks mpirun -np 3 -x CPU_DIR "$tmp/cpu.sh" "$bin" "$@" \
        >"$tmp/out" 2>"$tmp/err" || rc=$?
}
# idle NAME WHAT: each of the 3 ranks used under 1.5 s of CPU, else fail naming WHAT; the
# ranks' CPU in $used, the last rank's wall in $wall.
idle() {
    used=""
    for r in 0 1 2; do
        read -r u s wall <"$tmp/$1/rank$r"
        cpu=$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')
        awk -v c="$cpu" 'BEGIN {exit !(c < 1.5)}' || fail "rank $r $2 used $cpu s of CPU in $wall s (spinning?)"
        used+="rank $r $cpu s, "
    done
    used=${used%, }
}
timed cpu run "$tmp/nap.yaml" -o "$tmp/nap.h5" --quiet
[[ $rc == 0 ]] || fail "the sweep of an instant and a 4-s trial: exit code $rc ($(tail -2 "$tmp/err"))"
idle cpu "of a sweep that waited 4 s"
pass "a worker done 4 s before the sweep's end waits without spinning ($used of CPU)"
# A shared sweep's job whose group of 2 ranks finds the only trial held by another job
# waits for it: its leader for its next trial, the other rank for the leader's word (each
# spun a core before: 5 s of CPU in 5 s).
sed -e 's/^name: nap/name: held/' -e 's/values: \[0, 4\]/values: [8]/' "$tmp/nap.yaml" >"$tmp/held.yaml"
ASAN_OPTIONS=$asan_noleaks mpirun -np 2 "$bin" run "$tmp/held.yaml" -o "$tmp/held.h5" --shared --quiet \
    >"$tmp/held_a.out" 2>&1 &
holder=$!
t=$((SECONDS + 60))
until [[ -e $tmp/held.trials/000000/metrics.jsonl || -e $tmp/held.trials/000000/args.json ]]; do
    ((SECONDS < t)) || fail "the first job never started its trial"
    sleep 0.1
done
timed cpu2 run "$tmp/held.yaml" -o "$tmp/held.h5" --shared --group-size 2 --quiet
wait "$holder" || fail "the job holding the trial: exit code $?"
[[ $rc == 0 ]] || fail "the job that waited: exit code $rc ($(tail -2 "$tmp/err"))"
idle cpu2 "of the waiting job"
awk -v w="$wall" 'BEGIN {exit !(w >= 2)}' || fail "the second job ran $wall s: it did not wait for the first job's trial"
pass "a shared sweep's group of 2 ranks waits $wall s for a trial another job holds without spinning ($used of CPU)"

echo "PASS: $checks checks of attnsweep run in $((SECONDS - start)) s"
