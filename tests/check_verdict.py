"""check_verdict: the verdict of `attnsweep report` (src/report/verdict.h) recomputed from a
results file (read through python/attnsweep/results.py) with numpy and scipy, independently of the C code, and compared with the
report's JSON:

    /usr/bin/python3 tests/check_verdict.py RESULTS.h5 REPORT.json [EARLY_STEP]

(EARLY_STEP: the report's --early-step.)

* the predictors at every evaluation from the trials' curves and invariants tables (the
  RankDeviation and Correlation of each evaluation beyond chance, from its effective ranks, nulls, the weights' shapes and the
  trial's reward_spec, the reward from them), the final metric from /summary;
* Kendall's τ-b by scipy.stats.kendalltau (in the bootstrap, from its definition over all
  pairs with numpy, checked against scipy on every sample); the bootstrap over configurations with the same
  draws: GSL's gsl_rng_uniform_int on mt19937 seeded with 27 is numpy's legacy MT19937
  (RandomState, the same init_genrand) read raw, with GSL's rejection (k = raw // (2³²−1 // n)
  until k < n); the 95 % interval by numpy.percentile (linear, GSL's
  gsl_stats_quantile_from_sorted_data);
* the fit by numpy.linalg.lstsq, leave-one-configuration-out R², β = −c/b, γ = −d/b.

Exits 1 naming every disagreement. τ and its interval must agree to 1e-12 (counts of pairs:
the same numbers); the fit's numbers to 1e-7 relative (GSL's SVD against LAPACK's).
"""
import json
import math
import os
import sys
import warnings

import numpy as np
from scipy import stats

import numcheck

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnsweep.results import Results  # noqa: E402  (test_verdict.c runs this without lib.sh's PYTHONPATH)

RESAMPLES, SEED, LEVEL, TOP_K, MIN_CONFIGS, MIN_FIT = 1000, 27, 0.95, 3, 5, 8
VARIANTS = ["mha", "tucker", "linear", "grassmann"]
MODES = {"function": ["heads", "dest_dim", "src_dim", "roles"], "parameters": ["heads", "head_dim", "model_dim", "roles"]}
warnings.simplefilter("ignore")  # scipy's kendalltau on constant input: NaN, as the report's

path, jpath = sys.argv[1:3]
early_step = int(sys.argv[3]) if len(sys.argv) > 3 else None
rep = json.load(open(jpath))
rs = Results(path)
bad = []


def want(ok, what):
    if not ok:
        bad.append(what)


def same(got, exp, rel):  # None (JSON null) exactly where the recomputation has NaN
    if exp is None or (isinstance(exp, float) and math.isnan(exp)):
        return got is None
    return got is not None and numcheck.close(got, exp, rtol=rel, atol=rel)


# ---------------------------------------------------------------- the trials

summary = rs.summary
metric = rep["metric"] if rep["metric"] in ("val_accuracy", "val_loss", "val_bits_per_byte") else "val_accuracy"
sign = 1.0 if metric == "val_accuracy" else -1.0  # val_loss and bits per byte: lower is better
twin = "test_" + metric[4:]


