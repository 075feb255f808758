"""What every part of scripts/analyze.py shares: the words and labels, the one-line error,
opening and checking the results file (through attnsweep.results, by the schema it
carries), the sweep's metric and goal (Goal), its parameters (Parameters), and the numbers
that `attnsweep report --format json` computes (report_numbers). Imports neither
matplotlib nor pandas, so that a bad file is reported at once."""
import json
import math
import os
import shutil
import subprocess
import sys
import types

import h5py
import numpy as np

from attnsweep import results as attnsweep_results
from attnsweep.results import text

PROG = "analyze.py"
DPI = 120

# The file's schema names the statuses: ST.ok, ST.pruned, ST.failed, filled in by
# open_results (one object, so that `from .common import ST` sees them); which /summary
# columns are parameters is attnsweep_results.Results.parameters.
ST = types.SimpleNamespace()
ENGINE_REPEAT = "seed"  # the engine's seed column is sweep seed * 1000 + repeat: not swept
ALL_TRIALS = "all trials"  # the one group of a sweep without attention variants
NOT_SET = "(not set)"  # a program's parameter a condition left out (NaN, or "" for a text)
REGULARISERS = ("lambda_orth", "lambda_nuclear", "lambda_stability", "lambda_l2")
VARIANT_ORDER = ("mha", "tucker", "linear", "grassmann")
VARIANT_COLOURS = {"mha": "C0", "tucker": "C1", "linear": "C2", "grassmann": "C3"}


def status_marker(status):
    return {ST.ok: "o", ST.pruned: "v", ST.failed: "X"}.get(status, "o")


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
    vars(ST).update(vars(attnsweep_results.Statuses(rs.schema)))
    return rs, rs.summary


# Every finished trial on the report's leaderboard (its --top's largest value).
REPORT_TOP = 1000000


def attnsweep_binary():
    """The attnsweep binary: $ATTNSWEEP_BIN, else this source tree's build/attnsweep, else
    attnsweep on PATH; BadInput with one line when there is none."""
    given = os.environ.get("ATTNSWEEP_BIN")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise BadInput(f"ATTNSWEEP_BIN={given}: not an executable file")
        return given
    tree = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "attnsweep"))
    if os.path.isfile(tree) and os.access(tree, os.X_OK):
        return tree
    found = shutil.which("attnsweep")
    if found:
        return found
    raise BadInput("cannot find the attnsweep binary, which computes the report's numbers this script plots "
                   "(ranking, Pareto front, hypervolume): set ATTNSWEEP_BIN, build it in build/ or put it on PATH")


def report_numbers(rs):
    """What `attnsweep report FILE --format json --top REPORT_TOP` computes, run as a child
    process: the leaderboard (every finished trial with the metric, best first), the Pareto
    front and, for a motpe sweep, pareto_hypervolume ({value, reference}). The figures take
    these from the report rather than computing them a second time (docs/plots.md)."""
    binary = attnsweep_binary()
    try:
        run = subprocess.run([binary, "report", rs.path, "--format", "json", "--top", str(REPORT_TOP)],
                             stdin=subprocess.DEVNULL, capture_output=True)
    except OSError as e:
        raise BadInput(f"{binary}: cannot run it: {e.strerror}") from None
    if run.returncode != 0:
        lines = run.stderr.decode(errors="replace").strip().splitlines()
        why = (lines[-1] if lines else f"exit code {run.returncode}" if run.returncode > 0
               else f"killed by signal {-run.returncode}")
        raise BadInput(f"{rs.path}: `attnsweep report --format json` failed: {why}")
    try:
        report = json.loads(run.stdout)
        rows = report["leaderboard"], report["pareto"]
    except (ValueError, KeyError, TypeError):
        raise BadInput(f"{binary}: `report --format json` printed no report of {rs.path}") from None
    if not all(isinstance(r, list) for r in rows):
        raise BadInput(f"{binary}: `report --format json` of {rs.path}: leaderboard and pareto are not lists")
    if rs.objectives and "pareto_hypervolume" not in report:
        raise BadInput(f"{binary}: its report of the motpe sweep {rs.path} has no pareto_hypervolume "
                       f"(an attnsweep older than this script)")
    return report


def ranking(rs, report, df):
    """The trial ids of the report's leaderboard (finished trials with the metric, best
    first), each checked to be a /summary row."""
    ids = [int(row["trial"]) for row in report["leaderboard"]]
    stray = sorted(set(ids) - {int(t) for t in df["trial"]})
    if stray:
        raise BadInput(f"{rs.path}: the report ranks trial {stray[0]}, which /summary does not hold")
    return ids


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
