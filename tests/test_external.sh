#!/usr/bin/env bash
# End-to-end tests of the external runner (trial/external.c): sweeps of a researcher's own
# program (tests/programs/protocol_program.py, a real child process per trial) under mpirun:
#   1. every way a program fails (exit code, a signal, a malformed line, no metrics, too
#      much output, past the time limit, SIGTERM ignored by the program and its child) is
#      the trial's `failed` status with its reason and the last 20 lines of its stderr,
#      and the other trials of the sweep are ok; the protocol's environment (trial id,
#      seed, a fresh trial directory, the metrics file; no OMPI_*/PMIX_* of the job) and the
#      files the trial records; the process group is gone after SIGKILL;
#   2. a sweep scored on the program's weights: model.safetensors in the trial directory
#      or the one a line names is scored as `attnsweep score` scores it (the same
#      rank_deviation and correlation), reward = val_accuracy − β·RankDeviation −
#      γ·Correlation; without a checkpoint the trial fails;
#   3. W&B's early_terminate hyperband (ASHA) stops trials of a program: pruned, with
#      fewer lines than the full run;
#   4. SIGUSR1 to mpirun stops a sweep and its program (which saves its state on
#      SIGTERM); --resume reruns the trial with ATTNSWEEP_RESUME_DIR, and it continues;
#   5. the W&B sweep files of tests/wandb/ (from W&B's documentation) validate;
#   6. the 21-line program of docs/trainer.md runs as a sweep and is scored.
# Usage: bash tests/test_external.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh
prog=$here/programs/protocol_program.py

# program_yaml NAME METRIC-LINE BUDGET-LINE PARAMETER-LINES...: a sweep of the program.
program_yaml() {
    local name=$1 metric=$2 budget=$3
    shift 3
    program_grid_yaml "$name" "$prog" "seed: 5" "$metric" "$budget" -- "$@"
}

# ---------------------------------------------------------------------------
echo "== 1. failures of a program, and the protocol's environment  [$((SECONDS - start)) s]"
program_yaml fails "metric: {name: val_loss, goal: minimize}" \
    "budget: {time_limit: 2, grace: 1, max_output_mb: 1}" \
    "kind: {values: [ok, crash, signal, garbage, nometrics, huge, hang, ignore_term]}"
mpi 3 run "$tmp/fails.yaml" -o "$tmp/fails.h5"
[[ $rc == 0 ]] || fail "a sweep with failing trials exits 0 (got $rc)"
"$py" - "$tmp/fails.h5" <<'PY' || fail "the failures' results"
import json, os, sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
rows = rs.summary.set_index("trial")
want = {  # kind (grid order) -> (status, words of the reason)
    "ok": ("ok", ""), "crash": ("failed", "exited with code 3"), "signal": ("failed", "killed by signal 11"),
    "garbage": ("failed", "metrics line 1"), "nometrics": ("failed", "no metrics"),
    "huge": ("failed", "stdout"), "hang": ("failed", "time limit of 2 s exceeded at step 1"),
    "ignore_term": ("failed", "time limit of 2 s exceeded at step 1")}
