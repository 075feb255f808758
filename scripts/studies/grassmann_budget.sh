#!/usr/bin/env bash
# The Grassmann-attention gap as a curve over the training budget: runs
# sweeps/study_grassmann_budget.yaml with a coordinator and two workers, then prints for
# each budget and arm the lr chosen on validation (the lower mean val_loss over seeds) and
# the gap to mha at its own chosen lr: relative loss L / L_mha - 1 on validation and on test
# (which chose nothing), mean over the seeds.
# Usage: scripts/studies/grassmann_budget.sh [OUT_DIR]     (about 7 minutes on 2 cores)
source "$(dirname "$0")/study.sh"
study_sweep study_grassmann_budget --resume
/usr/bin/python3 - "$h5" <<'PY'
import sys
import h5py
import numpy as np
import pandas as pd
df = pd.DataFrame(h5py.File(sys.argv[1], "r")["summary"][:])
for c in df.columns:
    if df[c].dtype == object:
        df[c] = df[c].str.decode("ascii")
df = df[df.status == "ok"]
df["arm"] = np.where(df.attention == "mha", "mha",
                     np.where(df.grassmann_offsets.str.count(",") == 5, "grassmann (1,2,4,8,12,16)", "grassmann (1..16)"))
mean = df.groupby(["config_steps", "arm", "lr"])[["val_loss", "test_loss"]].agg(["mean", "count"])
best = {}
for (steps, arm), g in mean.groupby(level=[0, 1]):
    i = g[("val_loss", "mean")].idxmin()
    best[(steps, arm)] = (i[2], g.loc[i, ("val_loss", "mean")], g.loc[i, ("test_loss", "mean")], g.loc[i, ("val_loss", "count")])
print("| budget (steps) | arm | lr | seeds | val loss | test loss | gap (val) | gap (test) |")
print("|---|---|---|---|---|---|---|---|")
for steps in sorted({k[0] for k in best}):
    ref = best.get((steps, "mha"))
    for arm in ("mha", "grassmann (1,2,4,8,12,16)", "grassmann (1..16)"):
        if (steps, arm) not in best:
            continue
        lr, v, t, n = best[(steps, arm)]
        gv = f"{100 * (v / ref[1] - 1):+.1f} %" if ref and arm != "mha" else ""
        gt = f"{100 * (t / ref[2] - 1):+.1f} %" if ref and arm != "mha" else ""
        print(f"| {int(steps)} | {arm} | {lr:g} | {int(n)} | {v:.4f} | {t:.4f} | {gv} | {gt} |")
PY
