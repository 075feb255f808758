#!/usr/bin/env bash
# A trial program for tests/test_failures.sh that fails as a Python trainer does when a
# module is missing (a traceback on stderr, exit code 1) until a file `fixed` appears in
# the working directory (the module installed): then it speaks the protocol, one metric
# line (val_loss from --x) and exit code 0. Bash, not Python: a trial costs milliseconds.
set -eu
x=${1#--x=}
if [[ ! -e fixed ]]; then
    echo "loading the data for x=$x" >&2
    cat >&2 <<'TRACE'
Traceback (most recent call last):
  File "train.py", line 3, in <module>
    import torch
ModuleNotFoundError: No module named 'torch'
TRACE
    exit 1
fi
echo "{\"step\": 1, \"val_loss\": $x}" >>"$ATTNSWEEP_METRICS"
