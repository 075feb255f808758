#!/usr/bin/env bash
# End-to-end test of the example trainer (examples/torch/train.py) with Debian's
# python3-torch on CPU, as a researcher runs it: a sweep under mpirun (3 ranks: 2 worker
# groups) of the four attention variants on Fashion-MNIST, tiny (d_model 16, 1 block,
# 6 steps of 32 images), scored on the weights it writes:
#   1. every trial ok; /summary's val_accuracy is the program's last line's, test accuracy
#      only in that line; rank_deviation and correlation (and beyond chance) are what `attnsweep score` gives
#      for its model.safetensors (BERT names, Grassmann's w_red/w_plu), and reward =
#      val_accuracy − β·RankDeviation − γ·Correlation, each beyond chance;
#   2. SIGUSR1 to mpirun stops a longer trial (the trainer saves resume.pt on SIGTERM);
#      --resume reruns it with ATTNSWEEP_RESUME_DIR and it goes on from the step it saved
#      to the end, its stored curve every evaluation from the first;
#   3. the README's own-trainer sweep (sweeps/first_torch.yaml: W&B's keys, run_cap, the
#      trainer's default model) as written, only shortened (2 runs of 6 steps), from the
#      repository's root as the README runs it: 2 trials ok, and its report.
# Usage: bash tests/test_torch_trainer.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh
"$py" -c "import torch" 2>/dev/null || fail "$py has no torch: bash scripts/install-deps.sh"
trainer=$(cd "$here/../examples/torch" && pwd)/train.py

# torch_yaml NAME EXTRA-TOP-LINE PARAMETER-LINES...
torch_yaml() {
    local name=$1 extra=$2
    shift 2
    {
        echo "name: $name"
        echo "program: $trainer"
        echo "command: [$py, \"\${program}\", \"\${args}\"]"
        echo "method: grid"
        echo "seed: 3"
        echo "metric: {name: reward, goal: maximize}"
        echo "reward: {beta: 0.2, gamma: 0.3}"
        echo "$extra"
        echo "parameters:"
        printf '  %s\n' "d_model: {value: 16}" "heads: {value: 2}" "layers: {value: 1}" "batch: {value: 32}" \
            "eval_batches: {value: 2}" "grassmann_rank: {value: 4}" "grassmann_offsets: {value: \"1,2\"}" "$@"
    } >"$tmp/$name.yaml"
}

# ---------------------------------------------------------------------------
echo "== 1. the four variants trained, reported and scored  [$((SECONDS - start)) s]"
torch_yaml variants "" "attention: {values: [mha, tucker, linear, grassmann]}" "steps: {value: 6}" \
    "eval_every: {value: 3}" "core_rank: {value: 1}"
mpi 3 run "$tmp/variants.yaml" -o "$tmp/variants.h5"
[[ $rc == 0 ]] || fail "the sweep of the trainer exits 0 (got $rc)"
"$py" - "$tmp/variants.h5" "$bin" <<'PY' || fail "the trainer's results"
import json, subprocess, sys
from numcheck import close
from attnsweep.results import Results
rs = Results(sys.argv[1])
bad, seen = [], []
for _, r in rs.summary.iterrows():
    a = rs.trial_attrs(r["trial"])
    variant = r["attention"]
    seen.append(variant)
    if a["status"] != "ok": bad.append(f"{variant}: {a['status']} {a['reason']} {a['stderr_tail']}"); continue
    lines = [json.loads(l) for l in open(a["metrics"])]
    if [l["step"] for l in lines] != [3, 6] or "test_accuracy" in lines[0] or "test_accuracy" not in lines[1]:
        bad.append(f"{variant}: lines {lines}")
    if not close(r["val_accuracy"], lines[-1]["val_accuracy"], 0) or r["steps"] != 6:
        bad.append(f"{variant}: val_accuracy {r['val_accuracy']} at step {r['steps']}, the last line {lines[-1]}")
    s = json.loads(subprocess.run([sys.argv[2], "score", a["checkpoint"], "--json", "-o", a["trial_dir"] + "/s.h5"],
                                  capture_output=True, text=True, check=True).stdout)
    if len(s["layers"]) != 1: bad.append(f"{variant}: {len(s['layers'])} layers scored")
    for col in ("rank_deviation", "correlation", "rank_deviation_excess", "correlation_excess"):
        if not close(r[col], s[col], 1e-9): bad.append(f"{variant}: {col} {r[col]}, attnsweep score {s[col]}")
    if not close(r["reward"], r["val_accuracy"] - 0.2 * s["rank_deviation_excess"] - 0.3 * s["correlation_excess"], 1e-9):
        bad.append(f"{variant}: reward {r['reward']}")
