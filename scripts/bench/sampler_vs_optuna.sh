#!/usr/bin/env bash
# attnsweep's samplers against Optuna's (python3-optuna) on the same objectives, in one run.
#
#   scripts/bench/sampler_vs_optuna.sh [--seeds N] [--out DIR]
#
# Objectives (sampler_bench.c, sampler_vs_optuna.py; evaluated in process, no training):
#   tabular      the recorded grid of sweeps/tabular_fashion.yaml (576 configurations of
#                variant x lambda_orth x lr x d_model x layers, mean val_accuracy of 2
#                seeds, scripts/bench/data/tabular_fashion.csv), replayed; 100 trials
#   mixed        a synthetic function over every parameter kind; 100 trials
#   conditional  a synthetic function whose relevant parameter depends on the variant; 100
#   tabular-mo   the table, maximise val_accuracy and minimise correlation; 100 trials
# Samplers: attnsweep's random, sobol, evolution, tpe (multivariate, its default) and
# tpe-univariate (and motpe, motpe-univariate for tabular-mo); Optuna's TPESampler (univariate and multivariate), RandomSampler and, for
# tabular-mo, NSGAIISampler and TPESampler (MOTPE). --seeds seeds each (default 30).
# Then the proposal CPU time with 500 finished trials (mixed, tabular-mo; 3 seeds). Prints the
# report of sampler_report.py (median and quartiles of the best after N trials and of the
# trials to eps; hypervolume; proposal times) and writes DIR/sampler_vs_optuna.png (DIR:
# results/bench by default) and the runs it was drawn from (DIR/runs.jsonl,
# DIR/propose.jsonl: sampler_report.py redraws from them). Reports; asserts nothing.
# About 3 minutes on 2 cores.
# ATTN_BUILD=DIR builds the benchmark in DIR (default build; configured there if missing).
set -euo pipefail

seeds=30
out=results/bench
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sampler_vs_optuna: unknown argument '$1' (allowed: --seeds N, --out DIR)" >&2; exit 2 ;;
  esac
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
py=/usr/bin/python3
if ! "$py" -c 'import optuna' 2>/dev/null; then
  echo "sampler_vs_optuna: needs Optuna: apt-get install python3-optuna" >&2
  exit 2
fi
build="${ATTN_BUILD:-build}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "sampler_vs_optuna: configuring attnsweep (Release) in $build" >&2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target sampler_bench >/dev/null  # CMakeLists.txt: the benchmarks
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$build/bench/sampler_bench" "$tmp/sampler_bench"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
table=scripts/bench/data/tabular_fashion.csv

# Two at a time (2 cores); each line of output is one seed's run.
jobs=()
run() {  # run FILE COMMAND...: in the background, at most 2 at once
  local file="$1"; shift
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  { "$@" >"$file" || echo "sampler_vs_optuna: failed: $*" >>"$tmp/failed"; } &
  jobs+=("$file")
}
finish() {  # finish FILE: wait for every run, stop on a failed one, gather their output
  wait
  if [ -s "$tmp/failed" ]; then cat "$tmp/failed" >&2; exit 1; fi
  cat "${jobs[@]}" >"$1"
}
ours() { run "$tmp/$1-$2.jsonl" "$tmp/sampler_bench" "$1" "$2" "$3" "$4" "$table"; }
theirs() { run "$tmp/$1-$2.jsonl" "$py" scripts/bench/sampler_vs_optuna.py "$1" "$2" "$3" "$4" "$table"; }

echo "sampler_vs_optuna: $seeds seeds per sampler and objective..." >&2
for objective in tabular:100 mixed:100 conditional:100; do
  name="${objective%:*}" n="${objective#*:}"
  for m in random sobol evolution tpe tpe-univariate; do ours "$m" "$name" "$seeds" "$n"; done
  for m in optuna-tpe optuna-tpe-multivariate optuna-random; do theirs "$m" "$name" "$seeds" "$n"; done
done
for m in random motpe motpe-univariate; do ours "$m" tabular-mo "$seeds" 100; done
for m in optuna-nsga2 optuna-tpe optuna-random; do theirs "$m" tabular-mo "$seeds" 100; done
finish "$tmp/runs.jsonl"

echo "sampler_vs_optuna: proposal time with 500 finished trials..." >&2
jobs=()
ours tpe mixed 3 510
ours tpe-univariate mixed 3 510
ours motpe tabular-mo 3 510
theirs optuna-tpe mixed 3 510
theirs optuna-nsga2 tabular-mo 3 510
finish "$tmp/propose.jsonl"

mkdir -p "$out"
cp "$tmp/runs.jsonl" "$tmp/propose.jsonl" "$out/"
"$py" scripts/bench/sampler_report.py "$table" "$out/sampler_vs_optuna.png" "$out/runs.jsonl" "$out/propose.jsonl"
