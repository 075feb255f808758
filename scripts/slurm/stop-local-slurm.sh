#!/usr/bin/env bash
# Stop the one-machine Slurm cluster of start-local-slurm.sh (same ATTNSWEEP_SLURM_DIR):
# cancels its jobs, ends slurmd, slurmctld and the munged it started, by their pid files.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/start-local-slurm.sh" stop