if sorted(seen) != sorted(["mha", "tucker", "linear", "grassmann"]): bad.append(f"variants {seen}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "mha, tucker, linear and grassmann trained by PyTorch, each scored as attnsweep score scores it"

# ---------------------------------------------------------------------------
echo "== 2. the trainer stopped and resumed  [$((SECONDS - start)) s]"
torch_yaml stopped "budget: {grace: 30}" "attention: {value: mha}" "steps: {value: 400}" "eval_every: {value: 5}"
rc=0
mpirun -np 2 "$bin" run "$tmp/stopped.yaml" -o "$tmp/stopped.h5" >"$tmp/out" 2>"$tmp/err" &
job=$!
background+=("$job")
metrics=$tmp/stopped.trials/000000/metrics.jsonl
for _ in $(seq 3000); do [[ -s $metrics ]] && break; sleep 0.1; done
[[ -s $metrics ]] || fail "the trainer wrote a line"
kill -USR1 "$job"
wait "$job" || rc=$?
[[ $rc == 3 ]] || fail "SIGUSR1 stops the sweep with exit code 3 (got $rc)"
[[ -s $tmp/stopped.trials/000000/resume.pt ]] || fail "the trainer saved resume.pt"
mpi 2 run "$tmp/stopped.yaml" -o "$tmp/stopped.h5" --resume
[[ $rc == 0 ]] || fail "--resume completes the sweep (got $rc)"
"$py" - "$tmp/stopped.h5" <<'PY' || fail "the resumed trainer"
import json, re, sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
a = rs.trial_attrs(0)
steps = [json.loads(l)["step"] for l in open(a["metrics"])]
said = re.search(r"resumed from step (\d+)", open(a["stderr"]).read())
bad = []
if a["status"] != "ok" or rs.summary.steps[0] != 400: bad.append(f"{a['status']} {a['reason']}")
if not said or int(said.group(1)) <= 0: bad.append("the trainer did not say it resumed")
elif steps[0] <= int(said.group(1)) or steps[-1] != 400: bad.append(f"steps {steps} after resuming at {said.group(1)}")
curve = rs.curves(0)["step"].tolist()
if curve != list(range(5, 401, 5)): bad.append(f"the stored curve: expected every evaluation 5..400, got {curve}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "stopped, resumed from resume.pt in ATTNSWEEP_RESUME_DIR, finished at step 400 with its whole curve"

echo "== 3. the README's first sweep of your own trainer, shortened  [$((SECONDS - start)) s]"
sed -e 's/^run_cap: 4 /run_cap: 2 /' -e 's/steps: {value: 200}/steps: {value: 6}/' \
    -e 's/eval_every: {value: 100}/eval_every: {value: 3}/' -e 's/eval_batches: {value: 10}/eval_batches: {value: 2}/' \
    "$here/../sweeps/first_torch.yaml" >"$tmp/first_torch.yaml"
[[ $(diff "$here/../sweeps/first_torch.yaml" "$tmp/first_torch.yaml" | grep -c '^>') == 4 ]] ||
    fail "sweeps/first_torch.yaml no longer has the run_cap and step lines this test shortens"
rc=0
(cd "$here/.." && mpirun -np 3 "$bin" run "$tmp/first_torch.yaml" -o "$tmp/first_torch.h5" --quiet) \
    >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "the README's own-trainer sweep: exit code $rc"
grep -q "finished 2 trials in .* (2 ok, 0 pruned, 0 failed)" "$tmp/err" ||
    fail "the README's own-trainer sweep: not 2 trials ok: $(tail -3 "$tmp/err")"
run report "$tmp/first_torch.h5"
[[ $rc == 0 ]] && grep -q "Leaderboard" "$tmp/out" || fail "report of the README's own-trainer sweep: exit code $rc"
pass "sweeps/first_torch.yaml, the README's example, runs as written (2 runs of 6 steps): 2 ok, reported"

echo "test_torch_trainer: $checks checks passed in $((SECONDS - start)) s"
