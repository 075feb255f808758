#!/usr/bin/python3
"""The paper-unit table of sweeps/charlm_paper.yaml (scripts/studies/grassmann_paper.sh).

Reads /summary of the results files (the sweep's, and any that follow it with the same
seeds: results/charlm_paper_lr8.h5 widens its lr grid, results/charlm_paper_x4.h5 scales
the offsets by 4, an arm of its own). Arms: mha, grassmann in the paper's block, grassmann
in a pre-LN block. Each arm's learning rate is the one whose finished trials have the
lowest mean validation loss (the sweep's metric); at that lr, mean and sample sd over the
seeds of the loss (nats per byte) and the per-byte perplexity exp(loss), on the
validation split (which chose the lr) and on the test split (which chose nothing). The
gap to mha in the paper's units: relative loss L/L_mha - 1 and relative perplexity
exp(L)/exp(L_mha) - 1, beside the paper's Wikitext-2 numbers (per GPT-2 token there,
per byte here) and the independent reproduction's.
Usage: grassmann_paper_table.py RESULTS.h5 [MORE.h5 ...]
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnsweep.results import BadResults, Results  # noqa: E402  (python/attnsweep/ in the repository)

# Wikitext-2 validation perplexity (Transformer, Grassmann): the paper, arXiv 2512.19428,
# and alphaXiv/paper-implementations (attention_is_not_all_you_need), best validation.
ANCHORS = [("paper, 6 layers, L = 128", 248.4, 275.7), ("paper, 12 layers, L = 256", 235.2, 261.1),
           ("reproduction, 6 layers, L = 128", 181.66, 253.76), ("reproduction, 12 layers, L = 256", 168.68, 245.10)]


# The paper's 6-layer offsets, the sweep's in every layer; an arm with others is an arm apart.
PAPER_OFFSETS = "1,2,4,8,12,16"


def main(paths):
    s = []
    for path in paths:
        try:
            with Results(path) as rs:
                ok = rs.schema.status("ok")
                s.extend(row for _, row in rs.summary.iterrows())
        except BadResults as e:
            sys.exit(f"grassmann_paper_table.py: {e}")
    arms = {}
    for row in s:
        if row["status"] != ok:
            continue
        arm = row["attention"]
        if arm == "grassmann":
            arm += " " + row["grassmann_block"]
            if row["grassmann_offsets"] != PAPER_OFFSETS:
                arm += " offsets " + row["grassmann_offsets"]
        arms.setdefault(arm, {}).setdefault(float(row["lr"]), []).append(row)
    w = max(len(a) for a in arms) if arms else 3
    n_failed = sum(r["status"] != ok for r in s)
    print(f"{', '.join(paths)}: {len(s)} trials, {len(s) - n_failed} ok, {n_failed} not ok; "
          f"{sum(float(r['seconds']) for r in s) / 3600:.2f} h of training")
    print("\nlearning rate sweep: mean val_loss (nats/byte) over the seeds [n]")
    best = {}
    for arm, by_lr in sorted(arms.items()):
        lrs = sorted(by_lr)
        means = {lr: np.mean([r["val_loss"] for r in by_lr[lr]]) for lr in lrs}
        best[arm] = min(lrs, key=lambda lr: means[lr])
        edge = " (at the edge of the grid: widen it)" if len(lrs) > 1 and best[arm] in (lrs[0], lrs[-1]) else ""
        print(f"  {arm:{w}s} " + "  ".join(f"lr {lr:g}: {means[lr]:.4f} [{len(by_lr[lr])}]" for lr in lrs) +
              f"   best {best[arm]:g}{edge}")

    def stats(arm, key):
        v = np.array([r[key] for r in arms[arm][best[arm]]], dtype=float)
        return v.mean(), (v.std(ddof=1) if len(v) > 1 else float("nan")), len(v)

    print("\nat each arm's best lr: mean ± sd over the seeds")
    print(f"  {'arm':{w}s} {'lr':>7s} {'n':>2s} {'params':>9s} {'val loss':>17s} {'test loss':>17s} "
          f"{'test bits/byte':>14s} {'test ppl/byte':>13s}")
    for arm in sorted(arms):
        rows = arms[arm][best[arm]]
        vm, vs, n = stats(arm, "val_loss")
        tm, ts, _ = stats(arm, "test_loss")
        print(f"  {arm:{w}s} {best[arm]:7g} {n:2d} {int(rows[0]['n_params']):9d} {vm:8.4f} ± {vs:6.4f} "
              f"{tm:8.4f} ± {ts:6.4f} {tm / math.log(2):14.4f} {math.exp(tm):13.4f}")
    if "mha" not in arms:
        return 0
    print("\ngap to mha in the paper's units (relative loss, relative perplexity)")
    for split in ("val", "test"):
        base = stats("mha", split + "_loss")[0]
        for arm in sorted(a for a in arms if a != "mha"):
            m = stats(arm, split + "_loss")[0]
            print(f"  {split:4s} {arm:{w}s} loss {m / base - 1:+7.2%}   perplexity per byte "
                  f"{math.exp(m - base) - 1:+7.2%}")
    for name, t, g in ANCHORS:
        print(f"  {name:34s} loss {math.log(g) / math.log(t) - 1:+7.2%}   perplexity per token "
              f"{g / t - 1:+7.2%}   ({t} vs {g})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
