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
import sys

import h5py
import numpy as np

KEY = ("attention", "lambda_orth", "lr", "d_model", "layers")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: tabular_export.py RESULTS.h5 OUT.csv")
    with h5py.File(sys.argv[1], "r") as f:
        s = f["summary"][:]
    rows = collections.defaultdict(list)
    for r in s:
        if r["status"].decode() != "ok":
            sys.exit(f"tabular_export.py: {sys.argv[1]}: trial {r['trial']} is {r['status'].decode()}, not ok")
        key = (r["attention"].decode(), float(r["lambda_orth"]), float(r["lr"]), int(r["d_model"]), int(r["layers"]))
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
