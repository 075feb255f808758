#!/usr/bin/env bash
# Tests of `attnsweep report --format html` (src/report/html.c, src/report/js/) and of the
# parameter importance (src/report/importance.c), on real sweeps under mpirun:
#   1. the e2e tier's engine sweep of tiny recall models (tests/fixture_sweep.yaml, run once
#      by ctest's fixture_sweep: four variants, λ_orth, lr, an ASHA rung, diverging trials):
#      the page is one file with nothing to load (no src=/href= to anything), its
#      embedded report equals `report --format json` (one code path), and its trials are
#      the file's (/summary read with h5py);
#   2. the page in headless Chromium (Debian's chromium): no console message at all, every
#      chart drew (marks in each SVG, read from the self-check the page writes into the DOM
#      that --dump-dom prints), and under #selftest mouse events dragged along the first
#      parallel-coordinates axis leave the table exactly the trials inside the brush;
#      a screenshot (SCREENSHOT=FILE keeps it, e.g. docs/report_html.png);
#   3. a program sweep (tests/programs/importance_program.py, a known function of x, y, z
#      and opt): the fANOVA importances of the JSON report against Optuna's
#      get_param_importances (its default evaluator, fANOVA, seed 0) on the same trials:
#      each importance within ±0.1, and the same order wherever Optuna's are more than 0.1
#      apart (both are 64-tree forests on bootstrap samples and differ by their random
#      draws: Optuna against itself, over seeds and over the order of the trials, which
#      the workers' finishing order sets, moves by up to about 0.07; printed); its page
#      renders, without the sections that do not apply (invariant traces, Pareto front);
#      a motpe sweep's page draws its Pareto front;
#   4. --watch rewrites the page atomically (never a partial file at the name) until
#      SIGTERM, which ends it with exit 0; bad options: one line, exit 2, nothing written.
# Usage: bash tests/test_report_html.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # mpirun runs (sanitizer_env.sh)
leaks=1  # report starts no MPI: its runs are leak-checked
bash "$here/../scripts/install-deps.sh" chromium python3-optuna python3-sklearn ||
    fail "could not install chromium, python3-optuna and python3-sklearn"

# browse PAGE OUT [shot]: the page (with its #selftest) in headless Chromium: the DOM in
# OUT.dom, Chromium's log in OUT.log; with "shot" also a screenshot in OUT.png.
browse() {
    local page=$1 out=$2 flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --allow-file-access-from-files
        --enable-logging=stderr --v=0 --virtual-time-budget=5000 --user-data-dir="$tmp/chrome")
    timeout 120 chromium "${flags[@]}" --dump-dom "file://$page#selftest" >"$out.dom" 2>"$out.log" ||
        fail "chromium --dump-dom $page: exit $? ($(tail -n 3 "$out.log"))"
    if [[ ${3:-} == shot ]]; then
        timeout 120 chromium "${flags[@]}" --window-size=1400,2400 --screenshot="$out.png" "file://$page" \
            >/dev/null 2>>"$out.log" || fail "chromium --screenshot $page: exit $?"
        [[ -s $out.png ]] || fail "no screenshot of $page"
    fi
    if grep -E 'CONSOLE|Uncaught' "$out.log" >&2; then fail "$page: the console said something (above)"; fi
}

# check_page PAGE DOM CHARTS...: the self-check the page wrote (every chart named drew; the brush filtered).
check_page() {
    pycheck "the page's self-check" "$@" <<'PY'
import html, json, re, sys
page, dom, want = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3:]
m = re.search(r'<pre id="selfcheck"[^>]*>(.*?)</pre>', dom, re.S)
if not m:
    print("no self-check in the DOM: the page's script did not run to its end"); sys.exit(1)
c = json.loads(html.unescape(m.group(1)))
bad = [f"chart {n}: {c['charts'].get(n, 'missing')} marks" for n in want if c["charts"].get(n, 0) < 2]
for n, marks in c["charts"].items():
    if marks < 2: bad.append(f"chart {n} is empty")
b = c.get("brush")
if not b: bad.append("no brush result (#selftest)")
elif not (0 < b["after"] < b["before"] and b["after"] == b["expected"] and b["same"]):
    bad.append(f"brushing {b['axis']}: {b}")
if bad: print("\n".join(bad))
print(f"render {c['render_ms']} ms, charts {c['charts']}, brush {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    cat "$tmp/check"
}

