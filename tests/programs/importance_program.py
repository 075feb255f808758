#!/usr/bin/env python3
"""A trial program whose val_loss is a known function of its parameters, for the parameter
importance test (tests/test_report_html.sh): y matters most (fANOVA about 0.57), then opt (about
0.42), x hardly (below 0.01) and z not at all:
val_loss = (x − 0.3)² + 1.5 y + {adam: 0, sgd: 1.0, rmsprop: 0.5}[opt] + 1/step,
and val_accuracy = 1 − (x − 0.6)² − 0.3 (1 − y) − 1/(10 step), which pulls x and y the other
way (a Pareto front of the two). It reports --steps evaluations and exits."""
import argparse
import json
import os

p = argparse.ArgumentParser()
p.add_argument("--x", type=float, default=0.5)
p.add_argument("--y", type=float, default=0.5)
p.add_argument("--z", type=float, default=0.5)
p.add_argument("--opt", default="adam")
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
base = (a.x - 0.3) ** 2 + 1.5 * a.y + {"adam": 0.0, "sgd": 1.0, "rmsprop": 0.5}[a.opt]
with open(os.environ["ATTNSWEEP_METRICS"], "a") as f:
    for step in range(1, a.steps + 1):
        accuracy = 1 - (a.x - 0.6) ** 2 - 0.3 * (1 - a.y) - 1 / (10 * step)
        f.write(json.dumps({"step": step, "val_loss": base + 1 / step, "val_accuracy": accuracy}) + "\n")
