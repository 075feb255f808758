#!/usr/bin/python3
"""Check one `attnsweep train -o FILE.h5` results file against the run's --json output.

Usage: check_trial_h5.py FILE.h5 RUN.json --task T --attention A --heads H --d-model D
                         --layers L --grassmann-rank R --steps S [--status ok|failed]
       check_trial_h5.py --list CHECKS.txt    (one line of the arguments above per file;
                                               one interpreter start for many files)

Reads the file through python/attnsweep/results.py (h5py, pandas) and checks the layout of the
docs/results-file.md, as the schema the file carries names it (python/attnsweep:
a file without one is one failed check): one /summary row that agrees with the JSON
(validation and test metrics), the trial group with its curve and its final
attention tensors, the root "yaml" attribute. Prints one line per failed check
(expected vs got) and exits 1 if any failed; prints nothing and exits 0 otherwise.
"""
import argparse
import json
import math
import os
import shlex
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnsweep.results import Results  # noqa: E402

failures = []


def check(ok, what, expected, got):
    if not ok:
        failures.append(f"{what}: expected {expected}, got {got}")
    return ok


def same_number(a, b):
    """Equal to the digits cJSON prints (15 significant, not always the exact double);
    JSON writes NaN and infinities as null."""
    if b is None:
        return a is not None and not math.isfinite(a)
    return math.isclose(a, b, rel_tol=1e-14) or (math.isnan(a) and math.isnan(b))


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("h5")
    ap.add_argument("json")
    ap.add_argument("--task", required=True)
    ap.add_argument("--attention", required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--d-model", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--grassmann-rank", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True, help="steps asked for")
    ap.add_argument("--status", default="ok")
    a = ap.parse_args(argv)
    with open(a.json) as fj:
        run = json.load(fj)

    with Results(a.h5) as rs:
        where = a.h5
        # The /summary metrics with a test twin, and their keys in --json (trial/metrics.h);
        # bits per byte for charlm only.
        VAL = tuple(m for m in rs.schema.metrics if m.startswith("val_") and "test_" + m[4:] in rs.schema.metrics)
        TEST = tuple("test_" + m[4:] for m in VAL)
        # Root attributes: the configuration as YAML.
        yaml = rs.yaml
        for line in (f"attention: {a.attention}", f"task: {a.task}", f"heads: {a.heads}"):
            check(line in yaml.splitlines(), f"{where}: root attribute yaml has the line '{line}'",
                  "present", repr(yaml[:200]))

        # /summary: one row that agrees with the JSON.
        df = rs.summary
        check(len(df) == 1, f"{where}: /summary rows", 1, len(df))
        columns_ok = True
        for col in ("trial", "status", "attention", "steps", "seconds") + VAL + TEST:
            columns_ok &= check(col in df.columns, f"{where}: /summary has column '{col}'", "present",
                                list(df.columns))
        if not columns_ok or len(df) != 1:
            return
        row = df.iloc[0]
        check(row["attention"] == a.attention, f"{where}: /summary attention", a.attention, row["attention"])
        check(row["status"] == a.status, f"{where}: /summary status", a.status, row["status"])
        check(row["status"] == run["status"], f"{where}: /summary status vs JSON", run["status"], row["status"])
        for col in VAL + TEST:
            if a.task == "charlm" or not col.endswith("bits_per_byte"):
                check(same_number(float(row[col]), run[col]), f"{where}: /summary {col} vs JSON", run[col],
                      float(row[col]))
            else:  # NaN in /summary, absent from --json
                check(math.isnan(float(row[col])) and col not in run, f"{where}: {col} of a {a.task} trial",
                      "NaN in /summary and no JSON key", (float(row[col]), run.get(col)))
        check(int(row["steps"]) == run["steps"], f"{where}: /summary steps vs JSON", run["steps"],
              int(row["steps"]))
        if a.status == "ok":
            check(int(row["steps"]) == a.steps, f"{where}: /summary steps", a.steps, int(row["steps"]))
            for col in ("val_accuracy", "test_accuracy"):
                check(0.0 <= float(row[col]) <= 1.0, f"{where}: /summary {col} in [0, 1]", "[0, 1]", float(row[col]))
            if a.task == "charlm":
                check(math.isclose(float(row["test_bits_per_byte"]), float(row["test_loss"]) / math.log(2),
                                   rel_tol=1e-12), f"{where}: test_bits_per_byte = test_loss / ln 2",
                      float(row["test_loss"]) / math.log(2), float(row["test_bits_per_byte"]))
        else:
            for col in TEST:  # measured only for a trial that finished
                check(math.isnan(float(row[col])), f"{where}: /summary {col} of a failed trial", "NaN",
                      float(row[col]))
            check(int(row["steps"]) < a.steps, f"{where}: /summary steps of a failed trial", f"< {a.steps}",
                  int(row["steps"]))

        # The trial group.
        attrs = rs.trial_attrs(0)
        check(attrs.get("status") == a.status, f"{where}: /trials/000000 status attribute", a.status,
              attrs.get("status"))
        reason = attrs.get("reason", "")
        check(reason == run["reason"], f"{where}: /trials/000000 reason vs JSON", repr(run["reason"]),
              repr(reason))
        if a.status == "failed":
            check("non-finite" in reason, f"{where}: reason of the failed trial mentions 'non-finite'",
                  "'...non-finite...'", repr(reason))
        config = attrs["config"]
        check(config.get("attention") == a.attention, f"{where}: config attribute attention", a.attention,
              config.get("attention"))

        # Curves: a table with every column, step increasing, ending at the steps taken.
        curves = rs.trial(0)["curves"]  # the dataset itself: its columns in their on-disk order are checked
        columns = list(curves.dtype.names or ())
        want_columns = rs.schema.curve_columns
        check(columns == want_columns, f"{where}: curves columns", want_columns, columns)
        step = curves["step"] if "step" in columns else np.zeros(0)
        check(len(step) >= 1, f"{where}: curves step length", ">= 1", len(step))
        if len(step):
            check(bool(np.all(np.diff(step) > 0)), f"{where}: curves step strictly increasing", "increasing",
                  step.tolist())
            if a.status == "ok":
                check(int(step[-1]) == a.steps, f"{where}: curves step last", a.steps, int(step[-1]))
            check(int(step[-1]) <= run["steps"], f"{where}: curves step last <= steps taken",
                  f"<= {run['steps']}", int(step[-1]))
            if "val_accuracy" in columns:  # the summary's validation metrics are the last evaluation's
                check(same_number(float(curves["val_accuracy"][-1]), float(row["val_accuracy"])),
                      f"{where}: curves val_accuracy last vs /summary", float(row["val_accuracy"]),
                      float(curves["val_accuracy"][-1]))

        # Final attention tensors, one per layer.
        if a.attention == "grassmann":
            shape = (a.grassmann_rank, 1, a.d_model, 1)
        else:  # the whole network's view: the biases as a last column (format 4)
            shape = (a.heads, a.d_model // a.heads, a.d_model + 1, 3)
        weights = rs.weights(0)
        names = [name for name, _ in weights]
        want = [f"layer{k}" for k in range(a.layers)]
        check(names == want, f"{where}: weights/ datasets", want, names)
        for k, (_, w) in enumerate(weights):
            check(w.shape == shape, f"{where}: weights/layer{k} shape [{a.attention}]", shape, w.shape)
            check(w.dtype == np.float32, f"{where}: weights/layer{k} dtype", "float32", w.dtype)
            if a.status == "ok":
                check(bool(np.all(np.isfinite(w))) and float(np.abs(w).max()) > 0,
                      f"{where}: weights/layer{k} finite and not all zero", "finite, nonzero",
                      f"max |w| = {np.abs(w).max()}")


def check_file(argv):
    try:
        main(argv)
    except Exception as e:  # a missing group or attribute is a failed check, not a traceback
        failures.append(f"{argv[0]}: cannot read: {type(e).__name__}: {e}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--list":
        with open(sys.argv[2]) as fl:
            lines = [shlex.split(line) for line in fl if line.strip()]
        if not lines:
            failures.append(f"{sys.argv[2]}: no files to check")
        for argv in lines:
            check_file(argv)
    else:
        check_file(sys.argv[1:])
    for line in failures:
        print(line)
    sys.exit(1 if failures else 0)
