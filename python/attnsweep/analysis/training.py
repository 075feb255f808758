"""analyze.py's figures of what the trials stored while they trained and were scored:
learning_curves.png (/trials/NNNNNN/curves), invariants_GROUP.png (/trials/NNNNNN/invariants)
and cp_roles_trialNNNNNN.png (/trials/NNNNNN/scores, ordered by the report's leaderboard)."""
import math

import matplotlib
import matplotlib.colors as mcolors
import numpy as np
import pandas
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from .common import LABEL_ACC, LABEL_STEP, LABEL_TRAIN_LOSS, LABEL_VAL_LOSS, REGULARISERS, ST, text
from .plots import (file_part, finite_median, group_colour, group_of, groups_of, new_figure, parameter_colours,
                    save, suptitle)

# The learning curves' rows: a column of the trials' curves tables and its axis label.
CURVES = (("val_accuracy", LABEL_ACC), ("val_loss", LABEL_VAL_LOSS), ("train_loss", LABEL_TRAIN_LOSS))


def read_curves(rs, df, colour_by):
    """Every trial's curves, one series per trial (empty where it has none)."""
    series = []
    for v, (_, row) in zip(group_of(df), df.iterrows()):
        c = rs.curves(row["trial"]) or {}
        s = {"trial": int(row["trial"]), "variant": v, "status": row["status"],
             "colour_value": row[colour_by] if colour_by else None}
        s.update({k: c.get(k, []) for k in ["step"] + [k for k, _ in CURVES]})
        series.append(s)
    return series


def plot_learning_curves(rs, parameters, df, goal, title, outdir, written, notes, colour_by):
    """Per group: validation accuracy, validation loss (held out; for charlm with bits
    per byte on a second axis) and training loss against step, one line per trial coloured
    by the swept parameter colour_by; a row only for what some trial's curve holds (a
    program reports what it reports)."""
    series = read_curves(rs, df, colour_by)
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


def read_traces(rs, df):
    """The invariant traces of the trials of df that have one: (row, step, head_sv,
    correlation, chance) each."""
    traces = []
    for _, row in df.iterrows():
        inv = rs.invariants(row["trial"])
        if inv is not None and len(inv["step"]):
            traces.append((row, inv["step"], inv["head_sv"], inv["correlation"], inv["chance"]))
    return traces


def plot_invariants(rs, parameters, df, title, outdir, written, notes, colour_by):
    traces_of = {v: read_traces(rs, df[group_of(df) == v]) for v in groups_of(df)}
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


ROLE_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")
CP_FIT_MARK, CP_FIT_OMIT = 0.5, 0.1  # below: the roles are marked unreliable; not drawn


def plot_cp_roles(rs, df, goal, ranking, title, outdir, written, notes, top):
    """The CP role weights of the best trials by the metric, in the order of the report's
    leaderboard (ranking: its trial ids; finished trials with the metric, best first): a
    layer whose CP fit is below CP_FIT_MARK is marked (its components explain little of the
    tensor), one below CP_FIT_OMIT is not drawn, and a trial whose every layer is below it
    gets no chart."""
    by_trial = {int(row["trial"]): row for _, row in df.iterrows()}
    scored = [(by_trial[t], rs.scores(t)) for t in ranking]
    scored = [(row, scores) for row, scores in scored if any("cp_roles" in a for _, a in scores)]
    if not scored:
        notes.append("cp_roles_trial*.png not written: no finished trial has CP role weights "
                     "(none was scored, or scored with --no-cp)")
        return {}
    group = group_of(df)
    low = [int(row["trial"]) for row, scores in scored
           if not any(float(a.get("cp_fit", float("nan"))) >= CP_FIT_OMIT for _, a in scores)]
    if low:
        notes.append(f"cp_roles: no chart for trial{'s' if len(low) > 1 else ''} {', '.join(map(str, low))}: "
                     f"every layer's CP fit is below {CP_FIT_OMIT} (the components explain too little to read roles)")
    candidates = [(row, scores) for row, scores in scored if int(row["trial"]) not in low]
    chosen = candidates if top == 0 else candidates[:top]
    records = {}
    for rank_k, (row, layers) in enumerate(chosen, 1):
        trial = int(row["trial"])
        roles_names = None  # the scored tensor's roles (QK, OV of the function-level tensor)
        if layers:
            roles_names = text(layers[0][1].get("roles", "")).split(",")
        fig, axes = new_figure(1, len(layers), 4.2, 3.4, sharey=True)
        record = {"kind": "cp_roles", "trial": trial, "variant": group[row.name], "metric": goal.name,
                  "value": float(row[goal.name]), "reward": float(row["reward"]), "rank_by_metric": rank_k,
                  "layers": []}
        for j, (lname, s) in enumerate(layers):
            ax = axes[0, j]
            if "cp_roles" not in s:
                ax.text(0.5, 0.5, "CP sweep skipped", transform=ax.transAxes, ha="center")
                continue
            w = s["cp_roles"]
            R, nroles = w.shape
            names = roles_names if roles_names and len(roles_names) == nroles else \
                [f"role {i}" for i in range(nroles)]
            cp_fit = float(s.get("cp_fit", float("nan")))
            shown = cp_fit >= CP_FIT_OMIT
            record["layers"].append({"layer": lname, "cp_rank": int(s.get("cp_rank", R)),
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
