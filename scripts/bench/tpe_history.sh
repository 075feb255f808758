#!/usr/bin/env bash
# TPE's bounded history (the YAML's tpe: {history: N}, default 500: only the most recent N
# finished observations of the bad group make kernels; src/space/tpe.c): what it saves and
# what it costs, against the whole history (history: 0, bit for bit the TPE before the bound).
#
#   scripts/bench/tpe_history.sh [--seeds N] [--long-seeds N]
#
# 1. Proposal CPU time against finished trials (500, 2,000, 5,000, 10,000) on the mixed
#    space of sampler_bench.c: the history is that many random trials (n_startup), then
#    the mean of 10 proposals; default bound and whole history, and their ratio.
# 2. Quality where the bound bites, scaled down: 100 trials with history 25 against the
#    whole history on the tabular, mixed and conditional objectives of
#    sampler_vs_optuna.sh (--seeds seeds, default 30; seeds 1..N, the same for both, so
#    paired): median [quartiles] of the trials to eps and of the best after 100, and a
#    two-sided Wilcoxon signed-rank test of the paired trials to eps (unreached: 101).
# 3. Quality at scale: mixed, 2,000 trials, the default bound against the whole history
#    (--long-seeds seeds, default 4): the best after 2,000 and the mean value of the last
#    500 trials (how well the proposals keep to the optimum).
# Reports; asserts nothing. About 6 minutes on 2 cores (most of it in part 3's whole history).
set -euo pipefail
seeds=30
long=4
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --long-seeds) long="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "tpe_history: unknown argument '$1' (allowed: --seeds N, --long-seeds N)" >&2; exit 2 ;;
  esac
done
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
build="${ATTN_BUILD:-build}"
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target sampler_bench >/dev/null
bench="$build/bench/sampler_bench"
table=scripts/bench/data/tabular_fashion.csv
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3

echo "1. proposal CPU ms on the mixed space against finished trials (mean of 10 proposals)"
printf '%9s %12s %14s %8s\n' finished "history 500" "whole history" ratio
for n in 500 2000 5000 10000; do
  b=$("$bench" "tpe:n_startup=$n" mixed 1 $((n + 10)) | "$py" -c 'import json,sys; print(json.load(sys.stdin)["propose_last_ms"])')
  w=$("$bench" "tpe:n_startup=$n,history=0" mixed 1 $((n + 10)) | "$py" -c 'import json,sys; print(json.load(sys.stdin)["propose_last_ms"])')
  printf '%9d %12.2f %14.2f %8.1f\n' "$n" "$b" "$w" "$("$py" -c "print($w / $b)")"
done

for objective in tabular mixed conditional; do
  "$bench" tpe:history=25 "$objective" "$seeds" 100 "$table" >"$tmp/$objective-25.jsonl" &
  "$bench" tpe:history=0 "$objective" "$seeds" 100 "$table" >"$tmp/$objective-0.jsonl"
  wait
done
"$bench" tpe mixed "$long" 2000 >"$tmp/long-500.jsonl" &
"$bench" tpe:history=0 mixed "$long" 2000 >"$tmp/long-0.jsonl"
wait

"$py" - "$tmp" "$table" "$seeds" <<'PY'
import csv, json, math, sys
import numpy as np
from scipy.stats import wilcoxon
tmp, table, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
accs = sorted((float(r["val_accuracy"]) for r in csv.DictReader(open(table))), reverse=True)
goal = {"tabular": (accs[0], accs[0] - accs[2] + 1e-12), "mixed": (1.0, 0.1), "conditional": (1.0, 0.02)}
runs = lambda f: [json.loads(l)["values"] for l in open(f"{tmp}/{f}.jsonl")]
q = lambda xs: "%.4g [%.4g, %.4g]" % (np.median(xs), *np.percentile(xs, [25, 75]))
print(f"\n2. 100 trials, {seeds} seeds (paired): history 25 against the whole history")
print(f"{'objective':<12} {'':<8} {'trials to eps':>24} {'best after 100':>30}")
for obj, (opt, eps) in goal.items():
    reach = {}
    for h in ("25", "0"):
        vals = runs(f"{obj}-{h}")
        reach[h] = [next((i + 1 for i, v in enumerate(r) if v >= opt - eps), 101) for r in vals]
        best = [max(r) for r in vals]
        print(f"{obj:<12} {'h ' + h if h != '0' else 'whole':<8} {q(reach[h]):>24} {q(best):>30}")
    d = np.array(reach["25"]) - np.array(reach["0"])
    p = wilcoxon(reach["25"], reach["0"]).pvalue if np.any(d != 0) else 1.0
    print(f"{'':<12} paired: bounded sooner in {int((d < 0).sum())}, later in {int((d > 0).sum())}, "
          f"Wilcoxon p = {p:.2f}")
print("\n3. mixed, 2,000 trials: history 500 (the default) against the whole history, per seed")
for h in ("500", "0"):
    vals = runs(f"long-{h}")
    print(f"  {'history 500' if h == '500' else 'whole history':<14} best " +
          " ".join("%.4f" % max(r) for r in vals) + "   mean of the last 500 " +
          " ".join("%.4f" % np.mean(r[-500:]) for r in vals))
PY
