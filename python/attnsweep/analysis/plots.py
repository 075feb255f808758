"""analyze.py's figures of the trials' metrics against the trial number and the swept
parameters (history.png, parallel_coordinates.png, slices.png), and what every figure
shares: the groups (attention variants) and their colours, the figure helpers (layout,
saving, trial-id labels that do not overlap). Each plot_* returns the record of what it
plotted (for plots.json)."""
import math
import os
import re
import textwrap

import matplotlib
matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402  (after the backend is chosen)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .common import (ALL_TRIALS, DPI, BadInput, NOT_SET, ST, VARIANT_COLOURS, VARIANT_ORDER, log_scale,  # noqa: E402
                     status_marker)

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
    ax.set_ylabel(goal.label)
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
    ax.set_xticklabels([f"{parameters.names[p]}\n({sc})" for p, sc in zip(params, scales)] + [goal.label],
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
    save(fig, outdir, "parallel_coordinates.png", written, colourbar=(sm, goal.label))
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
            ax.set_ylabel(goal.label)
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
