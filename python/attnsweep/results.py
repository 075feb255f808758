"""attnsweep.results: read an attnsweep results file through the vocabulary it carries.

Every results file holds its own schema (root attribute ``schema``: the JSON that
``attnsweep schema --json`` prints, from src/store/schema.c): the format version, the
trial statuses, the /summary columns with their units and goals, the per-trial tables and
the root attributes. This module takes every name from there, so no Python file restates
a column list, a status name or a format version::

    import sys; sys.path.insert(0, "python")     # from the repository's root
    from attnsweep.results import Results
    with Results("results/NAME.h5") as r:
        df = r.summary                # /summary as a DataFrame: str columns, by trial id
        r.metric, r.maximize          # what the sweep is ranked by (root attributes)
        r.parameters                  # the /summary columns that are parameters
        df[df.status.isin(r.measured)]  # the trials whose metrics were measured (ok, pruned)

The file is opened read-only without HDF5's file locking, so a sweep that is still
running can be read (up to its last flush, as ``attnsweep report`` reads it). A file
that is not an attnsweep results file of a format with a schema raises BadResults with
one line.
"""
import json

import h5py
import numpy as np
import yaml


class BadResults(Exception):
    """The file is no results file this reader can read: one line, naming the file."""


def text(v):
    """An attribute's or a column's value as str."""
    return v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v)


def decoded(v):
    """An attribute's value with its text as str (numbers and arrays as they are)."""
    return text(v) if isinstance(v, (bytes, np.bytes_, str)) else v


def open_file(path):
    """The HDF5 file, read-only and without the lock a running sweep's writer holds."""
    return h5py.File(path, "r", locking=False)


class Schema:
    """The vocabulary of one results file (schema.h), from its JSON."""

    def __init__(self, data):
        self.data = data
        self.format_version = int(data["format_version"])
        self.statuses = [s["name"] for s in data["statuses"]]
        self.measured = tuple(s["name"] for s in data["statuses"] if s["measured"])
        self.metrics = {m["name"]: m for m in data["metrics"]}
        self.costs = {m["name"]: m for m in data["costs"]}
        summary = data["tables"]["summary"]
        self.lead = [c["name"] for c in summary["lead"]]
        self.trail = [c["name"] for c in summary["trail"]]
        self.engine_parameters = [c["name"] for c in summary["parameters"]]
        self.curve_columns = [c["name"] for c in data["tables"]["curves"]["columns"]]
        self.trace_columns = [c["name"] for c in data["tables"]["invariants"]["columns"]]
        self.root_attributes = [a["name"] for a in data["root_attributes"]]

    def status(self, name):
        """A status name, checked against the schema (a KeyError names a status that
        this attnsweep does not have, rather than matching no trial in silence)."""
        if name not in self.statuses:
            raise KeyError(f"no status {name!r} in the results schema (it has {', '.join(self.statuses)})")
        return name

    def result_columns(self):
        """The /summary columns that are results, not parameters: the lead and trail
        columns and every metric."""
        return set(self.lead) | set(self.trail) | set(self.metrics) | set(self.costs)

    def goal_of(self, name):
        """Whether the metric of that name is maximised by default (None: not the schema's)."""
        m = self.metrics.get(name) or self.costs.get(name)
        return None if m is None else m["goal"] == "maximize"


class Statuses:
    """The schema's status names as attributes (statuses.ok is "ok"): a status that this
    attnsweep does not have is an AttributeError, never a silent match of no trial."""

    def __init__(self, schema):
        for name in schema.statuses:
            setattr(self, name, name)
        self.measured = schema.measured


