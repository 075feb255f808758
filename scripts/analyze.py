#!/usr/bin/python3
"""Plot an attnsweep results file.

Usage: scripts/analyze.py RESULTS.h5 [-o OUTDIR] [--top N] [--colour-by PARAMETER]

Reads the file written by `attnsweep run` (or `attnsweep train -o`, `attnsweep score`
of a trial), also while its sweep is still running (opened without HDF5's file lock, as
`attnsweep report` reads it), and writes into OUTDIR (default: RESULTS_plots/ beside the
file). Any sweep: of the engine or of a researcher's program ("Bring your own trainer"),
with or without attention variants, regularisers or scores. Every figure uses the sweep's
own metric and its YAML goal as `attnsweep report` reads them (`metric: {name, goal}`; by
default reward, higher is better; a program's own metric, by default lower is better),
with val_accuracy and reward beside it where the trials have them. The trials are grouped
by their attention variant, or form one group, "all trials", in a sweep without an
`attention` text parameter. A figure whose data the file lacks is not written, and a note
on stdout (and in plots.json) says which and why:

  history.png               optimisation history: the metric of every finished and pruned
                            trial against its trial number, and the best so far
  parallel_coordinates.png  one line per finished trial across an axis per swept parameter
                            (on its own scale: log for a log distribution) and the metric
  slices.png                the metric against each swept parameter, on its own scale
  learning_curves.png       validation accuracy, validation loss (and bits per byte for
                            charlm) and training loss against step, one line per trial
                            coloured by a swept parameter (--colour-by; default the first
                            swept one other than attention), one column per group; a
                            quantity no trial has (a program that reports no val_loss) has
                            no row
  pareto.png                the metric against Correlation and against RankDeviation for
                            the finished trials (status ok, as the report), the
                            non-dominated ones highlighted, joined and labelled; not
                            written when no finished trial was scored
  objectives.png            a motpe sweep: its first objective against each other one, the
                            front over all of them highlighted, its hypervolume in the title
  invariants_GROUP.png      per group: head singular values normalised by their sum and
                            head correlation per layer against step, one line per trial,
                            coloured by the regulariser strength that varies (an engine's
                            trials only: a program's have no trace)
  cp_roles_trialNNNNNN.png  CP role weights (QK, OV) of each component, per layer, for the
                            best --top trials by the metric (default 4; 0: every trial); a
                            layer whose CP fit is below 0.5 is marked, one below 0.1 is not
                            drawn, and a trial with no layer at 0.1 or more gets no chart
  probe_trialNNNNNN.png     the probes of `attnsweep probe`, for each probed trial
  plots.json                the exact numbers every figure plots, keyed by file name, with
                            the box of every trial-id label (no two overlap)

Every metric (val_accuracy, rank_deviation, correlation, reward, the curves, the invariants,
the CP role vectors) is read from the file, never recomputed; the only arithmetic is the
normalisation of the head singular values by their sum, the best so far and the Pareto
dominance test. Like the report, it selects and ranks by validation metrics only (the test
metrics are measured once per trial and only printed beside them). A list of the files
written goes to stdout, then the notes. A missing file, a file that is not HDF5 or not an
attnsweep results file with its schema (format 6 on) ends with one line on stderr and exit
code 2, and so does a damaged one (FILE: damaged results file (...)): the script runs in a
forked child, so an error h5py raises anywhere, or libhdf5 crashing, is that one line.

Needs only Debian's python3-h5py, -numpy, -matplotlib (Agg), -pandas and -yaml, and
python/attnsweep/results.py, which reads the file through the schema it carries (the
columns, the statuses, the sweep's metric and goal: `attnsweep schema`).
"""
import argparse
import json
import math
import os
import re
import sys
import textwrap

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from attnsweep import results as attnsweep_results  # noqa: E402  (python/attnsweep/ in the repository)

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
DPI = 120

# The file's schema names the statuses (ST.ok, ST.pruned, ST.failed, set by open_results)
# and which /summary columns are parameters (attnsweep_results.Results.parameters).
ST = None
ENGINE_REPEAT = "seed"  # the engine's seed column is sweep seed * 1000 + repeat: not swept
ALL_TRIALS = "all trials"  # the one group of a sweep without attention variants
NOT_SET = "(not set)"  # a program's parameter a condition left out (NaN, or "" for a text)
REGULARISERS = ("lambda_orth", "lambda_nuclear", "lambda_stability", "lambda_l2")
VARIANT_ORDER = ("mha", "tucker", "linear", "grassmann")
VARIANT_COLOURS = {"mha": "C0", "tucker": "C1", "linear": "C2", "grassmann": "C3"}


def status_marker(status):
    return {ST.ok: "o", ST.pruned: "v", ST.failed: "X"}.get(status, "o")

ROLE_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")

# Axis labels with units for the engine's parameters that have one.
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
# What the line on the best trial prints beside the metric (/summary column, name).
BESIDE_BEST = (("reward", "reward"), ("val_accuracy", "val_accuracy"), ("test_accuracy", "test_accuracy"),
               ("rank_deviation", PRETTY["rank_deviation"]), ("correlation", PRETTY["correlation"]))
LABEL_STEP = "step (optimizer steps)"
LABEL_ACC = "validation accuracy (fraction)"
LABEL_TRAIN_LOSS = "training loss (nats per prediction)"
LABEL_VAL_LOSS = "validation loss (nats per prediction)"
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
    """Open and check the file; returns (Results, summary DataFrame)."""
    global ST
    if not os.path.exists(path):
        raise BadInput(f"{path}: no such file")
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a directory, not a results file")
    if not os.access(path, os.R_OK):
        raise BadInput(f"{path}: cannot read it (permission denied)")
    if not h5py.is_hdf5(path):
        raise BadInput(f"{path}: not an HDF5 file (expected an attnsweep results file)")
    try:
        rs = attnsweep_results.Results(path)  # without the lock: a running sweep reads too
    except attnsweep_results.BadResults as e:
        raise BadInput(str(e)) from None
    f = rs.file
    if "summary" not in f:
        if "family" in f.attrs:
            raise BadInput(f"{path}: the scores of a checkpoint ({text(f.attrs['family'])}) "
                           f"have no /summary; analyze a sweep's or a trial's results file")
        raise BadInput(f"{path}: no /summary table")
    names = f["summary"].dtype.names or ()
    missing = [c for c in rs.schema.lead + list(rs.schema.metrics) if c not in names]
    if missing:
        raise BadInput(f"{path}: /summary lacks {', '.join(missing)} (not the layout its schema describes)")
    if "trials" not in f:
        raise BadInput(f"{path}: no /trials group")
    ST = attnsweep_results.Statuses(rs.schema)
    import_plotting()
    return rs, rs.summary


def trial_group(f, trial_id):
    """The /trials/NNNNNN group of the open file, or None."""
    name = f"{int(trial_id):06d}"
    return f["trials"][name] if name in f["trials"] else None



class Goal:
    """The sweep's metric and its YAML goal, with what to call it on an axis."""

    def __init__(self, rs):
        self.name, self.maximize = rs.metric, rs.maximize
        self.word = "higher" if self.maximize else "lower"
        self.label = f"{self.name} ({self.word} is better)"

    def better(self, a, b):
        return a > b if self.maximize else a < b

    def best_first(self, values):
        """Indices of values, best first (NaN last), ties by position."""
        v = np.asarray(values, dtype=float)
        key = -v if self.maximize else v
        return sorted(range(len(v)), key=lambda i: (not math.isfinite(key[i]), key[i], i))


