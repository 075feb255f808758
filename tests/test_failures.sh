#!/usr/bin/env bash
# Failures you can read (issue 29), end to end under mpirun with a real child process per
# trial (tests/programs/missing_module.sh: a Python-like traceback on stderr, exit code 1,
# until the "module" is installed):
#   1. a failed trial's reason ends with the last line of its stderr, in its `reason`
#      attribute (stderr_tail keeps the whole tail) and in the report's failures.by_reason,
#      identical failures one row;
#   2. a sweep whose first budget.max_failures trials all fail the same way stops there:
#      exit code 1, one line naming the reason and the key, every finished trial kept in
#      the journal and the results file; max_failures: 0 never stops, and the last line
#      names the first failure with its stderr line;
#   3. --retry-failed without --resume is refused; --resume keeps the failed trials failed
#      and runs the rest; --resume --retry-failed runs the failed ones again, the results
#      file then holds every trial ok (their latest attempt) while the journal keeps every
#      attempt, and a later --resume rebuilds the same file from it.
# Usage: bash tests/test_failures.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every sweep here is under mpirun: see sanitizer_env.sh
prog=$here/programs/missing_module.sh
want_reason="the program exited with code 1; stderr: ModuleNotFoundError: No module named 'torch'"

# sweep_yaml NAME TRIALS BUDGET: $tmp/NAME.yaml, a grid of TRIALS trials of the program.
sweep_yaml() {
    cat >"$tmp/$1.yaml" <<YAML
name: $1
program: $prog
command: [bash, "\${program}", "\${args}"]
method: grid
metric: {name: val_loss, goal: minimize}
budget: $3
parameters:
  x: {values: [$(seq -s ', ' 1 "$2")]}
YAML
}

