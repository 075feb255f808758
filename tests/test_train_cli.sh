#!/usr/bin/env bash
# End-to-end tests of `attnsweep train`: bad input ends with one line and exit 2 and
# writes nothing; every attention variant trains on every task; --json; determinism;
# the -o results file (read back with h5py and pandas); --help; a diverging run.
# Usage: bash tests/test_train_cli.sh /path/to/attnsweep     (from the repository root;
# ctest runs it so). Every run is tiny (3 steps, d_model 16) so the file finishes in a
# few seconds, also in the AddressSanitizer build.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
checker=$here/check_trial_h5.py
leaks=1  # bad input and the first run of each task; repeats run without (see run)

# ---------------------------------------------------------------------------
echo "== 1. bad input: exit 2, one line 'attnsweep: ...' on stderr, nothing written"

# bad_input WHAT KEY_PHRASE ARGS...: `attnsweep train -o $tmp/bad.h5 ARGS...` must exit 2
# with one stderr line containing KEY_PHRASE (exact text, grep -F), print nothing on
# stdout, and leave neither bad.h5 nor a temporary file of it.
bad_input() {
    local what=$1 phrase=$2
    shift 2
    expect_bad_input "$what" "$phrase" "$tmp/bad.h5" train -o "$tmp/bad.h5" "$@"
}

bad_input "heads not dividing d_model" "attnsweep: train: heads (4) must divide d_model (30)" \
    --d-model 30 --heads 4
bad_input "core_rank > heads" "attnsweep: train: core_rank (3) must be at most heads (2)" \
    --attention tucker --heads 2 --core-rank 3
bad_input "unknown task" "unknown task 'imagenet' (allowed: fashion_mnist, charlm, recall)" \
    --task imagenet
bad_input "unknown attention variant" "unknown attention 'flash' (allowed: mha, tucker, linear, grassmann)" \
    --attention flash
bad_input "misspelt option" "unknown option '--lamda-orth' (did you mean --lambda-orth?)" \
    --lamda-orth 1
bad_input "d_model 0" "--d-model: d_model must be in [1, 4096], got 0" --d-model 0
bad_input "batch 0" "--batch: batch must be in [1, 65536], got 0" --batch 0
bad_input "heads -1" "--heads: heads must be in [1, 256], got -1" --heads -1
bad_input "layers 0" "--layers: layers must be in [1, 64], got 0" --layers 0
bad_input "lr not a number" "--lr: lr must be a finite number, got 'abc'" --lr abc
bad_input "steps not an integer" "--steps: steps must be an integer, got '1.5'" --steps 1.5
bad_input "missing value (last argument)" "attnsweep: train: --steps needs a value" --steps
bad_input "stray argument" "unexpected argument 'extra'" extra
bad_input "flag given a value" "--json takes no value" --json=1 --steps 1
# Missing data: one line even without -q (the start-up line comes only after the
# data are open), and no -o file.
bad_input "fashion_mnist data missing" \
    "/nonexistent/train-images-idx3-ubyte.gz: No such file or directory" \
    --task fashion_mnist --data-dir /nonexistent --steps 1
bad_input "charlm data missing" "attnsweep: /nonexistent: No such file or directory" \
    --task charlm --data-dir /nonexistent --steps 1

# An output that cannot be written is found before training, not after: without -q,
# the one line on stderr shows that no start-up or progress line came first.
mkdir "$tmp/adir.h5"
run train --task recall --steps 1 -o "$tmp/adir.h5"
expect_rc 2 "-o names a directory"
expect_one_error_line "-o names a directory"
grep -qF "cannot write $tmp/adir.h5: it is a directory" "$tmp/err" ||
    fail "-o names a directory: expected 'cannot write ...: it is a directory', got '$(cat "$tmp/err")'"
no_partial "$tmp/adir.h5" || fail "-o names a directory: left adir.h5.partial"
run train --task recall --steps 1 -o /nonexistent/dir/x.h5
expect_rc 2 "-o in a missing directory"
expect_one_error_line "-o in a missing directory"
grep -qF "cannot write /nonexistent/dir/x.h5: No such file or directory" "$tmp/err" ||
    fail "-o in a missing directory: expected the path and the reason, got '$(cat "$tmp/err")'"
pass "unwritable -o: exit 2 before training -> $(cat "$tmp/err")"

