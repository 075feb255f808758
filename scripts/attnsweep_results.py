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


# The metrics a sweep may be decided by and whether each is maximised by default
# (trial/metrics.h, METRIC_DECIDES), and every other name attnsweep measures itself.
DECIDES = {"val_accuracy": True, "val_loss": False, "val_bits_per_byte": False, "reward": True}
MEASURED = ("test_accuracy", "test_loss", "test_bits_per_byte", "rank_deviation", "correlation",
            "correlation_chance", "correlation_z", "eff_rank_z", "rank_deviation_excess",
            "correlation_excess", "n_params", "seconds")


def space_of(yaml_text):
    """The sweep's YAML as a dict ({} when it is none)."""
    try:
        space = yaml.safe_load(yaml_text)
    except yaml.YAMLError:
        return {}
    return space if isinstance(space, dict) else {}


def is_program(space):
    """Whether the sweep runs the researcher's program (README "Bring your own trainer")."""
    return "program" in space or "command" in space


def goal_of(yaml_text):
    """The sweep's metric and whether it is maximised, from its YAML text, as `attnsweep
    report` reads them (store/summary.c): `metric: {name, goal}` with one of DECIDES, by
    default with its own goal; a program's own metric (any other name), by default
    minimised (W&B's default); a program's sweep with neither metric nor reward section,
    val_loss minimised; otherwise reward, maximised."""
    space = space_of(yaml_text)
    m = space.get("metric")
    name = m.get("name") if isinstance(m, dict) else None
    goal = m.get("goal") if isinstance(m, dict) else None
    name = None if name is None else str(name)
    program = is_program(space)
    if name in DECIDES:
        return name, DECIDES[name] if goal is None else goal != "minimize"
    if program and name and name not in MEASURED:
        return name, goal == "maximize"
    if program and name is None and "reward" not in space:
        return "val_loss", False
    return "reward", True


def sweep_goal(path):
    """The sweep's metric and goal (goal_of) from the results file's `yaml` attribute."""
    with open_file(path) as f:
        return goal_of(text(f.attrs.get("yaml", "")))


def trial(f, trial_id):
    """The /trials/NNNNNN group of an open file, or None."""
    name = f"{int(trial_id):06d}"
    return f["trials"][name] if name in f["trials"] else None
