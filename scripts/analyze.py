#!/usr/bin/python3
"""Plot an attnsweep results file.

Usage: scripts/analyze.py RESULTS.h5 [-o OUTDIR] [--top N]

Reads the file written by `attnsweep run` (or `attnsweep train -o`, `attnsweep score`
of a trial) and writes into OUTDIR (default: RESULTS_plots/ beside the file):

  learning_curves.png       validation accuracy and training loss against step, one line
                            per trial, one column per attention variant
  reward_vs_parameters.png  reward against every swept parameter that varies (one panel
                            each; categorical parameters as categories)
  pareto.png                val_accuracy against Correlation and against RankDeviation: every
                            trial a point, the non-dominated ones highlighted and joined
  objectives.png            a motpe sweep: its first objective against each other one, the
                            front over all of them highlighted, its hypervolume in the title
  invariants_VARIANT.png    per variant: head singular values normalised by their sum and
                            head correlation per layer against step, one line per trial,
                            coloured by the regulariser strength that varies
  cp_roles_trialNNNNNN.png  CP role weights (Q, K, V) of each component, per layer, for
                            the best --top trials by reward (default 4; 0: every trial)
  plots.json                the exact numbers every figure plots, keyed by file name

Every metric (val_accuracy, rank_deviation, correlation, reward, the curves, the invariants,
the CP role vectors) is read from the file, never recomputed; the only arithmetic is the
normalisation of the head singular values by their sum and the Pareto dominance test.
Like the report, it selects and ranks by validation metrics only (the test metrics are
measured once per trial and only printed beside them). A list of the files written goes
to stdout. A missing file, a file that is not HDF5 or not an attnsweep results file of
format_version 3 ends with one line on stderr and exit code 2.

Needs only Debian's python3-h5py, -numpy, -matplotlib (Agg), -pandas and -yaml.
"""
import argparse
import json
import math
import os
import sys
import textwrap

import h5py
import numpy as np
import yaml

# matplotlib (Agg) and pandas are imported by import_plotting() once the input has been
# checked, so that a bad file is reported at once.
matplotlib = mcolors = plt = Line2D = MaxNLocator = pandas = None


def import_plotting():
    global matplotlib, mcolors, plt, Line2D, MaxNLocator, pandas
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator
    import pandas

PROG = "analyze.py"
FORMAT_VERSION = 3
DPI = 120

# The metric columns of /summary (README "Results file"); every other column except
# trial and status is a trial parameter.
METRICS = ("val_accuracy", "val_loss", "val_bits_per_byte", "test_accuracy", "test_loss",
           "test_bits_per_byte", "rank_deviation", "correlation", "correlation_chance", "reward", "steps",
           "n_params", "seconds")
REQUIRED = ("trial", "status", "attention", "val_accuracy", "test_accuracy", "rank_deviation",
            "correlation", "reward")
NOT_SWEPT = ("trial", "status", "seed")  # seed = sweep seed * 1000 + repeat: the repeat
REGULARISERS = ("lambda_orth", "lambda_nuclear", "lambda_stability", "lambda_l2")
VARIANT_ORDER = ("mha", "tucker", "linear", "grassmann")
VARIANT_COLOURS = {"mha": "C0", "tucker": "C1", "linear": "C2", "grassmann": "C3"}
STATUS_MARKERS = {"ok": "o", "pruned": "v", "failed": "X"}
ROLE_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")

# Axis labels with units for the parameters that have one.
PARAM_LABELS = {
    "lr": "lr (peak learning rate)",
    "min_lr_ratio": "min_lr_ratio (fraction of lr)",
    "warmup_frac": "warmup_frac (fraction of steps)",
    "weight_decay": "weight_decay (decoupled, per unit lr)",
    "clip": "clip (gradient norm)",
    "config_steps": "steps (requested, steps)",
    "epochs": "epochs",
    "batch": "batch (sequences per step)",
    "eval_every": "eval_every (steps)",
    "eval_batches": "eval_batches (batches)",
    "d_model": "d_model (features)",
    "heads": "heads",
    "layers": "layers",
    "mlp_ratio": "mlp_ratio (MLP width / d_model)",
    "core_rank": "core_rank (tucker core rank)",
    "grassmann_rank": "grassmann_rank (reduced dimension r)",
    "seq_len": "seq_len (bytes)",
    "recall_pairs": "recall_pairs (pairs per sequence)",
    "recall_vocab": "recall_vocab (tokens)",
    "stability_window": "stability_window (steps)",
    "lambda_orth": "lambda_orth (penalty weight)",
    "lambda_nuclear": "lambda_nuclear (penalty weight)",
    "lambda_stability": "lambda_stability (penalty weight)",
    "lambda_l2": "lambda_l2 (penalty weight)",
}
PRETTY = {"correlation": "Correlation", "rank_deviation": "RankDeviation"}
LABEL_STEP = "step (optimizer steps)"
LABEL_ACC = "validation accuracy (fraction)"
LABEL_TRAIN_LOSS = "training loss (nats per prediction)"
LABEL_REWARD = "reward (fraction)"
LABEL_CORR = "Correlation (mean |cos| between heads, 0-1)"
LABEL_RD = "RankDeviation (fraction of r_max, 0-1)"


