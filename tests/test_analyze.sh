#!/usr/bin/env bash
# Tests of scripts/analyze.py on a real results file:
#   1. the e2e tier's tiny recall sweep (tests/fixture_sweep.yaml, run once by ctest's
#      fixture_sweep): grid of the four attention variants x three lambda_orth x 2 repeats,
#      mha also at lr 10 with weight decay 10 (those diverge: failed trials), ASHA with a
#      rung at 24 of 40 steps (pruned trials); 30 trials;
#   2. analyze.py RESULTS -o DIR: exit 0, every file it writes named on stdout; every PNG
#      exists, is non-empty, has the PNG signature, decodes with matplotlib.image.imread
#      and is not blank; no PNG that plots.json does not describe;
#   3. the numbers each figure plots (plots.json) equal /summary and the trial groups read
#      independently with h5py: the optimisation history and its best so far, parallel
#      coordinates of the finished trials, curves (validation accuracy and loss, training
#      loss) coloured by lambda_orth, the sweep's metric against each varying parameter on
#      its own scale (log for a log distribution or a values list spanning 10x), the metric against Correlation and RankDeviation
#      over the finished trials with the Pareto front recomputed here and trial-id labels
#      that do not overlap, normalised head singular values and head correlation per layer
#      with their lambda_orth colours, the CP role weights of the best finished trials by
#      the metric with low fits marked or left out;
#   4. the default output directory RESULTS_plots/ beside the file, --top 1; a sweep whose
#      metric is val_loss (goal minimize): every figure follows it and the best trial is
#      the lowest val_loss;
#   5. bad input: a missing file, a file that is not HDF5, format_version 2 (before the
#      validation split), an HDF5 file without format_version, one without /summary: one
#      line on stderr, exit 2, nothing written;
#   6. a file a writer holds open (HDF5's lock, as a running sweep's coordinator does) is
#      read; the one line of pandas in docs/results-file.md gives str columns in trial order, the same
#      DataFrame as python/attnsweep/results.py;
#   7. a sweep of a researcher's program without attention and without scores (its own
#      metric, objective, minimised by W&B's default; integer, text and log parameters, one
#      named steps; failed trials): exit 0, the figures that apply (history, parallel
#      coordinates, slices, the training-loss curves) valid and in plots.json with the
#      program's numbers as one group, "all trials", and a note on each skipped one (Pareto,
#      invariants, CP roles); integer axes, steps labelled as the parameter.
# Usage: bash tests/test_analyze.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
script=$here/../scripts/analyze.py
export MPLBACKEND=Agg ASAN_OPTIONS=$asan_noleaks  # mpirun runs: see sanitizer_env.sh