class Parameters:
    """The sweep's parameters: their /summary columns (the schema's parameter columns),
    the YAML mapping and name of each, and what to call each on an axis. A
    parameter whose name is a result column's has the column config_NAME (steps: the
    summary's own steps column is the steps taken)."""

    def __init__(self, rs):
        space = attnsweep_results.space_of(rs.yaml)
        self.program = attnsweep_results.is_program(space)
        self.columns = [c for c in rs.parameters if self.program or c != ENGINE_REPEAT]
        listed = space.get("parameters")
        listed = {str(k): v for k, v in listed.items() if isinstance(v, dict)} if isinstance(listed, dict) else {}
        self.names = {c: c for c in self.columns}
        self.specs = {}  # by column, in the YAML's order ({} for a lone trial)
        for name, spec in listed.items():
            column = name if name in self.columns else f"config_{name}"
            if column in self.columns:
                self.specs[column] = spec
                self.names[column] = name

    def spec(self, c):
        return self.specs.get(c, {})

    def swept(self, df):
        """The parameters whose value differs between the trials of df."""
        return [c for c in self.columns if df[c].nunique(dropna=False) > 1]

    def label(self, c):
        """An axis label: the engine's parameters with their units; a program's by its YAML
        name, marked when its column was renamed (config_steps: the parameter steps)."""
        if not self.program:
            return PARAM_LABELS.get(c, c)
        name = self.names.get(c, c)  # --colour-by may name any column
        return name + (" (parameter)" if name != c else "")


LOG_DISTRIBUTIONS = {"log_uniform", "log_uniform_values", "q_log_uniform", "q_log_uniform_values",
                     "inv_log_uniform", "inv_log_uniform_values", "log_normal", "q_log_normal"}


def log_scale(spec, values):
    """Whether a parameter is drawn on a log axis: its distribution is one of the log ones;
    a values list (which names no distribution) when its values are positive and span a
    factor of 10 or more."""
    dist = spec.get("distribution") if isinstance(spec, dict) else None
    if dist:
        return dist in LOG_DISTRIBUTIONS
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return bool(len(v)) and (v > 0).all() and v.max() / v.min() >= 10


def group_of(df):
    """The group of each trial of df: its attention variant, or ALL_TRIALS in a sweep
    without one (a program's whose parameters have no text parameter named attention)."""
    if "attention" in df.columns and is_categorical(df["attention"]):
        return df["attention"].replace("", NOT_SET)
    return pandas.Series(ALL_TRIALS, index=df.index, dtype=object)


def groups_of(df):
    seen = list(dict.fromkeys(group_of(df)))
    return [v for v in VARIANT_ORDER if v in seen] + [v for v in seen if v not in VARIANT_ORDER]


def group_colour(v):
    """A fixed colour per group, the same in every figure."""
    if v in VARIANT_COLOURS:
        return VARIANT_COLOURS[v]
    if v == ALL_TRIALS:
        return "C0"
    return f"C{4 + sum(map(ord, v)) % 6}"  # another variant: stable across runs


def file_part(v):
    """A group's name as part of a file name (a program's variant may hold any text)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", v)


def whole_numbers(values):
    """Whether a numeric parameter's values are all integers (a program's integers are
    float64 columns, NaN where a condition left them out): its axis keeps integer ticks."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return bool(len(v)) and bool(np.all(v == np.round(v)))


def finite_median(series):
    """The median of the finite values (NaN when there is none, without numpy's warning)."""
    v = series.to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    return float(np.median(v)) if len(v) else float("nan")


def value_text(v):
    """A parameter's value as text: numbers short (a program's integers are float64), and
    NOT_SET where a condition left the parameter out (NaN, or "" for a text)."""
    if isinstance(v, float):
        return f"{v:g}" if math.isfinite(v) else NOT_SET
    return str(v) or NOT_SET


def is_categorical(series):
    return series.dtype == object


# ----------------------------------------------------------------------------------
# Figures. Each returns the record of what it plotted (for plots.json).

def new_figure(nrows, ncols, w, h, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False, **kw)
    return fig, axes


def save(fig, outdir, name, written, colourbar=None, after_layout=None):
    """Tight layout (leaving a strip on the right for a colour bar), then after_layout()
    (what needs the final positions: labels), dpi 120, close."""
    path = os.path.join(outdir, name)
    if colourbar is None:
        fig.tight_layout()
    else:
        right = 1 - 1.3 / fig.get_figwidth()  # room for the bar, its ticks and its label: 1.3 inch
        fig.tight_layout(rect=(0, 0, right, 1))
        cax = fig.add_axes((right + 0.1 / fig.get_figwidth(), 0.12, 0.15 / fig.get_figwidth(), 0.76))
        fig.colorbar(colourbar[0], cax=cax, label=colourbar[1])
    if after_layout is not None:
        after_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    written.append(name)


# Where a trial-id label may go around its point, in points: right-above first.
LABEL_OFFSETS = ((4, 4), (4, -4), (-4, 4), (-4, -4), (8, 0), (-8, 0), (0, 9), (0, -9))


def place_labels(fig, ax, xy, labels, avoid, fontsize=7):
    """Labels beside the points xy (data coordinates), none overlapping another label, a
    point of avoid (data coordinates, every marker drawn) or the edge of the axes: each
    takes the first free place of LABEL_OFFSETS; one with no free place is left out. Call
    once the layout is final. Returns the labels placed ({"trial", "box": display pixels
    x0, y0, x1, y1}) and those left out."""
    renderer = fig.canvas.get_renderer()
    pts = ax.transData.transform(np.asarray(avoid, float).reshape(-1, 2))
    frame = ax.get_window_extent(renderer)
    boxes, placed, left = [], [], []
    for (x, y), lab in zip(xy, labels):
        for dx, dy in LABEL_OFFSETS:
            t = ax.annotate(str(lab), (x, y), xytext=(dx, dy), textcoords="offset points",
                            fontsize=fontsize, zorder=5, ha="left" if dx > 0 else "right" if dx < 0 else "center",
                            va="bottom" if dy > 0 else "top" if dy < 0 else "center")
            bb = t.get_window_extent(renderer)
            near = ((pts[:, 0] > bb.x0 - 4) & (pts[:, 0] < bb.x1 + 4) &
                    (pts[:, 1] > bb.y0 - 4) & (pts[:, 1] < bb.y1 + 4))
            if (bb.x0 >= frame.x0 and bb.x1 <= frame.x1 and bb.y0 >= frame.y0 and bb.y1 <= frame.y1
                    and not near.any() and not any(bb.overlaps(b) for b in boxes)):
                boxes.append(bb)
                placed.append({"trial": lab, "box": [bb.x0, bb.y0, bb.x1, bb.y1]})
                break
            t.remove()
        else:
            left.append(lab)
    return placed, left


def suptitle(fig, text, fontsize=12):
    """A figure title wrapped to the figure's width."""
    width = max(40, int(fig.get_figwidth() * 130 / fontsize))
    fig.suptitle("\n".join(textwrap.wrap(text, width)), fontsize=fontsize)


def status_legend_handles(statuses):
    if ST.pruned not in statuses:
        return []  # every point ran to the budget: nothing to tell apart
    names = {ST.ok: "ok (ran to the budget)", ST.pruned: "pruned by ASHA"}
    return [Line2D([], [], color="0.3", linestyle="none", marker=status_marker(s),
                   label=names[s]) for s in (ST.ok, ST.pruned) if s in statuses]


def group_legend_handles(df):
    return [Line2D([], [], color=group_colour(v), marker="o", linestyle="none", label=v) for v in groups_of(df)]


def metric_label(goal):
    return f"{goal.name} ({goal.word} is better)"


