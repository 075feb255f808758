#!/usr/bin/env bash
# test_schema: one vocabulary for the results file (src/store/schema.h), shared by C and
# Python.
#   1. `attnsweep schema` prints it as text and as JSON; an argument is refused (exit 2).
#   2. A trial's file (attnsweep train -o) and a sweep's file (a program's sweep with its
#      own metric, motpe over two objectives) carry the same JSON in their root attribute
#      schema, and their root attributes metric, goal and objectives.
#   3. The writer follows it: /summary's columns are the lead columns, the parameters,
#      the metrics (a program's own after them) and the trail columns, in that order; the
#      curves and invariants tables have its columns; every root attribute it lists is
#      there. The Python reader (python/attnsweep/results.py) reads the same names, the
#      parameters of each sweep and its statuses.
#   4. No Python file or test restates the format version (they read the schema's).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

echo "== 1. attnsweep schema"
run schema
[[ $rc == 0 ]] || fail "schema: exit code $rc"
grep -q "^results format [0-9]" out && grep -q "^/summary: lead, parameters, metrics" out ||
    fail "schema: no format line or /summary line"
grep -qE "^  val_accuracy +float64 .*\(maximize, decides\)" out || fail "schema: no val_accuracy line with its goal"
run schema --json
[[ $rc == 0 ]] || fail "schema --json: exit code $rc"
cp out schema.json
run schema extra
[[ $rc == 2 && $(wc -l <err) == 1 ]] || fail "schema extra: exit code $rc, expected 2 and one line"
grep -q "unexpected argument 'extra'" err || fail "schema extra: '$(cat err)'"
pass "schema as text and JSON; an argument refused with one line"

echo "== 2. the files carry it"
run train --task recall --d-model 16 --heads 2 --layers 1 --batch 16 --steps 4 --eval-every 2 \
    --eval-batches 1 --recall-pairs 4 -o trial.h5 -q
[[ $rc == 0 ]] || fail "train: exit code $rc"
cat >prog.py <<'PY'
import json, os, sys
a = dict(w[2:].split("=", 1) for w in sys.argv[1:])
x = float(a["x"])
with open(os.environ["ATTNSWEEP_METRICS"], "a") as f:
    for s in (1, 2):
        f.write(json.dumps({"step": s, "objective": (x - 0.3) ** 2 / s, "size": x * 10}) + "\n")
PY
program_grid_yaml prog "$tmp/prog.py" "metric: {name: objective, goal: minimize}" -- \
    "x: {values: [0.1, 0.5]}" "steps: {values: [2]}"
rc=0
mpirun -np 2 "$bin" run prog.yaml -o prog.h5 --quiet >out 2>err || rc=$?
[[ $rc == 0 ]] || fail "the program's sweep: exit code $rc"
cat >motpe.yaml <<YAML
name: motpe
method: motpe
trials: 4
seed: 3
objectives: [{name: val_accuracy, goal: maximize}, {name: n_params, goal: minimize}]
parameters:
$tiny_recall_params
  task: {value: recall}
  steps: {value: 4}
  eval_every: {value: 2}
  mlp_ratio: {values: [1, 2]}
YAML
rc=0
mpirun -np 2 "$bin" run motpe.yaml -o motpe.h5 --quiet >out 2>err || rc=$?
[[ $rc == 0 ]] || fail "the motpe sweep: exit code $rc"

"$py" - schema.json trial.h5 prog.h5 motpe.h5 <<'PY' || fail "the files and the schema"
import json, sys
from attnsweep.results import Results, Statuses
schema = json.load(open(sys.argv[1]))
summary = schema["tables"]["summary"]
lead = [c["name"] for c in summary["lead"]]
trail = [c["name"] for c in summary["trail"]]
metrics = [m["name"] for m in schema["metrics"]]
engine = [c["name"] for c in summary["parameters"]]
want = {"trial.h5": ("reward", True, [], engine, None),
        "prog.h5": ("objective", False, [], ["x", "config_steps"], "objective"),
        "motpe.h5": ("reward", True, [("val_accuracy", True), ("n_params", False)], engine, None)}