echo "== 1. a tiny sweep with repeats, lambda_orth values, all four variants"
t0=$SECONDS
fixture_sweep res.h5  # tests/fixture_sweep.yaml
counts=$("$py" -c '
import sys, collections
from attnsweep.results import Results
s = Results(sys.argv[1]).summary.status
c = collections.Counter(s)
print(len(s), c["ok"], c["pruned"], c["failed"])' res.h5)
read -r n ok pruned failed <<<"$counts"
[[ $n == 30 ]] || fail "the sweep recorded $n trials, expected 30"
[[ $failed -ge 1 ]] || fail "fixture: the lr 10 / weight decay 10 trials should diverge (failed: $failed)"
pass "sweep of $n trials ($ok ok, $pruned pruned, $failed failed) in $((SECONDS - t0)) s"

# valid_pngs OUTDIR STDOUT: every PNG in OUTDIR is described by its plots.json (and every
# figure plots.json describes is there), has the PNG signature, decodes, is not blank and
# is named on analyze.py's stdout, as is every note plots.json records.
valid_pngs() {
    "$py" - "$1" "$2" <<'PY' || fail "the PNG files of $1"
import json, os, sys
import matplotlib.image as mpimg
import numpy as np
out, stdout = sys.argv[1], open(sys.argv[2]).read()
data = json.load(open(os.path.join(out, "plots.json")))
names = sorted(data["figures"])
pngs = sorted(n for n in os.listdir(out) if n.endswith(".png"))
assert pngs == names, f"PNGs {pngs} but plots.json describes {names}"
for n in names:
    p = os.path.join(out, n)
    assert os.path.getsize(p) > 1000, f"{n}: {os.path.getsize(p)} bytes"
    with open(p, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n", f"{n}: no PNG signature"
    img = mpimg.imread(p)
    assert img.ndim == 3 and img.shape[0] >= 300 and img.shape[1] >= 300, f"{n}: {img.shape}"
    assert float(np.std(img[..., :3])) > 0.01, f"{n}: blank image"
    assert f"  {n}\n" in stdout, f"{n} not named on stdout"
assert "plots.json" in stdout
for n in data["notes"]:
    assert f"note: {n}\n" in stdout, f"note {n!r} not on stdout"
print(f"{len(names)} PNG files")
PY
}

echo "== 2. analyze.py RESULTS -o DIR: every PNG valid"
t0=$SECONDS
rc=0
"$py" "$script" res.h5 -o out >stdout 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "analyze.py: exit code $rc"
[[ ! -s $tmp/err ]] || fail "analyze.py wrote to stderr"
valid_pngs out stdout
pass "analyze.py in $((SECONDS - t0)) s: every PNG exists, has the signature, decodes, is not blank, is named on stdout"

echo "== 3. the plotted numbers equal /summary and the trial groups"
"$py" - res.h5 out/plots.json <<'PY' || fail "plotted numbers"
import json, math, sys
import numpy as np
from numcheck import close
from attnsweep.results import Results

rs = Results(sys.argv[1])
data = json.load(open(sys.argv[2]))
figs = data["figures"]
df = rs.summary.set_index("trial")
assert rs.trial_ids() == df.index.tolist()

def arr(x):  # a JSON list (None for NaN) as float64
    return np.array([np.nan if v is None else v for v in x], dtype=float) if not (
        x and isinstance(x[0], list)) else np.array([arr(v) for v in x])

def same(a, b, what):  # exactly equal, NaN where NaN
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert np.array_equal(a, b, equal_nan=True), f"{what}: {a} != {b}"

# The summary row and the trial group's attributes agree (read independently).
for t in df.index:
    a = rs.trial_attrs(t)
    same(a["seconds"], df.at[t, "seconds"], f"trial {t} seconds: group attribute vs /summary")
    assert a["status"] == df.at[t, "status"], t

# history.png: the metric (reward, maximised) of every finished and pruned trial by id, and
# the best so far over the finished ones.
hi = figs["history.png"]
have = df[np.isfinite(df.reward) & df.status.isin(["ok", "pruned"])]
assert hi["metric"] == "reward" and hi["goal"] == "maximize" and hi["trial"] == have.index.tolist()
same(hi["value"], have.reward, "history values")
best, run = [], -np.inf
for t in have.index:
    if have.at[t, "status"] == "ok":
        run = max(run, have.at[t, "reward"])
    best.append(run if run > -np.inf else np.nan)
same(arr(hi["best_so_far"]), best, "history best so far")

# parallel_coordinates.png: the finished trials, an axis per swept parameter and the metric.
pc = figs["parallel_coordinates.png"]
ok = df[(df.status == "ok") & np.isfinite(df.reward)]
assert pc["trial"] == ok.index.tolist() and pc["axes"][-1] == "reward", pc["axes"]
assert sorted(pc["axes"][:-1]) == ["attention", "lambda_orth", "lr"], pc["axes"]
pos = arr(pc["positions"])
assert pos.shape == (4, len(ok)) and np.all((pos >= 0) & (pos <= 1)), pos.shape
assert close(pos[-1][np.argmax(ok.reward.to_numpy())], 1.0), "the best trial tops the metric's axis"

# learning_curves.png: one series per trial, the stored curves, coloured by lambda_orth.
lc = figs["learning_curves.png"]
assert lc["colour_by"] == "lambda_orth", lc["colour_by"]
assert sorted(s["trial"] for s in lc["series"]) == df.index.tolist(), "learning curves: trials"
for s in lc["series"]:
    t, c = s["trial"], rs.curves(s["trial"])
    assert s["variant"] == df.at[t, "attention"] and s["status"] == df.at[t, "status"], t
    same(s["colour_value"], df.at[t, "lambda_orth"], f"trial {t} colour")
    for k in ("step", "val_accuracy", "val_loss", "train_loss"):
        same(arr(s[k]), c[k], f"learning curves trial {t} {k}")
n_drawn = sum(1 for s in lc["series"] if s["step"])
print(f"learning curves: {len(lc['series'])} trials, {n_drawn} with a curve")

# slices.png: every parameter that varies between finished or pruned trials with the metric.
sl = figs["slices.png"]
assert sl["y"] == "reward"
params = [p["parameter"] for p in sl["panels"]]
assert sorted(params) == ["attention", "lambda_orth", "lr"], params
for p in sl["panels"]:
    name = p["parameter"]
    assert p["trial"] == have.index.tolist(), f"{name}: trials"
    same(p["y"], have.reward, f"{name}: reward")
    if p["categorical"]:
        assert p["x"] == have[name].tolist(), f"{name}: categories"
        assert sorted(p["categories"]) == sorted(set(have[name])), p["categories"]
    else:
        same(p["x"], have[name], f"{name}: values")
    # lr: values 0.003 and the default 0.002 among the trials with a reward (lr 10 diverged)
    want_scale = {"attention": "categorical", "lambda_orth": "linear", "lr": "linear"}[name]
    assert p["scale"] == want_scale, (name, p["scale"])
print(f"reward against {params}: {len(have)} trials each")
from attnsweep.analysis.common import log_scale  # the scale rule: the distribution's, or a values list spanning 10x
assert log_scale({"distribution": "log_uniform_values"}, [0.001, 0.0012])
assert log_scale({"distribution": "q_log_normal"}, [8, 16])
assert not log_scale({"distribution": "uniform"}, [0.001, 1])
assert log_scale({"values": [0.001, 0.1]}, [0.001, 0.1]) and not log_scale({}, [0, 0.1])

# pareto.png: the metric (reward) against Correlation and RankDeviation, finished trials only,
# the front recomputed here; trial-id labels that do not overlap, each front trial labelled
# or listed as left out.
pa = figs["pareto.png"]
assert [p["x_metric"] for p in pa["panels"]] == ["correlation", "rank_deviation"] and pa["y"] == "reward"
for p in pa["panels"]:
    m = p["x_metric"]
    sub = ok[np.isfinite(ok[m])]
    assert p["trial"] == sub.index.tolist(), f"pareto {m}: trials"
    assert set(p["status"]) == {"ok"}, "a pruned trial on the Pareto plot"
    same(p["x"], sub[m], f"pareto {m}")
    same(p["y"], sub.reward, f"pareto {m}: reward")
    front = []
    for t in sub.index:
        x, y = sub.at[t, m], sub.at[t, "reward"]
        if not any((sub.at[u, m] <= x and sub.at[u, "reward"] >= y) and
                   (sub.at[u, m] < x or sub.at[u, "reward"] > y) for u in sub.index):
            front.append(t)
    assert sorted(p["front_trials"]) == sorted(front), f"pareto {m}: {p['front_trials']} != {front}"
    boxes = [l["box"] for l in p["labels"]]
    assert sorted([l["trial"] for l in p["labels"]] + p["unlabelled"]) == sorted(front), p["labels"]
    for i in range(len(boxes)):
        for j in range(i):
            a, b = boxes[i], boxes[j]
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], f"labels overlap: {a} {b}"
    print(f"pareto {m}: {len(sub)} trials, front {p['front_trials']}, {len(boxes)} labels, none overlapping")

# invariants_VARIANT.png: normalised head singular values and head correlation per layer.
for v in ("mha", "tucker", "linear", "grassmann"):
    fig = figs[f"invariants_{v}.png"]
    assert fig["colour_by"] == ["lambda_orth"], fig["colour_by"]
    want = [t for t in df.index[df.attention == v] if rs.invariants(t) is not None]
    assert sorted(s["trial"] for s in fig["series"]) == want, f"invariants {v}: trials"
    for s in fig["series"]:
        t = s["trial"]
        inv = rs.invariants(t)
        same(s["step"], inv["step"], f"invariants trial {t} step")
        same(s["step"], rs.curves(t)["step"], f"invariants trial {t} step vs curves")
        same(arr(s["correlation"]), inv["correlation"], f"invariants trial {t} correlation")
        sv = inv["head_sv"]
        nsv = arr(s["head_sv_normalised"])
        assert nsv.shape == sv.shape, (nsv.shape, sv.shape)
        assert close(nsv, sv / sv.sum(axis=-1, keepdims=True), rtol=1e-12), t
        assert close(nsv.sum(axis=-1), 1, atol=1e-12), t
        same(s["colour_value"]["lambda_orth"], df.at[t, "lambda_orth"], f"trial {t} colour")
    print(f"invariants {v}: {len(want)} trials")

# cp_roles_trialNNNNNN.png: the best 4 finished trials by the metric (reward) that have a layer
# of CP fit 0.1 or more, the stored role vectors; a layer below 0.1 is not drawn, one below
# 0.5 is marked.
fits = {t: [a["cp_fit"] for _, a in rs.scores(t)] for t in ok.index}
best = [t for t in sorted(ok.index, key=lambda t: (-ok.at[t, "reward"], t)) if max(fits[t]) >= 0.1][:4]
cp = {k: v for k, v in figs.items() if k.startswith("cp_roles_")}
assert sorted(cp) == sorted(f"cp_roles_trial{t:06d}.png" for t in best), (sorted(cp), best)
for name, fig in cp.items():
    t = fig["trial"]
    assert name == f"cp_roles_trial{t:06d}.png" and fig["variant"] == df.at[t, "attention"]
    same(fig["reward"], df.at[t, "reward"], f"{name}: reward")
    assert fig["metric"] == "reward"
    scores = dict(rs.scores(t))
    assert [l["layer"] for l in fig["layers"]] == [k for k, _ in rs.scores(t)], name
    for l in fig["layers"]:
        s = scores[l["layer"]]
        same(arr(l["weights"]), s["cp_roles"], f"{name} {l['layer']} cp_roles")
        assert l["cp_rank"] == s["cp_rank"] == s["cp_roles"].shape[0], name
        same(l["cp_fit"], s["cp_fit"], f"{name} cp_fit")
        roles = s["roles"].split(",")
        assert l["roles"] == roles, (l["roles"], roles)
        assert l["drawn"] == (l["cp_fit"] >= 0.1) and l["marked"] == (0.1 <= l["cp_fit"] < 0.5), l
print(f"CP roles of trials {best} (best by reward)")
assert data["trials"] == len(df) and data["format_version"] == rs.schema.format_version
PY
pass "plots.json: history, parallel coordinates, curves, slices, Pareto fronts and labels, invariants and CP roles equal the file"

echo "== 4. default output directory; --top 1"
cp res.h5 "sweep two.h5"
rc=0
"$py" "$script" "sweep two.h5" --top 1 >stdout2 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "analyze.py with the default OUTDIR: exit code $rc"
[[ -s "sweep two_plots/plots.json" ]] || fail "no plots.json in 'sweep two_plots/'"
n_cp=$(find "sweep two_plots" -name 'cp_roles_trial*.png' | wc -l)
[[ $n_cp == 1 ]] || fail "--top 1 wrote $n_cp CP role charts"
grep -qF "sweep two_plots" stdout2 || fail "stdout does not name the output directory"
pass "default OUTDIR 'sweep two_plots/' beside the file; --top 1 writes one CP role chart"
"$py" - res.h5 <<'PY' || fail "making the val_loss sweep's file"
import shutil, sys, h5py  # raw on purpose: it rewrites the file's root attributes
shutil.copy(sys.argv[1], "loss.h5")
with h5py.File("loss.h5", "a") as f:
    f.attrs["yaml"] = f.attrs["yaml"].replace("metric: {name: reward, goal: maximize}",
                                              "metric: {name: val_loss, goal: minimize}")
    f.attrs["metric"], f.attrs["goal"] = "val_loss", "minimize"  # what readers rank by
PY
rc=0
"$py" "$script" loss.h5 -o loss_out >stdout3 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "analyze.py on a val_loss sweep: exit code $rc"
"$py" - loss.h5 loss_out/plots.json stdout3 <<'PY' || fail "the val_loss sweep's figures"
import json, sys
from attnsweep.results import Results
df = Results(sys.argv[1]).summary
data = json.load(open(sys.argv[2]))
figs = data["figures"]
assert data["metric"] == "val_loss" and data["goal"] == "minimize"
assert figs["history.png"]["metric"] == "val_loss" and figs["slices.png"]["y"] == "val_loss"
assert figs["pareto.png"]["y"] == "val_loss" and figs["parallel_coordinates.png"]["axes"][-1] == "val_loss"
ok = df[df.status == "ok"]
best = ok.sort_values(["val_loss", "trial"]).iloc[0]
line = [l for l in open(sys.argv[3]) if l.startswith("best ")][0]
assert line.startswith(f"best val_loss (lower is better) {best.val_loss:.4f}: trial {int(best.trial)} "), line
assert f"reward {best.reward:.4f}" in line and f"val_accuracy {best.val_accuracy:.4f}" in line, line
print(line.strip())
PY
pass "a val_loss sweep: every figure and the best trial follow val_loss (lower is better)"

echo "== 5. bad input: one line on stderr, exit code 2, nothing written"
printf 'not an HDF5 file\n' >text.h5
"$py" - res.h5 <<'PY' || fail "making the bad files"
import shutil, sys, h5py  # raw on purpose: it makes files the reader must refuse
shutil.copy(sys.argv[1], "v2.h5")
with h5py.File("v2.h5", "a") as f:
    f.attrs["format_version"] = 2
with h5py.File("plain.h5", "w") as f:
    f["x"] = [1, 2, 3]
with h5py.File("nosummary.h5", "w") as f, h5py.File(sys.argv[1], "r") as res:
    f.attrs["format_version"] = res.attrs["format_version"]
    f.attrs["schema"] = res.attrs["schema"]
    f.attrs["family"] = "BERT"
PY
bad() {  # bad FILE EXPECTED-MESSAGE-PART
    local rc=0
    "$py" "$script" "$1" -o "bad_out" >out.txt 2>err.txt || rc=$?
    [[ $rc == 2 ]] || fail "$1: exit code $rc, expected 2"
    [[ $(wc -l <err.txt) == 1 ]] || fail "$1: stderr is not one line: $(cat err.txt)"
    grep -q "^analyze.py: .*$2" err.txt || fail "$1: message '$(cat err.txt)' lacks '$2'"
    [[ ! -s out.txt && ! -e bad_out ]] || fail "$1: wrote output"
    echo "     $(cat err.txt)"
}
bad missing.h5 "no such file"
bad text.h5 "not an HDF5 file"
bad v2.h5 "format_version 2 but its schema says"
bad plain.h5 "no format_version attribute"
bad nosummary.h5 "have no /summary"
pass "missing, not HDF5, format_version 2, no format_version, no /summary: exit 2 with one line"

echo "== 6. a file held open by a writer; the line of pandas in docs/results-file.md"
cp res.h5 running.h5
"$py" -c '
import sys, time, h5py  # raw on purpose: a writer holding the HDF5 lock
f = h5py.File("running.h5", "a")  # the lock a running sweep holds
open("locked", "w").close()
time.sleep(60)' &
background+=($!)
for _ in $(seq 100); do [[ -e locked ]] && break; sleep 0.1; done
"$py" -c 'import h5py; h5py.File("running.h5", "r")' 2>/dev/null && fail "fixture: the file is not locked"
rc=0
"$py" "$script" running.h5 -o running_out >/dev/null 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "analyze.py on a file a writer holds: exit code $rc: $(cat "$tmp/err")"
line=$(grep -o 'pandas.DataFrame(h5py.File(f, "r", locking=False)\["summary"\]\[:\]).*' "$here/../docs/results-file.md" | head -n 1)
[[ -n $line ]] || fail "no pandas line in docs/results-file.md"
"$py" - running.h5 "$line" <<'PY' || fail "the pandas line of docs/results-file.md"
import sys, h5py, pandas
from attnsweep import results as attnsweep_results
f = sys.argv[1]
df = eval(sys.argv[2].rstrip("`"))
assert df.trial.tolist() == sorted(df.trial.tolist()), "not in trial order"
assert (df.status == "ok").sum() > 0 and all(isinstance(v, str) for v in df.status), df.status.tolist()
assert all(isinstance(v, str) for v in df.attention)
assert df.equals(attnsweep_results.summary(f)), "the line of docs/results-file.md and attnsweep_results.summary differ"
print(f"{len(df)} rows in trial order, status and attention as str: {(df.status == 'ok').sum()} ok")
PY
pass "analyze.py reads a file a writer holds (HDF5 lock); the pandas line of docs/results-file.md: str columns in trial order"

echo "== 7. a program's sweep without attention and without scores"
# Its own metric, objective (no goal: W&B's minimize), and train_loss in every line; it
# exits 1 at lr 0.1 with sgd (failed trials). A parameter named steps is /summary's
# config_steps (steps is the steps taken).
cat >trainer.py <<'PY'
import json, os, sys
a = dict(w[2:].split("=", 1) for w in sys.argv[1:])
lr, width, steps = float(a["lr"]), int(a["width"]), int(a["steps"])
if lr == 0.1 and a["opt"] == "sgd":
    sys.exit(1)
with open(os.environ["ATTNSWEEP_METRICS"], "a") as f:
    for s in range(1, steps + 1):
        objective = 100 * lr + 1 / (width * s) + (a["opt"] == "sgd") * 0.05
        f.write(json.dumps({"step": s, "objective": objective, "train_loss": 2 * objective}) + "\n")
PY
program_grid_yaml trainer "$tmp/trainer.py" "metric: {name: objective}" -- \
    "lr: {values: [0.001, 0.1]}" "width: {values: [2, 8]}" "steps: {values: [2, 3]}" "opt: {values: [adam, sgd]}"
rc=0
mpirun -np 3 "$bin" run trainer.yaml -o trainer.h5 --quiet >/dev/null 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "the program's sweep: exit code $rc"
rc=0
"$py" "$script" trainer.h5 -o trainer_out >stdout7 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "analyze.py on a program's sweep without attention: exit code $rc"
[[ ! -s $tmp/err ]] || fail "analyze.py wrote to stderr on a program's sweep"
valid_pngs trainer_out stdout7
"$py" - trainer.h5 trainer_out/plots.json stdout7 <<'PY' || fail "the program's sweep's figures"
import json, sys
import numpy as np
from attnsweep import results as attnsweep_results
from attnsweep.analysis import common, plots  # analyze.py's parts
from numcheck import close
df = attnsweep_results.summary(sys.argv[1])
data = json.load(open(sys.argv[2]))
figs, notes = data["figures"], data["notes"]
assert "attention" not in df.columns and df.rank_deviation.isna().all(), "fixture: no attention, no scores"
assert sorted(figs) == ["history.png", "learning_curves.png", "parallel_coordinates.png", "slices.png"], sorted(figs)
for skipped in ("pareto.png not written", "invariants_*.png not written", "cp_roles_trial*.png not written"):
    assert any(n.startswith(skipped) for n in notes), f"no note '{skipped}': {notes}"
assert data["metric"] == "objective" and data["goal"] == "minimize", (data["metric"], data["goal"])
# history: the program's metric, the best so far the lowest
have = df[df.status.isin(["ok", "pruned"]) & np.isfinite(df.objective)]
hi = figs["history.png"]
assert hi["trial"] == have.trial.tolist() and close(np.array(hi["value"]), have.objective.to_numpy())
assert close(hi["best_so_far"][-1], have[have.status == "ok"].objective.min()), hi["best_so_far"]
assert (df.status == "failed").sum() == 4 and len(have) == 12, df.status.tolist()
# slices and parallel coordinates: every swept parameter, steps as config_steps, one group
sl = figs["slices.png"]
assert [p["parameter"] for p in sl["panels"]] == ["lr", "width", "config_steps", "opt"], sl["panels"]
assert all(set(p["variant"]) == {"all trials"} for p in sl["panels"])
assert {p["parameter"]: p["scale"] for p in sl["panels"]} == {
    "lr": "log", "width": "linear", "config_steps": "linear", "opt": "categorical"}
assert figs["parallel_coordinates.png"]["axes"] == ["lr", "width", "config_steps", "opt", "objective"]
# learning curves: the one row the program's lines fill (train_loss), one series per trial
lc = figs["learning_curves.png"]
assert lc["y"] == ["train_loss"] and lc["colour_by"] == "lr", (lc["y"], lc["colour_by"])
assert sorted(s["trial"] for s in lc["series"]) == df.trial.tolist()
# integer parameters keep integer ticks; steps is labelled as the parameter
rs, _ = common.open_results(sys.argv[1])
params = common.Parameters(rs)
assert params.names["config_steps"] == "steps" and params.label("config_steps") == "steps (parameter)"
for p in ("width", "config_steps"):
    _, ticks, _ = plots.axis_values(df, p, params.spec(p))
    assert [t for _, t in ticks] == [str(int(v)) for v in sorted(df[p].unique())], (p, ticks)
best = [l for l in open(sys.argv[3]) if l.startswith("best ")][0]
assert best.startswith("best objective (lower is better) ") and "lr 0.001, width 8, steps 3, opt adam" in best, best
print(f"{len(figs)} figures; notes: {len(notes)}; {best.strip()}")
PY
pass "a program's sweep without attention or scores: exit 0, history, parallel coordinates, slices and curves of its own metric; Pareto, invariants and CP roles skipped with a note"

echo "PASS: $checks checks of scripts/analyze.py in $((SECONDS - start)) s"