class BadInput(Exception):
    """A problem with the input: one line on stderr, exit code 2."""


def die(msg, code=2):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(code)


# ----------------------------------------------------------------------------------
# Reading

def text(v):
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v)


def clean(x):
    """numpy values and arrays to JSON-ready Python values; NaN and inf to None."""
    if isinstance(x, np.ndarray):
        return clean(x.tolist())
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (np.bytes_, bytes)):
        return x.decode()
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def open_results(path):
    """Open and check the file; returns (h5py.File, summary DataFrame)."""
    if not os.path.exists(path):
        raise BadInput(f"{path}: no such file")
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a directory, not a results file")
    if not os.access(path, os.R_OK):
        raise BadInput(f"{path}: cannot read it (permission denied)")
    if not h5py.is_hdf5(path):
        raise BadInput(f"{path}: not an HDF5 file (expected an attnsweep results file)")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        hint = ""
        if "lock" in str(e).lower():
            hint = (" (is the sweep still running? HDF5 locks a file open for writing: "
                    "wait for it to end or copy it)")
        raise BadInput(f"{path}: cannot open it: {str(e).splitlines()[0]}{hint}") from None
    if "format_version" not in f.attrs:
        raise BadInput(f"{path}: not an attnsweep results file (no format_version attribute)")
    fv = f.attrs["format_version"]
    try:
        fv = int(np.asarray(fv).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        raise BadInput(f"{path}: format_version {fv!r} is not an integer") from None
    if fv != FORMAT_VERSION:
        writer = text(f.attrs.get("version", "an unknown attnsweep"))
        raise BadInput(f"{path}: format_version {fv}; this script reads format_version "
                       f"{FORMAT_VERSION} (written by {writer})")
    if "summary" not in f:
        if "family" in f.attrs:
            raise BadInput(f"{path}: the scores of a checkpoint ({text(f.attrs['family'])}) "
                           f"have no /summary; analyze a sweep's or a trial's results file")
        raise BadInput(f"{path}: no /summary table")
    table = f["summary"][:]
    missing = [c for c in REQUIRED
               if table.dtype.names is None or c not in table.dtype.names]
    if missing:
        raise BadInput(f"{path}: /summary lacks {', '.join(missing)} (not the attnsweep layout)")
    if len(table) == 0:
        raise BadInput(f"{path}: /summary holds no trials yet")
    if "trials" not in f:
        raise BadInput(f"{path}: no /trials group")
    import_plotting()
    df = pandas.DataFrame(table)
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].map(text)
    df = df.sort_values("trial", kind="stable").reset_index(drop=True)
    return f, df


def trial_group(f, trial):
    name = f"{int(trial):06d}"
    return f["trials"][name] if name in f["trials"] else None


def variants_of(df):
    seen = list(dict.fromkeys(df["attention"]))
    return [v for v in VARIANT_ORDER if v in seen] + [v for v in seen if v not in VARIANT_ORDER]


def variant_colour(v):
    """A fixed colour per attention variant, the same in every figure."""
    if v in VARIANT_COLOURS:
        return VARIANT_COLOURS[v]
    return f"C{4 + sum(map(ord, v)) % 6}"  # an unknown variant: stable across runs


def swept_parameters(df):
    """Parameter columns of /summary whose value differs between the trials of df."""
    params = [c for c in df.columns if c not in METRICS and c not in NOT_SWEPT]
    return [c for c in params if df[c].nunique(dropna=False) > 1]


def is_categorical(series):
    return series.dtype == object


# ----------------------------------------------------------------------------------
# Figures. Each returns the record of what it plotted (for plots.json).

def new_figure(nrows, ncols, w, h, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False, **kw)
    return fig, axes


def save(fig, outdir, name, written, colourbar=None):
    """Tight layout (leaving a strip on the right for a colour bar), dpi 120, close."""
    path = os.path.join(outdir, name)
    if colourbar is None:
        fig.tight_layout()
    else:
        fig.tight_layout(rect=(0, 0, 0.9, 1))
        cax = fig.add_axes((0.915, 0.12, 0.015, 0.76))
        fig.colorbar(colourbar[0], cax=cax, label=colourbar[1])
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    written.append(name)


def suptitle(fig, text, fontsize=12):
    """A figure title wrapped to the figure's width."""
    width = max(40, int(fig.get_figwidth() * 130 / fontsize))
    fig.suptitle("\n".join(textwrap.wrap(text, width)), fontsize=fontsize)


def status_legend_handles(statuses):
    if "pruned" not in statuses:
        return []  # every point ran to the budget: nothing to tell apart
    names = {"ok": "ok (ran to the budget)", "pruned": "pruned by ASHA"}
    return [Line2D([], [], color="0.3", linestyle="none", marker=STATUS_MARKERS.get(s, "o"),
                   label=names[s]) for s in ("ok", "pruned") if s in statuses]


