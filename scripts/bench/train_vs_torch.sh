#!/usr/bin/env bash
# Training speed of attnsweep against PyTorch on the same ViT, in one run and one
# environment, with cblas_sgemm throughput as the ceiling.
#
#   scripts/bench/train_vs_torch.sh [--threads T]      (T: BLAS/OpenMP threads, default 1)
#
# With T > 1 each repeat also trains attnsweep on one thread, and the table shows its
# T-thread speed against its own 1-thread speed (a rank's threads: src/model/threads.h).
# Model: attnsweep's default `attnsweep train` (Fashion-MNIST ViT, d_model 64, 4 heads,
# 2 blocks, batch 128, AdamW, 105,098 parameters); scripts/bench/vit_torch.py is its
# PyTorch twin. Each side trains 300 steps, 3 times, interleaved (attnsweep, torch,
# sgemm, attnsweep, torch, sgemm, ...), and the table shows the medians: the machine
# has 2 cores and is often shared, so single runs are noisy (the load average is
# printed).
# OPENBLAS_CORETYPE is left as the environment sets it (both sides use the same
# OpenBLAS, so both see it). It reports; it does not assert: exit 0 when everything
# ran, non-zero only when something failed to run. Takes about 2 minutes.
# ATTN_BUILD=DIR uses the build in DIR (default build; configured there if missing).
set -euo pipefail

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }

threads=1
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads="${2:?--threads needs a value}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "train_vs_torch: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$threads" in ''|*[!0-9]*|0) echo "train_vs_torch: --threads wants a positive integer" >&2; exit 2 ;; esac

steps=300       # timed optimizer steps per run, each side
torch_warmup=10 # untimed PyTorch steps before its clock starts
repeats=3       # interleaved runs per side; the table shows the median

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
py=/usr/bin/python3 # Debian's interpreter: the one python3-torch is installed for

# ---- dependencies and binaries
bash scripts/install-deps.sh python3-torch
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
source scripts/bench/attn_build.sh
attn_build train_vs_torch "$tmp"

# ---- one environment for every run
export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

