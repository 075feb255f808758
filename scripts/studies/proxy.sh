#!/usr/bin/env bash
# The proxy study: runs sweeps/study_proxy.yaml with a coordinator and two workers, then
# attnsweep report with the verdict at step 40 (text, and JSON beside the results).
# Usage: scripts/studies/proxy.sh [OUT_DIR]     (about 6 minutes on 2 cores)
source "$(dirname "$0")/study.sh"
study_sweep study_proxy --resume
"$bin" report "$h5" --early-step 40 --format json -o "$out/study_proxy.report.json"
"$bin" report "$h5" --early-step 40