def plot_learning_curves(f, df, title, outdir, written):
    variants = variants_of(df)
    fig, axes = new_figure(2, len(variants), 4.0, 3.2, sharex="all", sharey="row")
    record = {"kind": "learning_curves", "x": "step", "y": ["val_accuracy", "train_loss"],
              "series": []}
    styles = {"ok": "-", "pruned": "--", "failed": ":"}
    losses = {"kept": [], "failed": []}
    failed_max = {}  # column -> largest training loss of a failed trial
    for j, v in enumerate(variants):
        sub = df[df["attention"] == v]
        colour = variant_colour(v)
        for _, row in sub.iterrows():
            g = trial_group(f, row["trial"])
            s = {"trial": int(row["trial"]), "variant": v, "status": row["status"],
                 "step": [], "val_accuracy": [], "train_loss": []}
            if g is not None and "curves" in g:
                c = g["curves"]
                s["step"] = c["step"][:]
                s["val_accuracy"] = c["val_accuracy"][:]
                s["train_loss"] = c["train_loss"][:]
            record["series"].append(s)
            if len(s["step"]) == 0:
                continue
            failed = row["status"] == "failed"
            style = dict(color=colour, alpha=0.5 if failed else 0.75, lw=1.2,
                         linestyle=styles.get(row["status"], "-"),
                         marker=("x" if failed else ".") if len(s["step"]) <= 25 else None)
            axes[0, j].plot(s["step"], s["val_accuracy"], **style)
            axes[1, j].plot(s["step"], s["train_loss"], **style)
            losses["failed" if failed else "kept"].extend(np.asarray(s["train_loss"], float))
            if failed:
                fin = np.asarray(s["train_loss"], float)
                fin = fin[np.isfinite(fin)]
                if len(fin):
                    failed_max[j] = max(failed_max.get(j, -np.inf), fin.max())
        counts = sub["status"].value_counts()
        parts = [f"{int(counts[k])} {k}" for k in ("ok", "pruned", "failed") if k in counts]
        axes[0, j].set_title(f"{v}: {len(sub)} trial{'s' if len(sub) != 1 else ''} "
                             f"({', '.join(parts)})", color=colour)
        axes[0, j].set_ylabel(LABEL_ACC if j == 0 else "")
        axes[1, j].set_ylabel(LABEL_TRAIN_LOSS if j == 0 else "")
        axes[1, j].set_xlabel(LABEL_STEP)
        axes[1, j].xaxis.set_major_locator(MaxNLocator(integer=True))
        for i in range(2):
            axes[i, j].grid(alpha=0.3)
        shown = [k for k in ("ok", "pruned", "failed") if k in counts]
        if len(shown) > 1:
            names = {"ok": "ran to the budget", "pruned": "pruned by ASHA",
                     "failed": "failed (until it diverged)"}
            for k in shown:
                axes[0, j].plot([], [], color=colour, linestyle=styles[k], label=names[k])
            axes[0, j].legend(fontsize=8, loc="best")
    # The loss axis follows the trials that did not fail: a diverging trial's last
    # evaluation (up to 1e17 nats) would flatten every other curve.
    kept = np.array([x for x in losses["kept"] if math.isfinite(x)])
    every = np.array([x for x in losses["kept"] + losses["failed"] if math.isfinite(x)])
    ref = kept if len(kept) else every
    if len(ref):
        lo, hi = ref.min(), ref.max()
        if lo > 0 and hi / lo > 20:
            axes[1, 0].set_yscale("log")
            axes[1, 0].set_ylim(lo / 1.3, hi * 1.3)
        else:
            pad = 0.06 * (hi - lo) if hi > lo else 0.05 * abs(hi) + 0.05
            axes[1, 0].set_ylim(lo - pad, hi + pad)
        for j, m in failed_max.items():
            if m > hi * 1.3:
                axes[1, j].annotate(f"failed trials reach {m:.3g} nats (off the axis)",
                                    (0.02, 0.97), xycoords="axes fraction", fontsize=7,
                                    va="top")
    suptitle(fig, f"{title}: learning curves, one line per trial (validation accuracy at each "
                  f"evaluation; training loss: mean since the previous evaluation)")
    save(fig, outdir, "learning_curves.png", written)
    return record


