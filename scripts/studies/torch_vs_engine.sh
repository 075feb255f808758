#!/usr/bin/env bash
# The PyTorch example trainer against the built-in engine on the same configurations:
# sweeps/torch_fashion.yaml (examples/torch/train.py through the trial protocol, its
# checkpoints scored by attnsweep) and sweeps/fashion_variants.yaml at lambda_orth 0
# (the same four variants, seeds, steps, evaluations and reward), each with a
# coordinator and two workers, then one table: per variant the mean over the two seeds
# of val and test accuracy, the scores, the reward and the seconds a trial took.
# A stopped run continues where it was (--resume).
# Usage: scripts/studies/torch_vs_engine.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ -x build/attnsweep ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 >/dev/null; }
bash scripts/install-deps.sh python3-torch
# The sweep's command is W&B's default, ${interpreter} being python3 on PATH: Debian's,
# the one python3-torch is installed for.
export PATH=/usr/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1
mkdir -p results
engine=results/engine_fashion.yaml
sed -e 's/^name: fashion_variants$/name: engine_fashion/' \
    -e 's/^  lambda_orth: .*/  lambda_orth: {value: 0}/' sweeps/fashion_variants.yaml >"$engine"
for sweep in sweeps/torch_fashion.yaml "$engine"; do
  name=$(basename "$sweep" .yaml)
  ./build/attnsweep validate "$sweep" >/dev/null
  mpirun --oversubscribe -np 3 ./build/attnsweep run "$sweep" -o "results/$name.h5" --resume --quiet
done
/usr/bin/python3 - results/torch_fashion.h5 results/engine_fashion.h5 <<'EOF'
import sys
import h5py
import numpy as np

cols = ["val_accuracy", "test_accuracy", "rank_deviation", "correlation", "reward", "seconds"]
rows = {}
for path, side in zip(sys.argv[1:], ["PyTorch (examples/torch/train.py)", "attnsweep engine"]):
    with h5py.File(path, "r") as f:
        s = f["summary"][:]
    names = s.dtype.names
    attn = "attention" if "attention" in names else next(n for n in names if n.endswith("attention"))
    for v in ["mha", "tucker", "linear", "grassmann"]:
        sel = [r for r in s if r[attn].decode().strip("\0") == v and r["status"].decode().startswith("ok")]
        if not sel:
            continue
        vals = {c: np.array([r[c] for r in sel], dtype=float) for c in cols}
        rows.setdefault(v, []).append((side, len(sel), vals))
print("| variant | trainer | seeds | " + " | ".join(cols) + " |")
print("|---|---|---|" + "---|" * len(cols))
for v, sides in rows.items():
    for side, n, vals in sides:
        cells = []
        for c in cols:
            x = vals[c]
            fmt = "{:.1f}" if c == "seconds" else "{:.4f}"
            cells.append(fmt.format(x.mean()) + (" ± " + fmt.format(x.std(ddof=1)) if n > 1 else ""))
        print(f"| {v} | {side} | {n} | " + " | ".join(cells) + " |")
print("\n(mean ± sample sd over the seeds; seconds: wall-clock per trial, training, evaluations and scoring)")
EOF
