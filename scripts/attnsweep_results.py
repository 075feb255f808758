"""attnsweep_results: read an attnsweep results file into pandas, as analyze.py does.

    import sys; sys.path.insert(0, "scripts")
    from attnsweep_results import summary, sweep_goal, trial
    df = summary("results/NAME.h5")          # /summary: str columns, one row per trial, by id
    metric, maximize = sweep_goal("results/NAME.h5")   # the sweep's metric and its YAML goal

The file is opened read-only without HDF5's file locking, so a sweep that is still
running can be read (up to its last flush, as `attnsweep report` reads it). The same
DataFrame in one line of pandas (the README's recipe):

    pandas.DataFrame(h5py.File(f, "r", locking=False)["summary"][:]).pipe(lambda d: d.apply(lambda c: c.str.decode("utf-8") if c.dtype == object else c)).sort_values("trial", ignore_index=True)
"""
import h5py
import pandas
import yaml


def open_file(path):
    """The results file, read-only and without the lock a running sweep's writer holds."""
    return h5py.File(path, "r", locking=False)


def summary_frame(table):
    """/summary's rows (a numpy structured array) as a DataFrame: the fixed-length string
    columns (status, attention, task, ...) as str, the rows in trial order."""
    df = pandas.DataFrame(table)
    df = df.apply(lambda c: c.str.decode("utf-8") if c.dtype == object else c)
    return df.sort_values("trial", kind="stable", ignore_index=True)


def summary(path):
    """The /summary table of the results file at path (see summary_frame)."""
    with open_file(path) as f:
        return summary_frame(f["summary"][:])


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def goal_of(yaml_text):
    """The sweep's metric and whether it is maximised, from its YAML text: `metric:
    {name, goal}`, by default reward (maximised), a loss minimised (as space.c reads it)."""
    try:
        space = yaml.safe_load(yaml_text) or {}
    except yaml.YAMLError:
        space = {}
    m = space.get("metric") if isinstance(space, dict) else None
    name = m.get("name", "reward") if isinstance(m, dict) else "reward"
    goal = m.get("goal") if isinstance(m, dict) else None
    if goal is None:
        goal = "minimize" if name in ("val_loss", "val_bits_per_byte") else "maximize"
    return str(name), goal == "maximize"


def sweep_goal(path):
    """The sweep's metric and goal (goal_of) from the results file's `yaml` attribute."""
    with open_file(path) as f:
        return goal_of(text(f.attrs.get("yaml", "")))


def trial(f, trial_id):
    """The /trials/NNNNNN group of an open file, or None."""
    name = f"{int(trial_id):06d}"
    return f["trials"][name] if name in f["trials"] else None