def plot_reward_vs_parameters(df, title, outdir, written, notes):
    have = df[np.isfinite(df["reward"].astype(float))]
    params = swept_parameters(have)
    only_failed = [p for p in swept_parameters(df) if p not in params]
    if only_failed:
        notes.append(f"reward_vs_parameters.png: {', '.join(only_failed)} "
                     f"{'vary' if len(only_failed) > 1 else 'varies'} only between "
                     f"trials without a reward (failed): no panel")
    if not params:
        notes.append("reward_vs_parameters.png not written: no parameter varies between the "
                     "trials with a reward")
        return None
    ncols = min(3, len(params))
    nrows = math.ceil(len(params) / ncols)
    fig, axes = new_figure(nrows, ncols, 4.2, 3.4, sharey=True)
    record = {"kind": "reward_vs_parameters", "y": "reward", "panels": []}
    for k, p in enumerate(params):
        ax = axes[k // ncols, k % ncols]
        cat = is_categorical(df[p])
        panel = {"parameter": p, "categorical": bool(cat), "trial": have["trial"].tolist(),
                 "x": have[p].tolist(), "y": have["reward"].tolist(),
                 "status": have["status"].tolist(), "variant": have["attention"].tolist()}
        if cat:
            cats = list(dict.fromkeys(sorted(have[p].unique(), key=lambda c: (
                VARIANT_ORDER.index(c) if c in VARIANT_ORDER else len(VARIANT_ORDER), c))))
            panel["categories"] = cats
            # A small deterministic spread inside each category so repeats stay visible.
            xs = np.zeros(len(have))
            for ci, cname in enumerate(cats):
                idx = np.flatnonzero(have[p].to_numpy() == cname)
                if len(idx) > 1:
                    xs[idx] = ci + np.linspace(-0.18, 0.18, len(idx))
                elif len(idx):
                    xs[idx] = ci
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats, rotation=20 if max(len(c) for c in cats) > 8 else 0)
            ax.set_xlim(-0.6, len(cats) - 0.4)
        else:
            xs = have[p].to_numpy(dtype=float)
            vals = xs
            pos = vals[vals > 0]
            if len(pos) and (vals >= 0).all() and pos.max() / pos.min() >= 10:
                if (vals > 0).all():
                    ax.set_xscale("log")
                else:
                    ax.set_xscale("symlog", linthresh=pos.min())
        for status in ("ok", "pruned"):
            for v in variants_of(have):
                m = ((have["status"] == status) & (have["attention"] == v)).to_numpy()
                if m.any():
                    ax.scatter(xs[m], have["reward"].to_numpy()[m], s=26, alpha=0.8,
                               color=variant_colour(v), marker=STATUS_MARKERS[status],
                               edgecolor="k", linewidth=0.3)
        ax.set_xlabel(PARAM_LABELS.get(p, p))
        if k % ncols == 0:
            ax.set_ylabel(LABEL_REWARD)
        ax.set_title(p)
        ax.grid(alpha=0.3)
        record["panels"].append(panel)
    for k in range(len(params), nrows * ncols):
        axes[k // ncols, k % ncols].set_visible(False)
    handles = [Line2D([], [], color=variant_colour(v), marker="o", linestyle="none", label=v)
               for v in variants_of(have)] + status_legend_handles(set(have["status"]))
    axes[0, 0].legend(handles=handles, fontsize=8, loc="best")
    n_failed = len(df) - len(have)
    extra = f"; {n_failed} failed trial(s) without a reward not shown" if n_failed else ""
    suptitle(fig, f"{title}: reward (= val_accuracy - beta RankDeviation - gamma Correlation, as "
                  f"stored) against each swept parameter ({len(have)} trials{extra})")
    save(fig, outdir, "reward_vs_parameters.png", written)
    return record


def pareto_front(x, y):
    """Indices of the points not dominated when x is minimised and y maximised
    (q dominates p when x_q <= x_p and y_q >= y_p, one of them strictly), by x."""
    idx = []
    for i in range(len(x)):
        dominated = np.any((x <= x[i]) & (y >= y[i]) & ((x < x[i]) | (y > y[i])))
        if not dominated:
            idx.append(i)
    return sorted(idx, key=lambda i: (x[i], -y[i]))


def sweep_objectives(f):
    """A motpe sweep's objectives from its stored YAML: [(name, maximise)], else []."""
    try:
        space = yaml.safe_load(text(f.attrs.get("yaml", "")))
    except yaml.YAMLError:
        return []
    objectives = space.get("objectives") if isinstance(space, dict) else None
    if not isinstance(objectives, list) or len(objectives) < 2:
        return []
    return [(o["name"], o.get("goal", "maximize") != "minimize") for o in objectives]


def hypervolume(points, ref):
    """The volume that points (rows; every coordinate larger-is-better) dominate above
    ref, by slicing along the first coordinate."""
    pts = points[np.all(points > ref, axis=1)]
    if len(pts) == 0:
        return 0.0
    if pts.shape[1] == 1:
        return float(pts[:, 0].max() - ref[0])
    volume, xs = 0.0, np.sort(np.unique(pts[:, 0]))[::-1]
    for i, x in enumerate(xs):
        below = xs[i + 1] if i + 1 < len(xs) else ref[0]
        volume += (x - below) * hypervolume(pts[pts[:, 0] >= x][:, 1:], ref[1:])
    return volume


def plot_objectives(f, df, title, outdir, written):
    """A motpe sweep: the first objective against each other one, the trials that no
    other dominates on all of them highlighted, and the front's hypervolume (against the
    worst of each objective over the finished trials, as attnsweep report)."""
    objectives = sweep_objectives(f)
    names = [n for n, _ in objectives]
    if not objectives or not all(n in df.columns for n in names):
        return None
    sub = df[df["status"] == "ok"]
    gain = np.column_stack([sub[n].to_numpy(dtype=float) * (1 if up else -1) for n, up in objectives])
    keep = np.all(np.isfinite(gain), axis=1)
    sub, gain = sub[keep], gain[keep]
    front = [i for i in range(len(gain))
             if not np.any(np.all(gain >= gain[i], axis=1) & np.any(gain > gain[i], axis=1))]
    ref = gain.min(axis=0) if len(gain) else np.zeros(len(objectives))
    hv = hypervolume(gain[front], ref) if front else 0.0
    record = {"kind": "objectives", "objectives": [{"name": n, "goal": "maximize" if up else "minimize"}
                                                   for n, up in objectives],
              "hypervolume": hv, "reference": [r if up else -r for r, (_, up) in zip(ref, objectives)],
              "front_trials": [int(sub["trial"].iloc[i]) for i in front], "trial": sub["trial"].tolist()}
    fig, axes = new_figure(1, len(objectives) - 1, 5.2, 4.4)
    y_name, y_up = objectives[0]
    for ax, (x_name, x_up) in zip(axes[0], objectives[1:]):
        x, y = sub[x_name].to_numpy(dtype=float), sub[y_name].to_numpy(dtype=float)
        for v in variants_of(sub):
            m = (sub["attention"] == v).to_numpy()
            ax.scatter(x[m], y[m], s=24, alpha=0.45, color=variant_colour(v), linewidth=0, label=v)
        for i in front:
            ax.scatter([x[i]], [y[i]], s=70, color=variant_colour(sub["attention"].iloc[i]), edgecolor="k",
                       linewidth=1.3, zorder=4)
            ax.annotate(f"{int(sub['trial'].iloc[i])}", (x[i], y[i]), xytext=(4, 4), textcoords="offset points",
                        fontsize=7)
        ax.set_xlabel(f"{x_name} ({'higher' if x_up else 'lower'} is better)")
        ax.set_ylabel(f"{y_name} ({'higher' if y_up else 'lower'} is better)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    suptitle(fig, f"{title}: the sweep's objectives, {len(front)} of {len(sub)} finished trials on the front "
                  f"(black edge), hypervolume {hv:.4g}")
    save(fig, outdir, "objectives.png", written)
    return record


def plot_pareto(df, title, outdir, written):
    fig, axes = new_figure(1, 2, 5.2, 4.4)
    record = {"kind": "pareto", "y": "val_accuracy", "goal": "maximise val_accuracy, minimise x",
              "panels": []}
    for ax, (metric, label) in zip(axes[0], (("correlation", LABEL_CORR),
                                             ("rank_deviation", LABEL_RD))):
        x_all = df[metric].to_numpy(dtype=float)
        y_all = df["val_accuracy"].to_numpy(dtype=float)
        keep = np.isfinite(x_all) & np.isfinite(y_all)
        sub = df[keep]
        x, y = x_all[keep], y_all[keep]
        front = pareto_front(x, y)
        panel = {"x_metric": metric, "trial": sub["trial"].tolist(), "x": x, "val_accuracy": y,
                 "status": sub["status"].tolist(), "variant": sub["attention"].tolist(),
                 "front_trials": [int(sub["trial"].iloc[i]) for i in front]}
        for v in variants_of(sub):
            for status in ("ok", "pruned"):
                m = ((sub["attention"] == v) & (sub["status"] == status)).to_numpy()
                if m.any():
                    ax.scatter(x[m], y[m], s=24, alpha=0.45, color=variant_colour(v),
                               marker=STATUS_MARKERS[status], linewidth=0)
        handles = [Line2D([], [], color=variant_colour(v), marker="o", linestyle="none",
                          label=v) for v in variants_of(sub)]
        handles += status_legend_handles(set(sub["status"]))
        if front:
            fx, fy = x[front], y[front]
            ax.plot(fx, fy, color="k", lw=1.3, drawstyle="steps-post", zorder=3)
            handles.append(Line2D([], [], color="k", marker="o", markerfacecolor="w",
                                  markeredgewidth=1.3, label=f"Pareto front ({len(front)} "
                                  f"trial{'s' if len(front) != 1 else ''})"))
            for i in front:
                v = sub["attention"].iloc[i]
                ax.scatter([x[i]], [y[i]], s=70, color=variant_colour(v), edgecolor="k",
                           linewidth=1.3, zorder=4,
                           marker=STATUS_MARKERS.get(sub["status"].iloc[i], "o"))
                ax.annotate(f"{int(sub['trial'].iloc[i])}", (x[i], y[i]), xytext=(4, 4),
                            textcoords="offset points", fontsize=7)
        if metric == "correlation" and len(sub):
            # chance: the correlation independent Gaussian heads of the same shapes give,
            # one dotted line per variant in its colour (the shapes differ between them)
            panel["chance"] = {}
            for v in variants_of(sub):
                chance = float(np.nanmedian(sub[sub["attention"] == v]["correlation_chance"]
                                            .to_numpy(dtype=float)))
                panel["chance"][v] = chance
                ax.axvline(chance, color=variant_colour(v), lw=1.0, linestyle=":", zorder=1)
            handles.append(Line2D([], [], color="0.4", lw=1.0, linestyle=":",
                                  label="chance level (dotted, per variant)"))
        if not len(sub):
            ax.text(0.5, 0.5, "no trial with metrics", transform=ax.transAxes, ha="center")
        ax.set_xlabel(label)
        ax.set_ylabel(LABEL_ACC)
        ax.set_title(f"val_accuracy against {PRETTY[metric]}")
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=8, loc="best")
        record["panels"].append(panel)
    n_failed = int((~np.isfinite(df["val_accuracy"].to_numpy(dtype=float))).sum())
    extra = f"; {n_failed} failed trial(s) not shown" if n_failed else ""
    suptitle(fig, f"{title}: Pareto front (black edge: non-dominated; trial ids labelled{extra})")
    save(fig, outdir, "pareto.png", written)
    return record


