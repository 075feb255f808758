#!/usr/bin/env python3
"""A trial program for kill_campaign.sh: --steps metric lines of val_loss, --pause seconds
apart (a trial long enough to be killed in), nothing else."""
import argparse
import json
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--x", type=float, default=0.0)
p.add_argument("--steps", type=int, default=4)
p.add_argument("--pause", type=float, default=0.1)
a = p.parse_args()
with open(os.environ["ATTNSWEEP_METRICS"], "a") as f:
    for s in range(1, a.steps + 1):
        time.sleep(a.pause)
        f.write(json.dumps({"step": s, "val_loss": 1.0 / (s + a.x)}) + "\n")
        f.flush()