# ---------------------------------------------------------------------------
echo "== 1. an engine sweep: the page, its JSON and the file's trials  [$((SECONDS - start)) s]"
fixture_sweep "$tmp/engine.h5"  # tests/fixture_sweep.yaml
run report "$tmp/engine.h5" --format html -o "$tmp/engine.html"
expect_rc 0 "report --format html"
expect_quiet_stderr "report --format html"
[[ -s $tmp/engine.html && ! -s $tmp/out ]] && no_partial "$tmp/engine.html" || fail "the page: not written as one file"
run report "$tmp/engine.h5" --format json
expect_rc 0 "report --format json"
pycheck "the page's data" "$tmp/engine.html" "$tmp/out" "$tmp/engine.h5" <<'PY'
import json, re, sys
from attnsweep.results import Results
page = open(sys.argv[1]).read()
bad = []
if re.search(r'<(script|link|img|iframe)[^>]*\b(src|href)=', page, re.I): bad.append("the page loads something")
m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
data = json.loads(m.group(1))
rep = json.loads(open(sys.argv[2]).read())
if data["report"] != rep: bad.append("the page's report differs from --format json")
rs = Results(sys.argv[3])
rows = {int(r["trial"]): r for _, r in rs.summary.iterrows()}
trials = data["page"]["trials"]
if sorted(t["trial"] for t in trials) != sorted(rows): bad.append("the page's trials are not the file's")
for t in trials:
    r = rows[t["trial"]]
    if t["status"] != r["status"]: bad.append(f"trial {t['trial']}: status")
    v = float(r["reward"])
    if (t["value"] is None) != (v != v) or (t["value"] is not None and abs(t["value"] - v) > 1e-12):
        bad.append(f"trial {t['trial']}: value {t['value']} against /summary's reward {v}")
    n = len(rs.curves(t["trial"])["step"])
    if len(t["curve"]["step"]) != n: bad.append(f"trial {t['trial']}: {len(t['curve']['step'])} curve points, the file {n}")
names = {p["name"] for p in data["page"]["params"]}
if names != {"attention", "lambda_orth", "lr", "weight_decay"}: bad.append(f"parameters {names}")
if data["page"]["rungs"] != [24]: bad.append(f"rungs {data['page']['rungs']}")
if not any("correlation_z" in t["curve"] for t in trials): bad.append("no invariant trace")
st = {t["status"] for t in trials}
if not {"ok", "pruned", "failed"} <= st: bad.append(f"statuses {st}: the sweep should have all three")
print("\n".join(bad)); sys.exit(1 if bad else 0)
PY
pass "one file, nothing loaded; its report equals --format json; its trials, curves and rungs are the file's"

# page_matches_file PAGE RESULTS: each trial of the page carries what its group in the
# file holds (the page reads every group again as it writes it, src/report/html.c): its
# configuration, status, reason, host, rank, times, curve, and a program's command and
# stderr tail.
page_matches_file() {
    pycheck "the page's trials against their groups in $2" "$@" <<'PY'
import json, re, sys
import h5py
page = open(sys.argv[1]).read()
trials = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))["page"]["trials"]
bad = []
with h5py.File(sys.argv[2], "r") as f:
    def text(v): return v.decode() if isinstance(v, bytes) else str(v)
    for t in trials:
        g = f[f"trials/{t['trial']:06d}"]
        a = g.attrs
        want = {"config": json.loads(text(a["config"])), "status": text(a["status"]), "reason": text(a["reason"]),
                "host": text(a["host"]), "rank": int(a["rank"]), "start_time": float(a["start_time"]),
                "end_time": float(a["end_time"])}
        if "trial_dir" in a: want.update(command=text(a["command"]), stderr_tail=text(a["stderr_tail"]))
        got = {k: t.get(k) for k in want}
        for k in ("start_time", "end_time"):  # cJSON prints 15 significant digits where 17 do not read back
            if got[k] is not None and abs(got[k] - want[k]) < 1e-5: got[k] = want[k]
        if got != want: bad.append(f"trial {t['trial']}: {got} against the file's {want}")
        curve, shown = [float(x) for x in g["curves"]["val_loss"]], t["curve"]["val_loss"]
        if len(shown) != len(curve) or any((y is None) != (x != x) or (y is not None and abs(y - x) > 1e-12 * abs(x))
                                           for x, y in zip(curve, shown)):  # NaN prints null
            bad.append(f"trial {t['trial']}: its curve {shown}, the file's {curve}")
