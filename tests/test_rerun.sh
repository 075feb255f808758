#!/usr/bin/env bash
# `attnsweep rerun RESULTS.h5 --trial N | --best`: a trial of a sweep run again from the
# results file alone.
#   1. a tiny engine sweep under mpirun; trial 2 rerun alone gives the same metrics bit
#      for bit (same configuration, seed, steps, one BLAS thread as the sweep's ranks),
#      written to RESULTS.rerun-2.h5 beside the input, which is left as it was;
#   2. --best reruns the trial with the lowest val_loss (the sweep's metric and goal);
#   3. bad input: no trial given, both given, no such trial, a failed trial, -o the input,
#      a damaged file, a file without a sweep: one line, exit 2, nothing written.
#
# Usage: bash tests/test_rerun.sh /path/to/attnsweep   (ctest runs it so). About 15 s.
set -euo pipefail
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"

# Four trials of the smallest recall model; lr 10 with weight decay 10 diverges (a
# failed trial, as in test_analyze).
cat >"$tmp/tiny.yaml" <<EOF
name: tiny
method: grid
task: recall
seed: 3
budget: {steps: 30, eval_every: 10}
metric: {name: val_loss, goal: minimize}
parameters:
  attention: {values: [mha, linear]}
  lr: {values: [0.003, 10]}
  weight_decay: {value: 10}
$tiny_recall_params
EOF
mpi 3 run tiny.yaml -o tiny.h5 --quiet
[[ $rc == 0 ]] || fail "the sweep: exit code $rc"
cp tiny.h5 before.h5

# same_metrics A B ID: trial ID's row of /summary in A equals the only row of B in every
# metric column both have (val_loss always; a program's sweep has no seed, steps or
# score columns), exactly.
same_metrics() {
  pycheck "trial $3 rerun: the metrics of $2 against $1" "$@" <<'EOF'
import sys
import numpy as np
from attnsweep.results import Results
a, b, tid = sys.argv[1], sys.argv[2], int(sys.argv[3])
cols = ["val_loss", "val_accuracy", "test_loss", "test_accuracy", "reward", "rank_deviation", "correlation", "steps"]
with Results(a) as f, Results(b) as g:
    before = f.summary
    old = before[before.trial == tid].iloc[0]
    rows = g.summary
    if len(rows) != 1:
        print(f"{b}: expected one trial, got {len(rows)}")
        sys.exit(1)
    new = rows.iloc[0]
    bad = 0
    names = set(old.index) & set(new.index)
    for c in ["val_loss"] + [c for c in cols + ["seed"] if c in names and c != "val_loss"]:
        if not np.array_equal(old[c], new[c], equal_nan=True):
            print(f"{c}: expected {old[c]!r}, got {new[c]!r}")
            bad = 1
    if new["trial"] != tid:
        print(f"trial: expected {tid}, got {new['trial']}")
        bad = 1
    print(f"val_loss {old['val_loss']!r} both")
sys.exit(bad)
EOF
}

echo "== 1. --trial 2: the same numbers, beside the input"
# Without lib.sh's OPENBLAS_NUM_THREADS=1: rerun itself must train on one thread, as the
# sweep's ranks did (grid.c), or the sums of a step split otherwise.
leaks=1  # the rerun's own path, once under LeakSanitizer (tests/sanitizer_env.sh)
rc=0
(
  unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS
  run rerun tiny.h5 --trial 2 --quiet
  exit "$rc"
) || rc=$?
expect_rc 0 "rerun --trial 2"
grep -qx "wrote tiny.rerun-2.h5" "$tmp/out" || fail "rerun --trial 2: stdout does not say where: $(cat "$tmp/out")"
grep -q "^trial 2 of tiny (seed [0-9]*): val_loss .* before, .* now (+0); status ok" "$tmp/out" ||
  fail "rerun --trial 2: no line with the metric before and now: $(cat "$tmp/out")"
same_metrics tiny.h5 tiny.rerun-2.h5 2
cmp -s tiny.h5 before.h5 || fail "rerun changed its input"
pass "rerun --trial 2: $(head -1 "$tmp/out"); every metric bit for bit; the input untouched"

