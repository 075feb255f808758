#!/usr/bin/env python3
"""A tiny training program for tests/test_external.sh: it speaks attnsweep's trial protocol
(docs/trainer.md, "The trial protocol") and, by --kind, breaks it in each of the ways the runner
must catch. --x sets its val_loss (x − 0.3)² + 1/step and val_accuracy 1 − that.

  ok          three metric lines; records its environment in TRIAL_DIR/env.json
  crash       30 lines on stderr, one metric line, exit code 3
  signal      one metric line, then SIGSEGV to itself
  garbage     a line that is not JSON
  nometrics   exit code 0 without a line
  huge        3 MiB on stdout (the test's max_output_mb is 1)
  hang        one line, then sleeps (past the time limit)
  ignore_term SIGTERM ignored, a grandchild in its process group (its pid in
              TRIAL_DIR/grandchild.pid), both sleep: only SIGKILL to the group ends them
  ckpt        ok, and TRIAL_DIR/model.safetensors in BERT names (tests/make_safetensors.py)
  named       ok, the weights elsewhere and a line naming them ("checkpoint")
  slow        --steps lines, --sleep seconds apart (the scheduler's and resume's tests);
              SIGTERM saves TRIAL_DIR/state.json and exits 143, and with
              ATTNSWEEP_RESUME_DIR it starts after the step saved there
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--kind", default="ok")
p.add_argument("--x", type=float, default=0.5)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--sleep", type=float, default=0.0)
a = p.parse_args()
trial_dir, metrics_path = os.environ["ATTNSWEEP_TRIAL_DIR"], os.environ["ATTNSWEEP_METRICS"]


def line(step, **extra):
    loss = (a.x - 0.3) ** 2 + 1 / step
    with open(metrics_path, "a") as f:
        f.write(json.dumps({"step": step, "val_loss": loss, "val_accuracy": 1 - loss, **extra}) + "\n")


def checkpoint(path):
    import numpy as np
    import make_safetensors as ms
    ts, _, _ = ms.bert(np.random.default_rng(int(100 * a.x)), "F32", layers=2, d=16, heads=2, extras=False)
    ms.write(path, ms.safetensors_bytes(ts))
    ms.write_json(os.path.join(os.path.dirname(path), "config.json"), {"num_attention_heads": 2})


k = a.kind
if k in ("ok", "ckpt", "named"):
    env = {n: v for n, v in os.environ.items() if n.startswith(("ATTNSWEEP_", "OMPI_", "PMIX_", "PMI_"))}
    env["cwd"] = os.getcwd()
    json.dump(env, open(os.path.join(trial_dir, "env.json"), "w"))
    if k == "ckpt":
        checkpoint(os.path.join(trial_dir, "model.safetensors"))
    for s in (1, 2, 3):
        line(s)
    if k == "named":
        path = os.path.join(trial_dir, "elsewhere", "weights.safetensors")
        checkpoint(path)
        line(4, checkpoint=path)
elif k == "crash":
    for i in range(1, 31):
        print(f"stderr line {i}", file=sys.stderr)
    line(1)
    sys.exit(3)
elif k == "signal":
    line(1)
    os.kill(os.getpid(), signal.SIGSEGV)
elif k == "garbage":
    with open(metrics_path, "a") as f:
        f.write("epoch 1: loss 0.5\n")
elif k == "nometrics":
    print("trained, but said nothing")
elif k == "huge":
    for _ in range(3 * 1024):
        sys.stdout.write("x" * 1023 + "\n")
    line(1)
elif k == "hang":
    line(1)
    time.sleep(600)
elif k == "ignore_term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # inherits SIG_IGN
    open(os.path.join(trial_dir, "grandchild.pid"), "w").write(str(child.pid))
    line(1)
    time.sleep(600)
elif k == "slow":
    start, stop = 0, []
    resume = os.environ.get("ATTNSWEEP_RESUME_DIR")
    if resume and os.path.exists(os.path.join(resume, "state.json")):
        start = json.load(open(os.path.join(resume, "state.json")))["step"]
    signal.signal(signal.SIGTERM, lambda sig, frame: stop.append(sig))
    for s in range(start + 1, a.steps + 1):
        time.sleep(a.sleep)
        if stop:
            json.dump({"step": s - 1}, open(os.path.join(trial_dir, "state.json"), "w"))
            sys.exit(143)
        line(s, resumed_from=start)
else:
    sys.exit(f"unknown kind {k}")