# A file already at the -o path is left untouched by a bad invocation.
echo "precious" >"$tmp/keep.h5"
run train -o "$tmp/keep.h5" --d-model 30 --heads 4
expect_rc 2 "existing -o file, bad config"
[[ $(cat "$tmp/keep.h5") == precious ]] && no_partial "$tmp/keep.h5" ||
    fail "existing -o file, bad config: expected the file unchanged and no .partial"
pass "bad config leaves an existing -o file as it was"

# ---------------------------------------------------------------------------
echo "== 5. help and unknown commands"
run train --help
expect_rc 0 "train --help"
grep -qF -- "--lambda-orth" "$tmp/out" || fail "train --help: expected --lambda-orth in the option list"
grep -qF -- "--attention" "$tmp/out" || fail "train --help: expected --attention in the option list"
[[ ! -s $tmp/err ]] || fail "train --help: expected nothing on stderr, got '$(cat "$tmp/err")'"
pass "train --help exits 0 and lists --lambda-orth"
run --help
expect_rc 0 "attnsweep --help"
grep -q "train" "$tmp/out" || fail "attnsweep --help: expected the train command to be listed"
pass "attnsweep --help exits 0"
run frobnicate
expect_rc 2 "attnsweep frobnicate"
expect_one_error_line "attnsweep frobnicate"
grep -qF "unknown command 'frobnicate'" "$tmp/err" ||
    fail "attnsweep frobnicate: expected \"unknown command 'frobnicate'\", got '$(cat "$tmp/err")'"
pass "attnsweep frobnicate -> $(cat "$tmp/err")"

# ---------------------------------------------------------------------------
echo "== 2/4. every variant x task trains; --json; -o results file"
D=16 H=2 L=1 R=4 S=3
tiny=(--steps "$S" --batch 8 --eval-batches 1 --d-model "$D" --heads "$H" --layers "$L" --grassmann-rank "$R"
      --recall-pairs 4 --seq-len 16 --quiet --json)

# Print the JSON object without the wall-clock fields, keys sorted.
metrics() {
    "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("seconds", "train_seconds", "steps_per_second", "peak_rss_mb"):
    d.pop(k, None)
print(json.dumps(d, sort_keys=True))' "$1"
}

for task in fashion_mnist charlm recall; do
    for att in mha tucker linear grassmann; do
        what="train $task $att"
        h5=$tmp/$task-$att.h5
        leaks=0
        [[ $att == mha ]] && leaks=1
        run train --task "$task" --attention "$att" "${tiny[@]}" -o "$h5"
        expect_rc 0 "$what"
        [[ ! -s $tmp/err ]] || fail "$what: --quiet: expected nothing on stderr, got '$(cat "$tmp/err")'"
        [[ $(wc -l <"$tmp/out") == 1 ]] || fail "$what: --json: expected one line on stdout, got $(wc -l <"$tmp/out")"
        "$py" - "$tmp/out" "$task" "$att" "$S" <<'EOF' || fail "$what: --json output"
import json, math, sys
path, task, att, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
d = json.load(open(path))
bad = []
def want(ok, what, expected, got):
    if not ok: bad.append(f"{what}: expected {expected}, got {got!r}")
want(isinstance(d, dict), "JSON", "one object", type(d).__name__)
want(d.get("status") == "ok", "status", "ok", d.get("status"))
for split in ("val", "test"):  # the validation split decides, the test split is measured once
    acc = d.get(f"{split}_accuracy")
    want(isinstance(acc, (int, float)) and 0 <= acc <= 1, f"{split}_accuracy", "a number in [0, 1]", acc)
    want(isinstance(d.get(f"{split}_loss"), float) and d[f"{split}_loss"] > 0, f"{split}_loss", "a positive number",
         d.get(f"{split}_loss"))
    bpb = f"{split}_bits_per_byte"
    if task == "charlm":
        want(math.isclose(d.get(bpb, 0), d[f"{split}_loss"] / math.log(2), rel_tol=1e-12), bpb, "the loss / ln 2",
             d.get(bpb))
    else:
        want(bpb not in d, bpb, "absent (charlm only)", d.get(bpb))
for old in ("accuracy", "loss", "bits_per_byte"):
    want(old not in d, f"key {old}", "absent (now val_ and test_)", d.get(old))
