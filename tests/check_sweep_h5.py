"""check_sweep_h5.py OUT N [partial]: the results file OUT holds trials 0..N-1 exactly once
each, in /summary and in /trials (with "partial": 1 <= trials < N, each at most once).
Prints how many it holds; exits 1 with the reason otherwise. For tests/test_slurm.sh and
tests/test_local.sh (stopped and resumed sweeps)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnsweep.results import Results  # noqa: E402

path, n = sys.argv[1], int(sys.argv[2])
partial = len(sys.argv) > 3
with Results(path) as rs:
    ids = [int(t) for t in rs.summary["trial"]]
    groups = rs.trial_ids()
if len(set(ids)) != len(ids):
    sys.exit(f"FAIL: {path}: trials recorded twice in /summary: {sorted(ids)}")
if len(groups) != len(ids):
    sys.exit(f"FAIL: {path}: {len(ids)} rows in /summary but {len(groups)} groups in /trials")
if partial:
    if not 1 <= len(ids) < n or not set(ids) <= set(range(n)):
        sys.exit(f"FAIL: {path}: expected some but not all of trials 0..{n - 1}, got {sorted(ids)}")
elif sorted(ids) != list(range(n)):
    sys.exit(f"FAIL: {path}: expected trials 0..{n - 1} once each, got {sorted(ids)}")
print(len(ids))
