#!/usr/bin/env python3
"""A hostile or careless trial program for tests/test_adversary.sh (issue 32): by --kind,
one attack of a trial program on the runner. Every kind also writes val_loss lines.

  ok          three metric lines
  wide        a valid Grassmann checkpoint, W_red 4 x 1024 (scored with tensor: parameters,
              its score's dims exceed the bytes after them in the result)
  flood       --lines metric lines of 11 bytes ({"step":N}), as fast as it can
  spew        SIGTERM ignored, stdout written without end (max_output_mb is small)
  fifo        a FIFO as TRIAL_DIR/model.safetensors (a read of it blocks)
  linger      exits 0 leaving a child in its process group (sleeping)
  setsid      a grandchild in a session of its own (its pid in TRIAL_DIR/escaped.pid, its
              cgroup v2 path in TRIAL_DIR/cgroup)
  big_params  a line with n_params 1e300 (no long holds it)
  swap_dir    replaces its own trial directory by a symbolic link to --victim
  fifo_stderr replaces its stderr file by a FIFO, then fails (the runner reads its tail)
  fifo_config, sparse_config, zero_config
              a GPT-2 checkpoint whose config.json (where the reader finds its number of
              heads) is a FIFO, a sparse file of 2 GB, a symbolic link to /dev/zero
  fifo_shard  a sharded checkpoint's index naming a shard that is a FIFO
  sparse_metrics
              its metrics file made a sparse file of 2 GB after one line
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
p.add_argument("--lines", type=int, default=3)
p.add_argument("--victim", default="")
p.add_argument("--x", default="")  # a parameter that only makes trials differ
a = p.parse_args()
trial_dir, metrics_path = os.environ["ATTNSWEEP_TRIAL_DIR"], os.environ["ATTNSWEEP_METRICS"]


def gpt2_checkpoint(name="model.safetensors"):
    """A small GPT-2 checkpoint in the trial directory; its tensors."""
    import numpy as np
    import make_safetensors as ms
    ts = ms.gpt2(np.random.default_rng(1), layers=1, d=8, heads=2)[0]
    ms.write(os.path.join(trial_dir, name), ms.safetensors_bytes(ts))
    return ts


def lines(n=3):
    with open(metrics_path, "a") as f:
        for s in range(1, n + 1):
            f.write(json.dumps({"step": s, "val_loss": 1.0 / s, "val_accuracy": 1 - 1.0 / s}) + "\n")


k = a.kind
if k == "ok":
    lines()
elif k == "wide":
    import numpy as np
    import make_safetensors as ms
    rng = np.random.default_rng(1)
    ts = [ms.tensor("blocks.0.grassmann.w_red.weight", "F32", rng.standard_normal((4, 1024)))[0],
          ms.tensor("blocks.0.grassmann.w_plu.weight", "F32", ms.out_codes(1024, 6))[0]]
    ms.write(os.path.join(trial_dir, "model.safetensors"), ms.safetensors_bytes(ts))
    lines()
elif k == "flood":
    with open(metrics_path, "a") as f:
        f.write("".join('{"step":%d}\n' % (s % 10) for s in range(a.lines)))
elif k == "spew":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    lines(1)
    block = ("x" * 1023 + "\n") * 1024
    while True:
        sys.stdout.write(block)
elif k == "fifo":
    os.mkfifo(os.path.join(trial_dir, "model.safetensors"))
    lines()
elif k == "linger":
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    lines()
elif k == "setsid":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    open(os.path.join(trial_dir, "escaped.pid"), "w").write(str(child.pid))
    cgroup = [line[3:] for line in open(f"/proc/{child.pid}/cgroup").read().splitlines() if line.startswith("0::")]
    open(os.path.join(trial_dir, "cgroup"), "w").write(cgroup[0] if cgroup else "")
    lines()
elif k == "big_params":
    with open(metrics_path, "a") as f:
        f.write('{"step": 1, "val_loss": 0.5, "n_params": 1e300}\n')
elif k == "swap_dir":
    lines()
    moved = trial_dir + ".moved"
    os.rename(trial_dir, moved)
    os.symlink(a.victim, trial_dir)
elif k == "fifo_stderr":
    path = os.path.join(trial_dir, "stderr")
    os.unlink(path)
    os.mkfifo(path)
    lines(1)
    sys.exit(1)
elif k in ("fifo_config", "sparse_config", "zero_config"):
    gpt2_checkpoint()
    config = os.path.join(trial_dir, "config.json")
    if k == "fifo_config":
        os.mkfifo(config)
    elif k == "sparse_config":
        with open(config, "wb") as f:
            f.truncate(2 << 30)
    else:
        os.symlink("/dev/zero", config)
    lines()
elif k == "fifo_shard":
    import make_safetensors as ms
    shard = "model-00001-of-00001.safetensors"
    ms.write_json(os.path.join(trial_dir, "model.safetensors.index.json"),
                  {"weight_map": {"h.0.attn.c_attn.weight": shard}})
    ms.write_json(os.path.join(trial_dir, "config.json"), {"n_head": 2})
    os.mkfifo(os.path.join(trial_dir, shard))
    lines()
elif k == "sparse_metrics":
    lines(1)
    with open(metrics_path, "r+b") as f:
        f.truncate(2 << 30)
else:
    sys.exit(f"unknown kind {k}")