want(d.get("steps") == steps, "steps", steps, d.get("steps"))
want(isinstance(d.get("n_params"), int) and d["n_params"] > 0, "n_params", "> 0", d.get("n_params"))
c = d.get("config", {})
want(c.get("task") == task and c.get("attention") == att, "config task/attention", (task, att),
     (c.get("task"), c.get("attention")))
for line in bad: print(f"  {line}")
sys.exit(1 if bad else 0)
EOF
        cp "$tmp/out" "$tmp/$task-$att.json"
        [[ -f $h5 ]] && no_partial "$h5" || fail "$what: -o: expected $h5 and no .partial, got: $(ls "$tmp")"
        # Read back later, all files in one interpreter (importing pandas takes a while).
        echo "$h5 $tmp/$task-$att.json --task $task --attention $att --heads $H --d-model $D" \
            "--layers $L --grassmann-rank $R --steps $S" >>"$tmp/h5checks"
        pass "$what: status ok, val_accuracy $(jfield val_accuracy), test_accuracy $(jfield test_accuracy), $S steps, $(jfield n_params) parameters; wrote $(basename "$h5")"
    done
done

# The text output and the progress lines use the same names: validation decides, test is
# measured once at the end.
leaks=0
run train --task charlm --steps "$S" --batch 8 --eval-batches 1 --d-model "$D" --heads "$H" --layers "$L" --seq-len 16
expect_rc 0 "train charlm, text output"
grep -qE '^val_accuracy [0-9.]+  val_loss [0-9.]+ nats  val_bits_per_byte [0-9.]+$' "$tmp/out" &&
    grep -qE '^test_accuracy [0-9.]+  test_loss [0-9.]+ nats  test_bits_per_byte [0-9.]+$' "$tmp/out" &&
    grep -qE '^rank deviation [0-9.]+ \(beyond chance [-+][0-9.]+\)  head correlation [0-9.]+ \(beyond chance [-+][0-9.]+, z -?[0-9.]+\)  reward -?[0-9.]+ \(= val_accuracy - 0.1 x [-+][0-9.]+ - 0.1 x [-+][0-9.]+\)$' "$tmp/out" ||
    fail "train charlm: text output without the val_ and test_ lines: $(cat "$tmp/out")"
grep -qE "step +$S/$S  train_loss [0-9.]+  val_loss [0-9.]+  val_accuracy [0-9.]+  val_bits_per_byte" "$tmp/err" &&
    ! grep -q "test" "$tmp/err" || fail "train charlm: progress line: $(cat "$tmp/err")"
pass "text output: $(grep '^val_' "$tmp/out"); $(grep '^test_' "$tmp/out"); the progress line shows validation only"

# ---------------------------------------------------------------------------
echo "== 3. determinism: same seed, same metrics; another seed, another loss"
for task in fashion_mnist charlm recall; do
    for att in mha tucker linear grassmann; do
        what="rerun $task $att"
        run train --task "$task" --attention "$att" "${tiny[@]}"
        expect_rc 0 "$what"
        a=$(metrics "$tmp/$task-$att.json")
        b=$(metrics "$tmp/out")
        [[ $a == "$b" ]] || fail "$what with the same seed: expected identical JSON metrics
  first:  $a
  second: $b"
    done
    pass "$task: all four variants reproduce their JSON metrics byte for byte"
    run train --task "$task" --attention mha "${tiny[@]}" --seed 2
    expect_rc 0 "$task mha seed 2"
    l1=$("$py" -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["val_loss"]))' "$tmp/$task-mha.json")
    l2=$(jfield val_loss)
    [[ $l1 != "$l2" ]] || fail "$task mha: expected a different loss for seed 2 than for seed 1, got $l1 for both"
    pass "$task mha: seed 1 val_loss $l1, seed 2 val_loss $l2"
done

