#!/usr/bin/python3
"""sampler_report.py: the report of scripts/bench/sampler_vs_optuna.sh, from the JSON lines
that sampler_bench (attnsweep's samplers) and sampler_vs_optuna.py (Optuna's) print.

    sampler_report.py TABLE.csv PLOT.png RUNS.jsonl PROPOSE.jsonl

Single objective: per sampler, the median and quartiles over seeds of the best value
found after N trials, and of the trials needed to come within eps of the optimum (a seed
that never does counts as never; the median is then '>N' when half of them never do).
The optimum is 1 for the synthetic functions (eps 0.1 for mixed, 0.02 for
conditional) and the table's best mean val_accuracy for the tabular one (eps: the gap to
its third best configuration, so that the top 3 of the grid count). Two objectives: the
hypervolume after N trials (of val_accuracy and correlation scaled to [0, 1] by their
range over the table, 1 best, against (0, 0)), also as a fraction of the whole table's
front's. The proposal time (CPU time of the process, so that other jobs on a shared
machine do not count) is the median over seeds of the mean of the last 10
proposals, in RUNS.jsonl and, with many finished trials, in PROPOSE.jsonl. The plot: per
objective, the median regret of the best so far (the optimum, or the table front's
hypervolume, minus it) against trials on a log axis, quartiles shaded.
"""
import collections
import csv
import json
import math
import sys

import numpy as np

# eps of the synthetic functions (optimum 1): mixed's narrow optimum in 6 parameters is
# reached to 0.1 within 100 trials, conditional's to 0.02
SYNTHETIC_EPS = {"mixed": 0.1, "conditional": 0.02}


def quartiles(xs):
    q1, med, q3 = np.percentile(np.asarray(xs, dtype=float), [25, 50, 75], method="lower")
    return q1, med, q3


def fmt_trials(x, n):
    return f">{n}" if math.isinf(x) else f"{int(x)}"


def hypervolume(points, ref):
    """Two objectives, both larger-is-better, against ref (sampler_vs_optuna.py uses it too)."""
    pts = sorted((p for p in points if p[0] > ref[0] and p[1] > ref[1]), key=lambda p: -p[0])
    area, best_y = 0.0, ref[1]
    for x, y in pts:
        if y > best_y:
            area += (x - ref[0]) * (y - best_y)
            best_y = y
    return area


def table_facts(path):
    with open(path) as f:
        rows = [(float(r["val_accuracy"]), float(r["correlation"])) for r in csv.DictReader(f)]
    accs = sorted((a for a, _ in rows), reverse=True)
    a0, a1 = min(a for a, _ in rows), max(a for a, _ in rows)
    c0, c1 = min(c for _, c in rows), max(c for _, c in rows)
    front = hypervolume([((a - a0) / (a1 - a0), (c1 - c) / (c1 - c0)) for a, c in rows], (0.0, 0.0))
    return {"optimum": accs[0], "eps": accs[0] - accs[2] + 1e-12, "front": front, "n": len(rows)}


def single_objective(name, runs, optimum, eps):
    n = len(next(iter(runs.values()))[0]["values"])
    marks = sorted({m for m in (10, 25, 50, 100, n) if m <= n})
    print(f"\n{name}: {n} trials, {len(next(iter(runs.values())))} seeds per sampler; optimum {optimum:.4f}, "
          f"eps {eps:.4f}")
    head = "".join(f"  best after {m:<3d}      " for m in marks)
    print(f"  {'sampler':<24s}{head}  trials to eps   propose ms")
    curves = {}
    for method, seeds in runs.items():
        best = np.maximum.accumulate(np.array([s["values"] for s in seeds]), axis=1)
        curves[method] = best
        cells = ""
        for m in marks:
            q1, med, q3 = quartiles(best[:, m - 1])
            cells += f"  {med:.4f} [{q1:.4f},{q3:.4f}]"
        reach = [next((i + 1.0 for i, v in enumerate(row) if v >= optimum - eps), math.inf) for row in best]
        q1, med, q3 = quartiles(reach)
        propose = np.median([s["propose_last_ms"] for s in seeds])
        print(f"  {method:<24s}{cells}  {fmt_trials(med, n):>4s} [{fmt_trials(q1, n)},{fmt_trials(q3, n)}]"
              f"  {propose:9.3f}")
    return curves