def read_schema(f, path):
    """The Schema a file carries, or BadResults with one line."""
    if "format_version" not in f.attrs:
        raise BadResults(f"{path}: not an attnsweep results file (no format_version attribute)")
    if "schema" not in f.attrs:
        try:
            version = int(np.asarray(f.attrs["format_version"]).reshape(-1)[0])
        except (TypeError, ValueError, IndexError):
            version = text(f.attrs["format_version"])
        writer = text(f.attrs.get("version", "an unknown attnsweep"))
        raise BadResults(f"{path}: results format {version} (written by {writer}) carries no schema; "
                         f"`attnsweep run SWEEP.yaml --resume` rebuilds it from its journal")
    try:
        schema = Schema(json.loads(text(f.attrs["schema"])))
    except (ValueError, KeyError, TypeError) as e:
        raise BadResults(f"{path}: its schema attribute is damaged ({type(e).__name__})") from None
    try:
        version = int(np.asarray(f.attrs["format_version"]).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        raise BadResults(f"{path}: format_version {f.attrs['format_version']!r} is not an integer") from None
    if version != schema.format_version:
        raise BadResults(f"{path}: format_version {version} but its schema says {schema.format_version}")
    return schema


def summary_frame(table):
    """/summary's rows (a numpy structured array) as a DataFrame: the fixed-length string
    columns (status, attention, task, ...) as str, the rows in trial order."""
    import pandas
    df = pandas.DataFrame(table)
    df = df.apply(lambda c: c.str.decode("utf-8") if c.dtype == object else c)
    return df.sort_values("trial", kind="stable", ignore_index=True)


class Results:
    """An open results file: its schema, what it is ranked by (metric None for a model's
    scores file, which has no /summary), /summary, its trials."""

    def __init__(self, path):
        self.path = path
        try:
            self.file = open_file(path)
        except OSError as e:
            raise BadResults(f"{path}: cannot open it: {str(e).splitlines()[0]}") from None
        try:
            self.schema = read_schema(self.file, path)
            attrs = self.file.attrs
            self.metric, self.maximize, self.objectives = None, False, []
            if "summary" in self.file:  # a sweep's or a trial's file; a model's scores file has none
                self.metric = text(attrs["metric"])
                self.maximize = text(attrs["goal"]) == "maximize"
                self.objectives = [(o["name"], o["goal"] == "maximize")
                                   for o in json.loads(text(attrs["objectives"]))]
            self.sweep = text(attrs.get("sweep", ""))
            self.yaml = text(attrs.get("yaml", ""))
        except BadResults:
            self.file.close()
            raise
        except (KeyError, ValueError, TypeError) as e:
            self.file.close()
            raise BadResults(f"{path}: a root attribute is missing or damaged ({e})") from None
        self._summary = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.file.close()

    @property
    def measured(self):
        """The statuses whose metrics were measured (ok, pruned)."""
        return self.schema.measured

    @property
    def program_metric(self):
        """The sweep's metric when it is the program's own (no metric of the schema), else None."""
        return None if self.metric in self.schema.metrics or self.metric in self.schema.costs else self.metric

    @property
    def summary(self):
        """/summary as a DataFrame (summary_frame), read once."""
        if self._summary is None:
            if "summary" not in self.file:
                raise BadResults(f"{self.path}: no /summary table")
            self._summary = summary_frame(self.file["summary"][:])
        return self._summary

    @property
    def parameters(self):
        """The /summary columns that are parameters, in file order: every column that is
        not a result (Schema.result_columns) nor the program's own metric."""
        results = self.schema.result_columns() | {self.program_metric}
        names = self.file["summary"].dtype.names or ()
        return [c for c in names if c not in results]

    @property
    def attributes(self):
        """The root attributes as a dict: texts as str (start_time, end_time, seed, ...)."""
        return {k: decoded(v) for k, v in self.file.attrs.items()}

    def trial(self, trial_id):
        """The /trials/NNNNNN group, or None."""
        name = f"{int(trial_id):06d}"
        trials = self.file.get("trials")
        return trials[name] if trials is not None and name in trials else None

    def trial_ids(self):
        """The ids of the trials under /trials, in order."""
        return sorted(int(name) for name in self.file.get("trials", {}))

    def probe(self, trial_id):
        """A trial's probe group (written by `attnsweep probe`; docs/results-file.md), or None."""
        g = self.trial(trial_id)
        return g["probe"] if g is not None and "probe" in g else None

    def trial_attrs(self, trial_id):
        """A trial's attributes as a dict: texts as str, config and reward_spec parsed from
        their JSON ({} for a trial that is not in the file)."""
        g = self.trial(trial_id)
        if g is None:
            return {}
        out = {k: decoded(v) for k, v in g.attrs.items()}
        for k in ("config", "reward_spec"):
            if k in out:
                out[k] = json.loads(out[k])
        return out

    def _table(self, trial_id, name, columns):
        g = self.trial(trial_id)
        if g is None or name not in g:
            return None
        table = g[name][:]
        return {c: table[c] for c in columns if c in (table.dtype.names or ())}

    def curves(self, trial_id):
        """A trial's curves table ({column: array}, the schema's curve columns that it has),
        or None when it has none."""
        return self._table(trial_id, "curves", self.schema.curve_columns)

    def invariants(self, trial_id):
        """A trial's invariant trace ({column: array}, the schema's trace columns: step [n],
        correlation [n, L], eff_rank, head_sv, chance [n, L, ...]), or None."""
        return self._table(trial_id, "invariants", self.schema.trace_columns)

    def layers(self, trial_id, group):
        """The layerK members of a trial's group (scores, weights, weights_out), by K:
        [(name, member)], empty when the trial or the group is not there."""
        g = self.trial(trial_id)
        if g is None or group not in g:
            return []
        return sorted(g[group].items(), key=lambda item: int(item[0][len("layer"):]))

    def scores(self, trial_id):
        """A trial's scores: [(layerK, its attributes as a dict)] by K (attnsweep score)."""
        return [(name, dict(s.attrs)) for name, s in self.layers(trial_id, "scores")]

    def params(self, trial_id):
        """A trial's whole trained model (its params and their layout): [(tensor name, float32
        array)] in the arena's order (a block's names once per block), or None for a trial
        without params (files written before them)."""
        g = self.trial(trial_id)
        if g is None or "params" not in g:
            return None
        flat, out, at = g["params"][()], [], 0
        for item in text(g["params"].attrs["layout"]).split(","):
            name, count = item.rsplit(":", 1)
            out.append((name, flat[at:at + int(count)]))
            at += int(count)
        if at != len(flat):
            raise BadResults(f"{self.path}: trial {trial_id}: its params layout covers {at} of {len(flat)} values")
        return out

    def weights(self, trial_id, group="weights"):
        """A trial's final attention tensors: [(layerK, array)] by K (group weights_out: their
        output sides)."""
        return [(name, w[()]) for name, w in self.layers(trial_id, group)]


def space_of(yaml_text):
    """The sweep's YAML as a dict ({} when it is none)."""
    try:
        space = yaml.safe_load(yaml_text)
    except yaml.YAMLError:
        return {}
    return space if isinstance(space, dict) else {}


def is_program(space):
    """Whether the sweep runs the researcher's program (docs/trainer.md)."""
    return "program" in space or "command" in space


def summary(path):
    """The /summary table of the results file at path (see summary_frame)."""
    with Results(path) as r:
        return r.summary


def sweep_goal(path):
    """The sweep's metric and whether it is maximised (root attributes metric and goal)."""
    with Results(path) as r:
        return r.metric, r.maximize
