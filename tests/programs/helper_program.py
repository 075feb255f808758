#!/usr/bin/env python3
"""A trial program for tests/test_python_helper.sh that speaks the protocol through the
Python helper (python/attnsweep/trial.py), which it imports from the PYTHONPATH attnsweep
gives it. By --kind:

  report   report() of steps 1, 2, 3 with a Python float, a numpy float32, an int, NaN (read
           as null) and a key of its own; writes where the helper came from and the
           PYTHONPATH it got to TRIAL_DIR/helper.json
  slow     --steps lines, --sleep seconds apart; after step s its checkpoint,
           TRIAL_DIR/state.json, is that of step s − 2 (a trainer whose checkpoints lag its
           reports), so on SIGTERM (should_stop: it exits 143) the steps after that one are
           lost, and with ATTNSWEEP_RESUME_DIR it starts after the step saved there and
           reports two steps again that the stopped attempt had reported. train_loss is the
           attempt's number (1, 2, ...), so which copy of a step was kept shows
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from attnsweep import trial

p = argparse.ArgumentParser()
p.add_argument("--kind", default="report")
p.add_argument("--steps", type=int, default=3)
p.add_argument("--sleep", type=float, default=0.0)
a = p.parse_args()
out = trial.trial_dir()

if a.kind == "report":
    json.dump({"module": trial.__file__, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
              open(os.path.join(out, "helper.json"), "w"))
    for s in (1, 2, 3):
        trial.report(s, val_loss=1.0 / s, val_accuracy=np.float32(0.25 * s), n_params=1000 + s,
                     train_loss=float("nan"), mine=s * s)
elif a.kind == "slow":
    trial.should_stop()
    start, attempt = 0, 1
    if trial.resume_dir() and os.path.exists(os.path.join(trial.resume_dir(), "state.json")):
        saved = json.load(open(os.path.join(trial.resume_dir(), "state.json")))
        start, attempt = saved["step"], saved["attempt"] + 1
    state = {"step": start, "attempt": attempt}
    json.dump(state, open(os.path.join(out, "state.json"), "w"))  # carried even if it saves no step
    for s in range(start + 1, a.steps + 1):
        time.sleep(a.sleep)
        if trial.should_stop():
            sys.exit(143)
        trial.report(s, val_loss=1.0 / s, val_accuracy=1 - 1.0 / s, train_loss=attempt)
        json.dump({"step": max(start, s - 2), "attempt": attempt}, open(os.path.join(out, "state.json"), "w"))
else:
    sys.exit(f"unknown kind {a.kind}")
