#!/usr/bin/python3
"""The report of scripts/bench/seq_scaling.sh: its table, its targets and its plot.

    /usr/bin/python3 scripts/bench/seq_scaling_report.py RUNS.jsonl PLOT.png

RUNS.jsonl holds one line per run: {"side": "attnsweep" | "torch", "variant", "seq_len",
"repeat", ...the run's JSON output} (a PyTorch run skipped for its memory has no
steps_per_second), and {"side": "sgemm", "repeat", "seq_len", "variant", "gflop_per_second",
...} measured just before each attnsweep run (older files: one before each L's runs, without
variant, or one per repeat, without seq_len).
Every number shown is the median over the repeats. Tokens/s is optimizer steps/s x batch x
L; attnsweep's GFLOP/s is steps/s x its own count of the step's useful floating-point work
(model_flops_per_step: the causal triangle only, no recomputation). Its share of sgemm is
each run's GFLOP/s over the sgemm 2000^3 rate measured beside it (just before it: the
host's speed drifts over minutes), the median of those. Memory is
each process's peak resident set (ru_maxrss: attnsweep with its data set and MPI, PyTorch
with the interpreter and torch's libraries, which the "torch base" column shows as
measured before the model was built).
The environment's BENCH_CPU, BENCH_LOAD and BENCH_MEM_AVAILABLE_MB go into the footer.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

VARIANTS = ("mha", "tucker", "linear", "grassmann")
COLOURS = {"mha": "tab:blue", "tucker": "tab:orange", "linear": "tab:green", "grassmann": "tab:red"}


def load(path):
    runs = defaultdict(list)  # (side, variant, L) -> [run]
    sgemm = {}  # (repeat, L or None, variant or None) -> GFLOP/s
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["side"] == "sgemm":
                sgemm[(r["repeat"], r.get("seq_len"), r.get("variant"))] = r["gflop_per_second"]
            else:
                runs[(r["side"], r["variant"], r["seq_len"])].append(r)
    return runs, sgemm


def beside(sgemm, r):
    """The sgemm rate measured beside run r: just before it, else before its L's runs, else in its repeat."""
    for key in ((r["repeat"], r["seq_len"], r["variant"]), (r["repeat"], r["seq_len"], None), (r["repeat"], None, None)):
        if key in sgemm:
            return sgemm[key]
    return statistics.median(sgemm.values())


def median(rs, key):
    values = [r[key] for r in rs if key in r]
    return statistics.median(values) if values else None


def summarise(runs, sgemm):
    """(variant, L) -> the medians both sides' rows need."""
    rows = {}
    for (side, variant, L), rs in runs.items():
        if side != "attnsweep":
            continue
        theirs = runs.get(("torch", variant, L), [])
        tokens = rs[0]["config"]["batch"] * L
        row = {"ours": median(rs, "steps_per_second") * tokens,
               "gflops": statistics.median(r["steps_per_second"] * r["gflop_per_step"] for r in rs),
               "share": statistics.median(r["steps_per_second"] * r["gflop_per_step"] / beside(sgemm, r) for r in rs),
               "ours_mb": median(rs, "peak_rss_mb"),
               "theirs": None, "theirs_mb": median(theirs, "peak_rss_mb"),
               "torch_base_mb": median(theirs, "rss_before_model_mb"),
               "params": (rs[0]["n_params"], theirs[0].get("params") if theirs else None)}
        sps = median(theirs, "steps_per_second")
        if sps is not None:
            row["theirs"] = sps * tokens
        rows[(variant, L)] = row
    return rows


def fmt(x, spec, missing="skipped"):
    return missing if x is None else format(x, spec)


def table(rows):
    lengths = sorted({L for _, L in rows})
    variants = [v for v in VARIANTS if any((v, L) in rows for L in lengths)]
    head = (f"{'L':>5}  {'variant':<9}  {'attnsweep tok/s':>15}  {'PyTorch tok/s':>13}  {'ratio':>6}  "
            f"{'GFLOP/s':>7}  {'of sgemm':>8}  {'MB ours':>7}  {'MB torch':>8}  {'torch base':>10}")
    print(head)
    print("-" * len(head))
    for L in lengths:
        for v in variants:
            r = rows.get((v, L))
            if r is None:
                continue
            ratio = None if r["theirs"] is None else r["ours"] / r["theirs"]
            mismatch = "" if r["params"][1] in (None, r["params"][0]) else \
                f"   PARAMETERS DIFFER: {r['params'][0]} / {r['params'][1]}"
            print(f"{L:>5}  {v:<9}  {r['ours']:>15,.0f}  {fmt(r['theirs'], '>13,.0f'):>13}  "
                  f"{fmt(ratio, '>5.2f', '-'):>5}x  {r['gflops']:>7.1f}  {r['share']:>8.0%}  "
                  f"{r['ours_mb']:>7.0f}  {fmt(r['theirs_mb'], '>8.0f'):>8}  "
                  f"{fmt(r['torch_base_mb'], '>10.0f', '-'):>10}{mismatch}")
    return lengths


