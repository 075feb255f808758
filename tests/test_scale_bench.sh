#!/usr/bin/env bash
# test_scale_bench.sh: scripts/bench/scale.sh (issue 31's scale benchmark) measures what
# it says, at a size that takes seconds. (1) Bad options are one line and exit 2 before
# anything runs. (2) A run with 3 ranks (2 sleeping trials per worker), decisions at 200
# and 400 finished trials, and a journal of 30 trials resumed to 60 and then to 62 (no
# perf) prints its table with every row and a number in each; the sleeping trials each
# took their second; the two resumes replayed the journal (their "resuming with 30 of
# 60" and "60 of 62" lines) and the results file ends with trials 0..61 once each, all
# ok, so each resume went on with the same sweep; the utilisation the table prints agrees
# within 10 % with one recomputed here from the results file's own clock (root
# start_time..end_time) rather than the coordinator's output lines; its steady-state
# column (and its window's length) agrees with one recomputed here from the trace (rank 0's
# first TRIAL and first DONE sent) and each trial's end_time and seconds, and is at least the
# whole run's figure less 1 point (the window leaves out the start and the ramp-down); the
# median of a trial's start (trial_run begun -> its program's fork) is the results file's;
# and each resume time is shorter than its mpirun's whole run.
#
# Usage: bash tests/test_scale_bench.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
scale=$(dirname "$here")/scripts/bench/scale.sh

# ---- (1) bad options
for args in "--ranks 1" "--ranks 9,x" "--rounds 0" "--resume 50,20" "--decisions" "--fast"; do
    set +e
    # shellcheck disable=SC2086  # the words of each case
    bash "$scale" $args >"$tmp/out" 2>"$tmp/err"
    rc=$?
    set -e
    [[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 && ! -s $tmp/out ]] || fail "scale.sh $args: exit $rc, stderr: $(cat "$tmp/err")"
    grep -q '^scale.sh: ' "$tmp/err" || fail "scale.sh $args: the line does not name scale.sh: $(cat "$tmp/err")"
done
pass "bad options: one line each, exit 2, nothing run"

# ---- (2) a small run, its work directory kept under $tmp
set +e
ATTNSWEEP_BIN=$bin KEEP=1 PERF=0 TMPDIR=$tmp bash "$scale" --ranks 3 --rounds 2 --decisions 200,400 \
    --resume 30,60 --resume-ranks 3 >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[[ $rc -eq 0 ]] || fail "scale.sh exited with $rc"
work=$(sed -n 's/^keeping //p' "$tmp/err")
[[ -d $work ]] || fail "no work directory kept ($work)"
for r in "ASHA decision, 200 finished" "ASHA decision, 400 finished" "TPE proposal, 200 finished" \
    "TPE proposal, 400 finished" "utilisation, 3 ranks, 1-s trials" "coordinator CPU a trial, 3 ranks, 1-s trials" \
    "throughput, 3 ranks, instant trials" "throughput, 30 instant trials journaled" "resume, 30 journaled trials" \
    "resume, 60 journaled trials"; do
    grep -Eq "^  $r +[0-9.]+ (µs|ms|s|%|trials/s)( |$)" "$tmp/out" || fail "the table has no row '$r' with a number"
done
pass "the table: every row, each with a number"

grep -q "resuming with 30 of 60 trials" "$work/resume30.log" || fail "the first resume did not replay 30 trials"
grep -q "resuming with 60 of 62 trials" "$work/resume60.log" || fail "the second resume did not replay 60 trials"
"$py" - "$work" "$tmp/out" <<'PY' || fail "the kept files disagree with the table (above)"
import re, sys
import h5py, numpy as np
work, out = sys.argv[1], open(sys.argv[2]).read()
bad = []
with h5py.File(f"{work}/resume.h5", "r") as f:
    s = f["summary"][:]
    ids = sorted(int(t) for t in s["trial"])
    status = {x.decode() if isinstance(x, bytes) else str(x) for x in s["status"]}
    if ids != list(range(62)) or status != {"ok"}:
        bad.append(f"resume.h5: trials {ids[:3]}..{ids[-3:]} ({len(ids)}), statuses {status}; want 0..61 once each, ok")
with h5py.File(f"{work}/sleep3.h5", "r") as f:
    s = f["summary"][:]
    wall = float(f.attrs["end_time"]) - float(f.attrs["start_time"])
    if len(s) != 4 or s["seconds"].min() < 1.0:
        bad.append(f"sleep3.h5: {len(s)} trials, seconds {s['seconds']}; want 4 of at least 1 s")
    mine = 100 * float(np.sum(s["seconds"])) / (2 * wall)
    ends = [(float(t.attrs["end_time"]), float(t.attrs["seconds"])) for t in f["trials"].values()]
    starts = sorted(1e3 * (float(t.attrs["end_time"]) - float(t.attrs["seconds"]) - float(t.attrs["start_time"]))
                    for t in f["trials"].values())
m = re.search(r"utilisation, 3 ranks, 1-s trials +([0-9.]+) % +([0-9.]+) %", out)
if not m:
    bad.append("utilisation: no whole-run and steady-state figures in the table's row")
table, steady = (float(m.group(1)), float(m.group(2))) if m else (0.0, 0.0)
if not 0 < table <= 100 or abs(table - mine) > 0.1 * mine:
    bad.append(f"utilisation: the table says {table} %, the results file's clock {mine:.1f} %")
sent = {}
for line in open(f"{work}/trace.sleep3/rank0.log"):
    w = line.split()
    if w[0] == "send":
        sent.setdefault(int(w[1]), float(w[3]))  # the first of each tag
t0, t1 = sent[2], sent[3]  # TRIAL, DONE
ours = 100 * sum(max(0.0, min(e, t1) - max(e - sec, t0)) for e, sec in ends) / (2 * (t1 - t0))
window = re.search(r"steady state \(the first TRIAL sent -> the first DONE sent, ([0-9.]+) s\)", out)
if abs(steady - ours) > 0.06 or not table - 1 <= steady <= 100:
    bad.append(f"steady state: the table says {steady} %, recomputed {ours:.2f} %, the whole run {table} %")
start = re.search(r"a trial's start \(.*\): median ([0-9.]+) ms", out)
if not start or abs(float(start.group(1)) - float(np.median(starts))) > 0.006:
    bad.append(f"a trial's start: the median printed {start and start.group(1)} ms, from the file {np.median(starts):.3f} ms")
if not window or abs(float(window.group(1)) - (t1 - t0)) > 0.006:
    bad.append(f"steady state: its window is printed as {window and window.group(1)} s, the trace's {t1 - t0:.3f} s")
for n, name in ((30, "resume30"), (60, "resume60")):
    resume = float(re.search(rf"resume, {n} journaled trials +([0-9.]+) s", out).group(1))
    log = open(f"{work}/{name}.log").read().split("\n")
    whole = float(log[-2].split()[1]) - float(log[0].split()[1])  # "exit T RC" - "launch T"
    if not 0 < resume < whole:
        bad.append(f"{name}: resume {resume} s, the whole mpirun {whole:.2f} s")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
pass "the resumes went on with the same sweep; utilisation (whole run and steady state) and resume times agree with the kept files"
echo "test_scale_bench: $checks checks passed in $((SECONDS - start)) s"