def regulariser_colouring(df):
    """What the invariant lines are coloured by: the regularisers whose strength varies
    (lambda_orth when none does); discrete colours for up to 10 combinations, else a
    colour map over the first varying one."""
    regs = [r for r in REGULARISERS if r in df.columns and df[r].nunique() > 1]
    if not regs:
        regs = [r for r in REGULARISERS[:1] if r in df.columns]
    if not regs:
        return [], {(): "C0"}, None
    combos = sorted({tuple(float(df[r].iloc[i]) for r in regs) for i in range(len(df))})
    if len(combos) <= 10:
        cmap = matplotlib.colormaps["viridis"]
        colours = {c: cmap(0.9 * k / max(1, len(combos) - 1)) for k, c in enumerate(combos)}
        return regs, colours, None
    vals = df[regs[0]].to_numpy(dtype=float)
    pos = vals[vals > 0]
    if len(pos) and (vals > 0).all() and pos.max() / pos.min() >= 10:
        norm = mcolors.LogNorm(pos.min(), pos.max())
    elif len(pos) and pos.max() / pos.min() >= 10:
        norm = mcolors.SymLogNorm(linthresh=pos.min(), vmin=vals.min(), vmax=vals.max())
    else:
        norm = mcolors.Normalize(vals.min(), vals.max())
    return regs, None, norm