bad = []
for tid, (kind, (status, words)) in enumerate(want.items()):
    a = rs.trial_attrs(tid)
    cfg = a["config"]["program"]
    if cfg["kind"] != kind: bad.append(f"trial {tid}: kind {cfg['kind']}, expected {kind}")
    if a["status"] != status or words not in a["reason"]:
        bad.append(f"{kind}: {a['status']} '{a['reason']}', expected {status} with '{words}'")
    if rows.at[tid, "status"] != status: bad.append(f"{kind}: /summary status {rows.at[tid, 'status']}")
    d = a["trial_dir"]
    if d != os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "fails.trials", f"{tid:06d}"):
        bad.append(f"{kind}: trial_dir {d}")
    for key, name in (("stdout", "stdout"), ("stderr", "stderr"), ("metrics", "metrics.jsonl")):
        if a[key] != os.path.join(d, name) or not os.path.exists(a[key]): bad.append(f"{kind}: {key} {a[key]}")
    if json.loads(a["command"])[-1] != f"--kind={kind}": bad.append(f"{kind}: command {a['command']}")
    if kind == "crash":
        tail = a["stderr_tail"].strip().split("\n")
        if tail != [f"stderr line {i}" for i in range(11, 31)]: bad.append(f"crash: stderr_tail {tail}")
    if kind == "ok":
        env = json.load(open(os.path.join(d, "env.json")))
        expect = {"ATTNSWEEP_TRIAL": str(tid), "ATTNSWEEP_SEED": "5000", "ATTNSWEEP_TRIAL_DIR": d,
                  "ATTNSWEEP_METRICS": os.path.join(d, "metrics.jsonl"), "cwd": os.getcwd()}
        if env != expect: bad.append(f"ok: environment {env}, expected {expect}")
        if rows.at[tid, "steps"] != 3 or abs(rows.at[tid, "val_loss"] - (0.04 + 1 / 3)) > 1e-12:
            bad.append(f"ok: steps {rows.at[tid, 'steps']} val_loss {rows.at[tid, 'val_loss']} (the last line's)")
    if kind == "ignore_term":
        pid = int(open(os.path.join(d, "grandchild.pid")).read())
        try:
            state = open(f"/proc/{pid}/stat").read().split()[2]
            if state != "Z": bad.append(f"ignore_term: its child {pid} is alive after SIGKILL to the group")
        except FileNotFoundError:
            pass
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "8 trials: ok, and 7 failures each with its reason; environment, files, stderr tail, the group killed"

# ---------------------------------------------------------------------------
echo "== 2. the program's weights scored  [$((SECONDS - start)) s]"
program_yaml scored "metric: {name: reward, goal: maximize}" \
    "reward: {beta: 0.2, gamma: 0.3}" \
    "kind: {values: [ckpt, named, ok]}" "x: {values: [0.1, 0.6]}"