# ---------------------------------------------------------------------------
echo "== 6. a diverging run is a failed trial, recorded"
# lr·weight_decay = 100: decoupled weight decay multiplies each matrix by (1 − 100) per
# step, so the weights grow ~99× a step and overflow float32 within ~10 steps, whatever
# the data. (--lr 10 --weight-decay 0 --clip 0 does not diverge: Adam's step is bounded
# by lr and LayerNorm keeps activations bounded, so the loss stays large but finite.)
for att in mha grassmann; do
    what="diverging recall $att"
    h5=$tmp/diverge-$att.h5
    run train --task recall --attention "$att" --lr 10 --weight-decay 10 --clip 0 --warmup-frac 0 \
        --steps 30 --batch 8 --eval-batches 1 --d-model $D --heads $H --layers $L --grassmann-rank $R \
        --recall-pairs 4 --quiet --json -o "$h5"
    expect_rc 1 "$what"
    expect_one_error_line "$what"
    grep -qF "attnsweep: train: trial failed: diverged: non-finite" "$tmp/err" ||
        fail "$what: stderr: expected 'attnsweep: train: trial failed: diverged: non-finite ...', got '$(cat "$tmp/err")'"
    [[ $(jfield status) == '"failed"' ]] || fail "$what: JSON status: expected \"failed\", got $(jfield status)"
    [[ $(jfield reason) == *non-finite* ]] || fail "$what: JSON reason: expected it to mention non-finite, got $(jfield reason)"
    cp "$tmp/out" "$tmp/diverge-$att.json"
    [[ -f $h5 ]] && no_partial "$h5" || fail "$what: -o: expected $h5 (a failed trial is recorded) and no .partial"
    echo "$h5 $tmp/diverge-$att.json --task recall --attention $att --heads $H --d-model $D" \
        "--layers $L --grassmann-rank $R --steps 30 --status failed" >>"$tmp/h5checks"
    pass "$what: exit 1, status failed after $(jfield steps) steps, $(jfield reason); wrote $(basename "$h5")"
done

# ---------------------------------------------------------------------------
echo "== 4. the -o files, read back with h5py and pandas"
# Each: /summary has one row agreeing with the JSON (status, attention, the val_ and test_
# metrics, steps) and pandas.DataFrame(f["summary"][:]) works; root attribute yaml has "attention: <variant>";
# curves (a table) has its columns and step increases and ends at the steps; weights/layer0 is [heads, d_k, d_model, 3]
# (mha, tucker, linear) or [grassmann_rank, 1, d_model, 1]; failed trials keep their reason.
: >"$tmp/out"; : >"$tmp/err"  # fail() shows the last run's output; there is none here
"$py" "$checker" --list "$tmp/h5checks" >"$tmp/check" 2>&1 ||
    { sed 's/^/  /' "$tmp/check" >&2; fail "results files written with -o (details above)"; }
pass "$(wc -l <"$tmp/h5checks") results files read back with h5py/pandas and match their JSON"
# A file of format 2 (before the validation split) is refused with one line naming both versions.
"$py" -c 'import h5py, shutil, sys; shutil.copy(sys.argv[1], sys.argv[2]); h5py.File(sys.argv[2], "a").attrs["format_version"] = 2' \
    "$tmp/recall-mha.h5" "$tmp/v2.h5"
rc=0
"$py" "$checker" "$tmp/v2.h5" "$tmp/recall-mha.json" --task recall --attention mha --heads $H --d-model $D \
    --layers $L --grassmann-rank $R --steps $S >"$tmp/check" 2>&1 || rc=$?
[[ $rc == 1 && $(wc -l <"$tmp/check") == 1 ]] && grep -qE "v2.h5: format_version 2 but its schema says [0-9]+" "$tmp/check" ||
    fail "check_trial_h5.py on a format-2 file: expected one line naming both versions, got: $(cat "$tmp/check")"
pass "check_trial_h5.py refuses a format-2 file: $(cat "$tmp/check")"

# ---------------------------------------------------------------------------
echo "== 5. peak memory of the default configuration"
# The default run (Fashion-MNIST ViT, batch 128) must stay under 200 MB: the data and
# every arena are allocated before the first step, so two steps show the peak. Not
# under AddressSanitizer, which multiplies memory.
if [[ -z ${ATTNSWEEP_SANITIZED:-} ]]; then
    run train --steps 2 --eval-batches 1 --quiet --json
    expect_rc 0 "default configuration, 2 steps"
    mb=$(jfield peak_rss_mb)
    /usr/bin/python3 -c "import sys; sys.exit(0 if $mb < 200 else 1)" ||
        fail "default configuration: peak memory $mb MB, expected under 200 MB"
    pass "default configuration: peak memory $mb MB (< 200 MB)"
fi

# ---------------------------------------------------------------------------
left=$(find "$tmp" -name '*.partial*')
[[ -z $left ]] || fail "expected no *.partial files, got: $left"
echo "PASS: $checks checks of attnsweep train in $((SECONDS - start)) s"