# check_file H5 JOURNAL STATUS...: the results file holds exactly the trials the journal
# holds, one /summary row each, trial i with status STATUS[i] ("-": not recorded); a failed
# one with the reason above and its whole stderr tail, an ok one with no reason.
check_file() {
    pycheck "the results file $(basename "$1")" "$@" <<'PY'
import sys
from journal import trial_ids
from attnsweep.results import Results
path, journal, want = sys.argv[1], sys.argv[2], sys.argv[3:]
reason = "the program exited with code 1; stderr: ModuleNotFoundError: No module named 'torch'"
rs, bad = Results(path), []
summary = rs.summary
rows = summary.trial.tolist()
if len(rows) != len(set(rows)): bad.append(f"/summary rows {rows}: a trial twice")
if set(rows) != set(trial_ids(journal)): bad.append(f"/summary {sorted(rows)}, the journal {sorted(set(trial_ids(journal)))}")
for tid, status in enumerate(want):
    if status == "-":
        if tid in rows: bad.append(f"trial {tid} recorded, expected not")
        continue
    a = rs.trial_attrs(tid) if tid in rows else {}
    row = summary.iloc[rows.index(tid)] if tid in rows else None
    if not a or a["status"] != status or row["status"] != status:
        bad.append(f"trial {tid}: {a.get('status')}, expected {status}")
    elif status == "failed" and (a["reason"] != reason or not a["stderr_tail"].endswith("No module named 'torch'")
                                 or not a["stderr_tail"].startswith("loading the data")):
        bad.append(f"trial {tid}: reason {a['reason']!r}, stderr_tail {a['stderr_tail']!r}")
    elif status == "ok" and (a["reason"] != "" or row["val_loss"] != tid + 1):
        bad.append(f"trial {tid}: reason {a['reason']!r}, val_loss {row['val_loss']}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

# ---------------------------------------------------------------------------
echo "== 1, 2. the first 3 of 8 trials fail the same way: the sweep stops  [$((SECONDS - start)) s]"
sweep_yaml stop 8 "{time_limit: 60, max_failures: 3}"
mpi 3 run "$tmp/stop.yaml" -o "$tmp/stop.h5"
expect_rc 1 "a sweep stopped by its failures"
last=$(grep '^sweep stop: ' "$tmp/err" | tail -n 1)  # attnsweep's last line; mpirun adds its note on exit 1
[[ $last == "sweep stop: stopped: the first 3 trials this run recorded all failed the same way (trial "*": $want_reason);"*"fix that and continue with --resume --retry-failed, or set budget: {max_failures: K} in the YAML (3 now; 0 never stops)" ]] ||
    fail "the last line names the reason and budget.max_failures: got '$last'"
[[ $(grep -c "max_failures" "$tmp/err") == 1 ]] || fail "one line about the stop, got: $(cat "$tmp/err")"
# The trials recorded: the third failure, and the one running beside it if it finished first.
ids=" $("$py" -c 'from journal import trial_ids; print(*trial_ids("stop.h5.journal"))') "
recorded=$(wc -w <<<"$ids")
((recorded >= 3 && recorded <= 4)) || fail "3 failures, and at most the one running beside them, recorded: got$ids"
# per_trial IF-RECORDED ELSE: a status for each of the 8 trials, by whether the first run recorded it
per_trial() { for t in $(seq 0 7); do [[ $ids == *" $t "* ]] && echo "$1" || echo "$2"; done; }
# shellcheck disable=SC2046 # one word per trial
check_file "$tmp/stop.h5" "$tmp/stop.h5.journal" $(per_trial failed -)
pass "stopped after 3 identical failures (exit 1, trials${ids}recorded, journal and file agree): $last"

run report "$tmp/stop.h5" --json
expect_rc 0 "report of the stopped sweep"
pycheck "failures.by_reason" "$tmp/out" "$recorded" "$want_reason" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["failures"]["by_reason"]
want = [{"status": "failed", "reason": sys.argv[3], "n": int(sys.argv[2])}]
if rows != want: print(f"by_reason {rows}, want {want}")
sys.exit(0 if rows == want else 1)
PY
pass "the report's failures.by_reason: one row, the stderr line in it, n $recorded"

sweep_yaml never 4 "{max_failures: 0}"
mpi 2 run "$tmp/never.yaml" -o "$tmp/never.h5"
expect_rc 1 "a sweep of failures with max_failures 0"
last=$(grep '^sweep never: ' "$tmp/err" | tail -n 1)
[[ $last == "sweep never: no trial finished ok (0 ok, 0 pruned, 4 failed; first failure: trial 0: $want_reason); results in $tmp/never.h5" ]] ||
    fail "max_failures 0 runs every trial; the last line names the first failure: got '$last'"
pass "max_failures: 0 never stops: $last"

# ---------------------------------------------------------------------------
echo "== 3. --resume, then --resume --retry-failed with the module installed  [$((SECONDS - start)) s]"
expect_bad_input "--retry-failed without --resume" "run: --retry-failed runs a sweep's failed trials again: pass it with --resume" \
    "$tmp/nothing.h5" run "$tmp/stop.yaml" -o "$tmp/nothing.h5" --retry-failed
touch "$tmp/fixed"
mpi 3 run "$tmp/stop.yaml" -o "$tmp/stop.h5" --resume
expect_rc 0 "--resume with the module installed"
# shellcheck disable=SC2046
check_file "$tmp/stop.h5" "$tmp/stop.h5.journal" $(per_trial failed ok)
pass "--resume: the $recorded failed trials stay failed, the rest ran ok"

mpi 3 run "$tmp/stop.yaml" -o "$tmp/stop.h5" --resume --retry-failed
expect_rc 0 "--resume --retry-failed"
grep -qF "sweep stop: resuming with $((8 - recorded)) of 8 trials recorded in $tmp/stop.h5.journal; $recorded failed ones run again" "$tmp/err" ||
    fail "the resume says how many failed trials run again: $(cat "$tmp/err")"
check_file "$tmp/stop.h5" "$tmp/stop.h5.journal" ok ok ok ok ok ok ok ok
attempts=$("$py" -c 'from journal import trial_ids; print(len(trial_ids("stop.h5.journal")))')
[[ $attempts == $((8 + recorded)) ]] || fail "the journal keeps every attempt: $attempts trial records, want $((8 + recorded))"
pass "--retry-failed: the $recorded failed trials ran again, all 8 ok; the journal keeps all $attempts attempts"

mpi 2 run "$tmp/stop.yaml" -o "$tmp/stop.h5" --resume
expect_rc 0 "--resume of the finished sweep"
! grep -q "appears twice" "$tmp/err" || fail "a retried trial is no duplicate: $(cat "$tmp/err")"
check_file "$tmp/stop.h5" "$tmp/stop.h5.journal" ok ok ok ok ok ok ok ok
pass "rebuilt from the journal: every trial its latest attempt, ok"

echo "test_failures: $checks checks passed in $((SECONDS - start)) s"
