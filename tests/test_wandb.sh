#!/usr/bin/env bash
# W&B sweep files run as written (issue 29): the files of tests/wandb/ as a W&B user writes
# them, run under mpirun with tests/programs/wandb_program.py (a real child process per
# trial, which records the argv it got), each argv checked against what W&B's agent
# passes: Python's str() of each value ("--x=" + str(v), True/False/None, lists and
# mappings as Python writes them), computed here by Python itself from the trial's
# args.json:
#   1. every file validates; validate names the interpreter ${interpreter} finds (W&B's
#      word python on PATH) and warns when it cannot import the program's first imports;
#   2. nested parameters (W&B's own example) reach the program as their parent's mapping;
#   3. a grid cut short by run_cap runs its first points in W&B's order (the parameters
#      by name, the last fastest), booleans as True/False;
#   4. early_terminate hyperband counts the lines that report the metric (W&B's
#      iterations), not the program's steps: a program reporting every 50 steps is
#      decided at its 2nd, 4th ... line;
#   5. random without run_cap runs until stopped (SIGUSR1: exit 3, "until stopped" said
#      by the run's lines and the report),
#      under a name with spaces (its file name made safe), with booleans as bare flags
#      (${args_no_boolean_flags}), ${envvar:HOME} inside a word, list and mapping values;
#   6. motpe over an objective of the program's own.
# Usage: bash tests/test_wandb.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # the runs are under mpirun: see sanitizer_env.sh
wandb=$here/wandb

# W&B's ${interpreter} is the word python on PATH: here Debian's python3 under that name
# (bin/), and one that cannot import numpy (bare/: python3 -S, without site-packages).
mkdir -p "$tmp/bin" "$tmp/bare"
ln -s "$py" "$tmp/bin/python"
printf '#!/bin/sh\nexec %s -S "$@"\n' "$py" >"$tmp/bare/python"
chmod +x "$tmp/bare/python"
export PATH="$tmp/bin:$PATH"
cp "$here/programs/wandb_program.py" "$tmp/train.py"  # the program the W&B files name
cp "$here/programs/wandb_program.py" "$tmp/train-nested-cli.py"