def multi_objective(name, runs, front):
    n = len(next(iter(runs.values()))[0]["values"])
    marks = sorted({m for m in (10, 25, 50, n) if m <= n})
    print(f"\n{name}: {n} trials, {len(next(iter(runs.values())))} seeds per sampler; hypervolume of val_accuracy "
          f"and correlation scaled to [0, 1] by their range over the table (1 best), against (0, 0); the whole "
          f"table's front: {front:.4f}")
    head = "".join(f"  hypervolume after {m:<3d}  " for m in marks)
    print(f"  {'sampler':<24s}{head}  of the front   propose ms")
    curves = {}
    for method, seeds in runs.items():
        hv = np.array([s["values"] for s in seeds])
        curves[method] = hv
        cells = ""
        for m in marks:
            q1, med, q3 = quartiles(hv[:, m - 1])
            cells += f"  {med:.4f} [{q1:.4f},{q3:.4f}]"
        propose = np.median([s["propose_last_ms"] for s in seeds])
        print(f"  {method:<24s}{cells}  {np.median(hv[:, -1]) / front:10.1%}  {propose:11.3f}")
    return curves


# Each Optuna sampler in the colour of attnsweep's counterpart (TPE: multivariate is
# attnsweep's default, univariate Optuna's).
COLOURS = {"random": "0.45", "sobol": "tab:olive", "evolution": "tab:green", "tpe": "tab:red",
           "tpe-univariate": "tab:purple", "motpe": "tab:red", "motpe-univariate": "tab:purple",
           "optuna-random": "0.45", "optuna-tpe-multivariate": "tab:red", "optuna-tpe": "tab:purple",
           "optuna-nsga2": "tab:blue"}


def plot(panels, path):
    """Per panel the median regret (optimum, or the table front's hypervolume, minus the best
    so far) on a log axis, quartiles shaded; an Optuna sampler dashed in the colour of
    attnsweep's counterpart."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(4.8 * len(panels), 4.2), squeeze=False)
    for ax, (title, ylabel, optimum, curves) in zip(axes[0], panels):
        for method, c in curves.items():
            regret = np.maximum(optimum - c, 1e-5)
            x = np.arange(1, c.shape[1] + 1)
            q1, med, q3 = np.percentile(regret, [25, 50, 75], axis=0)
            ax.plot(x, med, "--" if method.startswith("optuna") else "-", color=COLOURS.get(method, "k"), label=method,
                    lw=1.4)
            ax.fill_between(x, q1, q3, color=COLOURS.get(method, "k"), alpha=0.08, lw=0)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("trials")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle("best so far against trials: median over seeds (quartiles shaded); solid attnsweep, dashed Optuna",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"\nplot: {path}")


def read_runs(path):
    """{objective: {method: [one run per seed]}} from a file of JSON lines."""
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            runs[r["objective"]][r["method"]].append(r)
    return runs


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: sampler_report.py TABLE.csv PLOT.png RUNS.jsonl PROPOSE.jsonl")
    table, png, runs, propose = sys.argv[1:]
    facts = table_facts(table)
    by_objective = read_runs(runs)
    panels = []
    for objective in ("tabular", "mixed", "conditional"):
        if objective in by_objective:
            tab = objective == "tabular"
            curves = single_objective(objective, by_objective[objective], facts["optimum"] if tab else 1.0,
                                      facts["eps"] if tab else SYNTHETIC_EPS[objective])
            optimum = facts["optimum"] if tab else 1.0
            panels.append((objective, "optimum − best val_accuracy" if tab else "optimum − best value", optimum,
                           curves))
    if "tabular-mo" in by_objective:
        curves = multi_objective("tabular-mo", by_objective["tabular-mo"], facts["front"])
        panels.append(("tabular-mo (val_accuracy up, correlation down)", "table front's hypervolume − hypervolume",
                       facts["front"], curves))
    print("\nproposal CPU time with many finished trials (mean of the last 10 proposals, median over seeds):")
    for objective, methods in read_runs(propose).items():
        for method, seeds in methods.items():
            print(f"  {method:<24s} {objective:<11s} {len(seeds[0]['values']) - 10} finished: "
                  f"{np.median([s['propose_last_ms'] for s in seeds]):8.3f} ms")
    plot(panels, png)


if __name__ == "__main__":
    main()