if not trials or not any(t["host"] for t in trials): bad.append("no trial with a host: nothing compared")
print("\n".join(bad[:5])); sys.exit(1 if bad else 0)
PY
}
page_matches_file "$tmp/engine.html" "$tmp/engine.h5"
pass "the page's trials: configuration, status, reason, host, rank, times and curve are their groups'"

echo "== 2. the page in headless Chromium  [$((SECONDS - start)) s]"
browse "$tmp/engine.html" "$tmp/engine" shot
check_page "$tmp/engine.html" "$tmp/engine.dom" importance history parallel contour curve_val_accuracy \
    curve_val_loss trace_correlation trace_eff_rank slice_lambda_orth slice_lr slice_attention
pass "no console message; every chart drew; brushing an axis filters the table ($(head -c 300 "$tmp/check"))"
# the report's verdict as a section of its own, its fit's answer in words
grep -q '<section id="verdict">' "$tmp/engine.dom" && grep -q '<th>answer</th>' "$tmp/engine.dom" ||
    fail "the engine sweep's page has no verdict section with the fit's answer"
pass "the verdict: its section, with the fit's answer"
[[ -n ${SCREENSHOT:-} ]] && cp "$tmp/engine.png" "$SCREENSHOT" && echo "   screenshot: $SCREENSHOT"

echo "== 3. parameter importance against Optuna, on a program's sweep  [$((SECONDS - start)) s]"
# program_yaml NAME METHOD-LINES PARAMETER-LINES: a sweep of tests/programs/importance_program.py.
program_yaml() {
    printf 'name: %s\nprogram: %s\ncommand: [%s, "${program}", "${args}"]\nmetric: {name: val_loss, goal: minimize}\n%s\nparameters:\n%s\n' \
        "$1" "$here/programs/importance_program.py" "$py" "$2" "$3" >"$tmp/$1.yaml"
}
program_yaml imp "method: random
seed: 11
run_cap: 80" "  x: {min: 0.0, max: 1.0}
  y: {min: 0.0, max: 1.0}
  z: {distribution: log_uniform_values, min: 0.001, max: 1.0}
  opt: {values: [adam, sgd, rmsprop]}"
mpi 3 run "$tmp/imp.yaml" -o "$tmp/imp.h5" --quiet
[[ $rc == 0 ]] || fail "the program sweep: exit $rc"
run report "$tmp/imp.h5" --json
expect_rc 0 "report --json of the program sweep"
pycheck "importance against Optuna" "$tmp/out" "$tmp/imp.h5" <<'PY'
import json, sys, warnings, optuna
from attnsweep.results import Results
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.importance import FanovaImportanceEvaluator, get_param_importances
warnings.filterwarnings("ignore")
optuna.logging.set_verbosity(optuna.logging.ERROR)
ours = {r["parameter"]: r["importance"] for r in json.load(open(sys.argv[1]))["importance"]}
dists = {"x": FloatDistribution(0, 1), "y": FloatDistribution(0, 1), "z": FloatDistribution(0.001, 1, log=True),
         "opt": CategoricalDistribution(["adam", "sgd", "rmsprop"])}
study = optuna.create_study(direction="minimize")
for _, r in Results(sys.argv[2]).summary.iterrows():
    if r["status"] == "ok":
        p = {k: float(r[k]) for k in "xyz"} | {"opt": r["opt"]}
        study.add_trial(optuna.trial.create_trial(params=p, distributions=dists, value=float(r["val_loss"])))
runs = [get_param_importances(study, evaluator=FanovaImportanceEvaluator(seed=s)) for s in range(3)]
theirs = runs[0]
spread = max(max(r[k] for r in runs) - min(r[k] for r in runs) for k in dists)
bad = []
if set(ours) != set(dists): bad.append(f"parameters {sorted(ours)}")
for k in dists:
    d = ours.get(k, float("nan")) - theirs[k]
    if not abs(d) <= 0.1: bad.append(f"{k}: ours {ours.get(k)}, Optuna's {theirs[k]:.4f}")