def rank_deviation(eff, chance, shape, spec):  # trial/reward.h: beyond chance, on the scored shape
    d = [shape[0], shape[2], shape[2], 2] if shape[3] != 1 else [shape[2]] * 3 + [1]
    if spec["tensor"] == "parameters":
        d = list(shape)
    rmax = [min(d[n], int(np.prod(d)) // d[n]) for n in range(4)]
    used = [(MODES[spec["tensor"]].index(m), r) for m, r in spec["modes"].items()]
    devs = []
    for layer, null in zip(eff, chance):
        for n, r in used:
            ideal = rmax[n] if r is None else min(r, rmax[n])
            dev = abs(layer[n] - ideal) / rmax[n]
            if n == 0:  # less its value at the null's mean; none without heads (no null)
                dev = dev - abs(null[2] - ideal) / rmax[n] if np.isfinite(null[3]) else 0.0
            devs.append(dev)
    return sum(devs) / len(devs)


def correlation(corr, chance):  # beyond chance: less the null's mean; 0 without heads
    return float(np.mean([c - null[0] if np.isfinite(null[1]) else 0.0 for c, null in zip(corr, chance)]))


trials = []
for _, row in summary.iterrows():
    attrs = rs.trial_attrs(row.trial)
    config, spec = attrs["config"], attrs["reward_spec"]
    c = rs.curves(row.trial)
    values = c[metric] if metric != "val_bits_per_byte" else c["val_loss"] / math.log(2)
    evals = {int(step): {"metric": v, "val_accuracy": acc} for step, v, acc in zip(c["step"], values, c["val_accuracy"])}
    inv = rs.invariants(row.trial)
    if inv is not None:
        shape = rs.weights(row.trial)[0][1].shape
        for step, eff, chance, corr in zip(inv["step"], inv["eff_rank"], inv["chance"], inv["correlation"]):
            e = evals.get(int(step))
            if e is not None:
                e["rank_deviation"] = rank_deviation(eff, chance, shape, spec)
                e["correlation"] = correlation(corr, chance)
                e["reward"] = e["val_accuracy"] - spec["beta"] * e["rank_deviation"] - spec["gamma"] * e["correlation"]
    key = json.dumps({k: v for k, v in config.items() if k != "seed"}, sort_keys=True)
    trials.append({"id": int(row.trial), "status": row.status, "key": key, "seed": config["seed"],
                   "variant": config.get("attention"), "final": sign * row[metric],
                   "test": sign * row[twin] if twin in row else math.nan, "evals": evals})

# The statistics' trials: finished, one per seed of each configuration (the lowest id);
# configurations by variant, then by their first trial of any status (the report's tables).
first = {}
for t in trials:
    first.setdefault(t["key"], (VARIANTS.index(t["variant"]) if t["variant"] in VARIANTS else -1, t["id"]))
seen, ok = set(), []
for t in trials:
    if t["status"] == "ok" and (t["key"], t["seed"]) not in seen:
        seen.add((t["key"], t["seed"]))
        ok.append(t)
ok.sort(key=lambda t: (first[t["key"]], t["id"]))
traced = any("correlation" in e for t in ok for e in t["evals"].values())
PREDICTORS = [metric] + (["rank_deviation", "correlation", "reward"] if traced else [])
READING = {metric: sign, "rank_deviation": -1.0, "correlation": -1.0, "reward": 1.0}


def value(t, step, p):
    e = t["evals"].get(step)
    key = "metric" if p == metric else p
    return READING[p] * e[key] if e is not None and key in e else math.nan


# ---------------------------------------------------------------- groups and draws

def draws(n_configs):  # gsl_rng_uniform_int(mt19937 seeded 27, n), RESAMPLES × n_configs in order
    bits = np.random.RandomState(SEED)._bit_generator
    scale = 0xFFFFFFFF // n_configs
    out = np.empty(RESAMPLES * n_configs, dtype=int)
    for i in range(out.size):
        k = n_configs
        while k >= n_configs:
            k = int(bits.random_raw()) // scale
        out[i] = k
    return out.reshape(RESAMPLES, n_configs)


def tau(x, y):
    keep = np.isfinite(x) & np.isfinite(y)
    return stats.kendalltau(x[keep], y[keep]).correlation if keep.sum() >= 2 else math.nan


def tau_pairs(x, y):  # τ-b from its definition over all pairs: the bootstrap's (scipy's is slow per call)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    sx, sy = np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])
    n0 = len(x) * (len(x) - 1) / 2
    n1, n2 = (sx == 0).sum() / 2 - len(x) / 2, (sy == 0).sum() / 2 - len(x) / 2  # ties, less the diagonal
    den = math.sqrt((n0 - n1) * (n0 - n2))
    return (sx * sy).sum() / 2 / den if den > 0 else math.nan


def interval(values):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if 2 * v.size < RESAMPLES:
        return math.nan, math.nan
    return tuple(np.percentile(v, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2]))


def regret(x, y, ids):
    keep = [i for i in range(len(x)) if np.isfinite(x[i]) and np.isfinite(y[i])]
    top = sorted(keep, key=lambda i: (-x[i], ids[i]))[:TOP_K]
    return max(y[i] for i in keep) - max(y[i] for i in top) if keep else math.nan


def solvable(X, rows):  # more distinct rows than coefficients, every regressor varying (verdict.c least_squares)
    return len(set(rows)) > len(X) + 1 and all(len(set(col[rows])) > 1 for col in X)


def lstsq(X, y):
    return np.linalg.lstsq(np.column_stack([np.ones(len(y))] + X), y, rcond=None)[0]


def cv_r2(cols, y, config):
    if not cols:
        return math.nan
    press = 0.0
    for c in np.unique(config):
        out = config == c
        if not solvable(cols, np.flatnonzero(~out)):
            return math.nan
        coef = lstsq([col[~out] for col in cols], y[~out])
        press += ((y[out] - coef[0] - sum(b * col[out] for b, col in zip(coef[1:], cols))) ** 2).sum()
    ss = ((y - y.mean()) ** 2).sum()
    return 1 - press / ss if ss > 0 else math.nan


variants_present = [v for v in VARIANTS if any(t["variant"] == v for t in ok)]
groups = [("all", ok)] + ([(v, [t for t in ok if t["variant"] == v]) for v in variants_present]
                          if len(variants_present) > 1 else [])
tau_rows = iter(rep["verdict"]["tau"])
fit_rows = {r["attention"]: r for r in rep["verdict"]["fit"]}
n_tau = 0
for name, members in groups:
    keys = list(dict.fromkeys(t["key"] for t in members))
    config = np.array([keys.index(t["key"]) for t in members])
    ids = [t["id"] for t in members]
    d = draws(len(keys))
    resamples = [np.concatenate([np.flatnonzero(config == c) for c in row]) for row in d]
    y = np.array([t["final"] for t in members])
    yt = np.array([t["test"] for t in members])
    steps = sorted({s for t in members for s in t["evals"]})
    steps = [s for s in steps if len({config[i] for i, t in enumerate(members) if np.isfinite(value(t, s, metric))})
             >= MIN_CONFIGS]
    if len(keys) < MIN_CONFIGS:
        r = next(tau_rows)
        want(r["attention"] == name and r["tau"] is None and "fewer than the 5" in r["reason"], f"{name}: reason row {r}")
    else:
        for p in PREDICTORS:
            rows = 0
            for s in steps:
                x = np.array([value(t, s, p) for t in members])
                keep = np.isfinite(x) & np.isfinite(y)
                if len(set(config[keep])) < MIN_CONFIGS:
                    continue
                r = next(tau_rows)
                what = f"{name} {p} step {s}"
                want(r["attention"] == name and r["predictor"] == p and r["step"] == s, f"{what}: row {r}")
                want(r["n"] == keep.sum() and r["configurations"] == len(set(config[keep])), f"{what}: n {r['n']}")
                lo, hi = interval([tau_pairs(x[idx], y[idx]) for idx in resamples])
                want(same(r["tau"], tau(x, y), 1e-12), f"{what}: τ {r['tau']} vs scipy {tau(x, y)}")
                want(same(None if math.isnan(tau_pairs(x, y)) else tau_pairs(x, y), tau(x, y), 1e-12),
                     f"{what}: the pairs' τ {tau_pairs(x, y)} vs scipy's")
                want(same(r["tau_lo"], lo, 1e-12) and same(r["tau_hi"], hi, 1e-12),
                     f"{what}: interval [{r['tau_lo']}, {r['tau_hi']}] vs [{lo}, {hi}]")
                want(same(r["regret"], regret(x, y, ids), 1e-12), f"{what}: regret {r['regret']}")
                want(same(r["tau_test"], tau(x, yt), 1e-12), f"{what}: τ test {r['tau_test']}")
                rows += 1
                n_tau += 1
            if not rows and p != metric:
                r = next(tau_rows)
                want(r["predictor"] == p and r["tau"] is None and r["reason"], f"{name} {p}: reason row {r}")

    # the fit at the early step: the first every member has, else the one most have
    fit = fit_rows.pop(name)
    have = [sum(np.isfinite(value(t, s, metric)) for t in members) for s in steps]
    step = early_step or next((s for s, h in zip(steps, have) if h == len(members)),
                              steps[int(np.argmax(have))] if steps and max(have) > 0 else -1)
    want(fit["step"] == (None if step < 0 else step), f"{name}: fit step {fit['step']} vs {step}")
    cols = np.array([[value(t, step, metric), -value(t, step, "rank_deviation") if traced else math.nan,
                      -value(t, step, "correlation") if traced else math.nan] for t in members]).reshape(-1, 3)
    rows = np.flatnonzero(np.isfinite(cols).all(axis=1) & np.isfinite(y))
    if len(keys) < MIN_CONFIGS or not traced or len(rows) < MIN_FIT or len(set(config[rows])) < MIN_CONFIGS:
        want(fit["b_early"] is None and fit["beta"] is None and fit["answer"], f"{name}: no fit, yet {fit}")
        continue
    use = [j for j in range(3) if len(set(cols[rows, j])) > 1]
    X = [cols[rows, j] for j in use]
    r2 = [cv_r2([cols[rows, j] for j in use if j in m], y[rows], config[rows]) for m in ([0], [1, 2], [0, 1, 2])]
    for k, key in enumerate(["r2_cv_early", "r2_cv_invariants", "r2_cv_both"]):
        want(same(fit[key], r2[k], 1e-7), f"{name}: {key} {fit[key]} vs {r2[k]}")

    def coefficients(rws):
        if not solvable([cols[:, j] for j in use], rws):
            return [math.nan] * 5
        c = dict(zip(use, lstsq([cols[rws, j] for j in use], y[rws])[1:]))
        b, cc, dd = (c.get(j, math.nan) for j in range(3))
        return [b, cc, dd, -cc / b if b > 0 else math.nan, -dd / b if b > 0 else math.nan]

    point = coefficients(rows)
    measured = np.zeros(len(members), dtype=bool)
    measured[rows] = True
    boot = np.array([coefficients(idx[measured[idx]]) for idx in resamples])
    estimates = {}
    for j, key in enumerate(["b_early", "c_rank_deviation", "d_correlation", "beta", "gamma"]):
        lo, hi = interval(boot[:, j])
        estimates[key] = (point[j], lo, hi)
    if metric != "val_accuracy" or not estimates["b_early"][1] > 0:
        estimates["beta"] = estimates["gamma"] = (math.nan, math.nan, math.nan)
    for key, (v, lo, hi) in estimates.items():
        want(same(fit[key], v, 1e-7) and same(fit[key + "_lo"], lo, 1e-7) and same(fit[key + "_hi"], hi, 1e-7),
             f"{name}: {key} {fit[key]} [{fit[key + '_lo']}, {fit[key + '_hi']}] vs {v} [{lo}, {hi}]")
    detected = [label for key, label in (("c_rank_deviation", "RankDeviation"), ("d_correlation", "Correlation"))
                if estimates[key][1] > 0 or estimates[key][2] < 0]
    for label in ("RankDeviation", "Correlation"):
        want((f"{label} adds information" in fit["answer"]) == (label in detected),
             f"{name}: answer '{fit['answer']}' on {label} (detected: {detected})")
    want(("the invariant terms add nothing this sweep can detect" in fit["answer"]) == (not detected),
         f"{name}: answer '{fit['answer']}' (detected: {detected})")
want(next(tau_rows, None) is None, "verdict.tau has more rows than the recomputation")
want(not fit_rows, f"verdict.fit has rows for {list(fit_rows)} the recomputation has not")

print("\n".join(bad) if bad else f"verdict: {n_tau} τ rows and {len(groups)} fits as recomputed", end="\n")
sys.exit(1 if bad else 0)
