#!/usr/bin/env bash
# Several jobs on one sweep (run --shared, issue 31): the journal is where they meet.
#   1. Job B starts the sweep (it keeps the results file), job A joins it; B is killed
#      with kill -9 of every process it has (mpirun, its ranks, their trial programs: a
#      lost node) while it runs trials. A goes on, and job C, started after the kill,
#      joins and takes work. Every trial is recorded exactly once, in the journal and
#      in the results file (kept by A or C once B's writer lock died with it); each
#      trial B held when it died is handed out again, after B's lease ran out, by A or
#      C; none is recorded failed (one death each, under max_deaths). The job keeping the
#      results file writes a snapshot every second and at its end, and a job that joins
#      the finished sweep starts from the last one.
#   2. While shared jobs run it, a single job's run of the sweep is refused with one
#      line that says to add --shared (exit 2); a job joining with another YAML is
#      refused (exit 2); --shared with --retry-failed, and a lease under a second, are
#      refused (exit 2).
#   3. A single job's run holds the sweep: --shared on it is refused naming the holder.
# Usage: bash tests/test_shared.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every run here is under mpirun: see sanitizer_env.sh

lease=3
# 16 trials of a program that reports 6 steps 0.5 s apart (about 3.5 s a trial with its start).
program_grid_yaml shared "$here/programs/protocol_program.py" "metric: {name: val_loss, goal: minimize}" -- \
    "kind: {value: slow}" "steps: {value: 6}" "sleep: {value: 0.5}" \
    "x: {values: [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5]}"
# Each job runs the same YAML text from its own path, so that kill -9 finds one job's
# processes by their command line.
for job in a b c; do cp "$tmp/shared.yaml" "$tmp/$job.yaml"; done
out=$tmp/r/shared.h5
mkdir -p "$tmp/r"

# start JOB: mpirun of 2 worker groups on JOB.yaml, sharing the sweep; its pid in pid_JOB.
start() {
    mpirun --quiet -np 3 "$bin" run "$tmp/$1.yaml" -o "$out" --shared --lease $lease --snapshot-every 1 --quiet 2>"$tmp/$1.err" &
    eval "pid_$1=$!"
    background+=("$!")
}
# finish JOB: wait for it to end (at most 120 s), then fail unless it ended with 0.
finish() {
    local pid t=$((SECONDS + 120)) code=0
    eval "pid=\$pid_$1"
    while kill -0 "$pid" 2>/dev/null; do
        ((SECONDS < t)) || fail "job ${1^^} still runs after 120 s: $(tail -3 "$tmp/$1.err")"
        sleep 0.2
    done
    wait "$pid" || code=$?
    [[ $code == 0 ]] || fail "job ${1^^}: exit code $code ($(cat "$tmp/$1.err"))"
}
# journal_says PYTHON-EXPRESSION: true once the expression over recs (tests/journal.py's
# records of the sweep's journal) holds; fails after 60 s.
journal_says() {
    local t=$((SECONDS + 60))
    until [[ -e $out.journal ]] && "$py" -c "import journal, sys; recs = journal.records(sys.argv[1]); sys.exit(0 if ($1) else 1)" "$out.journal"; do
        ((SECONDS < t)) || fail "the journal never showed: $1"
        sleep 0.1
    done
}

echo "== 1. B starts, A joins, B is killed mid-trial, C joins; every trial once"
start b
journal_says "any(r['kind'] == journal.LEASE for r in recs)"
start a
# B's trials run, and A has joined (two jobs' leases); B, which keeps the results file,
# has written a snapshot since (so that C, joining after B's death, starts from it: B's
# trials in it are running, B's own lease with them).
journal_says "len({r['job'] for r in recs if r['kind'] == journal.LEASE}) == 2 and sum(r['kind'] == journal.HANDOUT for r in recs) >= 4"
journal_says "any(r['kind'] == journal.SNAPSHOT and r['at'] > [h['at'] for h in recs if h['kind'] == journal.HANDOUT][3] for r in recs)"

# Kill B while it runs trials: every process on b.yaml's command line, then its mpirun.
killed=$("$py" -c "import time; print(time.time())")
pkill -9 -f "$tmp/b.yaml" || true
kill -9 "$pid_b" 2>/dev/null || true
wait "$pid_b" 2>/dev/null || true
start c
echo "== 2. refusals while shared jobs run it"
mpi 2 run "$tmp/a.yaml" -o "$out" --resume
[[ $rc == 2 ]] || fail "a single job on a shared sweep: exit code $rc, expected 2"
grep -q "add --shared to join it" "$tmp/err" || fail "a single job on a shared sweep: $(cat "$tmp/err")"
pass "a single job's run of a sweep shared jobs run: '$(grep -m1 "add --shared" "$tmp/err" | cut -c1-110)...', exit 2"
# The same trials, another text: the jobs compare the whole YAML (a comment too).
{ cat "$tmp/shared.yaml"; echo "# another job's copy"; } >"$tmp/other.yaml"
mpi 2 run "$tmp/other.yaml" -o "$out" --shared --lease $lease --quiet
[[ $rc == 2 ]] || fail "a job with another YAML: exit code $rc, expected 2"
grep -q "runs it from a different YAML" "$tmp/err" || fail "a job with another YAML: $(cat "$tmp/err")"
pass "a job joining with another YAML: refused, exit 2"
run run "$tmp/a.yaml" -o "$out" --shared --resume --retry-failed
[[ $rc == 2 ]] || fail "--shared --retry-failed: exit code $rc"
pass "--shared with --retry-failed: refused, exit 2"
run run "$tmp/a.yaml" -o "$out" --shared --lease 0.5
[[ $rc == 2 && $(wc -l <"$tmp/err") == 1 ]] && grep -q -- "--lease" "$tmp/err" ||
    fail "--lease 0.5: exit code $rc, '$(cat "$tmp/err")'"