def targets(rows, lengths):
    """Issue 17's targets, each with what was measured."""
    def get(v, L, key):
        r = rows.get((v, L))
        return None if r is None else r[key]

    lines = []
    mha = [(L, get("mha", L, "ours") / get("mha", L, "theirs")) for L in lengths
           if get("mha", L, "theirs") is not None]
    if mha:
        worst = min(mha, key=lambda x: x[1])
        lines.append(("mha >= 2x PyTorch at every L", worst[1] >= 2.0,
                      f"lowest {worst[1]:.2f}x at L = {worst[0]}"))
    long = [(L, get("mha", L, "share")) for L in lengths if L >= 512 and get("mha", L, "share")]
    if long:
        worst = min(long, key=lambda x: x[1])
        lines.append(("mha >= 60% of sgemm at L >= 512", worst[1] >= 0.6,
                      f"lowest {worst[1]:.0%} at L = {worst[0]}"))
    lin = [(L, get("linear", L, "share")) for L in lengths if get("linear", L, "share")]
    if lin:
        worst = min(lin, key=lambda x: x[1])
        lines.append(("linear >= 60% of sgemm", worst[1] >= 0.6, f"lowest {worst[1]:.0%} at L = {worst[0]}"))
    if get("mha", 2048, "ours_mb") and get("linear", 2048, "ours_mb"):
        q = get("mha", 2048, "ours_mb") / get("linear", 2048, "ours_mb")
        lines.append(("mha's memory at L = 2048 within 2x linear's", q <= 2.0, f"{q:.2f}x"))
    print("\ntargets (issue 17)")
    for name, ok, what in lines:
        print(f"  {'met    ' if ok else 'NOT MET'}  {name:<46} {what}")


def plot(rows, lengths, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for v in VARIANTS:
        Ls = [L for L in lengths if (v, L) in rows]
        if not Ls:
            continue
        for side, key, mkey, style in (("attnsweep", "ours", "ours_mb", "-o"),
                                       ("PyTorch", "theirs", "theirs_mb", "--x")):
            pts = [(L, rows[(v, L)][key], rows[(v, L)][mkey]) for L in Ls if rows[(v, L)][key] is not None]
            if pts:
                ax_t.plot([p[0] for p in pts], [p[1] for p in pts], style, color=COLOURS[v],
                          label=f"{v} ({side})", markersize=4)
                ax_m.plot([p[0] for p in pts], [p[2] for p in pts], style, color=COLOURS[v], markersize=4)
    for ax, label in ((ax_t, "training tokens / s (1 thread)"), (ax_m, "peak resident memory (MB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length L (batch 8)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=7, ncol=2)
    fig.suptitle("character LM, d_model 64, 4 heads, 2 blocks: attnsweep (solid) and PyTorch 1.13 (dashed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    runs, sgemm = load(sys.argv[1])
    rows = summarise(runs, sgemm)
    print("\nattnsweep vs PyTorch against sequence length: character LM, batch 8, d_model 64, "
          "4 heads, 2 blocks, 1 thread, medians")
    lengths = table(rows)
    targets(rows, lengths)
    plot(rows, lengths, sys.argv[2])
    env = os.environ
    rates = sorted(sgemm.values())
    which = ("its repeat's" if any(L is None for _, L, _ in sgemm) else
             "its L's, measured before that L's runs" if any(v is None for _, _, v in sgemm) else
             "the one just before its run")
    print(f"\nsgemm 2000^3     {statistics.median(rates):.1f} GFLOP/s (median of {len(rates)}, "
          f"{rates[0]:.1f} to {rates[-1]:.1f}; each share is of {which})")
    print(f"CPU              {env.get('BENCH_CPU', '?')}")
    print(f"load average     {env.get('BENCH_LOAD', '?')}")
    print(f"MemAvailable     {env.get('BENCH_MEM_AVAILABLE_MB', '?')} MB at start "
          "(a PyTorch mha/tucker run estimated above half of it, or above 4 GB, is skipped)")
    print(f"plot             {sys.argv[2]}")


if __name__ == "__main__":
    main()
