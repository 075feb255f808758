#!/usr/bin/python3
"""Optuna's samplers on the objectives of scripts/bench/sampler_bench.c (the same search
spaces, distributions, conditions and functions), one JSON line per seed as sampler_bench
prints them, so that scripts/bench/sampler_vs_optuna.sh compares the two in one run.

    sampler_vs_optuna.py SAMPLER OBJECTIVE SEEDS TRIALS [TABLE.csv]

SAMPLER: optuna-tpe | optuna-tpe-multivariate | optuna-random | optuna-nsga2 (two
objectives only). OBJECTIVE: mixed | conditional | tabular | tabular-mo (see
sampler_bench.c)."""
import csv
import json
import math
import sys
import time
import warnings

import optuna

from sampler_report import hypervolume  # the report's, so both compute one thing

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

VARIANTS = ["mha", "tucker", "linear", "grassmann"]


def mixed(t):
    lr = t.suggest_float("lr", 1e-4, 1e-1, log=True)
    warmup = t.suggest_float("warmup_frac", 0.0, 0.5)
    layers = t.suggest_int("layers", 1, 8)
    eval_every = t.suggest_int("eval_every", 10, 200, step=10)
    attention = t.suggest_categorical("attention", VARIANTS)
    dl, dw, dn, de = math.log10(lr / 3e-3), warmup - 0.1, layers - 3, (eval_every - 50) / 50.0
    v = 1.0 - dl * dl - 4.0 * dw * dw - 0.05 * dn * dn - 0.2 * de * de
    if attention != "tucker":
        return v - 0.3
    core_rank = t.suggest_categorical("core_rank", [1, 2, 3, 4])
    return v - 0.1 * abs(core_rank - 3)


def conditional(t):
    attention = t.suggest_categorical("attention", VARIANTS)
    value = None
    if attention == "mha":
        d = math.log10(t.suggest_float("lambda_orth", 1e-5, 1.0, log=True) / 1e-3)
        value = 0.9 - 0.05 * d * d
    elif attention == "tucker":
        value = 0.8 - 0.1 * abs(t.suggest_categorical("core_rank", [1, 2, 3, 4]) - 2)
    elif attention == "grassmann":
        d = (t.suggest_int("grassmann_rank", 2, 64) - 40) / 20.0
        value = 1.0 - 0.5 * d * d
    else:
        value = 0.7
    dw = t.suggest_float("warmup_frac", 0.0, 0.5) - 0.25
    return value - dw * dw


def load_table(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["attention"], float(r["lambda_orth"]), float(r["lr"]), int(r["d_model"]), int(r["layers"]))
            rows[key] = (float(r["val_accuracy"]), float(r["correlation"]))
    return rows


def tabular_params(t):
    return (t.suggest_categorical("attention", VARIANTS), t.suggest_categorical("lambda_orth", [0, 0.001, 0.01, 0.1]),
            t.suggest_categorical("lr", [0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008]),
            t.suggest_categorical("d_model", [16, 32, 64]), t.suggest_categorical("layers", [1, 2]))


def scaled(table):
    """(val_accuracy, correlation) -> both in [0, 1] by their range over the table, 1 best
    (as sampler_bench.c's hypervolume)."""
    accs, corrs = [a for a, _ in table.values()], [c for _, c in table.values()]
    a0, a1, c0, c1 = min(accs), max(accs), min(corrs), max(corrs)
    return lambda acc, corr: ((acc - a0) / (a1 - a0), (c1 - corr) / (c1 - c0))


def main():
    sampler_name, objective, seeds, trials = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    table = load_table(sys.argv[5] if len(sys.argv) > 5 else "scripts/bench/data/tabular_fashion.csv") \
        if objective.startswith("tabular") else None
    mo = objective == "tabular-mo"
    scale = scaled(table) if mo else None
    for seed in range(1, seeds + 1):
        if sampler_name == "optuna-tpe":
            sampler = optuna.samplers.TPESampler(seed=seed)
        elif sampler_name == "optuna-tpe-multivariate":
            sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, warn_independent_sampling=False)
        elif sampler_name == "optuna-random":
            sampler = optuna.samplers.RandomSampler(seed=seed)
        else:
            sampler = optuna.samplers.NSGAIISampler(seed=seed)
        directions = ["maximize", "minimize"] if mo else ["maximize"]
        study = optuna.create_study(directions=directions, sampler=sampler)
        values, points, elapsed, last = [], [], 0.0, 0.0
        for i in range(trials):
            t0 = time.process_time()
            trial = study.ask()
            if table is not None:
                acc, corr = table[tabular_params(trial)]
            else:
                acc, corr = (mixed if objective == "mixed" else conditional)(trial), 0.0
            dt = time.process_time() - t0
            elapsed += dt
            last += dt if i >= trials - 10 else 0.0
            study.tell(trial, [acc, corr] if mo else acc)
            if mo:
                points.append(scale(acc, corr))
            values.append(hypervolume(points, (0.0, 0.0)) if mo else acc)
        print(json.dumps({"method": sampler_name, "objective": objective, "seed": seed,
                          "propose_ms": 1e3 * elapsed / trials, "propose_last_ms": 1e3 * last / min(trials, 10),
                          "values": values}))


if __name__ == "__main__":
    main()
