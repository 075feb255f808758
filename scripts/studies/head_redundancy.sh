#!/usr/bin/env bash
# Head redundancy by ground truth: runs sweeps/study_head_redundancy.yaml, probes every
# finished trial (attnsweep probe: the validation loss with each head's output removed,
# one at a time), and prints per configuration (mean over seeds): the share of heads whose
# removal costs less than 0.01 nats ("free" heads: the function does not need them), the
# largest and the mean loss increase, the function-level Correlation and its z, the heads'
# effective rank z, Spearman's rho between each head's redundancy in the head Gram and its
# loss increase (pooled over layers), and the val accuracy.
# Usage: scripts/studies/head_redundancy.sh [OUT_DIR]     (about 5 minutes on 2 cores)
source "$(dirname "$0")/study.sh"
study_sweep study_head_redundancy
for t in $(/usr/bin/python3 -c "
import h5py; f = h5py.File('$h5', 'r')
print(' '.join(str(r['trial']) for r in f['summary'][:] if r['status'] == b'ok'))"); do
  "$bin" probe "$h5" --trial "$t" --transform none --maps 0 --sigma 0 --cka-examples 200 -q >/dev/null
done
/usr/bin/python3 - "$h5" <<'PY'
import json, sys
import h5py
import numpy as np
FREE = 0.01  # nats: a head whose removal costs less is not needed
f = h5py.File(sys.argv[1], "r")
rows = {}
for r in f["summary"][:]:
    if r["status"] != b"ok":
        continue
    g = f[f"trials/{r['trial']:06d}"]
    a = g["probe/ablation"]
    d = a["delta_loss"][()]
    key = (int(r["heads"]), float(r["lr"]))
    rows.setdefault(key, []).append((float(np.mean(d < FREE)), float(d.max()), float(d.mean()), float(r["correlation"]),
                                     float(r["correlation_z"]), float(r["eff_rank_z"]),
                                     float(a.attrs["spearman_pooled"]), float(r["val_accuracy"])))
print(f"| heads | lr | seeds | free heads (Δloss < {FREE}) | largest Δloss | mean Δloss | Correlation | Corr z | rank z | Spearman ρ (redundancy, Δloss) | val accuracy |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (h, lr), v in sorted(rows.items()):
    m = np.mean(np.array(v), axis=0)
    print(f"| {h} | {lr:g} | {len(v)} | {m[0]:.2f} | {m[1]:.3f} | {m[2]:.3f} | {m[3]:.4f} | {m[4]:.1f} | {m[5]:.1f} | "
          f"{m[6]:+.2f} | {m[7]:.4f} |")
PY