pass "--lease below a second: '$(cat "$tmp/err")', exit 2"

finish a
finish c
background=()
grep -Eq "sharing the sweep as job .*\(its snapshot at byte [0-9]+ and the [0-9]+ records after it\)" "$tmp/c.err" ||
    fail "job C did not join from a snapshot: $(cat "$tmp/c.err")"

"$py" - "$out" "$killed" $lease <<'EOF' || fail "the shared sweep's records (above)"
import sys
import journal
from attnsweep.results import Results, Statuses

out, killed, lease = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
recs = journal.records(out + ".journal")
starts = [r for r in recs if r["kind"] == journal.START]
assert len(starts) == 3, f"{len(starts)} jobs started, expected 3 (B, A, C)"
job_b, job_a, job_c = (s["at"] for s in starts)
trials = [r["id"] for r in recs if r["kind"] == journal.TRIAL]
assert sorted(trials) == list(range(16)), f"trial records: {sorted(trials)}"
handouts = [r for r in recs if r["kind"] == journal.HANDOUT]
by = {job: [h for h in handouts if h["job"] == job] for job in (job_a, job_b, job_c)}
assert all(by.values()), f"hand-outs by job: { {j: len(h) for j, h in by.items()} }"
done_at = {r["id"]: i for i, r in enumerate(recs) if r["kind"] == journal.TRIAL}
# B's trials that it never finished: handed out again, by A or C, after B's lease ran out.
b_lease = max(r["time"] + r["seconds"] for r in recs if r["kind"] == journal.LEASE and r["job"] == job_b)


def finished_after(h):  # a trial record of h's trial before its next hand-out
    nxt = min([x["at"] for x in handouts if x["id"] == h["id"] and x["at"] > h["at"]] + [1 << 62])
    return any(r["kind"] == journal.TRIAL and r["id"] == h["id"] and h["at"] < r["at"] < nxt for r in recs)


held = [h["id"] for h in by[job_b] if not finished_after(h)]
assert held, "B held no trial when it was killed: kill it later"
for t in held:
    again = [h for h in handouts if h["id"] == t and h["job"] in (job_a, job_c)]
    assert again, f"trial {t}, B's when it died, was never handed out again"
    assert min(h["time"] for h in again) >= b_lease - 0.05, \
        f"trial {t} handed out again at {min(h['time'] for h in again)}, before B's lease ran out at {b_lease}"
with Results(out) as r:
    s = r.summary
    assert sorted(s["trial"]) == list(range(16)), f"results file rows: {sorted(s['trial'])}"
    ok = Statuses(r.schema).ok
    assert all(x == ok for x in s["status"]), f"statuses: {list(s['status'])}"
print(f"B held trials {held} when killed ({killed - starts[0]['time']:.1f} s in): each handed out again "
      f"after its lease; hand-outs A {len(by[job_a])}, B {len(by[job_b])}, C {len(by[job_c])}; 16 trials, once each")
EOF
pass "kill -9 of the job that kept the results file: A and C finished the sweep, each trial recorded once (journal and results file), B's trials re-run after its lease, C joined late and took work"
# The job that keeps the results file wrote snapshots (every second, and at its end): a
# job joining the finished sweep starts from the last one.
mpi 3 run "$tmp/a.yaml" -o "$out" --shared --lease $lease --quiet
[[ $rc == 0 ]] && grep -Eq "\(16 of 16 trials recorded \(its snapshot at byte [0-9]+ and the [0-9]+ records after it\)" "$tmp/err" ||
    fail "a job joining the finished sweep: exit $rc, $(grep sharing "$tmp/err")"
pass "a job joining the finished sweep starts from the snapshot the writer left: $(grep -o 'its snapshot.*after it' "$tmp/err")"

echo "== 3. a single job holds the sweep: --shared is refused"
mpirun --quiet -np 2 "$bin" run "$tmp/a.yaml" -o "$tmp/single.h5" --quiet 2>"$tmp/single.err" &
single=$!
background+=("$single")
t=$((SECONDS + 60))
until [[ -s $tmp/single.h5.journal ]] && "$py" -c "import journal, sys; sys.exit(0 if any(r['kind'] == journal.HANDOUT for r in journal.records(sys.argv[1])) else 1)" "$tmp/single.h5.journal"; do
    ((SECONDS < t)) || fail "the single job never handed out a trial"
    sleep 0.1
done
mpirun --quiet -np 2 "$bin" run "$tmp/c.yaml" -o "$tmp/single.h5" --shared --quiet 2>"$tmp/err" && rc=0 || rc=$?
[[ $rc == 2 ]] || fail "--shared on a single job's sweep: exit code $rc, expected 2"
grep -q "is being run by attnsweep on" "$tmp/err" || fail "--shared on a single job's sweep: $(cat "$tmp/err")"
kill -USR1 "$single"
wait "$single" 2>/dev/null || true
background=()
pass "--shared on a sweep a single job runs: '$(grep -m1 "is being run by" "$tmp/err" | cut -c1-100)...', exit 2"

echo "PASS test_shared: $checks checks in $((SECONDS - start)) s"