def combo_label(regs, combo):
    return ", ".join(f"{r} = {v:g}" for r, v in zip(regs, combo))


def plot_invariants(f, df, title, outdir, written, notes):
    regs, colours, norm = regulariser_colouring(df)
    cmap = matplotlib.colormaps["viridis"]
    records = {}
    for v in variants_of(df):
        sub = df[df["attention"] == v]
        traces = []
        for _, row in sub.iterrows():
            g = trial_group(f, row["trial"])
            if g is None or "invariants" not in g:
                continue
            inv = g["invariants"]
            step = inv["step"][:]
            if len(step) == 0:
                continue
            traces.append((row, step, inv["head_sv"][:], inv["correlation"][:]))
        chance = (float(np.nanmedian(sub["correlation_chance"].to_numpy(dtype=float)))
                  if len(sub) else float("nan"))
        name = f"invariants_{v}.png"
        if not traces:
            why = "failed" if (sub["status"] == "failed").all() else "no invariants trace"
            notes.append(f"{name} not written: no trial of {v} has an invariant trace ({why})")
            continue
        n_layers = max(t[3].shape[1] for t in traces)
        fig, axes = new_figure(n_layers, 2, 5.0, 2.9, sharex=True)
        colourbar = None
        record = {"kind": "invariants", "variant": v, "colour_by": regs, "x": "step",
                  "y": ["head_sv_normalised", "correlation"], "chance": chance, "series": []}
        groups = set()
        corr_max = max(float(np.nanmax(t[3])) if np.isfinite(t[3]).any() else 0.0
                       for t in traces)
        for row, step, sv, corr in traces:
            combo = tuple(float(row[r]) for r in regs)
            colour = colours[combo] if colours is not None else cmap(norm(combo[0]))
            total = sv.sum(axis=-1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                nsv = np.where(total > 0, sv / np.where(total > 0, total, 1), np.nan)
            groups.add(sv.shape[2])
            series = {"trial": int(row["trial"]), "status": row["status"],
                      "colour_value": dict(zip(regs, combo)), "step": step,
                      "head_sv_normalised": nsv, "correlation": corr}
            record["series"].append(series)
            ls_main = "--" if row["status"] == "pruned" else "-"
            mk = "." if len(step) <= 25 else None
            for layer in range(corr.shape[1]):
                ax_sv, ax_c = axes[layer, 0], axes[layer, 1]
                for i in range(nsv.shape[2]):
                    ax_sv.plot(step, nsv[:, layer, i], color=colour, alpha=0.8,
                               lw=1.4 if i == 0 else 0.9, marker=mk if i == 0 else None,
                               linestyle=ls_main if i == 0 else ":")
                ax_c.plot(step, corr[:, layer], color=colour, alpha=0.8, lw=1.2,
                          linestyle=ls_main, marker=mk)
        for layer in range(n_layers):
            ax_sv, ax_c = axes[layer, 0], axes[layer, 1]
            if len(groups) == 1:
                G = next(iter(groups))
                ax_sv.axhline(1.0 / G, color="0.5", lw=0.8, linestyle="-.", zorder=0)
            ax_sv.set_ylabel(f"layer {layer}: " + r"$\sigma_i\,/\,\Sigma_j\,\sigma_j$" +
                             "\n(fraction)")
            ax_c.set_ylabel(f"layer {layer}: head correlation\n(mean |cos|, 0-1)")
            if np.isfinite(chance):
                ax_c.axhline(chance, color="0.4", lw=1.0, linestyle=":", zorder=0)
            ax_sv.set_ylim(-0.02, 1.02)  # a share of the total: the whole range
            top_c = max(corr_max, chance if np.isfinite(chance) else 0.0)
            ax_c.set_ylim(0, min(1.02, max(0.05, top_c * 1.15)))  # zoomed: small values matter
            for ax in (ax_sv, ax_c):
                ax.grid(alpha=0.3)
        axes[0, 0].set_title("head singular values / their sum\n(solid: largest, dotted: the "
                             "others; dash-dot: equal heads 1/G)", fontsize=9)
        axes[0, 1].set_title("head correlation (1 = heads collapsed onto one direction;\n"
                             "dotted: chance, independent Gaussian heads)", fontsize=9)
        axes[-1, 0].set_xlabel(LABEL_STEP)
        axes[-1, 1].set_xlabel(LABEL_STEP)
        axes[-1, 0].xaxis.set_major_locator(MaxNLocator(integer=True))
        handles = []
        if colours is not None:
            used = sorted({tuple(s["colour_value"][r] for r in regs) for s in record["series"]})
            handles = [Line2D([], [], color=colours[c], lw=2,
                              label=combo_label(regs, c) or "every trial") for c in used]
        else:
            sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
            colourbar = (sm, PARAM_LABELS.get(regs[0], regs[0]))
        if any(s["status"] == "pruned" for s in record["series"]):
            handles.append(Line2D([], [], color="0.3", linestyle="--", label="pruned by ASHA"))
        if handles:
            axes[0, 1].legend(handles=handles, fontsize=8, loc="best")
        n_missing = len(sub) - len(traces)
        extra = (f"; {n_missing} failed trial{'s' if n_missing != 1 else ''} without a trace "
                 f"not shown") if n_missing else ""
        suptitle(fig, f"{title}: {v}, invariants of the attention tensors over training, "
                      f"{len(traces)} trial{'s' if len(traces) != 1 else ''} coloured by "
                      f"{' and '.join(regs) or 'nothing (no regulariser column)'}{extra}")
        save(fig, outdir, name, written, colourbar)
        records[name] = record
    return records


def plot_cp_roles(f, df, title, outdir, written, notes, top):
    scored = []
    for _, row in df.iterrows():
        g = trial_group(f, row["trial"])
        if g is None or "scores" not in g or not math.isfinite(float(row["reward"])):
            continue
        if any("cp_roles" in g["scores"][k].attrs for k in g["scores"]):
            scored.append(row)
    if not scored:
        notes.append("cp_roles_trial*.png not written: no trial has CP role weights "
                     "(failed trials, or scored with --no-cp)")
        return {}
    scored.sort(key=lambda r: (-float(r["reward"]), int(r["trial"])))
    chosen = scored if top == 0 else scored[:top]
    records = {}
    for rank_k, row in enumerate(chosen, 1):
        trial = int(row["trial"])
        g = trial_group(f, trial)
        layers = sorted((k for k in g["scores"]), key=lambda k: int(k[len("layer"):]))
        roles_names = None  # the scored tensor's roles (QK, OV of the function-level tensor)
        if layers:
            roles_names = text(g["scores"][layers[0]].attrs.get("roles", "")).split(",")
        fig, axes = new_figure(1, len(layers), 4.2, 3.4, sharey=True)
        record = {"kind": "cp_roles", "trial": trial, "variant": row["attention"],
                  "reward": float(row["reward"]), "rank_by_reward": rank_k, "layers": []}
        for j, lname in enumerate(layers):
            s = g["scores"][lname]
            ax = axes[0, j]
            if "cp_roles" not in s.attrs:
                ax.text(0.5, 0.5, "CP sweep skipped", transform=ax.transAxes, ha="center")
                continue
            w = s.attrs["cp_roles"]
            R, nroles = w.shape
            names = roles_names if roles_names and len(roles_names) == nroles else \
                [f"role {i}" for i in range(nroles)]
            cp_fit = float(s.attrs.get("cp_fit", float("nan")))
            record["layers"].append({"layer": lname, "cp_rank": int(s.attrs.get("cp_rank", R)),
                                     "cp_fit": cp_fit, "roles": names, "weights": w})
            width = 0.8 / nroles
            for i in range(nroles):
                ax.bar(np.arange(1, R + 1) + (i - (nroles - 1) / 2) * width, w[:, i], width,
                       color=ROLE_COLOURS[i % len(ROLE_COLOURS)], label=names[i])
            ax.axhline(0, color="k", lw=0.6)
            ax.set_xticks(range(1, R + 1))
            ax.set_xlabel("CP component")
            if j == 0:
                ax.set_ylabel("role weight (entry of the unit role vector)")
            extra = " (one role: every weight is 1)" if nroles == 1 else ""
            ax.set_title(f"{lname}: CP rank {R}, fit {cp_fit:.3f}{extra}", fontsize=9)
            ax.set_ylim(-1.05, 1.05)
            ax.grid(alpha=0.3, axis="y")
            ax.legend(fontsize=8, loc="lower right", ncol=nroles)
        params = ", ".join(f"{r} {float(row[r]):g}" for r in REGULARISERS
                           if r in row and float(row[r]) != 0)
        what = row["attention"] + (", " + params if params else "")
        suptitle(fig, f"{title}: trial {trial} ({what}), #{rank_k} by reward "
                      f"{float(row['reward']):.4f}: CP role weights per component",
                     fontsize=10)
        name = f"cp_roles_trial{trial:06d}.png"
        save(fig, outdir, name, written)
        records[name] = record
    if len(chosen) < len(scored):
        notes.append(f"CP role charts for the best {len(chosen)} of {len(scored)} scored trials "
                     f"by reward (--top 0 for all)")
    return records


# ----------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description="Plot an attnsweep results file "
                                 "(learning curves, reward against parameters, Pareto fronts, "
                                 "invariant trajectories, CP role weights).")
    ap.add_argument("results", metavar="RESULTS.h5")
    ap.add_argument("-o", "--outdir", metavar="OUTDIR",
                    help="where the PNG files and plots.json go (default: RESULTS_plots/ "
                         "beside the file)")
    ap.add_argument("--top", type=int, default=4, metavar="N",
                    help="CP role charts for the best N trials by reward (default 4; 0: all)")
    args = ap.parse_args(argv)
    if args.top < 0:
        die("--top must be 0 (every trial) or positive")

    try:
        f, df = open_results(args.results)
    except BadInput as e:
        die(str(e))

    outdir = args.outdir
    if outdir is None:
        stem = os.path.splitext(os.path.basename(args.results))[0]
        outdir = os.path.join(os.path.dirname(os.path.abspath(args.results)), stem + "_plots")
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        die(f"{outdir}: cannot create the output directory: {e.strerror}")
    if not os.access(outdir, os.W_OK):
        die(f"{outdir}: cannot write there (permission denied)")

    plt.rcParams.update({"figure.dpi": DPI, "savefig.dpi": DPI, "axes.titlesize": 10,
                         "axes.labelsize": 9, "legend.framealpha": 0.8})

    sweep = text(f.attrs.get("sweep", os.path.basename(args.results)))
    tasks = sorted(df["task"].unique()) if "task" in df.columns else []
    title = f"{sweep} ({', '.join(tasks)})" if tasks else sweep
    written, notes = [], []
    figures = {}
    try:
        figures["learning_curves.png"] = plot_learning_curves(f, df, title, outdir, written)
        r = plot_reward_vs_parameters(df, title, outdir, written, notes)
        if r is not None:
            figures["reward_vs_parameters.png"] = r
        figures["pareto.png"] = plot_pareto(df, title, outdir, written)
        r = plot_objectives(f, df, title, outdir, written)
        if r is not None:
            figures["objectives.png"] = r
        figures.update(plot_invariants(f, df, title, outdir, written, notes))
        figures.update(plot_cp_roles(f, df, title, outdir, written, notes, args.top))
    except OSError as e:
        die(f"{outdir}: cannot write a figure: {e}", 1)

    counts = df["status"].value_counts()
    data = {"source": os.path.abspath(args.results), "sweep": sweep,
            "format_version": FORMAT_VERSION, "trials": len(df),
            "status": {k: int(v) for k, v in counts.items()},
            "figures": {name: figures[name] for name in written}}
    with open(os.path.join(outdir, "plots.json"), "w") as out:
        json.dump(clean(data), out, allow_nan=False)
        out.write("\n")

    status = ", ".join(f"{int(counts.get(s, 0))} {s}" for s in ("ok", "pruned", "failed"))
    print(f"{PROG}: {args.results}: sweep {sweep}, {len(df)} trial{'s' if len(df) != 1 else ''} "
          f"({status})")
    rewards = df["reward"].to_numpy(dtype=float)
    if np.isfinite(rewards).any():
        b = df.iloc[int(np.nanargmax(rewards))]
        print(f"best reward {b['reward']:.4f}: trial {int(b['trial'])} ({b['attention']}, "
              f"val_accuracy {b['val_accuracy']:.4f} (test_accuracy {b['test_accuracy']:.4f}), "
              f"RankDeviation {b['rank_deviation']:.4f}, "
              f"Correlation {b['correlation']:.4f})")
    print(f"wrote {len(written)} figures and plots.json in {outdir}:")
    for name in written:
        print(f"  {name}")
    for n in notes:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # stdout closed early (| head): the files are written
        sys.stderr.close()
        sys.exit(0)
