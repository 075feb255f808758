#!/usr/bin/env bash
# End-to-end tests of `attnsweep report` on real sweeps (mpirun -np 3, tiny recall models):
#   1. a grid with repeats (ablation of lambda_orth against lambda_l2): every section in
#      JSON recomputed in Python from /summary and the trials' attributes (h5py, pandas,
#      scipy's paired and Welch tests; the verdict by tests/check_verdict.py from the
#      curves and invariants), the CSV equal to the JSON, the text table aligned and equal;
#   2. a sweep with ASHA pruning and diverging trials, metric val_accuracy from its YAML:
#      failures by status and reason, steps saved; --metric and --top;
#   3. a sweep read while it runs (never fails or hangs; the trials grow), stopped by
#      SIGUSR1, read, and read while it resumes (the file rebuilt from the journal and
#      renamed over the old one): every trial once;
#   4. a single trial of attnsweep train -o;
#   5. bad input: missing, foreign, damaged files and another format version, bad options:
#      one line "attnsweep: report: ...", exit 2.
# Usage: bash tests/test_report_cli.sh /path/to/attnsweep   (from the repository root;
# ctest runs it so). Under AddressSanitizer (ATTNSWEEP_SANITIZED=1) the runs of report have
# leak detection (report starts no MPI) but for the repeated reads of a running sweep;
# mpirun runs do not (tests/sanitizer_env.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
leaks=1  # report starts no MPI: every run is leak-checked but the repeats noted below
sweep_pid=