mpi 3 run "$tmp/scored.yaml" -o "$tmp/scored.h5"
[[ $rc == 0 ]] || fail "the scored sweep exits 0 (got $rc)"
"$py" - "$tmp/scored.h5" "$bin" <<'PY' || fail "the scored program's results"
import json, subprocess, sys
from numcheck import close
from attnsweep.results import Results
rs = Results(sys.argv[1])
bad = []
for _, r in rs.summary.iterrows():
    a = rs.trial_attrs(r["trial"])
    kind = a["config"]["program"]["kind"]
    if kind == "ok":  # no checkpoint where the sweep scores one
        if a["status"] != "failed" or "checkpoint" not in a["reason"]: bad.append(f"ok: {a['status']} {a['reason']}")
        continue
    if a["status"] != "ok": bad.append(f"{kind}: {a['status']} {a['reason']}"); continue
    want = a["trial_dir"] + ("/model.safetensors" if kind == "ckpt" else "/elsewhere/weights.safetensors")
    if a["checkpoint"] != want: bad.append(f"{kind}: checkpoint {a['checkpoint']}, expected {want}")
    out = subprocess.run([sys.argv[2], "score", want, "--json", "-o", want + ".scores.h5"], capture_output=True, text=True)
    s = json.loads(out.stdout)
    for col in ("rank_deviation", "correlation", "rank_deviation_excess", "correlation_excess"):
        if not close(r[col], s[col], 1e-9): bad.append(f"{kind}: {col} {r[col]} in the sweep, {s[col]} by attnsweep score")
    if not close(r["reward"], r["val_accuracy"] - 0.2 * s["rank_deviation_excess"] - 0.3 * s["correlation_excess"], 1e-9):
        bad.append(f"{kind}: reward {r['reward']}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "model.safetensors and a named checkpoint scored as attnsweep score scores them; none: failed"
expect_bad_input "probe of a program's trial" "trial 0 ran the sweep's program" "$tmp/no-probe" probe "$tmp/scored.h5"

# ---------------------------------------------------------------------------
echo "== 3. early_terminate hyperband stops a program  [$((SECONDS - start)) s]"
program_yaml hyper "metric: {name: val_loss, goal: minimize}" \
    "early_terminate: {type: hyperband, min_iter: 1, eta: 2}" \
    "kind: {value: slow}" "steps: {value: 8}" "sleep: {value: 0.15}" \
    "x: {values: [0.3, 0.9, 0.8, 0.7, 1.0, 1.1]}"
mpi 2 validate "$tmp/hyper.yaml"
grep -q "runs as scheduler {name: asha" "$tmp/out" || fail "validate prints the hyperband mapping"
mpi 2 run "$tmp/hyper.yaml" -o "$tmp/hyper.h5"
[[ $rc == 0 ]] || fail "the hyperband sweep exits 0 (got $rc)"
"$py" - "$tmp/hyper.h5" <<'PY' || fail "the pruned programs"
import sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
pruned, bad = 0, []
for _, r in rs.summary.iterrows():
    a = rs.trial_attrs(r["trial"])
    lines = sum(1 for _ in open(a["metrics"]))
    status = r["status"]
    if status == "pruned":
        pruned += 1
        if lines >= 8 or "stopped by the scheduler" not in str(a["reason"]): bad.append(f"pruned trial {r['trial']}: {lines} lines")
    elif status != "ok" or lines != 8:
        bad.append(f"trial {r['trial']}: {status} with {lines} lines")
if pruned == 0: bad.append("no trial pruned")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "hyperband as ASHA pruned the worse programs before their last step"

# ---------------------------------------------------------------------------
echo "== 4. a stopped program resumes from ATTNSWEEP_RESUME_DIR  [$((SECONDS - start)) s]"
program_yaml resumed "metric: {name: val_loss, goal: minimize}" "budget: {grace: 5}" \
    "kind: {value: slow}" "steps: {value: 24}" "sleep: {value: 0.2}"
rc=0
mpirun -np 2 "$bin" run "$tmp/resumed.yaml" -o "$tmp/resumed.h5" >"$tmp/out" 2>"$tmp/err" &
job=$!
background+=("$job")
metrics=$tmp/resumed.trials/000000/metrics.jsonl
for _ in $(seq 600); do [[ -s $metrics && $(wc -l <"$metrics") -ge 3 ]] && break; sleep 0.1; done
[[ -s $metrics ]] || fail "the program started"
kill -USR1 "$job"
wait "$job" || rc=$?
[[ $rc == 3 ]] || fail "SIGUSR1 stops the sweep with exit code 3 (got $rc)"
[[ -s $tmp/resumed.trials/000000/state.json ]] || fail "the program saved its state on SIGTERM"
saved=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" "$tmp/resumed.trials/000000/state.json")
mpi 2 run "$tmp/resumed.yaml" -o "$tmp/resumed.h5" --resume
[[ $rc == 0 ]] || fail "--resume completes the sweep (got $rc)"
"$py" - "$tmp/resumed.h5" "$saved" <<'PY' || fail "the resumed trial"
import json, sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
saved, bad = int(sys.argv[2]), []
a, steps = rs.trial_attrs(0), rs.summary.steps[0]
lines = [json.loads(l) for l in open(a["metrics"])]
if a["status"] != "ok" or steps != 24: bad.append(f"{a['status']} at step {steps}")
if [l["step"] for l in lines] != list(range(saved + 1, 25)) or {l["resumed_from"] for l in lines} != {saved}:
    bad.append(f"the second attempt's lines {[(l['step'], l['resumed_from']) for l in lines]}, saved at {saved}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "stopped at step $saved, resumed there from ATTNSWEEP_RESUME_DIR, finished at 24"

# ---------------------------------------------------------------------------
echo "== 5. W&B's sweep files validate  [$((SECONDS - start)) s]"
touch "$tmp/train.py" "$tmp/train-nested-cli.py"  # their programs, which validate checks are there
for y in "$here"/wandb/*.yaml; do
    run validate "$y"
    [[ $rc == 0 ]] || fail "$(basename "$y") validates (got $rc: $(head -1 "$tmp/err"))"
done
run validate "$here/wandb/sweepdemo.yaml"
grep -q "bayes" "$tmp/out" || fail "validate says what bayes runs as"
pass "$(ls "$here"/wandb/*.yaml | wc -l) W&B sweep files validate"

# ---------------------------------------------------------------------------
echo "== 6. the program of docs/trainer.md runs and is scored  [$((SECONDS - start)) s]"
awk '/^A complete program in/{f=1} f&&/^```python/{g=1;next} g&&/^```/{exit} g' "$here/../docs/trainer.md" >"$tmp/readme.py"
[[ -s $tmp/readme.py ]] || fail "the program of docs/trainer.md is found"
cat >"$tmp/readme.yaml" <<YAML
program: $tmp/readme.py
command: [$py, "\${program}"]
method: grid
metric: {name: reward, goal: maximize}
parameters:
  lr: {values: [0.1, 0.2]}
YAML
mpi 2 run "$tmp/readme.yaml" -o "$tmp/readme.h5"
[[ $rc == 0 ]] || fail "the sweep of the program of docs/trainer.md exits 0 (got $rc)"
"$py" - "$tmp/readme.h5" <<'PY' || fail "the results of the program of docs/trainer.md"
import sys, numpy as np
from attnsweep.results import Results
s = Results(sys.argv[1]).summary
ok = list(s["status"]) == ["ok", "ok"] and list(s["steps"]) == [1000, 1000] and np.isfinite(s["reward"]).all()
if not ok: print(s)
sys.exit(0 if ok else 1)
PY
pass "the program of docs/trainer.md: 2 trials ok, scored"

# ---------------------------------------------------------------------------
echo "== 7. a link planted at NAME.trials is refused, its target untouched  [$((SECONDS - start)) s]"
program_yaml link "metric: {name: val_loss, goal: minimize}" "budget: {time_limit: 20}" "kind: {value: ok}"
mkdir -p "$tmp/elsewhere" && touch "$tmp/elsewhere/keep"
ln -s "$tmp/elsewhere" "$tmp/link.trials"
mpi 2 run "$tmp/link.yaml" -o "$tmp/link.h5"
[[ $rc == 1 ]] || fail "a sweep whose only trial failed exits 1 (got $rc)"
[[ $(ls -A "$tmp/elsewhere") == keep ]] || fail "the link's target was written to: $(ls -A "$tmp/elsewhere")"
"$py" - "$tmp/link.h5" <<'PY' || fail "the refused trial's record"
import sys
from attnsweep.results import Results
a = Results(sys.argv[1]).trial_attrs(0)
reason = a["reason"]
ok = a["status"] == "failed" and "is a symbolic link" in reason
if not ok: print(a["status"], reason)
sys.exit(0 if ok else 1)
PY
pass "a symbolic link at link.trials: the trial failed with the reason, nothing written through it"

echo "== 8. a sweep's metric the program never reports (a typo) fails its trial, naming the keys  [$((SECONDS - start)) s]"
program_yaml typo "metric: {name: val_acuracy, goal: maximize}" "budget: {time_limit: 20}" "kind: {value: ok}"
mpi 2 run "$tmp/typo.yaml" -o "$tmp/typo.h5"
[[ $rc == 1 ]] || fail "a sweep whose only trial never reported its metric exits 1 (got $rc)"
"$py" - "$tmp/typo.h5" <<'PY' || fail "the trial that never reported the metric"
import sys
from attnsweep.results import Results
a = Results(sys.argv[1]).trial_attrs(0)
reason = a["reason"]
want = ('the program never reported the sweep\'s metric "val_acuracy" (its lines held val_loss, val_accuracy'
        '; did you mean "val_accuracy"?)')
ok = a["status"] == "failed" and reason == want
if not ok: print(a["status"], repr(reason), "want", repr(want))
sys.exit(0 if ok else 1)
PY
pass "metric val_acuracy, never reported: the trial failed, the reason names the keys and val_accuracy"

echo "test_external: $checks checks passed in $((SECONDS - start)) s"
