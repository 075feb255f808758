"""analyze.py's Pareto figures: pareto.png (the sweep's metric against Correlation and
against RankDeviation, each panel's own 2-D front) and objectives.png (a motpe sweep's
front over all its objectives and its hypervolume, as `attnsweep report` computes them)."""
import math

import numpy as np
from matplotlib.lines import Line2D

from .common import ALL_TRIALS, BadInput, LABEL_CORR, LABEL_RD, PRETTY, ST
from .plots import (finite_median, group_colour, group_legend_handles, group_of, groups_of, new_figure,
                    place_labels, save, suptitle)

def pareto_front(x, y):
    """Indices of the points not dominated when x is minimised and y maximised
    (q dominates p when x_q <= x_p and y_q >= y_p, one of them strictly), by x."""
    idx = []
    for i in range(len(x)):
        dominated = np.any((x <= x[i]) & (y >= y[i]) & ((x < x[i]) | (y > y[i])))
        if not dominated:
            idx.append(i)
    return sorted(idx, key=lambda i: (x[i], -y[i]))



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


def plot_objectives(objectives, df, report, title, outdir, written):
    """A motpe sweep: the first objective against each other one, the front over all of
    them highlighted, and its hypervolume (against the worst of each objective over the
    finished trials): the front and the hypervolume are the report's (report_numbers), not
    computed here."""
    names = [n for n, _ in objectives]
    if not objectives or not all(n in df.columns for n in names):
        return None
    ok = df[df["status"] == ST.ok]
    keep = np.all(np.isfinite(ok[names].to_numpy(dtype=float)), axis=1)
    sub = ok[keep]
    position = {int(t): i for i, t in enumerate(sub["trial"])}
    front_trials = [int(row["trial"]) for row in report["pareto"]]
    if not all(t in position for t in front_trials):
        raise BadInput(f"the report's Pareto front ({', '.join(map(str, front_trials))}) is not among the "
                       f"finished trials of /summary")
    front = [position[t] for t in front_trials]
    volume = report["pareto_hypervolume"]
    hv = volume["value"]
    record = {"kind": "objectives", "objectives": [{"name": n, "goal": "maximize" if up else "minimize"}
                                                   for n, up in objectives],
              "hypervolume": hv, "reference": [volume["reference"].get(n) for n in names],
              "front_trials": front_trials, "trial": sub["trial"].tolist(), "panels": []}
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
    hv_text = "unknown" if hv is None else f"{hv:.4g}"  # null: NaN
    suptitle(fig, f"{title}: the sweep's objectives, {len(front)} of {len(ok)} finished trials on the front "
                  f"(black edge), hypervolume {hv_text} (attnsweep report's)")
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
        # This panel's own 2-D front (the metric against this score alone): another set than
        # the report's pareto table, the front over the metric and both scores at once.
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
        ax.set_ylabel(goal.label)
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
