#!/usr/bin/env python3
"""A W&B-style training program for tests/test_wandb.sh: it takes whatever arguments the
sweep's command gives, records them (TRIAL_DIR/argv.json, the exact argv after the
program's path), and writes --lines metric lines, --every steps apart, each with the
same value under loss, objective and validation_loss: (x - 0.3)^2 + 1/k at line k
(x from --x=, 0.3 without), and val_accuracy 1 minus it; --sleep seconds between lines. Only the standard library:
any python the sweep's ${interpreter} finds can run it."""
import json
import os
import sys
import time

args = sys.argv[1:]


def option(name, default):
    for a in args:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


trial_dir = os.environ["ATTNSWEEP_TRIAL_DIR"]
with open(os.path.join(trial_dir, "argv.json"), "w") as f:
    json.dump(args, f)
x = float(option("x", "0.3"))
lines, every, sleep = int(option("lines", "1")), int(option("every", "1")), float(option("sleep", "0"))
with open(os.environ["ATTNSWEEP_METRICS"], "a") as m:
    for k in range(1, lines + 1):
        value = (x - 0.3) ** 2 + 1.0 / k
        m.write(json.dumps({"step": k * every, "loss": value, "objective": value, "validation_loss": value,
                            "val_accuracy": 1 - value}) + "\n")
        m.flush()
        time.sleep(sleep)