def plot_history(df, goal, title, outdir, written, notes):
    """The metric of each finished and pruned trial against its trial number, and the best
    so far among the finished ones (Optuna's optimisation history)."""
    sub = df[df["status"].isin((ST.ok, ST.pruned))]
    y = sub[goal.name].to_numpy(dtype=float)
    keep = np.isfinite(y)
    sub, y = sub[keep], y[keep]
    if not len(sub):
        notes.append(f"history.png not written: no finished or pruned trial has {goal.name}")
        return None
    trials = sub["trial"].to_numpy()
    best, best_trial, cur, cur_t = [], [], None, None
    for t, v, st in zip(trials, y, sub["status"]):
        if st == ST.ok and (cur is None or goal.better(v, cur)):
            cur, cur_t = v, int(t)
        best.append(cur if cur is not None else float("nan"))
        best_trial.append(cur_t)
    record = {"kind": "history", "metric": goal.name, "goal": "maximize" if goal.maximize else "minimize",
              "trial": trials.tolist(), "value": y, "status": sub["status"].tolist(), "best_so_far": best,
              "best_trial": best_trial}
    fig, axes = new_figure(1, 1, 7.5, 4.2)
    ax = axes[0, 0]
    for v in groups_of(sub):
        for status in (ST.ok, ST.pruned):
            m = ((group_of(sub) == v) & (sub["status"] == status)).to_numpy()
            if m.any():
                ax.scatter(trials[m], y[m], s=22, alpha=0.7 if status == ST.ok else 0.35, color=group_colour(v),
                           marker=status_marker(status), linewidth=0)
    ax.plot(trials, best, color="k", lw=1.4, drawstyle="steps-post", zorder=3)
    handles = group_legend_handles(sub) + status_legend_handles(set(sub["status"]))
    handles.append(Line2D([], [], color="k", lw=1.4, label="best so far (finished trials)"))
    ax.legend(handles=handles, fontsize=8, loc="best")
    ax.set_xlabel("trial")
    ax.set_ylabel(metric_label(goal))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    n_failed = int((df["status"] == ST.failed).sum())
    extra = f"; {n_failed} failed trial{'s' if n_failed != 1 else ''} not shown" if n_failed else ""
    last = f", best {best[-1]:.4g} (trial {best_trial[-1]})" if len(best) and best_trial[-1] is not None else ""
    suptitle(fig, f"{title}: optimisation history of {goal.name}, {len(sub)} trials{last}{extra}")
    save(fig, outdir, "history.png", written)
    return record


def axis_values(df, p, spec):
    """A parameter's values on a [0, 1] axis of its own scale: categories evenly spaced (in
    the order of the YAML's values), numbers linear or log (log_scale). Returns (positions,
    ticks [(position, text)], scale)."""
    col = df[p]
    if is_categorical(col) or col.nunique() == 1:  # one number and (not set) too
        words = col.map(value_text)
        listed = [value_text(v) for v in spec.get("values", [])] if isinstance(spec, dict) else []
        cats = [c for c in listed if c in set(words)] + sorted(set(words) - set(listed))
        if p == "attention":
            cats = [v for v in VARIANT_ORDER if v in cats] + [c for c in cats if c not in VARIANT_ORDER]
        pos = {c: (i / (len(cats) - 1) if len(cats) > 1 else 0.5) for i, c in enumerate(cats)}
        return words.map(pos).to_numpy(dtype=float), [(pos[c], c) for c in cats], "categorical"
    v = col.to_numpy(dtype=float)
    log = log_scale(spec, v)
    scale = np.log10 if log else (lambda x: x)
    w = scale(v)
    lo, hi = np.nanmin(w), np.nanmax(w)
    span = hi - lo if hi > lo else 1.0
    marks = 10 ** np.linspace(lo, hi, 3) if log else np.linspace(lo, hi, 3)
    if whole_numbers(v):  # an integer's ticks: its values when few, else integers near the three marks
        values = np.unique(v[np.isfinite(v)])
        marks = values if len(values) <= 5 else np.unique(np.round(marks))
    ticks = [((scale(m) - lo) / span, f"{m:.3g}") for m in marks]
    return (w - lo) / span, ticks, "log" if log else "linear"


def plot_parallel(parameters, df, goal, title, outdir, written, notes):
    """One line per finished trial across an axis per swept parameter, each on its own
    scale, and a last axis for the metric; coloured by the metric, the best drawn on top."""
    sub = df[df["status"] == ST.ok]
    sub = sub[np.isfinite(sub[goal.name].to_numpy(dtype=float))]
    params = parameters.swept(sub)
    if not params or len(sub) < 2:
        notes.append("parallel_coordinates.png not written: "
                     + ("no parameter varies" if not params else f"fewer than 2 finished trials with {goal.name}"))
        return None
    axes_x, ticks, scales = [], [], []
    for p in params:
        pos, tk, sc = axis_values(sub, p, parameters.spec(p))
        axes_x.append(pos)
        ticks.append(tk)
        scales.append(sc)
    y = sub[goal.name].to_numpy(dtype=float)
    lo, hi = y.min(), y.max()
    if hi == lo:  # every trial alike (a program's constant metric): the middle of a range around it
        lo, hi = lo - (0.1 * abs(lo) or 0.5), hi + (0.1 * abs(hi) or 0.5)
    span = hi - lo
    up = (lambda v: (v - lo) / span) if goal.maximize else (lambda v: (hi - v) / span)  # the best at the top
    axes_x.append(up(y))
    ticks.append([(up(t), f"{t:.4g}") for t in np.linspace(lo, hi, 3)])
    names = params + [goal.name]
    fig, axs = new_figure(1, 1, max(6.0, 1.6 * len(names)), 4.6)
    ax = axs[0, 0]
    cmap = matplotlib.colormaps["viridis"]
    order = goal.best_first(y)[::-1]  # the best last, on top
    quality = up(y)
    for i in order:
        ax.plot(range(len(names)), [a[i] for a in axes_x], color=cmap(quality[i]), alpha=0.8, lw=1.2)
    for k, tk in enumerate(ticks):
        ax.axvline(k, color="0.3", lw=0.8)
        for pos, label in tk:
            ax.text(k + 0.03, pos, label, fontsize=7, va="center", ha="left", color="0.2")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([f"{parameters.names[p]}\n({sc})" for p, sc in zip(params, scales)] + [metric_label(goal)],
                       fontsize=8)
    ax.set_yticks([])
    ax.set_xlim(-0.2, len(names) - 0.6)
    ax.set_ylim(-0.05, 1.05)
    sm = matplotlib.cm.ScalarMappable(norm=mcolors.Normalize(lo, hi), cmap=cmap if goal.maximize else cmap.reversed())
    record = {"kind": "parallel_coordinates", "axes": names, "scales": scales + ["linear"],
              "trial": sub["trial"].tolist(), "positions": axes_x, "metric": y}
    n_other = len(df) - len(sub)
    extra = f" ({n_other} pruned or failed not shown)" if n_other else ""
    suptitle(fig, f"{title}: parallel coordinates of {len(sub)} finished trials{extra}, coloured by {goal.name} "
                  f"(yellow and the top of its axis are best)")
    save(fig, outdir, "parallel_coordinates.png", written, colourbar=(sm, metric_label(goal)))
    return record