for a in dists:  # the same order wherever Optuna's importances are more than 0.1 apart
    for b in dists:
        if theirs[a] > theirs[b] + 0.1 and not ours.get(a, 0) > ours.get(b, 0):
            bad.append(f"Optuna ranks {a} ({theirs[a]:.3f}) above {b} ({theirs[b]:.3f}), we do not")
if not abs(sum(ours.values()) - 1) < 1e-9: bad.append(f"the importances sum to {sum(ours.values())}")
if bad: print("\n".join(bad))
print("ours " + " ".join(f"{k} {ours.get(k, float('nan')):.3f}" for k in dists) + "; Optuna's " +
      " ".join(f"{k} {theirs[k]:.3f}" for k in dists) + f"; Optuna over seeds 0..2 spreads by {spread:.3f}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
pass "fANOVA importances within 0.1 of Optuna's, ordered as Optuna's ($(tail -n 1 "$tmp/check"))"
run report "$tmp/imp.h5" --format html -o "$tmp/imp.html"
expect_rc 0 "report --format html of the program sweep"
browse "$tmp/imp.html" "$tmp/imp"
check_page "$tmp/imp.html" "$tmp/imp.dom" importance history parallel contour curve_val_accuracy slice_x slice_z slice_opt
page_matches_file "$tmp/imp.html" "$tmp/imp.h5"
grep -q 'id="traces"\|id="pareto"' "$tmp/imp.dom" && fail "the program sweep's page has invariant traces or a Pareto front"
grep -q 'data-chart="slice_z"' "$tmp/imp.dom" && grep -q 'z (log axis)' "$tmp/imp.dom" || fail "z is not on a log axis"
pass "the program sweep's page: every chart, z on a log axis, no traces or Pareto section"

program_yaml front "method: motpe
seed: 5
run_cap: 24
objectives: [{name: val_loss, goal: minimize}, {name: val_accuracy, goal: maximize}]" "  x: {min: 0.0, max: 1.0}
  y: {min: 0.0, max: 1.0}"
mpi 3 run "$tmp/front.yaml" -o "$tmp/front.h5" --quiet
[[ $rc == 0 ]] || fail "the motpe sweep: exit $rc"
run report "$tmp/front.h5" --format html -o "$tmp/front.html"
expect_rc 0 "report --format html of the motpe sweep"
browse "$tmp/front.html" "$tmp/front"
check_page "$tmp/front.html" "$tmp/front.dom" pareto_0 importance history parallel
pass "a motpe sweep's page has its Pareto front"

echo "== 4. --watch, and bad options  [$((SECONDS - start)) s]"
"$bin" report "$tmp/engine.h5" --format html -o "$tmp/watch.html" --watch 0.2 2>"$tmp/watch.err" &
watcher=$!
background+=("$watcher")
for _ in $(seq 100); do [[ -s $tmp/watch.html ]] && break; sleep 0.1; done
[[ -s $tmp/watch.html ]] || fail "--watch wrote nothing"
first=$(stat -c %i "$tmp/watch.html")
for _ in $(seq 100); do [[ $(stat -c %i "$tmp/watch.html") != "$first" ]] && break; sleep 0.1; done
[[ $(stat -c %i "$tmp/watch.html") != "$first" ]] || fail "--watch did not rewrite the page (by rename)"
kill -TERM "$watcher"
rc=0
wait "$watcher" || rc=$?
background=()
[[ $rc == 0 && ! -s $tmp/watch.err ]] || fail "--watch after SIGTERM: exit $rc, stderr '$(cat "$tmp/watch.err")'"
no_partial "$tmp/watch.html" || fail "--watch left a partial file"
grep -q '</html>' "$tmp/watch.html" || fail "--watch: the page is cut short"
pass "--watch rewrote the page by rename and ended cleanly on SIGTERM (exit 0, nothing left over)"
expect_bad_input "--watch without -o" "--watch needs -o" "$tmp/none.html" report "$tmp/engine.h5" --format html --watch 1
expect_bad_input "--suggest-reward with -o" "--suggest-reward prints the reward: line on standard output" \
    "$tmp/suggest.yaml" report "$tmp/engine.h5" --suggest-reward -o "$tmp/suggest.yaml"
mkdir -p "$tmp/adir"
expect_bad_input "-o a directory" "directory" "$tmp/adir/x" report "$tmp/engine.h5" --format html -o "$tmp/adir"
echo "all $checks checks passed in $((SECONDS - start)) s"
