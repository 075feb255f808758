#!/usr/bin/env bash
# Tests of scripts/analyze.py on a real results file:
#   1. a tiny recall sweep under mpirun: grid of the four attention variants x three
#      lambda_orth x 2 repeats, mha also at lr 10 with weight decay 10 (those diverge:
#      failed trials), ASHA with a rung at 20 of 40 steps (pruned trials); 30 trials;
#   2. analyze.py RESULTS -o DIR: exit 0, every file it writes named on stdout; every PNG
#      exists, is non-empty, has the PNG signature, decodes with matplotlib.image.imread
#      and is not blank; no PNG that plots.json does not describe;
#   3. the numbers each figure plots (plots.json) equal /summary and the trial groups read
#      independently with h5py: curves, reward against each varying parameter, val_accuracy
#      against Correlation and RankDeviation with the Pareto front recomputed here,
#      normalised head singular values and head correlation per layer with their
#      lambda_orth colours, the CP role weights of the best trials by reward;
#   4. the default output directory RESULTS_plots/ beside the file, --top 1;
#   5. bad input: a missing file, a file that is not HDF5, format_version 2 (before the
#      validation split), an HDF5 file without format_version, one without /summary: one
#      line on stderr, exit 2, nothing written.
# Usage: bash tests/test_analyze.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
script=$here/../scripts/analyze.py
export MPLBACKEND=Agg ASAN_OPTIONS=$asan_noleaks  # mpirun runs: see sanitizer_env.sh

echo "== 1. a tiny sweep with repeats, lambda_orth values, all four variants"
cat >sweep.yaml <<'YAML'
name: analyze_test
method: grid
repeats: 2
metric: {name: reward, goal: maximize}
task: recall
seed: 3
budget: {steps: 40, eval_every: 10}
scheduler: {name: asha, min_steps: 20, eta: 2}
parameters:
  attention: {values: [mha, tucker, linear, grassmann]}
  lambda_orth: {values: [0, 0.1, 1]}
  lr: {values: [0.003, 10], when: {attention: mha}}
  weight_decay: {value: 10, when: {lr: 10}}
  d_model: {value: 16}
  heads: {value: 4}
  layers: {value: 2}
  batch: {value: 16}
  eval_batches: {value: 2}
  recall_pairs: {value: 4}
  grassmann_rank: {value: 4}
  core_rank: {value: 2}