leaks=0

echo "== 1b. a program's trial: the same command, seed and parameters"
# val_loss from the parameter and ATTNSWEEP_SEED alone: equal only with both the same.
cat >"$tmp/seeded.py" <<'EOF'
import json, os, sys
lr = float([a for a in sys.argv if a.startswith("--lr=")][0][len("--lr="):])
seed = int(os.environ["ATTNSWEEP_SEED"])
with open(os.environ["ATTNSWEEP_METRICS"], "a") as f:
    f.write(json.dumps({"step": 1, "val_loss": lr * (seed % 9973)}) + "\n")
EOF
program_grid_yaml seeded seeded.py 'metric: {name: val_loss, goal: minimize}' 'repeats: 2' -- 'lr: {values: [0.1, 0.2]}'
mpi 3 run seeded.yaml -o seeded.h5 --quiet
[[ $rc == 0 ]] || fail "the program's sweep: exit code $rc"
run rerun seeded.h5 --trial 3 --quiet
expect_rc 0 "rerun of a program's trial"
grep -qx "wrote seeded.rerun-3.h5" "$tmp/out" || fail "a program's rerun: stdout does not say where: $(cat "$tmp/out")"
same_metrics seeded.h5 seeded.rerun-3.h5 3
[[ -s seeded.rerun-3.trials/000003/metrics.jsonl ]] || fail "a program's rerun: no seeded.rerun-3.trials/000003/metrics.jsonl"
pass "a program's trial 3 rerun: the same val_loss from the same seed; its files in seeded.rerun-3.trials/000003"

echo "== 2. --best: the lowest val_loss of the ok trials"
best=$("$py" - <<'EOF'
from attnsweep.results import Results
s = Results("tiny.h5").summary
print(int(s[s.status == "ok"].sort_values(["val_loss", "trial"]).trial.iloc[0]))
EOF
)
run rerun tiny.h5 --best -o best.h5 --quiet
expect_rc 0 "rerun --best"
grep -q "^trial $best of tiny" "$tmp/out" || fail "rerun --best: expected trial $best: $(cat "$tmp/out")"
same_metrics tiny.h5 best.h5 "$best"
pass "rerun --best ran trial $best, the lowest val_loss of the ok trials, to the same numbers"

echo "== 3. bad input: one line, exit 2"
failed=$("$py" -c 'from attnsweep.results import Results; s = Results("tiny.h5").summary; print(*s[s.status == "failed"].trial.tolist()[:1])')
[[ -n $failed ]] || fail "the sweep has no failed trial (lr 10 did not diverge)"
expect_bad_input "neither --trial nor --best" "give either --trial N or --best" "$tmp/tiny.rerun-0.h5" rerun tiny.h5
expect_bad_input "both --trial and --best" "give either --trial N or --best" "$tmp/tiny.rerun-0.h5" \
  rerun tiny.h5 --trial 0 --best
expect_bad_input "no such trial" "tiny.h5 has no trial 9 (it records 4 trials" "$tmp/tiny.rerun-9.h5" \
  rerun tiny.h5 --trial 9
expect_bad_input "a failed trial" "trial $failed of tiny.h5 failed (diverged" "$tmp/tiny.rerun-$failed.h5" \
  rerun tiny.h5 --trial "$failed"
expect_bad_input "-o the input" "is the results file itself" "$tmp/none.h5" rerun tiny.h5 --trial 0 -o ./tiny.h5
cmp -s tiny.h5 before.h5 || fail "-o the input changed it"
head -c 3000 tiny.h5 >cut.h5
expect_bad_input "a damaged file" "cut.h5" "$tmp/cut.rerun-0.h5" rerun cut.h5 --trial 0
ASAN_OPTIONS=$asan_noleaks "$bin" train --task recall --d-model 16 --heads 2 --layers 1 --batch 16 --steps 5 --eval-every 5 --quiet \
  -o one.h5 >/dev/null
expect_bad_input "a file of attnsweep train" "keeps no sweep" "$tmp/one.rerun-0.h5" rerun one.h5 --trial 0
echo "all $checks checks passed in $((SECONDS - start)) s"
