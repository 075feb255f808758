#!/usr/bin/env bash
# test_report_fuzz (issue 32): `attnsweep report` and scripts/analyze.py on byte mutants of a
# real sweep's file (tests/fuzz/results/base.h5: 4 trials of `attnsweep run`, mha and
# grassmann, ok and failed), made from a fixed seed: 1-4 bytes changed each (flipped, set
# to 0x00 or 0xff, a run of 0xff over a count; three in four on a non-zero byte, where the
# structure is). Each report must exit 0, or 2 with one line naming the file, and never
# die of a signal or a sanitizer's report; each analyze.py run likewise (0, or 2 with one
# line). libhdf5 1.10 itself crashes on some (SIGSEGV in H5HG_read, heap overflows under
# H5Aexists): the report reads the file first in a child process (store/h5read.c
# h5read_survives), analyze.py in a forked child.
# Usage: bash tests/test_report_fuzz.sh /path/to/attnsweep [N_REPORT [N_ANALYZE [SEED]]]
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
n_report=${2:-300} n_analyze=${3:-12} seed=${4:-32}  # analyze.py draws most mutants: 8 s each here; the 100-mutant campaign: N_ANALYZE 100
base=$here/fuzz/results/base.h5

# mutants N DIR: N mutants of base.h5 as DIR/NNNN.h5, each change listed in DIR/NNNN.what.
mutants() {
    mkdir -p "$2"
    "$py" - "$base" "$1" "$2" "$seed" <<'PY'
import random, sys
base, n, out, seed = open(sys.argv[1], "rb").read(), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = random.Random(seed)
for m in range(n):
    b, what = bytearray(base), []
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(b))
        for _ in range(64):
            if b[at] or rng.random() < 0.25: break
            at = rng.randrange(len(b))
        kind = rng.randrange(4)
        if kind == 0: b[at] ^= 1 << rng.randrange(8)
        elif kind == 1: b[at] = 0
        elif kind == 2: b[at] = 0xFF
        else: b[at:at + 4] = b"\xff" * len(b[at:at + 4])
        what.append(f"{('flip', '0x00', '0xff', '4 x 0xff')[kind]} at {at}")
    open(f"{out}/{m:04d}.h5", "wb").write(b)
    open(f"{out}/{m:04d}.what", "w").write(", ".join(what) + "\n")
PY
}

# judge WHAT FILE: the last run ($rc, $tmp/err) ended well: 0, or 2 with one line naming FILE.
judge() {
    local what=$1 file=$2
    if [[ $rc == 0 ]]; then
        ok=$((ok + 1))
    elif [[ $rc == 2 && $(wc -l <"$tmp/err") == 1 ]] && grep -qF "$file" "$tmp/err"; then
        refused=$((refused + 1))
        if grep -q "damaged (the HDF5 library failed reading it\|damaged results file (the HDF5 library crashed" "$tmp/err"; then
            died=$((died + 1))
        fi
    else
        cp "$file" "$tmp/../$(basename "$0" .sh)-failed-$(basename "$file")" 2>/dev/null || true
        fail "$what on $file ($(cat "${file%.h5}.what")): exit $rc (kept in ${TMPDIR:-/tmp})"
    fi
}

# campaign WHAT N DIR COMMAND...: COMMAND FILE on each of N mutants made in DIR, judged;
# the counts in ok, refused and died, the start in t0.
campaign() {
    local what=$1 n=$2 dir=$3 f
    shift 3
    mutants "$n" "$dir"
    ok=0 refused=0 died=0 t0=$SECONDS
    for f in "$dir"/*.h5; do
        [[ -e $f ]] || continue
        rc=0
        ASAN_OPTIONS=$asan_noleaks timeout 120 "$@" "$f" >"$tmp/out" 2>"$tmp/err" || rc=$?
        judge "$what" "$f"
    done
}

# ---------------------------------------------------------------------------
echo "== the base file reads  [$((SECONDS - start)) s]"
run report "$base"
expect_rc 0 "report on the unchanged base file"
pass "report on $base: exit 0"

echo "== attnsweep report on $n_report mutants (seed $seed)  [$((SECONDS - start)) s]"
campaign report "$n_report" "$tmp/r" "$bin" report
pass "report on $n_report mutants: $ok read, $refused refused with one line ($died of them killed the reading child), none died; $((SECONDS - t0)) s"

echo "== scripts/analyze.py on $n_analyze mutants  [$((SECONDS - start)) s]"
campaign analyze.py "$n_analyze" "$tmp/a" "$py" "$here/../scripts/analyze.py" -o "$tmp/plots"
pass "analyze.py on $n_analyze mutants: $ok drawn, $refused refused with one line ($died of them killed the reading child), none died; $((SECONDS - t0)) s"

echo "test_report_fuzz: all $checks checks passed in $((SECONDS - start)) s"