YAML
t0=$SECONDS
rc=0
mpirun -np 3 "$bin" run sweep.yaml -o res.h5 --quiet 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "the sweep: exit code $rc"
counts=$("$py" -c '
import sys, h5py, collections
s = h5py.File(sys.argv[1], "r")["summary"]["status"]
c = collections.Counter(x.decode() for x in s)
print(len(s), c["ok"], c["pruned"], c["failed"])' res.h5)
read -r n ok pruned failed <<<"$counts"
[[ $n == 30 ]] || fail "the sweep recorded $n trials, expected 30"
[[ $failed -ge 1 ]] || fail "fixture: the lr 10 / weight decay 10 trials should diverge (failed: $failed)"
pass "sweep of $n trials ($ok ok, $pruned pruned, $failed failed) in $((SECONDS - t0)) s"

echo "== 2. analyze.py RESULTS -o DIR: every PNG valid"
t0=$SECONDS
rc=0
"$py" "$script" res.h5 -o out >stdout 2>"$tmp/err" || rc=$?
[[ $rc == 0 ]] || fail "analyze.py: exit code $rc"
[[ ! -s $tmp/err ]] || fail "analyze.py wrote to stderr"
"$py" - out stdout <<'PY' || fail "the PNG files"
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
print(f"{len(names)} PNG files")
PY
pass "analyze.py in $((SECONDS - t0)) s: every PNG exists, has the signature, decodes, is not blank, is named on stdout"

echo "== 3. the plotted numbers equal /summary and the trial groups"
"$py" - res.h5 out/plots.json <<'PY' || fail "plotted numbers"
import json, math, sys
import h5py, numpy as np, pandas
from numcheck import close

f = h5py.File(sys.argv[1], "r")
data = json.load(open(sys.argv[2]))
figs = data["figures"]
df = pandas.DataFrame(f["summary"][:])
for c in ("status", "attention"):
    df[c] = df[c].str.decode("ascii")
df = df.set_index("trial").sort_index()
trials = {int(k): g for k, g in f["trials"].items()}
assert sorted(trials) == df.index.tolist()

def arr(x):  # a JSON list (None for NaN) as float64
    return np.array([np.nan if v is None else v for v in x], dtype=float) if not (
        x and isinstance(x[0], list)) else np.array([arr(v) for v in x])

def same(a, b, what):  # exactly equal, NaN where NaN
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert np.array_equal(a, b, equal_nan=True), f"{what}: {a} != {b}"

# The summary row and the trial group's attributes agree (read independently).
for t, g in trials.items():
    same(g.attrs["seconds"], df.at[t, "seconds"], f"trial {t} seconds: group attribute vs /summary")
    assert g.attrs["status"] == df.at[t, "status"], t

# learning_curves.png: one series per trial, the stored curves.
lc = figs["learning_curves.png"]
assert sorted(s["trial"] for s in lc["series"]) == df.index.tolist(), "learning curves: trials"
for s in lc["series"]:
    t, c = s["trial"], trials[s["trial"]]["curves"]
    assert s["variant"] == df.at[t, "attention"] and s["status"] == df.at[t, "status"], t
    for k in ("step", "val_accuracy", "train_loss"):
        same(arr(s[k]), c[k][:], f"learning curves trial {t} {k}")
n_drawn = sum(1 for s in lc["series"] if s["step"])
print(f"learning curves: {len(lc['series'])} trials, {n_drawn} with a curve")

# reward_vs_parameters.png: every parameter that varies between trials with a reward.
rv = figs["reward_vs_parameters.png"]
have = df[np.isfinite(df.reward)]
params = [p["parameter"] for p in rv["panels"]]
assert sorted(params) == ["attention", "lambda_orth", "lr"], params
for p in rv["panels"]:
    name = p["parameter"]
    assert p["trial"] == have.index.tolist(), f"{name}: trials"
    same(p["y"], have.reward, f"{name}: reward")
    if p["categorical"]:
        assert p["x"] == have[name].tolist(), f"{name}: categories"
        assert sorted(p["categories"]) == sorted(set(have[name])), p["categories"]
    else:
        same(p["x"], have[name], f"{name}: values")
print(f"reward against {params}: {len(have)} trials each")

# pareto.png: val_accuracy against Correlation and RankDeviation, the front recomputed here.
pa = figs["pareto.png"]
assert [p["x_metric"] for p in pa["panels"]] == ["correlation", "rank_deviation"]
for p in pa["panels"]:
    m = p["x_metric"]
    sub = df[np.isfinite(df[m]) & np.isfinite(df.val_accuracy)]
    assert p["trial"] == sub.index.tolist(), f"pareto {m}: trials"
    same(p["x"], sub[m], f"pareto {m}")
    same(p["val_accuracy"], sub.val_accuracy, f"pareto {m}: val_accuracy")
    front = []
    for t in sub.index:
        x, y = sub.at[t, m], sub.at[t, "val_accuracy"]
        if not any((sub.at[u, m] <= x and sub.at[u, "val_accuracy"] >= y) and
                   (sub.at[u, m] < x or sub.at[u, "val_accuracy"] > y) for u in sub.index):
            front.append(t)
    assert sorted(p["front_trials"]) == sorted(front), f"pareto {m}: {p['front_trials']} != {front}"
    print(f"pareto {m}: {len(sub)} trials, front {p['front_trials']}")

# invariants_VARIANT.png: normalised head singular values and head correlation per layer.
for v in ("mha", "tucker", "linear", "grassmann"):
    fig = figs[f"invariants_{v}.png"]
    assert fig["colour_by"] == ["lambda_orth"], fig["colour_by"]
    want = [t for t in df.index[df.attention == v] if "invariants" in trials[t]]
    assert sorted(s["trial"] for s in fig["series"]) == want, f"invariants {v}: trials"
    for s in fig["series"]:
        t = s["trial"]
        inv = trials[t]["invariants"]
        same(s["step"], inv["step"][:], f"invariants trial {t} step")
        same(s["step"], trials[t]["curves"]["step"][:], f"invariants trial {t} step vs curves")
        same(arr(s["correlation"]), inv["correlation"][:], f"invariants trial {t} correlation")
        sv = inv["head_sv"][:]
        nsv = arr(s["head_sv_normalised"])
        assert nsv.shape == sv.shape, (nsv.shape, sv.shape)
        assert close(nsv, sv / sv.sum(axis=-1, keepdims=True), rtol=1e-12), t
        assert close(nsv.sum(axis=-1), 1, atol=1e-12), t
        same(s["colour_value"]["lambda_orth"], df.at[t, "lambda_orth"], f"trial {t} colour")
    print(f"invariants {v}: {len(want)} trials")

# cp_roles_trialNNNNNN.png: the best 4 trials by reward, the stored role vectors.
best = sorted(have.index, key=lambda t: (-have.at[t, "reward"], t))[:4]
cp = {k: v for k, v in figs.items() if k.startswith("cp_roles_")}
assert sorted(cp) == sorted(f"cp_roles_trial{t:06d}.png" for t in best), (sorted(cp), best)
for name, fig in cp.items():
    t = fig["trial"]
    assert name == f"cp_roles_trial{t:06d}.png" and fig["variant"] == df.at[t, "attention"]
    same(fig["reward"], df.at[t, "reward"], f"{name}: reward")
    scores = trials[t]["scores"]
    assert [l["layer"] for l in fig["layers"]] == sorted(scores, key=lambda k: int(k[5:])), name
    for l in fig["layers"]:
        s = scores[l["layer"]]
        same(arr(l["weights"]), s.attrs["cp_roles"], f"{name} {l['layer']} cp_roles")
        assert l["cp_rank"] == s.attrs["cp_rank"] == s.attrs["cp_roles"].shape[0], name
        same(l["cp_fit"], s.attrs["cp_fit"], f"{name} cp_fit")
        roles = s.attrs["roles"].split(",")
        assert l["roles"] == roles, (l["roles"], roles)
print(f"CP roles of trials {best} (best by reward)")
assert data["trials"] == len(df) and data["format_version"] == 3
PY
pass "plots.json: curves, reward panels, Pareto fronts, invariants and CP roles equal the file"

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

echo "== 5. bad input: one line on stderr, exit code 2, nothing written"
printf 'not an HDF5 file\n' >text.h5
"$py" - res.h5 <<'PY' || fail "making the bad files"
import shutil, sys, h5py
shutil.copy(sys.argv[1], "v2.h5")
with h5py.File("v2.h5", "a") as f:
    f.attrs["format_version"] = 2
with h5py.File("plain.h5", "w") as f:
    f["x"] = [1, 2, 3]
with h5py.File("nosummary.h5", "w") as f:
    f.attrs["format_version"] = 3
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
bad v2.h5 "format_version 2; this script reads format_version 3"
bad plain.h5 "no format_version attribute"
bad nosummary.h5 "have no /summary"
pass "missing, not HDF5, format_version 2, no format_version, no /summary: exit 2 with one line"

echo "PASS: $checks checks of scripts/analyze.py in $((SECONDS - start)) s"