def plot_slices(parameters, df, goal, title, outdir, written, notes):
    """The metric against each swept parameter that varies between the trials that have it,
    on the parameter's own scale (log for a log distribution)."""
    have = df[np.isfinite(df[goal.name].astype(float)) & df["status"].isin((ST.ok, ST.pruned))]
    params = parameters.swept(have)
    only_failed = [p for p in parameters.swept(df) if p not in params]
    if only_failed:
        notes.append(f"slices.png: {', '.join(only_failed)} "
                     f"{'vary' if len(only_failed) > 1 else 'varies'} only between "
                     f"trials without {goal.name} (failed): no panel")
    if not params:
        notes.append(f"slices.png not written: no parameter varies between the trials with {goal.name}")
        return None
    ncols = min(3, len(params))
    nrows = math.ceil(len(params) / ncols)
    fig, axes = new_figure(nrows, ncols, 4.2, 3.4, sharey=True)
    record = {"kind": "slices", "y": goal.name, "goal": "maximize" if goal.maximize else "minimize", "panels": []}
    for k, p in enumerate(params):
        ax = axes[k // ncols, k % ncols]
        cat = is_categorical(df[p])
        panel = {"parameter": p, "categorical": bool(cat), "trial": have["trial"].tolist(),
                 "x": have[p].tolist(), "y": have[goal.name].tolist(),
                 "status": have["status"].tolist(), "variant": group_of(have).tolist()}
        if cat:
            cats = list(dict.fromkeys(sorted(have[p].unique(), key=lambda c: (
                VARIANT_ORDER.index(c) if c in VARIANT_ORDER else len(VARIANT_ORDER), c))))
            panel["categories"] = cats
            panel["scale"] = "categorical"
            # A small deterministic spread inside each category so repeats stay visible.
            xs = np.zeros(len(have))
            for ci, cname in enumerate(cats):
                idx = np.flatnonzero(have[p].to_numpy() == cname)
                if len(idx) > 1:
                    xs[idx] = ci + np.linspace(-0.18, 0.18, len(idx))
                elif len(idx):
                    xs[idx] = ci
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels([value_text(c) for c in cats], rotation=20 if max(len(c) for c in cats) > 8 else 0)
            ax.set_xlim(-0.6, len(cats) - 0.4)
        else:
            xs = have[p].to_numpy(dtype=float)
            log = log_scale(parameters.spec(p), xs)
            panel["scale"] = "log" if log else "linear"
            if log:
                ax.set_xscale("log")
            elif whole_numbers(xs):
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for status in (ST.ok, ST.pruned):
            for v in groups_of(have):
                m = ((have["status"] == status) & (group_of(have) == v)).to_numpy()
                if m.any():
                    ax.scatter(xs[m], have[goal.name].to_numpy()[m], s=26, alpha=0.8,
                               color=group_colour(v), marker=status_marker(status),
                               edgecolor="k", linewidth=0.3)
        spec = parameters.spec(p)
        dist = spec.get("distribution", "values" if "values" in spec else "")
        ax.set_xlabel(parameters.label(p) + (f"\n[{dist}, {panel['scale']} axis]" if dist else ""))
        if k % ncols == 0:
            ax.set_ylabel(metric_label(goal))
        ax.set_title(parameters.names[p])
        ax.grid(alpha=0.3)
        record["panels"].append(panel)
    for k in range(len(params), nrows * ncols):
        axes[k // ncols, k % ncols].set_visible(False)
    handles = group_legend_handles(have) + status_legend_handles(set(have["status"]))
    axes[0, 0].legend(handles=handles, fontsize=8, loc="best")
    n_failed = len(df) - len(have)
    extra = f"; {n_failed} failed trial(s) not shown" if n_failed else ""
    suptitle(fig, f"{title}: {goal.name} against each swept parameter on its own scale ({len(have)} trials"
                  f"{extra})")
    save(fig, outdir, "slices.png", written)
    return record


def colour_parameter(parameters, df, wanted):
    """The swept parameter the learning curves are coloured by: --colour-by, else the first
    swept one other than attention in the YAML's order, else none."""
    swept = [p for p in parameters.swept(df) if p != "attention"]
    if wanted:
        if wanted not in df.columns:
            raise BadInput(f"--colour-by {wanted}: no such column in /summary")
        return wanted
    order = [p for p in parameters.specs if p in swept]
    return (order + [p for p in swept if p not in order] or [None])[0]


UNSET_COLOUR = "0.6"  # a trial whose colour parameter a condition left out


def parameter_colours(parameters, df, p):
    """Colours of p's values: discrete for a categorical one or few values, else a colour
    map on its own scale; grey where a condition left p out. Returns (colour of a row,
    legend handles, colour bar or None)."""
    cmap = matplotlib.colormaps["viridis"]
    if p is None:
        return (lambda row: None), [], None
    values, name = df[p], parameters.names.get(p, p)
    unset = values.isna() | (values == "")
    handles = [Line2D([], [], color=UNSET_COLOUR, lw=2, label=f"{name} {NOT_SET}")] if unset.any() else []
    if is_categorical(values) or values.nunique() <= 6:
        cats = sorted(values[~unset].unique(), key=lambda c: (str(type(c)), c))
        colours = {c: cmap(0.9 * k / max(1, len(cats) - 1)) for k, c in enumerate(cats)}
        handles = [Line2D([], [], color=colours[c], lw=2, label=f"{name} = {value_text(c)}") for c in cats] + handles
        return (lambda row: colours.get(row[p], UNSET_COLOUR)), handles, None
    v = values[~unset].to_numpy(dtype=float)
    if log_scale(parameters.spec(p), v) and (v > 0).all():
        norm = mcolors.LogNorm(v.min(), v.max())
    else:
        norm = mcolors.Normalize(v.min(), v.max())
    sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
    colour = lambda row: cmap(norm(float(row[p]))) if math.isfinite(float(row[p])) else UNSET_COLOUR
    return colour, handles, (sm, parameters.label(p))


# The learning curves' rows: a column of the trials' curves tables and its axis label.
CURVES = (("val_accuracy", LABEL_ACC), ("val_loss", LABEL_VAL_LOSS), ("train_loss", LABEL_TRAIN_LOSS))


def read_curves(f, df, colour_by):
    """Every trial's curves, one series per trial (empty where it has none)."""
    series = []
    for v, (_, row) in zip(group_of(df), df.iterrows()):
        g = trial_group(f, row["trial"])
        s = {"trial": int(row["trial"]), "variant": v, "status": row["status"],
             "colour_value": row[colour_by] if colour_by else None, "step": []}
        s.update({k: [] for k, _ in CURVES})
        if g is not None and "curves" in g:
            c = g["curves"]
            for k in ["step"] + [k for k, _ in CURVES]:
                s[k] = c[k][:]
        series.append(s)
    return series


def plot_learning_curves(f, parameters, df, goal, title, outdir, written, notes, colour_by):
    """Per group: validation accuracy, validation loss (held out; for charlm with bits
    per byte on a second axis) and training loss against step, one line per trial coloured
    by the swept parameter colour_by; a row only for what some trial's curve holds (a
    program reports what it reports)."""
    series = read_curves(f, df, colour_by)
    rows = [(k, label) for k, label in CURVES if any(np.isfinite(np.asarray(s[k], float)).any() for s in series)]
    if not rows:
        own = (f" (the program's own {goal.name} is recorded at its last value only: history.png and slices.png "
               f"show it)" if parameters.program and goal.name not in {k for k, _ in CURVES} else "")
        notes.append("learning_curves.png not written: no trial's curve holds a validation accuracy, "
                     f"validation loss or training loss{own}")
        return None
    if parameters.program:  # the program's own numbers, in the units it reports them in
        rows = [(k, f"{k} (as the program reports it)") for k, _ in rows]
    groups = groups_of(df)
    # at least 8 x 4.5 inches in all: room for the title over a single panel
    fig, axes = new_figure(len(rows), len(groups), max(4.0, 8.0 / len(groups)), max(2.9, 4.5 / len(rows)),
                           sharex="all", sharey="row")
    colour_of, handles, colourbar = parameter_colours(parameters, df, colour_by)
    record = {"kind": "learning_curves", "x": "step", "y": [k for k, _ in rows], "colour_by": colour_by,
              "series": series}
    styles = {ST.ok: "-", ST.pruned: "--", ST.failed: ":"}
    losses = {"kept": [], "failed": []}
    failed_max = {}  # column -> largest training loss of a failed trial
    charlm = "task" in df.columns and (df["task"] == "charlm").all()
    loss_rows = [i for i, (k, _) in enumerate(rows) if k in ("val_loss", "train_loss")]
    for j, v in enumerate(groups):
        sub = df[group_of(df) == v]
        for (_, row), s in zip(df.iterrows(), series):
            if s["variant"] != v or len(s["step"]) == 0:
                continue
            failed = row["status"] == ST.failed
            style = dict(color=colour_of(row) or group_colour(v), alpha=0.5 if failed else 0.8, lw=1.2,
                         linestyle=styles.get(row["status"], "-"),
                         marker=("x" if failed else ".") if len(s["step"]) <= 25 else None)
            for i, (k, _) in enumerate(rows):
                axes[i, j].plot(s["step"], s[k], **style)
                if i in loss_rows:
                    losses["failed" if failed else "kept"].extend(np.asarray(s[k], float))
            if failed:
                fin = np.asarray(s["train_loss"], float)
                fin = fin[np.isfinite(fin)]
                if len(fin):
                    failed_max[j] = max(failed_max.get(j, -np.inf), fin.max())
        counts = sub["status"].value_counts()
        parts = [f"{int(counts[k])} {k}" for k in (ST.ok, ST.pruned, ST.failed) if k in counts]
        axes[0, j].set_title(f"{v}: {len(sub)} trial{'s' if len(sub) != 1 else ''} "
                             f"({', '.join(parts)})", color=group_colour(v))
        for i, (_, label) in enumerate(rows):
            axes[i, j].set_ylabel(label if j == 0 else "")
            axes[i, j].grid(alpha=0.3)
        axes[-1, j].set_xlabel("step (as the program reports it)" if parameters.program else LABEL_STEP)
        axes[-1, j].xaxis.set_major_locator(MaxNLocator(integer=True))
    # The loss axes follow the trials that did not fail: a diverging trial's last
    # evaluation (up to 1e17 nats) would flatten every other curve.
    kept = np.array([x for x in losses["kept"] if math.isfinite(x)])
    every = np.array([x for x in losses["kept"] + losses["failed"] if math.isfinite(x)])
    ref = kept if len(kept) else every
    if len(ref):
        lo, hi = ref.min(), ref.max()
        for row_k in loss_rows:
            if lo > 0 and hi / lo > 20:
                axes[row_k, 0].set_yscale("log")
                axes[row_k, 0].set_ylim(lo / 1.3, hi * 1.3)
            else:
                pad = 0.06 * (hi - lo) if hi > lo else 0.05 * abs(hi) + 0.05
                axes[row_k, 0].set_ylim(lo - pad, hi + pad)
        for j, m in failed_max.items():  # only where training loss has a row: a failed trial's is finite
            if m > hi * 1.3:
                axes[-1, j].annotate(f"failed trials reach {m:.3g} nats (off the axis)",
                                     (0.02, 0.97), xycoords="axes fraction", fontsize=7, va="top")
    val_loss_row = [i for i, (k, _) in enumerate(rows) if k == "val_loss"]
    if charlm and val_loss_row:  # bits per byte = nats / ln 2, on the right of the validation loss
        for j in range(len(groups)):
            sec = axes[val_loss_row[0], j].secondary_yaxis(
                "right", functions=(lambda x: x / math.log(2), lambda b: b * math.log(2)))
            if j == len(groups) - 1:
                sec.set_ylabel("validation bits per byte")
    styles_shown = sorted({s["status"] for s in series if len(s["step"])},
                          key=(ST.ok, ST.pruned, ST.failed).index)
    if len(styles_shown) > 1:
        names = {ST.ok: "ran to the budget", ST.pruned: "pruned by ASHA", ST.failed: "failed (until it diverged)"}
        handles = handles + [Line2D([], [], color="0.3", linestyle=styles[k], label=names[k]) for k in styles_shown]
    if handles:
        axes[0, len(groups) - 1].legend(handles=handles, fontsize=7, loc="best")
    what = f"coloured by {parameters.names.get(colour_by, colour_by)}" if colour_by else "one colour per group"
    missing = [k for k, _ in CURVES if k not in record["y"]]
    absent = f"; no trial's curve holds {' or '.join(missing)}" if missing else ""
    when = ("the program's metric lines" if parameters.program else
            "validation accuracy and loss at each evaluation; training loss: mean since the previous evaluation")
    suptitle(fig, f"{title}: learning curves, one line per trial, {what} ({when}{absent})")
    save(fig, outdir, "learning_curves.png", written, colourbar)
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


def labelling(fig, jobs, record_of):
    """The after_layout of a figure with trial-id labels: jobs (ax, xy, ids, every point)
    placed without overlap; each record_of[k] gets its "labels" and "unlabelled"."""
    def run():
        for (ax, xy, ids, avoid), rec in zip(jobs, record_of):
            placed, left = place_labels(fig, ax, xy, ids, avoid)
            rec["labels"], rec["unlabelled"] = placed, left
            if left:
                ax.text(0.01, 0.01, f"not labelled (no room): {', '.join(map(str, left))}", transform=ax.transAxes,
                        fontsize=6, color="0.3", va="bottom")
    return run


def plot_objectives(objectives, df, title, outdir, written):
    """A motpe sweep: the first objective against each other one, the trials that no
    other dominates on all of them highlighted, and the front's hypervolume (against the
    worst of each objective over the finished trials, as attnsweep report)."""
    names = [n for n, _ in objectives]
    if not objectives or not all(n in df.columns for n in names):
        return None
    sub = df[df["status"] == ST.ok]
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
              "front_trials": [int(sub["trial"].iloc[i]) for i in front], "trial": sub["trial"].tolist(),
              "panels": []}
    fig, axes = new_figure(1, len(objectives) - 1, 5.2, 4.4)
    y_name, y_up = objectives[0]
    jobs = []
    for ax, (x_name, x_up) in zip(axes[0], objectives[1:]):
        x, y = sub[x_name].to_numpy(dtype=float), sub[y_name].to_numpy(dtype=float)
        for v in groups_of(sub):
            m = (group_of(sub) == v).to_numpy()
            ax.scatter(x[m], y[m], s=24, alpha=0.45, color=group_colour(v), linewidth=0, label=v)
        for i in front:
            ax.scatter([x[i]], [y[i]], s=70, color=group_colour(group_of(sub).iloc[i]), edgecolor="k",
                       linewidth=1.3, zorder=4)
        ax.set_xlabel(f"{x_name} ({'higher' if x_up else 'lower'} is better)")
        ax.set_ylabel(f"{y_name} ({'higher' if y_up else 'lower'} is better)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        panel = {"x_metric": x_name}
        record["panels"].append(panel)
        jobs.append((ax, [(x[i], y[i]) for i in front], [int(sub["trial"].iloc[i]) for i in front],
                     np.column_stack([x, y])))
    suptitle(fig, f"{title}: the sweep's objectives, {len(front)} of {len(sub)} finished trials on the front "
                  f"(black edge), hypervolume {hv:.4g}")
    save(fig, outdir, "objectives.png", written, after_layout=labelling(fig, jobs, record["panels"]))
    return record


def plot_pareto(df, goal, title, outdir, written, notes):
    """The sweep's metric against Correlation and against RankDeviation for the finished
    trials (status ok, as attnsweep report), the non-dominated ones joined and labelled;
    not drawn when no finished trial has the metric and a score."""
    ok = df[df["status"] == ST.ok]
    scores = ok[list(PRETTY)].to_numpy(dtype=float)
    if not (np.isfinite(scores).any(axis=1) & np.isfinite(ok[goal.name].to_numpy(dtype=float))).any():
        why = ("no finished trial was scored (Correlation and RankDeviation are NaN)" if not np.isfinite(scores).any()
               else f"no finished trial has both {goal.name} and a score")
        notes.append(f"pareto.png not written: {why}")
        return None
    fig, axes = new_figure(1, 2, 5.2, 4.4)
    record = {"kind": "pareto", "y": goal.name, "goal": f"{'maximise' if goal.maximize else 'minimise'} "
              f"{goal.name}, minimise x", "panels": []}
    sign = 1.0 if goal.maximize else -1.0
    jobs = []
    for ax, (metric, label) in zip(axes[0], (("correlation", LABEL_CORR),
                                             ("rank_deviation", LABEL_RD))):
        x_all = ok[metric].to_numpy(dtype=float)
        y_all = ok[goal.name].to_numpy(dtype=float)
        keep = np.isfinite(x_all) & np.isfinite(y_all)
        sub = ok[keep]
        x, y = x_all[keep], y_all[keep]
        front = pareto_front(x, sign * y)
        panel = {"x_metric": metric, "trial": sub["trial"].tolist(), "x": x, "y": y,
                 "status": sub["status"].tolist(), "variant": group_of(sub).tolist(),
                 "front_trials": [int(sub["trial"].iloc[i]) for i in front]}
        for v in groups_of(sub):
            m = (group_of(sub) == v).to_numpy()
            if m.any():
                ax.scatter(x[m], y[m], s=24, alpha=0.45, color=group_colour(v), linewidth=0)
        handles = group_legend_handles(sub)
        if front:
            fx, fy = x[front], y[front]
            ax.plot(fx, fy, color="k", lw=1.3, drawstyle="steps-post", zorder=3)
            handles.append(Line2D([], [], color="k", marker="o", markerfacecolor="w",
                                  markeredgewidth=1.3, label=f"Pareto front ({len(front)} "
                                  f"trial{'s' if len(front) != 1 else ''})"))
            for i in front:
                ax.scatter([x[i]], [y[i]], s=70, color=group_colour(group_of(sub).iloc[i]), edgecolor="k",
                           linewidth=1.3, zorder=4)
        if metric == "correlation" and len(sub):
            # chance: the mean of the rotation null (each head rotated at random, spectra kept),
            # one dotted line per group in its colour (the variants' shapes differ)
            panel["chance"] = {}
            for v in groups_of(sub):
                chance = finite_median(sub[group_of(sub) == v]["correlation_chance"])
                panel["chance"][v] = chance
                if math.isfinite(chance):
                    ax.axvline(chance, color=group_colour(v), lw=1.0, linestyle=":", zorder=1)
            per = ", per variant" if groups_of(sub) != [ALL_TRIALS] else ""
            handles.append(Line2D([], [], color="0.4", lw=1.0, linestyle=":", label=f"chance level (dotted{per})"))
        if not len(sub):
            ax.text(0.5, 0.5, "no finished trial with metrics", transform=ax.transAxes, ha="center")
        ax.set_xlabel(label)
        ax.set_ylabel(metric_label(goal))
        ax.set_title(f"{goal.name} against {PRETTY[metric]}")
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=8, loc="best")
        record["panels"].append(panel)
        jobs.append((ax, [(x[i], y[i]) for i in front], [int(sub["trial"].iloc[i]) for i in front],
                     np.column_stack([x, y])))
    n_other = len(df) - len(ok)
    extra = f"; {n_other} pruned or failed trial(s) not shown, as in attnsweep report" if n_other else ""
    suptitle(fig, f"{title}: Pareto front of the finished trials (black edge: non-dominated; trial ids "
                  f"labelled{extra})")
    save(fig, outdir, "pareto.png", written, after_layout=labelling(fig, jobs, record["panels"]))
    return record


def regulariser_colouring(df, fallback=None):
    """What the invariant lines are coloured by: the regularisers whose strength varies;
    when none does, the numeric swept parameter the learning curves use (fallback: lr in
    a learning-rate sweep), else lambda_orth; discrete colours for up to 10 combinations,
    else a colour map over the first varying one."""
    regs = [r for r in REGULARISERS if r in df.columns and df[r].nunique() > 1]
    if not regs and fallback in df.columns and pandas.api.types.is_numeric_dtype(df[fallback]):
        regs = [fallback]
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


def read_traces(f, df):
    """The invariant traces of the trials of df that have one: (row, step, head_sv,
    correlation, chance) each."""
    traces = []
    for _, row in df.iterrows():
        g = trial_group(f, row["trial"])
        if g is None or "invariants" not in g:
            continue
        inv = g["invariants"]
        step = inv["step"][:]
        if len(step):
            traces.append((row, step, inv["head_sv"][:], inv["correlation"][:], inv["chance"][:]))
    return traces


def plot_invariants(f, parameters, df, title, outdir, written, notes, colour_by):
    traces_of = {v: read_traces(f, df[group_of(df) == v]) for v in groups_of(df)}
    if not any(traces_of.values()):
        why = ("a program's trials have none: only attnsweep's engine traces its layers over training"
               if parameters.program else "every trial failed" if (df["status"] == ST.failed).all() else "")
        notes.append("invariants_*.png not written: no trial has an invariant trace" + (f" ({why})" if why else ""))
        return {}
    regs, colours, norm = regulariser_colouring(df, colour_by)
    cmap = matplotlib.colormaps["viridis"]
    records = {}
    for v, traces in traces_of.items():
        sub = df[group_of(df) == v]
        chance = finite_median(sub["correlation_chance"])
        name = f"invariants_{file_part(v)}.png"
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
        # chance's band: the rotation null's mean ± 2 sd at each evaluation of the longest
        # trace (the nulls of one variant's shapes hardly differ between its trials)
        band_step, band = max(((t[1], t[4]) for t in traces), key=lambda t: len(t[0]))
        record["chance_band"] = {"step": band_step, "mean": band[:, :, 0], "sd": band[:, :, 1]}
        for row, step, sv, corr, _ in traces:
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
            ls_main = "--" if row["status"] == ST.pruned else "-"
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
            mean, sd = band[:, layer, 0], band[:, layer, 1]
            has_band = np.isfinite(sd).any()
            if has_band:
                ax_c.fill_between(band_step, mean - 2 * sd, mean + 2 * sd, color="0.85", lw=0, zorder=0)
                ax_c.plot(band_step, mean, color="0.4", lw=1.0, linestyle=":", zorder=0)
            elif np.isfinite(chance):
                ax_c.axhline(chance, color="0.4", lw=1.0, linestyle=":", zorder=0)
            ax_sv.set_ylim(-0.02, 1.02)  # a share of the total: the whole range
            top_c = max(corr_max, chance if np.isfinite(chance) else 0.0,
                        float(np.nanmax(mean + 2 * sd)) if has_band else 0.0)
            ax_c.set_ylim(0, min(1.02, max(0.05, top_c * 1.15)))  # zoomed: small values matter
            for ax in (ax_sv, ax_c):
                ax.grid(alpha=0.3)
        axes[0, 0].set_title("head singular values / their sum\n(solid: largest, dotted: the "
                             "others; dash-dot: equal heads 1/G)", fontsize=9)
        axes[0, 1].set_title("head correlation (1 = heads collapsed onto one direction;\n"
                             + ("dotted, shaded: the rotation null's mean ± 2 sd)" if np.isfinite(band[:, :, 1]).any()
                                else "dotted: chance, independent Gaussian weights)"), fontsize=9)
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
            colourbar = (sm, parameters.label(regs[0]))
        if any(s["status"] == ST.pruned for s in record["series"]):
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


CP_FIT_MARK, CP_FIT_OMIT = 0.5, 0.1  # below: the roles are marked unreliable; not drawn


def plot_cp_roles(f, df, goal, title, outdir, written, notes, top):
    """The CP role weights of the best trials by the metric: a layer whose CP fit is below
    CP_FIT_MARK is marked (its components explain little of the tensor), one below
    CP_FIT_OMIT is not drawn, and a trial whose every layer is below it gets no chart."""
    scored = []
    for _, row in df.iterrows():
        g = trial_group(f, row["trial"])
        if row["status"] != ST.ok or g is None or "scores" not in g or not math.isfinite(float(row[goal.name])):
            continue  # finished trials, as the report's leaderboard
        if any("cp_roles" in g["scores"][k].attrs for k in g["scores"]):
            scored.append(row)
    if not scored:
        notes.append("cp_roles_trial*.png not written: no finished trial has CP role weights "
                     "(none was scored, or scored with --no-cp)")
        return {}
    group = group_of(df)
    scored = [scored[i] for i in goal.best_first([float(r[goal.name]) for r in scored])]
    fits = lambda row: [float(g.attrs.get("cp_fit", float("nan"))) for g in trial_group(f, row["trial"])["scores"].values()]
    low = [int(r["trial"]) for r in scored if not any(x >= CP_FIT_OMIT for x in fits(r))]
    if low:
        notes.append(f"cp_roles: no chart for trial{'s' if len(low) > 1 else ''} {', '.join(map(str, low))}: "
                     f"every layer's CP fit is below {CP_FIT_OMIT} (the components explain too little to read roles)")
    candidates = [r for r in scored if int(r["trial"]) not in low]
    chosen = candidates if top == 0 else candidates[:top]
    records = {}
    for rank_k, row in enumerate(chosen, 1):
        trial = int(row["trial"])
        g = trial_group(f, trial)
        layers = sorted((k for k in g["scores"]), key=lambda k: int(k[len("layer"):]))
        roles_names = None  # the scored tensor's roles (QK, OV of the function-level tensor)
        if layers:
            roles_names = text(g["scores"][layers[0]].attrs.get("roles", "")).split(",")
        fig, axes = new_figure(1, len(layers), 4.2, 3.4, sharey=True)
        record = {"kind": "cp_roles", "trial": trial, "variant": group[row.name], "metric": goal.name,
                  "value": float(row[goal.name]), "reward": float(row["reward"]), "rank_by_metric": rank_k,
                  "layers": []}
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
            shown = cp_fit >= CP_FIT_OMIT
            record["layers"].append({"layer": lname, "cp_rank": int(s.attrs.get("cp_rank", R)),
                                     "cp_fit": cp_fit, "roles": names, "weights": w,
                                     "drawn": bool(shown), "marked": bool(shown and cp_fit < CP_FIT_MARK)})
            if not shown:
                ax.text(0.5, 0.5, f"CP fit {cp_fit:.3f} < {CP_FIT_OMIT}:\nthe components explain too little;\n"
                        f"roles not drawn", transform=ax.transAxes, ha="center", va="center", fontsize=9)
                ax.set_title(f"{lname}: CP rank {R}, fit {cp_fit:.3f}", fontsize=9)
                ax.set_xticks([])
                continue
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
            if cp_fit < CP_FIT_MARK:
                extra += f"\nlow fit (< {CP_FIT_MARK}): read the roles with caution"
                ax.set_facecolor("#f3ece0")
            ax.set_title(f"{lname}: CP rank {R}, fit {cp_fit:.3f}{extra}", fontsize=9,
                         color="firebrick" if cp_fit < CP_FIT_MARK else "k")
            ax.set_ylim(-1.05, 1.05)
            ax.grid(alpha=0.3, axis="y")
            ax.legend(fontsize=8, loc="lower right", ncol=nroles)
        params = ", ".join(f"{r} {float(row[r]):g}" for r in REGULARISERS
                           if r in row and float(row[r]) != 0 and math.isfinite(float(row[r])))
        what = group[row.name] + (", " + params if params else "")
        beside = f" (reward {float(row['reward']):.4f})" if goal.name != "reward" else ""
        suptitle(fig, f"{title}: trial {trial} ({what}), #{rank_k} by {goal.name} "
                      f"{float(row[goal.name]):.4f}{beside}: CP role weights per component", fontsize=10)
        name = f"cp_roles_trial{trial:06d}.png"
        save(fig, outdir, name, written)
        records[name] = record
    if len(chosen) < len(candidates):
        notes.append(f"CP role charts for the best {len(chosen)} of {len(candidates)} scored trials "
                     f"by {goal.name} (--top 0 for all)")
    return records


# ----------------------------------------------------------------------------------
# The probes of `attnsweep probe` (/trials/NNNNNN/probe): read as they are stored, none
# recomputed.

def heatmap(ax, a, labels, title):
    im = ax.imshow(a, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            ax.text(j, i, f"{a[i, j]:.2f}", ha="center", va="center", fontsize=6,
                    color="w" if a[i, j] < 0.6 else "k")
    ax.set_title(title, fontsize=9)
    return im


def plot_probe_trial(g, trial, title, outdir, written):
    """probe_trialNNNNNN.png (CKA, noise, the transform's changes) and
    probe_attention_trialNNNNNN.png (the attention maps); their records."""
    p = g["probe"]
    records = {}
    cka_l = p["cka_layers"][()]
    cka_h = p["cka_heads"][()] if "cka_heads" in p else None
    L = cka_l.shape[0] - 1
    tr = p["transform"] if "transform" in p else None
    ncols = 2 + (L if cka_h is not None else 0) + (1 if tr is not None else 0)
    fig, axes = new_figure(1, ncols, 3.6, 4.4)
    im = heatmap(axes[0, 0], cka_l, ["emb"] + [f"L{l}" for l in range(L)], "CKA between layers")
    record = {"kind": "probe", "trial": trial, "examples": int(p.attrs["examples"]),
              "cka_layers": cka_l, "cka_heads": cka_h}
    col = 1
    if cka_h is not None:
        H = cka_h.shape[1]
        for l in range(L):
            heatmap(axes[0, col], cka_h[l], [f"h{h}" for h in range(H)], f"CKA between heads, layer {l}")
            col += 1
    noise = p["noise"][()]
    ax = axes[0, col]
    ax.plot(noise["sigma"], noise["val_accuracy"], "o-")
    ax.set_xlabel("input noise sigma")
    ax.set_ylabel("validation accuracy")
    ax.set_title("accuracy under Gaussian input noise", fontsize=9)
    ax.grid(alpha=0.3)
    record["noise"] = {"sigma": noise["sigma"], "val_accuracy": noise["val_accuracy"],
                       "val_loss": noise["val_loss"]}
    col += 1
    if tr is not None:
        tab = tr["invariants"][()]
        names = [f"{text(n)}" + ("" if l < 0 else f" L{l}") for n, l in zip(tab["name"], tab["layer"])]
        change = np.where(np.isfinite(tab["change"]), tab["change"], np.nan) * 100
        ax = axes[0, col]
        y = np.arange(len(names))
        ax.barh(y, change, color=["C2" if s else "C3" for s in tab["stays"]])
        tol = 100 * float(tr.attrs["tolerance"])
        ax.axvspan(-tol, tol, color="0.85", zorder=0)
        if "control" in tr:
            ax.plot(tab["control_change"] * 100, y, "k|", markersize=8, label="seed + 1 (no transform)")
            ax.legend(fontsize=7, loc="lower right")
        ax.set_yticks(y, names, fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("relative change (%)")
        ax.set_title(f"{text(tr.attrs['kind'])} transform: stays (green) within ±{tol:g} %", fontsize=9)
        record["transform"] = {"kind": text(tr.attrs["kind"]), "tolerance": float(tr.attrs["tolerance"]),
                               "names": names, "original": tab["original"], "transformed": tab["transformed"],
                               "change": tab["change"], "stays": tab["stays"],
                               "control_change": tab["control_change"]}
    suptitle(fig, f"{title}: trial {trial}, probes on the validation split ({record['examples']} examples "
                  f"for the CKA)", fontsize=10)
    save(fig, outdir, f"probe_trial{trial:06d}.png", written, colourbar=(im, "linear CKA"))
    records[f"probe_trial{trial:06d}.png"] = record
    if "attention" in p:
        maps = p["attention"][()]
        E, L, H = maps.shape[:3]
        fig, axes = new_figure(E, L * H, 1.7, 1.7)
        for e in range(E):
            for l in range(L):
                for h in range(H):
                    ax = axes[e, l * H + h]
                    ax.imshow(maps[e, l, h], vmin=0, cmap="magma")
                    ax.set_xticks([])
                    ax.set_yticks([])
                    if e == 0:
                        ax.set_title(f"L{l} h{h}", fontsize=8)
                if l == 0:
                    axes[e, 0].set_ylabel(f"val example {e}", fontsize=8)
        suptitle(fig, f"{title}: trial {trial}, attention maps (row: the attending token, [CLS] or "
                      f"the first token at 0)", fontsize=9)
        name = f"probe_attention_trial{trial:06d}.png"
        save(fig, outdir, name, written)
        records[name] = {"kind": "probe_attention", "trial": trial, "examples": list(range(E)),
                         "shape": list(maps.shape)}
    return records


def plot_probes(f, df, title, outdir, written):
    records = {}
    for trial in sorted(int(t) for t in df["trial"]):
        g = trial_group(f, trial)
        if g is not None and "probe" in g:
            records.update(plot_probe_trial(g, trial, title, outdir, written))
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
                    help="CP role charts for the best N trials by the sweep's metric (default 4; 0: all)")
    ap.add_argument("--colour-by", metavar="PARAMETER",
                    help="the /summary column the learning curves are coloured by (default: the first "
                         "swept parameter other than attention)")
    args = ap.parse_args(argv)
    if args.top < 0:
        die("--top must be 0 (every trial) or positive")

    try:
        rs, df = open_results(args.results)
        f = rs.file
        goal = Goal(rs)
        if goal.name not in df.columns:
            raise BadInput(f"{args.results}: the sweep's metric {goal.name} is not a /summary column")
        parameters = Parameters(rs)
        colour_by = colour_parameter(parameters, df, args.colour_by)
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
    figures = {}  # by file name; a figure not written (its record None) is left out of plots.json
    try:
        if len(df) == 0:
            notes.append("no figure: /summary holds no trial yet (the sweep has just begun)")
        else:
            figures["history.png"] = plot_history(df, goal, title, outdir, written, notes)
            figures["parallel_coordinates.png"] = plot_parallel(parameters, df, goal, title, outdir, written, notes)
            figures["slices.png"] = plot_slices(parameters, df, goal, title, outdir, written, notes)
            figures["learning_curves.png"] = plot_learning_curves(f, parameters, df, goal, title, outdir, written,
                                                                  notes, colour_by)
            figures["pareto.png"] = plot_pareto(df, goal, title, outdir, written, notes)
            figures["objectives.png"] = plot_objectives(rs.objectives, df, title, outdir, written)
            figures.update(plot_invariants(f, parameters, df, title, outdir, written, notes, colour_by))
            figures.update(plot_cp_roles(f, df, goal, title, outdir, written, notes, args.top))
            figures.update(plot_probes(f, df, title, outdir, written))
    except OSError as e:
        die(f"{outdir}: cannot write a figure: {e}", 1)

    counts = df["status"].value_counts()
    data = {"source": os.path.abspath(args.results), "sweep": sweep,
            "format_version": rs.schema.format_version, "trials": len(df),
            "metric": goal.name, "goal": "maximize" if goal.maximize else "minimize",
            "status": {k: int(v) for k, v in counts.items()},
            "figures": {name: figures[name] for name in written}, "notes": notes}
    with open(os.path.join(outdir, "plots.json"), "w") as out:
        json.dump(clean(data), out, allow_nan=False)
        out.write("\n")

    status = ", ".join(f"{int(counts.get(s, 0))} {s}" for s in (ST.ok, ST.pruned, ST.failed))
    print(f"{PROG}: {args.results}: sweep {sweep}, {len(df)} trial{'s' if len(df) != 1 else ''} "
          f"({status})")
    ok = df[df["status"] == ST.ok]
    values = ok[goal.name].to_numpy(dtype=float)
    if np.isfinite(values).any():
        i = goal.best_first(values)[0]
        b = ok.iloc[i]
        beside = [f"{name} {b[c]:.4f}" for c, name in BESIDE_BEST if math.isfinite(b[c])]  # what it has
        what = group_of(ok).iloc[i]
        if what == ALL_TRIALS:  # no variant to name: its swept parameters
            what = ", ".join(f"{parameters.names[p]} {value_text(b[p])}" for p in parameters.swept(df)) or what
        print(f"best {goal.name} ({goal.word} is better) {b[goal.name]:.4f}: trial {int(b['trial'])} "
              f"({what}{'; ' + ', '.join(beside) if beside else ''})")
    print(f"wrote {len(written)} figures and plots.json in {outdir}:")
    for name in written:
        print(f"  {name}")
    for n in notes:
        print(f"note: {n}")
    return 0


def guarded(argv):
    """main in a forked child: a damaged results file can make h5py raise anywhere a figure
    reads it, or libhdf5 itself abort (a double free) or crash. Either is one line, FILE:
    damaged results file (...), exit 2, never a traceback or a core dump of the script."""
    ap = argparse.ArgumentParser(add_help=False)  # only RESULTS.h5, for the line; main parses
    ap.add_argument("results", nargs="?")
    for option in ("-o", "--outdir", "--top", "--colour-by"):
        ap.add_argument(option)
    path = ap.parse_known_args(argv)[0].results
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = main(argv)
        except SystemExit as e:  # die's, argparse's
            if isinstance(e.code, str):
                sys.stderr.write(e.code + "\n")
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        except BrokenPipeError:  # stdout closed early (| head): the files are written
            sys.stderr.close()
            code = 0
        except Exception as e:  # noqa: BLE001  (any: the file is untrusted input)
            why = " ".join(f"{type(e).__name__}: {e}".split())[:200]
            sys.stderr.write(f"{PROG}: {path}: damaged results file ({why})\n")
            code = 2
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        die(f"{path}: damaged results file (the HDF5 library crashed reading it: signal {os.WTERMSIG(status)})")
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(guarded(sys.argv[1:]))
