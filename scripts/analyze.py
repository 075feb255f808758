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
the CP role vectors) is read from the file, never recomputed, and every number the report
computes from them is the report's: `attnsweep report RESULTS.h5 --format json`, run as a
child process, gives the ranking (the best trial, the order of the CP role charts) and a
motpe sweep's front and hypervolume (objectives.png). The attnsweep binary is
$ATTNSWEEP_BIN, else this source tree's build/attnsweep, else attnsweep on PATH. The only
arithmetic here is the normalisation of the head singular values by their sum, the best so
far (history.png) and the 2-D fronts of pareto.png's panels (the metric against one score:
not the report's front, which is over the metric and both scores at once). Like the report, it selects and ranks by validation metrics only (the test
metrics are measured once per trial and only printed beside them). A list of the files
written goes to stdout, then the notes. A missing file, a file that is not HDF5 or not an
attnsweep results file with its schema (format 6 on) ends with one line on stderr and exit
code 2, and so does a damaged one (FILE: damaged results file (...)), one the report
cannot read, and a missing attnsweep binary: the script runs in a forked child, so an
error h5py raises anywhere, or libhdf5 crashing, is that one line.

Needs only Debian's python3-h5py, -numpy, -matplotlib (Agg), -pandas and -yaml, the
attnsweep binary, and python/attnsweep: results.py reads the file through the schema it
carries (the columns, the statuses, the sweep's metric and goal: `attnsweep schema`), and
analysis/ holds this script's parts (common: reading and the report's numbers; plots:
history, parallel coordinates, slices and the figure helpers; training: learning curves,
invariants, CP roles; fronts: pareto, objectives; probes).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from attnsweep.analysis.common import (ALL_TRIALS, BESIDE_BEST, DPI, PROG, ST, BadInput, Goal,  # noqa: E402
                                       Parameters, clean, die, open_results, ranking, report_numbers)


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description="Plot an attnsweep results file "
                                 "(learning curves, reward against parameters, Pareto fronts, "
                                 "invariant trajectories, CP role weights).",
                                 epilog="The ranking and a motpe sweep's front and hypervolume are attnsweep "
                                 "report's (--format json, run as a child process): the binary is $ATTNSWEEP_BIN, "
                                 "else this source tree's build/attnsweep, else attnsweep on PATH.")
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
        goal = Goal(rs)
        if goal.name not in df.columns:
            raise BadInput(f"{args.results}: the sweep's metric {goal.name} is not a /summary column")
        report = report_numbers(rs)
        best_first = ranking(rs, report, df)
        parameters = Parameters(rs)
        # the figures' modules import matplotlib and pandas: once the input has been checked,
        # so that a bad file is reported at once
        from attnsweep.analysis import fronts, plots, probes, training
        colour_by = plots.colour_parameter(parameters, df, args.colour_by)
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

    plots.plt.rcParams.update({"figure.dpi": DPI, "savefig.dpi": DPI, "axes.titlesize": 10,
                         "axes.labelsize": 9, "legend.framealpha": 0.8})

    sweep = rs.sweep or os.path.basename(args.results)
    tasks = sorted(df["task"].unique()) if "task" in df.columns else []
    title = f"{sweep} ({', '.join(tasks)})" if tasks else sweep
    written, notes = [], []
    figures = {}  # by file name; a figure not written (its record None) is left out of plots.json
    try:
        if len(df) == 0:
            notes.append("no figure: /summary holds no trial yet (the sweep has just begun)")
        else:
            figures["history.png"] = plots.plot_history(df, goal, title, outdir, written, notes)
            figures["parallel_coordinates.png"] = plots.plot_parallel(parameters, df, goal, title, outdir, written,
                                                                      notes)
            figures["slices.png"] = plots.plot_slices(parameters, df, goal, title, outdir, written, notes)
            figures["learning_curves.png"] = training.plot_learning_curves(rs, parameters, df, goal, title, outdir,
                                                                           written, notes, colour_by)
            figures["pareto.png"] = fronts.plot_pareto(df, goal, title, outdir, written, notes)
            figures["objectives.png"] = fronts.plot_objectives(rs.objectives, df, report, title, outdir, written)
            figures.update(training.plot_invariants(rs, parameters, df, title, outdir, written, notes, colour_by))
            figures.update(training.plot_cp_roles(rs, df, goal, best_first, title, outdir, written, notes, args.top))
            figures.update(probes.plot_probes(rs, df, title, outdir, written))
    except BadInput as e:
        die(f"{args.results}: {e}")
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
    if best_first:  # the report's leaderboard's first
        at = int(np.flatnonzero(df["trial"].to_numpy() == best_first[0])[0])
        b = df.iloc[at]
        beside = [f"{name} {b[c]:.4f}" for c, name in BESIDE_BEST if math.isfinite(b[c])]  # what it has
        what = plots.group_of(df).iloc[at]
        if what == ALL_TRIALS:  # no variant to name: its swept parameters
            what = ", ".join(f"{parameters.names[p]} {plots.value_text(b[p])}" for p in parameters.swept(df)) or what
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