# field FILE KEY: one value from the JSON object in FILE
field() { "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

for r in $(seq 1 "$repeats"); do
  "$tmp/attnsweep" train --steps "$steps" --eval-every "$steps" --eval-batches 1 --json -q \
    >"$tmp/attnsweep.$r.json"
  GLIBC_TUNABLES="$torch_malloc" "$py" scripts/bench/vit_torch.py --steps "$steps" --warmup "$torch_warmup" \
    --threads "$threads" >"$tmp/torch.$r.json"
  if [ "$threads" -gt 1 ]; then
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$tmp/attnsweep" train --steps "$steps" \
      --eval-every "$steps" --eval-batches 1 --json -q >"$tmp/attnsweep1.$r.json"
  fi
  "$tmp/sgemm_bench" >"$tmp/sgemm.$r.jsonl"
  printf 'run %d/%d: attnsweep %.2f steps/s, PyTorch %.2f steps/s\n' "$r" "$repeats" \
    "$(field "$tmp/attnsweep.$r.json" steps_per_second)" \
    "$(field "$tmp/torch.$r.json" steps_per_second)" >&2
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the report
BENCH_CPU="$(lscpu | sed -n 's/^Model name: *//p'), family $(lscpu | sed -n 's/^CPU family: *//p')\
 model $(lscpu | sed -n 's/^Model: *//p'), $(nproc --all) CPUs"
BENCH_TORCH_DEB="$(dpkg-query -W -f='${Version}' python3-torch)"
export BENCH_CPU BENCH_TORCH_DEB BENCH_TMP="$tmp" BENCH_REPEATS="$repeats" BENCH_STEPS="$steps" \
  BENCH_THREADS="$threads" BENCH_TORCH_WARMUP="$torch_warmup" \
  BENCH_CORETYPE="${OPENBLAS_CORETYPE-<unset>}" \
  BENCH_LOAD="$load_before at start, $load_after at end (1/5/15 min)"
"$py" - <<'EOF'
import json, os, statistics

env = os.environ
tmp, repeats = env["BENCH_TMP"], int(env["BENCH_REPEATS"])
load = lambda name: json.load(open(os.path.join(tmp, name)))
ours = [load(f"attnsweep.{r}.json") for r in range(1, repeats + 1)]
theirs = [load(f"torch.{r}.json") for r in range(1, repeats + 1)]
gemm_runs = []  # per run: the library line, then one line per GEMM case
for r in range(1, repeats + 1):
    with open(os.path.join(tmp, f"sgemm.{r}.jsonl")) as f:
        gemm_runs.append([json.loads(line) for line in f])
blas = gemm_runs[0][0]
gemm = {c["case"]: statistics.median(run[i]["gflop_per_second"] for run in gemm_runs)
        for i, c in enumerate(gemm_runs[0]) if "case" in c}
vit_shapes = [k for k in gemm if k != "square_2000"]

ours_sps = statistics.median(o["steps_per_second"] for o in ours)
theirs_sps = statistics.median(t["steps_per_second"] for t in theirs)
gflop_step = ours[0]["gflop_per_step"]
achieved = ours_sps * gflop_step
vit_gemm = statistics.mean(gemm[k] for k in vit_shapes)

rows = [
    ("attnsweep steps/s (median)", f"{ours_sps:.2f}   runs: "
     + " ".join(f"{o['steps_per_second']:.2f}" for o in ours)),
    ("PyTorch steps/s (median)", f"{theirs_sps:.2f}   runs: "
     + " ".join(f"{t['steps_per_second']:.2f}" for t in theirs)),
    ("ratio attnsweep / PyTorch", f"{ours_sps / theirs_sps:.2f}x   (target >= 2.0 on one thread)"),
    ("parameters attnsweep / PyTorch", f"{ours[0]['n_params']:,} / {theirs[0]['params']:,}"
     + ("" if ours[0]["n_params"] == theirs[0]["params"] else "   MISMATCH: not the same model")),
    ("final loss attnsweep (val_loss) / PyTorch", f"{ours[0]['val_loss']:.3f} / {theirs[0]['loss']:.3f}"
     "   (sanity only: different init and batches)"),
    ("attnsweep GFLOP per step", f"{gflop_step:.3f}"),
    ("attnsweep achieved GFLOP/s", f"{achieved:.1f}   (steps/s x GFLOP per step)"),
    ("sgemm GFLOP/s, 2000^3", f"{gemm['square_2000']:.1f}"),
    ("sgemm GFLOP/s, ViT shapes", "  ".join(f"{k} {gemm[k]:.1f}" for k in vit_shapes)
     + f"   (M = 2176 = 128 x 17 rows; mean {vit_gemm:.1f})"),
    ("attnsweep / sgemm peak", f"{achieved / gemm['square_2000']:.0%} of 2000^3, "
     f"{achieved / vit_gemm:.0%} of the ViT-shape mean (target >= 75%)"),
]
threads = int(env["BENCH_THREADS"])
if threads > 1:
    single = [load(f"attnsweep1.{r}.json")["steps_per_second"] for r in range(1, repeats + 1)]
    rows.append((f"attnsweep {threads} threads / 1 thread",
                 f"{ours_sps / statistics.median(single):.2f}x   (1 thread: {statistics.median(single):.2f} "
                 "steps/s, runs: " + " ".join(f"{s:.2f}" for s in single) + "; target >= 1.6 with 2)"))
width = max(len(name) for name, _ in rows)
print(f"\nattnsweep vs PyTorch: default ViT (Fashion-MNIST, d_model 64, 4 heads, 2 blocks, "
      f"batch 128), {env['BENCH_STEPS']} steps per run, median of {repeats} interleaved runs, "
      f"{env['BENCH_THREADS']} thread(s)")
print("-" * (width + 60))
for name, value in rows:
    print(f"{name:<{width}}  {value}")
print("-" * (width + 60))
print(f"CPU               {env['BENCH_CPU']}")
print(f"threads           OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = torch threads = "
      f"{env['BENCH_THREADS']}")
print(f"OPENBLAS_CORETYPE {env['BENCH_CORETYPE']} (OpenBLAS core in use: {blas['core']})")
print(f"OpenBLAS          {blas['openblas']}")
print(f"torch             {theirs[0]['torch']} (Debian python3-torch {env['BENCH_TORCH_DEB']})")
print(f"load average      {env['BENCH_LOAD']}")
print("notes             2 cores, possibly shared: single runs are noisy, hence medians. "
      "attnsweep's steps/s covers all its steps (no eval);\n"
      f"                  PyTorch's starts after {env['BENCH_TORCH_WARMUP']} "
      "warm-up steps. Both link the same OpenBLAS.")
EOF