# argv_check H5 EXPECT: every recorded trial's argv.json equals EXPECT(args), a Python
# expression of the trial's args.json (args, a dict in its order) and HOME.
argv_check() {
    "$py" - "$1" "$2" <<'PY'
import json, os, sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
HOME, bad, n = os.environ["HOME"], [], 0
for name in rs.trial_ids():
    d = rs.trial_attrs(name)["trial_dir"]
    args = json.load(open(os.path.join(d, "args.json")))
    got = json.load(open(os.path.join(d, "argv.json")))
    want = eval(sys.argv[2])
    n += 1
    if got != want: bad.append(f"trial {name}: argv\n  got  {got}\n  want {want}")
if n == 0: bad.append("no trial recorded")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

# ---------------------------------------------------------------------------
echo "== 1. W&B's files validate; the interpreter  [$((SECONDS - start)) s]"
for y in "$wandb"/*.yaml; do
    run validate "$y"
    [[ $rc == 0 ]] || fail "$(basename "$y") validates (got $rc: $(head -1 "$tmp/err"))"
done
run validate "$wandb/sweepdemo.yaml"
grep -q "trials     until stopped, at most" "$tmp/out" || fail "validate says bayes without run_cap runs until stopped"
grep -qF "interpreter \${interpreter} is python (W&B's): $tmp/bin/python here, Python 3" "$tmp/out" ||
    fail "validate names the interpreter found: $(grep interpreter "$tmp/out")"
grep -q "warning" "$tmp/out" && fail "no warning where python imports everything"
pass "$(ls "$wandb"/*.yaml | wc -l) W&B files validate; $(grep -o 'interpreter.*' "$tmp/out")"
run validate "$wandb/issue29_flags.yaml"
grep -qF "name 'flags and lists (v2)' names its files flags_and_lists__v2_ (results/flags_and_lists__v2_.h5)" \
    "$tmp/out" || fail "validate gives the name's file name"
run validate "$wandb/grid_run_cap.yaml"
grep -qF "run_cap: 5 of the grid's 12 trials run, the first in W&B's order" "$tmp/out" ||
    fail "validate says what run_cap keeps of the grid"
pass "validate: the file name of a name with spaces, a grid cut by run_cap"

printf 'import numpy as np\nfrom json import dumps\nimport os, sys\n' >"$tmp/imports.py"
cat >"$tmp/imports.yaml" <<YAML
program: imports.py
method: grid
parameters:
  x: {values: [1, 2]}
YAML
PATH="$tmp/bare:$PATH" run validate "$tmp/imports.yaml"
expect_rc 0 "a python that lacks an import is a warning, not an error"
grep -qF "warning    python cannot import numpy ModuleNotFoundError, among the first imports of imports.py" "$tmp/out" ||
    fail "validate warns of the import the interpreter lacks: $(grep -A1 interpreter "$tmp/out")"
grep -qF "is python (W&B's): $tmp/bare/python here" "$tmp/out" || fail "the bare python is the one named"
run validate "$tmp/imports.yaml"
grep -q "warning" "$tmp/out" && fail "no warning where python has numpy: $(grep warning "$tmp/out")"
pass "validate warns when \${interpreter}'s python cannot import numpy, and not when it can"

# ---------------------------------------------------------------------------
echo "== 2. nested parameters reach the program as a mapping  [$((SECONDS - start)) s]"
mpi 2 run "$wandb/nested_cli.yaml" -o "$tmp/nested.h5"
expect_rc 0 "the nested sweep"
argv_check "$tmp/nested.h5" '[f"--{k}={v}" for k, v in args.items()]' >"$tmp/check" ||
    fail "the nested sweep's argv: $(cat "$tmp/check")"
pycheck "the nested grid's points" "$tmp/nested.h5" <<'PY'
import json, os, sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
seen = set()
for t in rs.trial_ids():
    a = json.load(open(os.path.join(rs.trial_attrs(t)["trial_dir"], "args.json")))
    seen.add((a["batch_size"], a["optimizer"]["lr"], a["optimizer"]["nadam"]["beta"]))
want = {(b, lr, beta) for b in (32, 64) for lr in (0.001, 0.0001) for beta in (0.9, 0.95)}
if seen != want: print(f"points: expected {sorted(want)}, got {sorted(seen)}"); sys.exit(1)
PY
pass "W&B's nested example: 8 trials, each --optimizer={'lr': ..., 'nadam': {'beta': ...}} as Python writes it"

# ---------------------------------------------------------------------------
echo "== 3. a grid cut short by run_cap  [$((SECONDS - start)) s]"
mpi 2 run "$wandb/grid_run_cap.yaml" -o "$tmp/cap.h5"
expect_rc 0 "the grid with run_cap"
argv_check "$tmp/cap.h5" '[f"--{k}={v}" for k, v in args.items()]' >"$tmp/check" ||
    fail "the capped grid's argv: $(cat "$tmp/check")"
pycheck "the capped grid's order" "$tmp/cap.h5" <<'PY'
import itertools, json, os, sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
space = {"x": [0.1, 0.3, 0.5], "shuffle": [False, True], "batch_size": [16, 32]}
names = sorted(space)  # W&B: the parameters by name, the last fastest
want = [dict(zip(names, p)) for p in itertools.product(*(space[n] for n in names))][:5]
got = []
for tid in rs.trial_ids():
    got.append(json.load(open(os.path.join(rs.trial_attrs(tid)["trial_dir"], "args.json"))))
if got != want: print(f"trials in id order:\n  got  {got}\n  want {want}"); sys.exit(1)
PY
pass "run_cap 5 of a 12-point grid: the first 5 in W&B's order, --shuffle=False/True"

# ---------------------------------------------------------------------------
echo "== 4. hyperband counts the lines that report the metric  [$((SECONDS - start)) s]"
mpi 2 run "$wandb/hyperband_reports.yaml" -o "$tmp/hyper.h5"
expect_rc 0 "the hyperband sweep"
pycheck "where hyperband decided" "$tmp/hyper.h5" <<'PY'
import sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
bad, pruned = [], 0
for _, r in rs.summary.iterrows():
    lines = sum(1 for _ in open(rs.trial_attrs(r["trial"])["metrics"]))
    status = r["status"]
    if status == "pruned":
        pruned += 1
        if lines not in (2, 4): bad.append(f"trial {r['trial']} pruned after {lines} lines (rungs: lines 2 and 4)")
    elif status != "ok" or lines != 6:
        bad.append(f"trial {r['trial']}: {status} after {lines} lines")
if not pruned: bad.append("no trial pruned")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "min_iter 2 of a program reporting every 50 steps: decided at its 2nd and 4th lines"

# ---------------------------------------------------------------------------
echo "== 5. random without run_cap runs until stopped  [$((SECONDS - start)) s]"
trials=$tmp/results/flags_and_lists__v2_.trials
ASAN_OPTIONS=$asan_noleaks mpirun -np 2 "$bin" run "$wandb/issue29_flags.yaml" >"$tmp/out" 2>"$tmp/err" &
pid=$!
background+=("$pid")
for _ in $(seq 600); do  # until 4 trials have finished (their 5th has started)
    [[ -d $trials/000004 ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
[[ -d $trials/000004 ]] || fail "the sweep without run_cap reached its 5th trial"
kill -USR1 "$pid"  # the stop mpirun passes on (SIGTERM to the ranks under Slurm)
rc=0
wait "$pid" || rc=$?
expect_rc 3 "SIGUSR1 stops the sweep that runs until stopped"
grep -q "trials recorded (.*; it runs until stopped); continue with --resume" "$tmp/err" ||
    fail "the last line says the sweep runs until stopped"
grep -q " done, until stopped (" "$tmp/err" || fail "the progress says until stopped"
grep -q ": until stopped, at most [0-9]* trials (" "$tmp/err" || fail "the first line says until stopped"
argv_check "$tmp/results/flags_and_lists__v2_.h5" \
    '[f"--data={HOME}/data"] + [f"--{k}" if v is True else f"--{k}={v}" for k, v in args.items() if v is not False]' \
    >"$tmp/check" || fail "the until-stopped sweep's argv: $(cat "$tmp/check")"
pycheck "the forms the values took" "$tmp/results/flags_and_lists__v2_.h5" <<'PY'
import json, os, sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
kinds, bad = set(), []
for t in rs.trial_ids():
    d = rs.trial_attrs(t)["trial_dir"]
    a, argv = json.load(open(os.path.join(d, "args.json"))), json.load(open(os.path.join(d, "argv.json")))
    kinds |= {type(v).__name__ for v in a.values()}
    if a["optimizer"]["momentum"] != 0.9 or not 1e-5 <= a["optimizer"]["lr"] <= 0.1: bad.append(f"optimizer {a['optimizer']}")
if len(rs.trial_ids()) < 4: bad.append(f"{len(rs.trial_ids())} trials recorded, expected at least 4")
if kinds != {"float", "bool", "list", "dict", "int"}: bad.append(f"value types {kinds}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
run report "$tmp/results/flags_and_lists__v2_.h5"
grep -q "^attnsweep report: .*: sweep flags_and_lists__v2_, [0-9]* trials (it runs until stopped), metric objective" \
    "$tmp/out" || fail "the report says the sweep runs until stopped: $(head -1 "$tmp/out")"
pass "stopped after $(ls "$trials" | wc -l) trials: exit 3; bare flags, --data=\$HOME/data, lists and mappings as Python writes them"

# ---------------------------------------------------------------------------
echo "== 6. motpe over the program's own metric  [$((SECONDS - start)) s]"
cat >"$tmp/motpe.yaml" <<YAML
program: train.py
method: motpe
trials: 6
tpe: {n_startup: 3}
objectives: [{name: objective, goal: minimize}, {name: val_accuracy, goal: maximize}]
parameters:
  x: {min: 0.0, max: 1.0}
  lines: {value: 2}
YAML
mpi 2 run "$tmp/motpe.yaml" -o "$tmp/motpe.h5"
expect_rc 0 "motpe over the program's objective"
pycheck "motpe's trials" "$tmp/motpe.h5" <<'PY'
import sys
from attnsweep.results import Results
rs = Results(sys.argv[1])
s, bad = rs.summary, []
for _, r in s.iterrows():
    x = rs.trial_attrs(r["trial"])["config"]["program"]["x"]
    want = (x - 0.3) ** 2 + 1.0 / 2  # the program's last line
    if r["status"] != "ok" or abs(r["objective"] - want) > 1e-12:
        bad.append(f"trial {r['trial']}: {r['status']} objective {r['objective']}, expected ok {want}")
if len(s) != 6: bad.append(f"{len(s)} trials")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
run report "$tmp/motpe.h5"
expect_rc 0 "the motpe sweep's report"
grep -q "^attnsweep report: .*, 6 trials, metric objective (lower is better)" "$tmp/out" ||
    fail "the report ranks by the first objective: $(head -1 "$tmp/out")"
grep -q "Pareto front of the sweep's objectives" "$tmp/out" || fail "the report's Pareto front over the objectives"
pass "motpe with objectives [objective (the program's own), val_accuracy]: 6 trials ok, objective recorded, reported"

echo "all $checks checks passed in $((SECONDS - start)) s"
