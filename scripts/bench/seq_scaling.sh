#!/usr/bin/env bash
# Training speed and memory against sequence length: attnsweep's character LM and its
# PyTorch twin (scripts/bench/lm_torch.py) for the four attention variants, in one run,
# with cblas_sgemm's 2000^3 rate as the ceiling.
#
#   scripts/bench/seq_scaling.sh [--lengths "64 256 1024"] [--variants "mha linear"]
#                                [--repeats N] [--tokens N] [--out DIR]
#
# Model: `attnsweep train --task charlm --batch 8 --seq-len L` with the default model
# (d_model 64, 4 heads, 2 blocks), one thread (OPENBLAS_NUM_THREADS = OMP_NUM_THREADS =
# torch threads = 1). Each run trains about --tokens tokens (default 65536: 128 steps at
# L = 64): PyTorch at least 2 steps after one untimed warm-up step, attnsweep at least 8
# (from L = 1024), since its clock counts its first step (about 5 % slower than the rest
# at L = 4096: under 1 % of a run of 8). PyTorch runs with glibc's malloc keeping its
# freed blocks (attn_build.sh, torch_malloc): no page faults in its timed steps, and its
# peak memory counts the blocks it keeps.
# For each L and variant the two sides run one after the other, --repeats times (default
# 3); the sgemm benchmark runs just before each attnsweep run, and each run's share of
# the sgemm rate is of that one (the host's speed drifts over minutes, and a PyTorch run
# can take minutes); the table shows medians. PyTorch's plain
# softmax keeps (B, heads, L, L) tensors: a PyTorch mha or tucker run whose estimate,
# (layers + 3) x B x heads x L^2 x 4 bytes, exceeds 4 GB or half of MemAvailable is
# skipped and marked so: at L = 4096 (10 GB, tensors of 2 GB; with the freed blocks kept
# about 4x the 5.9 GB measured at 2048, near the machines' 24 GB).
# Prints the table of seq_scaling_report.py (tokens/s of both sides and their ratio,
# attnsweep's GFLOP/s and its share of the sgemm rate, peak resident memory of both) and
# writes DIR/seq_scaling.png and the runs (DIR/seq_scaling.jsonl; DIR: results/bench);
# `seq_scaling_report.py DIR/seq_scaling.jsonl PNG` redraws from them. Reports; asserts
# nothing: exit 0 when everything ran. About 25 minutes on an idle machine with the defaults.
# ATTN_BUILD=DIR uses the build in DIR (default build; configured there if missing).
set -euo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }

lengths="64 128 256 512 1024 2048 4096"
variants="mha tucker linear grassmann"
repeats=3
tokens=65536
out=results/bench
while [ $# -gt 0 ]; do
  case "$1" in
    --lengths) lengths="${2:?--lengths needs a value}"; shift 2 ;;
    --variants) variants="${2:?--variants needs a value}"; shift 2 ;;
    --repeats) repeats="${2:?--repeats needs a value}"; shift 2 ;;
    --tokens) tokens="${2:?--tokens needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "seq_scaling: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for n in $lengths $repeats $tokens; do
  case "$n" in ''|*[!0-9]*|0) echo "seq_scaling: '$n' is not a positive integer" >&2; exit 2 ;; esac
done
for v in $variants; do
  case "$v" in mha|tucker|linear|grassmann) ;;
    *) echo "seq_scaling: unknown variant '$v' (mha, tucker, linear, grassmann)" >&2; exit 2 ;; esac
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
py=/usr/bin/python3 # Debian's interpreter: the one python3-torch is installed for

bash scripts/install-deps.sh python3-torch
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
source scripts/bench/attn_build.sh
attn_build seq_scaling "$tmp"
mkdir -p "$out"
runs="$out/seq_scaling.jsonl"
: >"$runs"

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
batch=8 layers=2 heads=4
avail_kb="$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

# record SIDE VARIANT L REPEAT FILE: one line of the runs file from a run's JSON output
record() {
  "$py" -c 'import json, sys
side, variant, L, rep, path = sys.argv[1:]
r = json.load(open(path)) if path else {}
print(json.dumps({"side": side, "variant": variant, "seq_len": int(L), "repeat": int(rep), **r}))' \
    "$@" >>"$runs"
}

# sgemm REPEAT L VARIANT: the sgemm 2000^3 rate now, a line of the runs file
sgemm() {
  "$tmp/sgemm_bench" square_2000 | "$py" -c 'import json, sys
for line in sys.stdin:
    c = json.loads(line)
    if c.get("case") == "square_2000":
        r, L, v = sys.argv[1:]
        print(json.dumps({"side": "sgemm", "repeat": int(r), "seq_len": int(L), "variant": v, **c}))' \
    "$@" >>"$runs"
}

for r in $(seq 1 "$repeats"); do
  for L in $lengths; do
    steps=$(( tokens / (batch * L) )); [ "$steps" -ge 8 ] || steps=8
    torch_steps=$(( tokens / (batch * L) )); [ "$torch_steps" -ge 2 ] || torch_steps=2
    for v in $variants; do
      sgemm "$r" "$L" "$v"
      "$tmp/attnsweep" train --task charlm --attention "$v" --batch "$batch" --seq-len "$L" \
        --steps "$steps" --eval-every "$steps" --eval-batches 1 --json -q >"$tmp/ours.json"
      record attnsweep "$v" "$L" "$r" "$tmp/ours.json"
      need_kb=$(( (layers + 3) * batch * heads * L * L * 4 / 1024 ))
      if [ "$v" != linear ] && [ "$v" != grassmann ] && { [ "$need_kb" -gt $(( avail_kb / 2 )) ] || [ "$need_kb" -gt $(( 4 << 20 )) ]; }; then
        record torch "$v" "$L" "$r" ""  # skipped: no steps_per_second
      else
        GLIBC_TUNABLES="$torch_malloc" "$py" scripts/bench/lm_torch.py --attention "$v" --seq-len "$L" \
          --batch "$batch" --steps "$torch_steps" --warmup 1 --threads 1 >"$tmp/theirs.json"
        record torch "$v" "$L" "$r" "$tmp/theirs.json"
      fi
      echo "seq_scaling: run $r/$repeats L=$L $v done" >&2
    done
  done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

BENCH_CPU="$(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) CPUs" \
BENCH_LOAD="$load_before at start, $load_after at end (1/5/15 min)" \
BENCH_MEM_AVAILABLE_MB=$(( avail_kb / 1024 )) \
  "$py" scripts/bench/seq_scaling_report.py "$runs" "$out/seq_scaling.png"