# report ARGS...: attnsweep report, with leak detection unless leaks=0; stdout in $tmp/out,
# stderr in $tmp/err, exit code in $rc. A report that takes over 60 s counts as hung.
report() {
    local opts=$asan_leaks
    [[ $leaks == 0 ]] && opts=$asan_noleaks
    rc=0
    ASAN_OPTIONS=$opts timeout 60 "$bin" report "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}
# sweep NAME.yaml [ARGS...]: run it to the end on 3 ranks.
sweep() {
    local yaml=$1
    shift
    rc=0
    ASAN_OPTIONS=$asan_noleaks mpirun -np 3 "$bin" run "$yaml" --quiet "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    [[ $rc == 0 ]] || fail "attnsweep run $yaml: exit code $rc"
}
expect_ok() {  # expect_ok WHAT: exit 0, nothing on stderr
    [[ $rc == 0 ]] || fail "$1: exit code $rc, expected 0"
    [[ ! -s $tmp/err ]] || fail "$1: stderr: expected nothing, got '$(head -c 500 "$tmp/err")'"
}
# expect_error WHAT TEXT: exit 2 and exactly one line "attnsweep: report: " containing TEXT.
expect_error() {
    [[ $rc == 2 ]] || fail "$1: exit code $rc, expected 2"
    [[ $(wc -l <"$tmp/err") == 1 ]] || fail "$1: stderr: expected one line, got $(wc -l <"$tmp/err")"
    grep -q '^attnsweep: report: ' "$tmp/err" || fail "$1: stderr: '$(cat "$tmp/err")' does not start 'attnsweep: report: '"
    grep -qF -- "$2" "$tmp/err" || fail "$1: stderr: '$(cat "$tmp/err")' does not say '$2'"
    [[ ! -s $tmp/out ]] || fail "$1: expected nothing on stdout"
}

# A sweep of tiny recall models (d_model 16, 2 heads, 1 layer): each trial well under a second.
sweep_yaml() {  # sweep_yaml NAME HEAD-LINES PARAMETER-LINES
    cat >"$tmp/$1.yaml" <<YAML
name: $1
task: recall
seed: 5
$2
parameters:
  d_model: {value: 16}
  heads: {value: 2}
  layers: {value: 1}
  batch: {value: 16}
  eval_batches: {value: 2}
  recall_pairs: {value: 4}
  grassmann_rank: {value: 4}
$3
YAML
}

# The Python check of a report: every section recomputed from the file.
#   check_report.py FILE.h5 REPORT.json REPORT.csv REPORT.txt TOP METRIC GOAL
cat >"$tmp/check_report.py" <<'PY'
import csv, io, json, math, sys, warnings
import numpy, pandas
from scipy import stats
from statsmodels.stats.multitest import multipletests
import numcheck
from attnsweep.results import Results

warnings.simplefilter("ignore", RuntimeWarning)  # scipy on arms of equal values
path, jpath, cpath, tpath, top, metric, goal = sys.argv[1:8]
top = int(top)
bad = []
def want(ok, what):
    if not ok:
        bad.append(what)
def close(a, b, rel=1e-12):  # no value (None or NaN) exactly where the recomputation has none
    if a is None or b is None or (isinstance(b, float) and math.isnan(b)):
        return (a is None or (isinstance(a, float) and math.isnan(a))) and (b is None or math.isnan(b))
    return numcheck.close(a, b, rtol=rel, atol=rel)

rs = Results(path)
df = rs.summary
reasons = {t: rs.trial_attrs(t)["reason"] for t in rs.trial_ids()}
rep = json.load(open(jpath))
SHOWN = [m for m, d in rs.schema.metrics.items() if d["shown"]]  # a column of every table (test: shown only)
params = rs.parameters
swept = [c for c in params if df[c].nunique() > 1 and c != "attention"]
variants = ["mha", "tucker", "linear", "grassmann"]
def relevant(row, p):  # config_relevant (src/params/config.c)
    return {"core_rank": row.attention == "tucker", "grassmann_rank": row.attention == "grassmann",
            "grassmann_block": row.attention == "grassmann", "grassmann_offsets": row.attention == "grassmann",
            "seq_len": row.task == "charlm",
            "recall_pairs": row.task == "recall", "recall_vocab": row.task == "recall",
            "stability_window": row.lambda_stability > 0}.get(p, True)
def param_value(row, p):
    v = row[p]
    return None if not relevant(row, p) else v if isinstance(v, str) else float(v)
ok = df[df.status == "ok"]

want(rep["metric"] == metric and rep["goal"] == goal, f"metric {rep['metric']} {rep['goal']}, want {metric} {goal}")
want(rep["trials"] == len(df), f"trials {rep['trials']}, want {len(df)}")

# leaderboard
ranked = ok[numpy.isfinite(ok[metric])].copy()
ranked["key"] = -ranked[metric] if goal == "maximize" else ranked[metric]
ranked = ranked.sort_values(["key", "trial"]).head(top)
lb = rep["leaderboard"]
want([r["trial"] for r in lb] == ranked.trial.tolist(), f"leaderboard trials {[r['trial'] for r in lb]}, want {ranked.trial.tolist()}")
extra = [m for m in (metric, metric.replace("val_", "test_", 1) if metric.startswith("val_") else None)
         if m and m not in SHOWN]  # the ranking metric and its test twin
recall = (ok.task == "recall").any()  # recall's baselines beside the accuracy: 2/V and 1/P
baselines = ["recall_chance", "recall_values_only"] if recall else []
keys = ["rank", "trial", "attention"] + swept + SHOWN + extra + baselines + ["steps", "seconds"]
for i, (r, (_, row)) in enumerate(zip(lb, ranked.iterrows())):
    if recall:
        want(close(r["recall_chance"], 2 / row.recall_vocab) and close(r["recall_values_only"], 1 / row.recall_pairs),
             f"leaderboard row {i}: recall baselines {r['recall_chance']}, {r['recall_values_only']}")
    want(list(r.keys()) == keys, f"leaderboard keys {list(r.keys())}, want {keys}")
    want(r["rank"] == i + 1 and r["attention"] == row.attention, f"leaderboard row {i}")
    for p in swept:
        want(close(r[p], param_value(row, p)) if not isinstance(row[p], str) else r[p] == param_value(row, p),
             f"leaderboard row {i} {p}: {r[p]} vs {param_value(row, p)}")
    for m in SHOWN + extra + ["steps", "seconds"]:
        want(close(r[m], float(row[m])), f"leaderboard row {i} {m}: {r[m]} vs {row[m]}")

# The statistics count one finished trial per configuration and seed (the lowest id): a
# configuration drawn twice with one seed is the same run.
key_cols = [p for p in params if p != "seed"]
df["config"] = df[key_cols].astype(str).agg("|".join, axis=1)
ok = df[df.status == "ok"]
uniq = ok.drop_duplicates(["config", "seed"])

# per variant
bv = rep["variants"]["by_variant"]
want([r["attention"] for r in bv] == [v for v in variants if v in set(ok.attention)], "variants listed")
for r in bv:
    g = uniq[uniq.attention == r["attention"]]
    want(r["n"] == len(g), f"variant {r['attention']} n")
    for m in SHOWN:
        sd = g[m].std(ddof=1) if len(g) > 1 else None
        want(close(r[m]["mean"], g[m].mean(), 1e-10) and close(r[m]["sd"], sd, 1e-9),
             f"variant {r['attention']} {m}: {r[m]} vs {g[m].mean()} ± {sd}")

# per configuration (repeats: everything but the seed equal)
first = df.groupby("config").trial.min()
has_repeats = df.groupby("config").seed.nunique().max() > 1
order = sorted(first.index, key=lambda c: (variants.index(df[df.config == c].attention.iloc[0]), first[c]))
bc = rep["variants"]["by_configuration"]
want_configs = [c for c in order if (ok.config == c).any()] if has_repeats else []
want(len(bc) == len(want_configs), f"configurations {len(bc)}, want {len(want_configs)}")
cswept = [p for p in swept if p != "seed"]
for r, c in zip(bc, want_configs):
    g = uniq[uniq.config == c]
    row = g.iloc[0]
    want(r["attention"] == row.attention and all(r[p] == param_value(row, p) for p in cswept), f"configuration {c}")
    want(r["n"] == len(g), f"configuration {c}: n")
    for m in SHOWN:
        sd = g[m].std(ddof=1) if len(g) > 1 else None
        want(close(r[m]["mean"], g[m].mean(), 1e-10) and close(r[m]["sd"], sd, 1e-9), f"configuration {c} {m}")

# Pareto front (finished trials): no other at least as good on all three and better on one
# (over the report's metric with its goal, Correlation and RankDeviation)
sign = 1 if goal == "maximize" else -1
def dominated(i):
    a = ok.loc[i]
    others = ok.drop(i)
    return ((sign * others[metric] >= sign * a[metric]) & (others.correlation <= a.correlation) &
            (others.rank_deviation <= a.rank_deviation) &
            ((sign * others[metric] > sign * a[metric]) | (others.correlation < a.correlation) |
             (others.rank_deviation < a.rank_deviation))).any()
front = ok[[not dominated(i) for i in ok.index]]
front = front.assign(key=-sign * front[metric]).sort_values(["key", "trial"])
want([r["trial"] for r in rep["pareto"]] == front.trial.tolist(),
     f"Pareto front {[r['trial'] for r in rep['pareto']]}, want {front.trial.tolist()}")

# ablations: each λ > 0 against λ = 0 and against lambda_l2 = λ; paired over the seeds both
# arms share (2 pairs or more; repeat r has the same seed in every configuration), else Welch
# over repeats, on the report's metric (when another), val_accuracy and reward; Holm over
# every test of the report
alpha = 0.05
tested = ([metric] if metric not in ("val_accuracy", "reward") else []) + ["val_accuracy", "reward"]
tests = []  # (what, row, metric, d, p) over every table: Holm's family
for reg in ["lambda_orth", "lambda_nuclear", "lambda_stability"]:
    rows = rep["ablations"][reg]
    expect = []
    for c in order:
        arm = uniq[uniq.config == c]
        if not len(arm) or df[df.config == c][reg].iloc[0] <= 0:
            continue
        base = df[df.config == c].iloc[0]
        lam = float(base[reg])
        for against, change in ((f"{reg} = 0", {reg: 0.0}), (f"lambda_l2 = {lam:g}", {reg: 0.0, "lambda_l2": lam})):
            if "lambda_l2" in change and base.lambda_l2 != 0:
                continue
            target = base.copy()
            for k, v in change.items():
                target[k] = v
            ctl = uniq[(uniq[key_cols].astype(str) == target[key_cols].astype(str)).all(axis=1)]
            if len(ctl):
                expect.append((lam, against, arm, ctl))
    want(len(rows) == len(expect), f"{reg}: {len(rows)} rows, want {len(expect)}")
    for r, (lam, against, arm, ctl) in zip(rows, expect):
        what = f"{reg} = {lam} against {against} ({r['attention']})"
        want(close(r[reg], lam) and r["against"] == against and r["attention"] == arm.attention.iloc[0], what)
        want(r["n"] == len(arm) and r["n_control"] == len(ctl), f"{what}: n")
        d_test = arm.test_accuracy.mean() - ctl.test_accuracy.mean()  # shown beside, never tested
        want(close(r["d_test_accuracy"], d_test, 1e-9) and "test_" not in r["verdict"],
             f"{what}: d_test_accuracy {r['d_test_accuracy']} vs {d_test}, verdict '{r['verdict']}'")
        pairs = arm.merge(ctl, on="seed", suffixes=("", "_ctl"))
        paired = len(pairs) >= 2
        unpaired = len(arm) + len(ctl) - 2 * len(pairs)
        test = ("Welch" if not paired else f"paired t, {len(pairs)} pairs" +
                (f" ({unpaired} unpaired trial{'s' if unpaired > 1 else ''} left out)" if unpaired else ""))
        want(r["test"] == test, f"{what}: test '{r['test']}', want '{test}'")
        for m in tested:
            diff = pairs[m] - pairs[m + "_ctl"]
            d = diff.mean() if paired else arm[m].mean() - ctl[m].mean()
            want(close(r["d_" + m], d, 1e-9), f"{what}: d_{m} {r['d_' + m]} vs {d}")
            if len(arm) < 2 or len(ctl) < 2:
                want(r["p_" + m] is None and r["p_holm_" + m] is None and r["verdict"].startswith("n too small"),
                     f"{what}: n too small")
                continue
            # the paired t-test or Welch's; undefined without spread (scipy then says p = 0 or NaN)
            if paired:
                p = math.nan if diff.nunique() == 1 else stats.ttest_rel(pairs[m], pairs[m + "_ctl"]).pvalue
            else:
                constant = arm[m].std(ddof=1) == 0 and ctl[m].std(ddof=1) == 0
                p = math.nan if constant else stats.ttest_ind(arm[m], ctl[m], equal_var=False).pvalue
            want(close(r["p_" + m], None if math.isnan(p) else p, 1e-8), f"{what}: p_{m} {r['p_' + m]} vs {p}")
            tests.append((what, r, m, d, p))
made = [t for t in tests if not math.isnan(t[4])]
holm = multipletests([t[4] for t in made], method="holm")[1] if made else []
for (what, r, m, d, p), h in zip(made, holm):
    want(close(r["p_holm_" + m], h, 1e-8), f"{what}: p_holm_{m} {r['p_holm_' + m]} vs statsmodels' {h}")
    claim = f"{'raises' if d > 0 else 'lowers'} {m} ("
    if h < alpha:
        want(claim in r["verdict"], f"{what}: verdict '{r['verdict']}' should say '{claim}'")
    else:
        want(claim not in r["verdict"] and m in r["verdict"], f"{what}: verdict '{r['verdict']}' claims {m}")
for what, r, m, d, p in tests:
    if math.isnan(p):
        want(r["p_holm_" + m] is None, f"{what}: no test, yet p_holm_{m} {r['p_holm_' + m]}")
print(f"ablations: {len(made)} tests, {sum(h < alpha for h in holm)} significant after Holm "
      f"({sum(t[4] < alpha for t in made)} before)")

# dose-response: each regulariser and lambda_l2 as the only λ > 0, per background (every
# other parameter), with the background's all-zero configuration as λ = 0, where the
# background has the λ > 0 somewhere; mean and sd over finished repeats
lams = ["lambda_orth", "lambda_nuclear", "lambda_stability", "lambda_l2"]
dose_metrics = ([metric] if metric != "val_accuracy" else []) + ["val_accuracy", "correlation", "rank_deviation"]
bg_cols = [c for c in key_cols if c not in lams]
expect = []
for reg in lams:
    alone = uniq[(uniq[[l for l in lams if l != reg]] == 0).all(axis=1)]
    for _, grp in alone.groupby(alone[bg_cols].astype(str).agg("|".join, axis=1)):
        if (grp[reg] > 0).any():
            for lam, arm in grp.groupby(reg):
                expect.append((reg, arm.attention.iloc[0], float(lam), len(arm),
                               [(arm[m].mean(), arm[m].std(ddof=1) if len(arm) > 1 else math.nan) for m in dose_metrics]))
got = rep["ablations"]["dose"]
want(len(got) == len(expect), f"dose: {len(got)} rows, want {len(expect)}")
def dose_key(x):
    return (x[0], x[1], x[2], x[3], tuple(round(v, 9) for v, _ in x[4]))
gk = sorted(((r["regulariser"], r["attention"], r["lambda"], r["n"],
              [(r[m]["mean"], math.nan if r[m]["sd"] is None else r[m]["sd"]) for m in dose_metrics]) for r in got), key=dose_key)
for g, e in zip(gk, sorted(expect, key=dose_key)):
    want(g[:4] == e[:4], f"dose row {g[:4]}, want {e[:4]}")
    for (gm, gs), (em, es), m in zip(g[4], e[4], dose_metrics):
        want(close(gm, em, 1e-9) and (close(gs, es, 1e-9) or (math.isnan(gs) and math.isnan(es))),
             f"dose {g[:3]} {m}: {gm} ± {gs}, want {em} ± {es}")
print(f"dose-response: {len(got)} rows")

# failures: by status, by reason (text before " at step"), steps saved by ASHA
counts = df.status.value_counts()
order_s = [s for s in ["ok", "pruned", "failed"] if s in counts] + sorted(set(counts.index) - {"ok", "pruned", "failed"})
got = [(r["status"], r["n"]) for r in rep["failures"]["by_status"]]
want(got == [(s, int(counts[s])) for s in order_s], f"by status {got}")
groups = {}
for t, s in zip(df.trial, df.status):
    if reasons[t]:
        k = (s, reasons[t].split(" at step")[0])
        groups[k] = groups.get(k, 0) + 1
want(sorted((r["status"], r["reason"], r["n"]) for r in rep["failures"]["by_reason"]) ==
     sorted((s, t, n) for (s, t), n in groups.items()), f"by reason {rep['failures']['by_reason']} vs {groups}")
budget = df.config_steps
pruned = df[df.status == "pruned"]
saved = int((budget[pruned.index] - pruned.steps).clip(lower=0).sum())
a = rep["failures"]["asha"]
want(a["pruned"] == len(pruned) and a["steps_saved"] == saved and a["budget_steps"] == int(budget.sum()) and
     close(a["fraction_saved"], saved / budget.sum()), f"ASHA {a}, want saved {saved} of {budget.sum()}")

# CSV: the same tables as the JSON
sections = {}
for block in open(cpath).read().split("\n\n"):
    lines = block.strip("\n").split("\n")
    want(lines[0].startswith("# "), f"CSV section starts '{lines[0]}'")
    sections[lines[0][2:]] = list(csv.DictReader(io.StringIO("\n".join(lines[1:]))))
def json_rows(key):
    node = rep
    for part in key.split("."):
        node = node[part]
    return [node] if isinstance(node, dict) else node
want(list(sections) == ["leaderboard", "verdict.tau", "verdict.fit", "variants.by_variant", "variants.by_configuration", "pareto",
                        "ablations.lambda_orth", "ablations.lambda_nuclear", "ablations.lambda_stability",
                        "ablations.dose", "failures.by_status", "failures.by_reason", "failures.asha", "importance"], f"CSV sections {list(sections)}")
for key, rows in sections.items():
    jrows = json_rows(key)
    want(len(rows) == len(jrows), f"CSV {key}: {len(rows)} rows, JSON {len(jrows)}")
    for cr, jr in zip(rows, jrows):
        flat = {}
        for k, v in jr.items():
            if isinstance(v, dict):
                flat[k + "_mean"], flat[k + "_sd"] = v["mean"], v["sd"]
            else:
                flat[k] = v
        want(list(cr) == list(flat), f"CSV {key} columns {list(cr)} vs {list(flat)}")
        for k, v in flat.items():
            c = cr.get(k)
            if v is None:
                want(c == "", f"CSV {key} {k}: '{c}' for null")
            elif isinstance(v, str):
                want(c == v, f"CSV {key} {k}: '{c}' vs '{v}'")
            else:
                want(close(float(c), v, 1e-9), f"CSV {key} {k}: {c} vs {v}")

# text table: a title per table, the leaderboard aligned with the JSON's top trial
text = open(tpath).read()
for title in ["Leaderboard: the top", "Verdict: does the reward add information?", "Verdict: β and γ estimated",
              "Per attention variant", "Per configuration", "Pareto front",
              "Ablation of lambda_orth", "Ablation of lambda_nuclear", "Ablation of lambda_stability",
              "Dose–response: each regulariser and plain L2", "trials by status", "trials by reason", "steps saved by ASHA"]:
    want(title in text, f"text: no '{title}'")
block = text.split("\n\n")[1].split("\n")
rows_txt = [l for l in block if l.startswith("  ")]
want(len(rows_txt) == 1 + len(lb), f"text leaderboard: {len(rows_txt)} lines for {len(lb)} trials")
want(len(set(len(l) for l in rows_txt)) == 1, "text leaderboard lines not aligned")
want("time (s)" in rows_txt[0], "text leaderboard: no unit in the header")
if lb:
    cells = rows_txt[1].split()
    want(cells[:2] == ["1", str(lb[0]["trial"])] and f"{lb[0]['reward']:.4f}" in cells,
         f"text leaderboard first row {cells}")

print("\n".join(bad) if bad else "", end="")
sys.exit(1 if bad else 0)
PY

# all_formats FILE ARGS...: the report as JSON, CSV and text (each with leak detection) in
# $tmp/r.json, r.csv, r.txt.
all_formats() {
    local file=$1
    shift
    report "$file" --format json "$@"
    expect_ok "report $file --format json $*"
    cp "$tmp/out" "$tmp/r.json"
    report "$file" --format csv "$@"
    expect_ok "report $file --format csv $*"
    cp "$tmp/out" "$tmp/r.csv"
    report "$file" "$@"
    expect_ok "report $file $*"
    cp "$tmp/out" "$tmp/r.txt"
}
# check FILE TOP METRIC GOAL WHAT: every section, and the verdict (tests/check_verdict.py)
check() {
    "$py" "$tmp/check_report.py" "$1" r.json r.csv r.txt "$2" "$3" "$4" >"$tmp/check" 2>&1 ||
        { sed 's/^/  /' "$tmp/check" >&2; fail "$5 (details above)"; }
    "$py" "$here/check_verdict.py" "$1" r.json >"$tmp/check" 2>&1 ||
        { sed 's/^/  /' "$tmp/check" >&2; fail "$5: the verdict (details above)"; }
}

# ---------------------------------------------------------------------------
echo "== 1. a grid with repeats: every section against a recomputation  [$((SECONDS - start)) s]"
sweep_yaml abl "method: grid
repeats: 2
metric: {name: reward, goal: maximize}
budget: {steps: 20, eval_every: 10}" "  attention: {values: [mha, tucker]}
  core_rank: {value: 1, when: {attention: tucker}}
  lambda_orth: {values: [0, 0.1]}
  lambda_l2: {values: [0, 0.1]}"
sweep abl.yaml -o abl.h5
all_formats abl.h5 --top 5
check abl.h5 5 reward maximize "grid with repeats"
all_formats abl.h5 --metric n_params --top 3
check abl.h5 3 n_params minimize "--metric n_params (a cost, lower first)"
grep -q '"lambda_orth":\[{' r.json || fail "grid with repeats: no lambda_orth ablation rows"
pass "16 trials, 2 repeats: leaderboard, verdict, variants, configurations, Pareto front, ablations with paired p-values, failures; CSV = JSON; text aligned"

echo "== 2. pruning and failures; the YAML's metric; --metric, --top  [$((SECONDS - start)) s]"
sweep_yaml fail "method: grid
metric: {name: val_accuracy}
budget: {steps: 60, eval_every: 10}
scheduler: {name: asha, min_steps: 10, eta: 2}" "  attention: {values: [mha, linear, grassmann]}
  lr: {values: [0.003, 0.01, 10]}
  weight_decay: {value: 10}
  lambda_nuclear: {values: [0, 0.01]}"
sweep fail.yaml -o fail.h5
all_formats fail.h5
check fail.h5 10 val_accuracy maximize "pruning and failures"
"$py" - <<'PY' || fail "pruning and failures: the sweep should have pruned and failed trials"
import json
r = json.load(open("r.json"))["failures"]
assert r["asha"]["pruned"] > 0 and r["asha"]["steps_saved"] > 0, r["asha"]
assert any(x["reason"] == "diverged: non-finite training loss" for x in r["by_reason"]), r["by_reason"]
PY
all_formats fail.h5 --metric val_loss --top 2
check fail.h5 2 val_loss minimize "--metric val_loss --top 2"
report fail.h5 --metric=reward --json --top=1
expect_ok "--metric=reward --json --top=1"
grep -q '"metric":"reward","goal":"maximize"' out || fail "--metric=reward: $(head -c 200 out)"
pass "ASHA and divergence: counts by status and reason, steps saved; metric val_accuracy from the YAML; --metric val_loss ranks lower-first"

echo "== 3. read while running, stopped by SIGUSR1, read while resuming  [$((SECONDS - start)) s]"
# Trials long enough for the reads to catch the sweep running: 400 steps, 100 in the
# sanitizer build (about 4 times slower).
steps=400
[[ -n ${ATTNSWEEP_SANITIZED:-} ]] && steps=100
sweep_yaml live "method: random
trials: 16
metric: {name: reward}
budget: {steps: $steps, eval_every: $((steps / 2))}" "  attention: {values: [mha, linear]}
  lambda_orth: {values: [0, 0.1]}"
reads=0 written=0 last=0
# read_while_running STOP_AT: report the sweep $sweep_pid as JSON until it ends: every read
# succeeds, the trials never decrease; SIGUSR1 once it holds STOP_AT trials (0: never).
read_while_running() {
    local stop_at=$1 n w
    while kill -0 "$sweep_pid" 2>/dev/null; do
        [[ -f live.h5 ]] || { sleep 0.05; continue; }
        leaks=0 report live.h5 --json  # a repeat: leaks are checked on this file below
        [[ $rc == 0 ]] || fail "report of a running sweep (read $reads): exit code $rc"
        n=$(grep -o '"trials":[0-9]*,' out | tr -dc 0-9) w=$(grep -c '"being_written":true' out || true)
        [[ -n $n && $(tail -c 2 out) == "}" ]] || fail "report of a running sweep: not the JSON report"
        [[ $n -ge $last ]] || fail "report of a running sweep: $n trials after $last"
        reads=$((reads + 1)) written=$((written + w)) last=$n
        if [[ $stop_at -gt 0 && $n -ge $stop_at ]]; then
            kill -USR1 "$sweep_pid"
            stop_at=0
        fi
        sleep 0.1  # leave the cores to the sweep
    done
    rc=0
    wait "$sweep_pid" || rc=$?
    sweep_pid=
}
ASAN_OPTIONS=$asan_noleaks mpirun -np 3 "$bin" run live.yaml -o live.h5 --quiet >/dev/null 2>"$tmp/live.err" &
sweep_pid=$!
background+=("$sweep_pid")
read_while_running 4
[[ $rc == 3 ]] || fail "the sweep should have been stopped by SIGUSR1 (exit 3), got exit $rc after $reads reads"
all_formats live.h5 --top 100
check live.h5 100 reward maximize "stopped sweep"
n_stopped=$("$py" -c 'import json; d=json.load(open("r.json")); assert not d["being_written"]; print(d["trials"])')
[[ $n_stopped -lt 16 ]] || fail "the stopped sweep already holds all 16 trials"
ASAN_OPTIONS=$asan_noleaks mpirun -np 3 "$bin" run live.yaml -o live.h5 --resume --quiet >/dev/null 2>"$tmp/live.err" &
sweep_pid=$!
background+=("$sweep_pid")
read_while_running 0
[[ $rc == 0 ]] || fail "--resume: exit code $rc"
[[ $written -gt 0 ]] || fail "no read of the running sweep said being_written"
all_formats live.h5 --top 100
check live.h5 100 reward maximize "resumed sweep"
"$py" -c 'import json; d=json.load(open("r.json")); assert d["trials"] == 16, d["trials"]' || fail "resumed sweep: not 16 trials"
pass "$reads reads while running and resuming ($written saw the writer); stopped with $n_stopped trials, resumed to 16: all checks hold"

echo "== 4. a single trial of attnsweep train -o  [$((SECONDS - start)) s]"
ASAN_OPTIONS=$asan_noleaks "$bin" train --task recall --d-model 16 --heads 2 --layers 1 --steps 20 --batch 16 \
    --eval-batches 2 --recall-pairs 4 --quiet -o one.h5 >/dev/null 2>"$tmp/err" || fail "train -o one.h5"
all_formats one.h5
check one.h5 10 reward maximize "single trial"
grep -q "sweep train, 1 trial, metric reward" r.txt || fail "single trial: header '$(head -1 r.txt)'"
pass "one trial: leaderboard of one, no repeats, nothing to ablate"

echo "== 5. bad input  [$((SECONDS - start)) s]"
report missing.h5
expect_error "missing file" "missing.h5: No such file or directory"
report "$tmp"
expect_error "a directory" ": not a regular file"
echo "trial,reward" >text.h5
report text.h5
expect_error "a text file" "text.h5: not an HDF5 file"
size=$(stat -c %s abl.h5)
head -c $((size / 2)) abl.h5 >truncated.h5
report truncated.h5
expect_error "a truncated file" "truncated.h5: "
cp abl.h5 scrambled.h5  # the metadata after the superblock overwritten
dd if=/dev/urandom of=scrambled.h5 bs=1 seek=96 count=4000 conv=notrunc status=none
report scrambled.h5
expect_error "a scrambled file" "scrambled.h5: "
"$py" - <<'PY'
import h5py, numpy, shutil  # raw on purpose: it damages files for the report to refuse or escape
shutil.copy("abl.h5", "v2.h5")  # before the validation split
with h5py.File("v2.h5", "a") as f:
    f.attrs["format_version"] = numpy.int32(2)
with h5py.File("foreign.h5", "w") as f:
    f["x"] = [1, 2, 3]
with h5py.File("scores.h5", "w") as f:  # like attnsweep score MODEL.safetensors writes
    f.attrs["format_version"] = h5py.File("abl.h5", "r").attrs["format_version"]
    f.attrs["source"] = "model.safetensors"
shutil.copy("abl.h5", "nocol.h5")
with h5py.File("nocol.h5", "a") as f:
    s = f["summary"][:]
    keep = [n for n in s.dtype.names if n != "reward"]
    del f["summary"]
    f["summary"] = s[keep]
PY
report v2.h5
expect_error "another format version" "v2.h5: results format 2, this attnsweep reads $(results_format)"
report foreign.h5
expect_error "an HDF5 file of something else" "foreign.h5: not an attnsweep results file"
report scores.h5
expect_error "a model's scores file" "scores.h5: no /summary table"
report nocol.h5
expect_error "a /summary without reward" "nocol.h5: /summary has no column 'reward'"
# Hostile texts: a sweep name with terminal control sequences is printed escaped; a yaml
# attribute nested 200 000 deep is not read for the ranking (root attributes metric and
# goal) and the space's reader refuses it at once (libyaml alone took 122 s on it): the
# report is made without the space (no log axes for the importance).
"$py" - <<'PY'
import h5py, shutil  # raw on purpose: it damages files for the report to refuse or escape
shutil.copy("abl.h5", "escapes.h5")
with h5py.File("escapes.h5", "a") as f:
    f.attrs["sweep"] = "abl\x1b]0;owned\x07\x1b[31m\u00e9"
shutil.copy("abl.h5", "deep.h5")
with h5py.File("deep.h5", "a") as f:
    f.attrs["yaml"] = "metric: " + "[" * 200000
PY
report escapes.h5
expect_ok "a sweep name with escape sequences"
! grep -q $'\x1b' out || fail "report printed the file's escape sequences raw"
grep -qF 'sweep abl\x1b]0;owned\x07\x1b[31mé,' out ||
    fail "the sweep name is not printed escaped: '$(head -1 out)'"
SECONDS_BEFORE=$SECONDS
report deep.h5
expect_ok "a yaml attribute nested 200 000 deep"
(( SECONDS - SECONDS_BEFORE < 30 )) || fail "a yaml attribute nested 200 000 deep took $((SECONDS - SECONDS_BEFORE)) s"
pass "hostile texts: escape sequences printed escaped, deep YAML left aside at once"
report abl.h5 --top 0
expect_error "--top 0" "--top must be an integer in [1, 1000000], got '0'"
report abl.h5 --top x
expect_error "--top x" "--top must be an integer"
report abl.h5 --format xml
expect_error "--format xml" "--format must be table, csv, json or html, got 'xml'"
report abl.h5 --metric speed
expect_error "--metric speed" "--metric must be one of val_accuracy, val_loss, val_bits_per_byte, rank_deviation, correlation, correlation_z, eff_rank_z, rank_deviation_excess, correlation_excess, reward, n_params, seconds, got 'speed'"
# The leaderboard ranks by validation: the old names say their val_ spelling, no test metric ranks.
report abl.h5 --metric accuracy
expect_error "--metric accuracy" "--metric 'accuracy' is now called 'val_accuracy' (every decision reads the validation split)"
report abl.h5 --metric=bits_per_byte
expect_error "--metric bits_per_byte" "--metric 'bits_per_byte' is now called 'val_bits_per_byte'"
report abl.h5 --metric test_accuracy
expect_error "--metric test_accuracy" "--metric 'test_accuracy' is a test metric, and test metrics never drive decisions (use 'val_accuracy')"
report abl.h5 --metric test_correlation
expect_error "--metric test_correlation" "--metric 'test_correlation' is a test metric, and test metrics never drive decisions (use one of val_accuracy, val_loss, val_bits_per_byte, rank_deviation, correlation, correlation_z, eff_rank_z, rank_deviation_excess, correlation_excess, reward, n_params, seconds)"
report abl.h5 --top
expect_error "--top without a value" "--top needs a value"
report abl.h5 --verbose
expect_error "unknown option" "unknown option '--verbose'"
report abl.h5 fail.h5
expect_error "two files" "one results file only"
report
expect_error "no file" "which file?"
report abl.h5 --json=1
expect_error "--json=1" "--json takes no value"
report --help
expect_ok "--help"
grep -q "usage: attnsweep report RESULTS.h5" out || fail "--help: no usage line"
pass "missing, directory, text, truncated, scrambled, other version, foreign, scores-only, missing column; bad options, old and test metric names: one line, exit 2"

echo "PASS: $checks checks of attnsweep report in $((SECONDS - start)) s"
