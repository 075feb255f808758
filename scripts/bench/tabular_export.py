#!/usr/bin/python3
"""tabular_export.py: the table of scripts/bench/sampler_vs_optuna.sh's tabular benchmark,
from the results file of the grid sweep sweeps/tabular_fashion.yaml.

    attnsweep sweep sweeps/tabular_fashion.yaml      (about 50 minutes on 2 cores)
    tabular_export.py results/tabular_fashion.h5 scripts/bench/data/tabular_fashion.csv

One row per configuration (attention, lambda_orth, lr, d_model, layers), with the mean over its
repeats of val_accuracy and correlation, and the number of repeats. Only the validation
split: the benchmark is a search, and no search reads the test split. Exits with one line
when a trial did not finish ok (a table with holes would flatter whichever sampler
avoided them).
"""
import collections
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnsweep.results import BadResults, Results  # noqa: E402  (python/attnsweep/ in the repository)

KEY = ("attention", "lambda_orth", "lr", "d_model", "layers")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: tabular_export.py RESULTS.h5 OUT.csv")
    try:
        with Results(sys.argv[1]) as rs:
            s, ok = rs.summary, rs.schema.status("ok")
    except BadResults as e:
        sys.exit(f"tabular_export.py: {e}")
    rows = collections.defaultdict(list)
    for _, r in s.iterrows():
        if r["status"] != ok:
            sys.exit(f"tabular_export.py: {sys.argv[1]}: trial {r['trial']} is {r['status']}, not ok")
        key = (r["attention"], float(r["lambda_orth"]), float(r["lr"]), int(r["d_model"]), int(r["layers"]))
        rows[key].append((float(r["val_accuracy"]), float(r["correlation"])))
    with open(sys.argv[2], "w", newline="") as out:
        w = csv.writer(out)
        w.writerow(KEY + ("val_accuracy", "correlation", "repeats"))
        for key in sorted(rows):
            acc, corr = np.mean(rows[key], axis=0)
            w.writerow((key[0], f"{key[1]:g}", f"{key[2]:g}", key[3], key[4], f"{acc:.6f}", f"{corr:.6f}", len(rows[key])))
    print(f"tabular_export.py: {len(rows)} configurations, {len(s)} trials -> {sys.argv[2]}")


if __name__ == "__main__":
    main()