for path in sys.argv[2:]:
    metric, maximize, objectives, parameters, own = want[path]
    with Results(path) as r:
        f = r.file
        assert json.loads(f.attrs["schema"]) == schema, f"{path}: its schema differs from attnsweep schema --json"
        assert r.schema.format_version == schema["format_version"] == f.attrs["format_version"], path
        # end_time is absent while a run writes the file; journal_end too, and in a trial's own file (no journal).
        missing = {a for a in r.schema.root_attributes if a not in f.attrs}
        assert missing <= {"end_time", "journal_end"} and ("journal_end" in missing) == (path == "trial.h5"), \
            (path, sorted(f.attrs))
        assert (r.metric, r.maximize, r.objectives) == (metric, maximize, objectives), \
            (path, r.metric, r.maximize, r.objectives)
        columns = list(f["summary"].dtype.names)
        expect = lead + parameters + metrics + ([own] if own else []) + trail
        assert columns == expect, f"{path}: /summary columns\n  {columns}\nwant\n  {expect}"
        assert r.parameters == parameters, (path, r.parameters)
        assert r.program_metric == own, (path, r.program_metric)
        st = Statuses(r.schema)
        assert set(r.summary.status) <= set(r.schema.statuses) and st.ok == "ok", (path, set(r.summary.status))
        assert r.measured == tuple(s["name"] for s in schema["statuses"] if s["measured"])
        assert r.trial_ids() == sorted(r.summary.trial), path
        for tid in r.summary.trial:
            g = r.trial(tid)  # raw on purpose: the on-disk columns, against the schema and the reader's
            curves = [c["name"] for c in schema["tables"]["curves"]["columns"]]
            assert list(g["curves"].dtype.names) == curves == list(r.curves(tid)), path
            if "invariants" in g:
                names = [c["name"] for c in schema["tables"]["invariants"]["columns"]]
                assert list(g["invariants"].dtype.names) == names == list(r.invariants(tid)), path
print("3 files: the schema attribute, the ranking attributes, /summary, curves and invariants as the schema says")
PY
pass "a trial's, a program sweep's and a motpe sweep's files follow the schema; the Python reader agrees"

echo "== 3. a file that does not follow it is refused by the reader"
"$py" - trial.h5 <<'PY' || fail "damaged schemas"
import shutil, sys, h5py
from attnsweep.results import BadResults, Results
for name, change in (("noschema.h5", lambda f: f.attrs.__delitem__("schema")),
                     ("badschema.h5", lambda f: f.attrs.__setitem__("schema", "{not json")),
                     ("otherversion.h5", lambda f: f.attrs.__setitem__("format_version", 999))):
    shutil.copy(sys.argv[1], name)
    with h5py.File(name, "a") as f:
        change(f)
    try:
        Results(name)
    except BadResults as e:
        assert str(e).startswith(name + ": ") and "\n" not in str(e), str(e)
        print(f"  {e}")
    else:
        raise AssertionError(f"{name} was read")
PY
"$py" - prog.h5 <<'PY' || fail "making a file with damaged ranking attributes"
import shutil, sys, h5py
for name, key, value in (("objectives.h5", "objectives", "{not a list"), ("goal.h5", "goal", "upwards"),
                         ("unknown.h5", "objectives", '[{"name": "speed", "goal": "maximize"}]')):
    shutil.copy(sys.argv[1], name)
    with h5py.File(name, "a") as f:
        f.attrs[key] = value
PY
for bad in objectives goal unknown; do
    run report $bad.h5
    [[ $rc == 2 && $(wc -l <err) == 1 ]] || fail "report $bad.h5: exit code $rc, expected 2 and one line: $(cat err)"
    grep -qE "^attnsweep: report: $bad.h5: attribute '(objectives|metric|goal)'" err || fail "report $bad.h5: '$(cat err)'"
    echo "     $(cat err)"
done
pass "no schema, a damaged schema, a version its schema does not have, damaged ranking attributes: one line each"

echo "== 4. no Python file or test restates the format version"
root=$(dirname "$here")
if grep -rnE "FORMAT_VERSION *= *[0-9]|format_version\"?\]? *== *[0-9]" "$root/scripts" "$root/tests" "$root/python" \
       --include='*.py' --include='*.sh' >restated 2>/dev/null; then
    fail "the format version restated: $(cat restated)"
fi
pass "the format version is read from the schema everywhere"

echo "test_schema: $checks checks passed in $((SECONDS - start)) s"
