#!/usr/bin/env bash
# scale.sh: the scale benchmark of issue 31 ("a thousand workers, and a sweep that outlives
# any one job"). Trial programs that do nothing but sleep (scale_trial.sh), so what is
# measured is the runner itself:
#   1. utilisation: for each rank count N (oversubscribed on this machine's cores), a sweep
#      of ROUNDS x (N-1) trials that sleep 1 s; utilisation = sum of the trials' seconds /
#      (workers x the coordinator's wall), the whole run; beside it the steady state: the
#      same share between the coordinator's first trial handed out and the first time it
#      tells a worker there is no more work (its first DONE; the trace library's times),
#      each trial's seconds taken as the interval ending at its end_time and cut to that
#      window: the runner's own cost a trial without the start and the last round's
#      ramp-down (workers running out of trials one by one, about half a trial each);
#      then INSTANT x (N-1) trials that return at once: trials per second, the runner's
#      throughput;
#   2. the coordinator's CPU per trial (its own getrusage, not wall) in each of those runs;
#   3. the CPU time of an ASHA decision (asha_bench: 10 rungs, eta 2, per trial) and of a
#      TPE proposal (sampler_bench: the mixed 6-parameter space, the default history 500)
#      against 1,000, 4,000 and 10,000 finished trials (--decisions);
#   4. resume: a real sweep of instant trials journals the first size's trials; each
#      `run --resume` then raises `trials` to the next size (and the last by one trial per
#      worker), so each resume replays the journal of that many trials, rebuilds the
#      results file and goes on; the time from rank 0 past MPI_Init to its first trial
#      handed out, and with mpirun's start-up; then the complete sweep resumed with the
#      same YAML, from the snapshot the run wrote at its end: rank 0's CPU and the
#      coordinator's first line to its 'resuming' line. Last (PERF=0 skips it), the largest
#      journal resumed once more with rank 0 under perf: where the resume's time goes
#      (journal replay, the check of each trial against the space, HDF5 rebuild).
# Prints one table with the issue's thresholds beside the measured values and the
# machine's load during each run (its other work included). Asserts nothing.
#
#   bash scripts/bench/scale.sh [--quick | --full] [--ranks N,N,...] [--rounds K]
#                               [--resume SIZE,SIZE,...] [--resume-ranks N] [--decisions N,N,...]
#
#   --quick         (default) ranks 9,17; 3 rounds; resume at 2,000: a few minutes
#   --full          ranks 9,17,33,65; 5 rounds; resume at 10,000 and 50,000: about 35
#                   minutes on 2 cores under a load of 20-70 (most of it journaling 50,000
#                   trials at 25-50 a second)
#   --ranks LIST    the rank counts of parts 1 and 2 (the coordinator and N-1 workers)
#   --rounds K      sleeping trials per worker (default 3 quick, 5 full)
#   --resume LIST   journal sizes resumed, ascending
#   --resume-ranks N  ranks of the runs that make and resume the journal (default 9)
#   --decisions LIST  finished trials before the timed ASHA decisions and TPE proposals
# ATTNSWEEP_BIN=..., KEEP=1 (keep the work directory) and PERF=0 as for the other sweep
# benchmarks (sweep_bench_lib.sh).
set -euo pipefail
# Journaling 40,000 trials on a loaded machine outlasts the library's 900 s a run.
export SWEEP_TIMEOUT=${SWEEP_TIMEOUT:-14400}
# shellcheck source=scripts/bench/sweep_bench_lib.sh
source "$(dirname "$0")/sweep_bench_lib.sh"

ranks=9,17 rounds=3 sizes=2000 resume_np=9 decisions=1000,4000,10000
INSTANT=30  # instant trials per worker
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
# A positive integer option, or exit 2 with one line.
count() { [[ $2 =~ ^[1-9][0-9]{0,5}$ ]] || { echo "scale.sh: $1 takes a positive integer, not '$2'" >&2; exit 2; }; }
list() {
    [[ $2 =~ ^[1-9][0-9]{0,5}(,[1-9][0-9]{0,5})*$ ]] || {
        echo "scale.sh: $1 takes positive integers separated by commas (e.g. 9,17), not '$2'" >&2
        exit 2
    }
}
while [[ $# -gt 0 ]]; do
    case $1 in
    --quick) ranks=9,17 rounds=3 sizes=2000; shift ;;
    --full) ranks=9,17,33,65 rounds=5 sizes=10000,50000; shift ;;
    --ranks | --rounds | --resume | --resume-ranks | --decisions)
        [[ $# -ge 2 ]] || { echo "scale.sh: $1 needs a value" >&2; exit 2; }
        case $1 in
        --ranks) list "$1" "$2"; ranks=$2 ;;
        --rounds) count "$1" "$2"; rounds=$2 ;;
        --resume) list "$1" "$2"; sizes=$2 ;;
        --resume-ranks) count "$1" "$2"; resume_np=$2 ;;
        --decisions) list "$1" "$2"; decisions=$2 ;;
        esac
        shift 2
        ;;
    -h | --help) usage; exit 0 ;;
    *) echo "scale.sh: unknown argument '$1' (allowed: --quick, --full, --ranks LIST, --rounds K, --resume LIST, --resume-ranks N, --decisions LIST)" >&2; exit 2 ;;
    esac
done
IFS=, read -r -a RANKS <<< "$ranks"
IFS=, read -r -a SIZES <<< "$sizes"
IFS=, read -r -a DECISIONS <<< "$decisions"
for n in "${RANKS[@]}" "$resume_np"; do
    ((n >= 2)) || { echo "scale.sh: a run needs at least 2 ranks (the coordinator and a worker), not $n" >&2; exit 2; }
done
for ((i = 1; i < ${#SIZES[@]}; i++)); do
    ((SIZES[i] > SIZES[i - 1])) || { echo "scale.sh: --resume sizes must ascend ($sizes)" >&2; exit 2; }
done

bench_setup
build=$(dirname "$BIN")
[[ -f $build/CMakeCache.txt ]] || build=$ROOT/build
cmake --build "$build" --target asha_bench sampler_bench >/dev/null
MANIFEST=$WORK/scale.manifest
: > "$MANIFEST"

# scale_yaml FILE TRIALS SLEEP: a random sweep of the trial program, one real parameter.
scale_yaml() {
    cat > "$1" <<EOF
name: bench_scale
program: $BENCH_DIR/scale_trial.sh
command: [/bin/sh, "\${program}", "\${args}"]
method: random
trials: $2
seed: 1
metric: {name: val_loss, goal: minimize}
parameters:
  x: {min: 0.0, max: 1.0}
  sleep: {value: $3}
EOF
}

echo "== scale benchmark (issue 31): $BIN"
echo "   ranks ${ranks//,/, } ($rounds sleeping and $INSTANT instant trials per worker); decisions at ${decisions//,/, } finished;"
echo "   resume at ${sizes//,/, } journaled trials on $resume_np ranks; $(mpirun --version 2>/dev/null | head -n 1)"
machine_facts "before"

echo "-- 3. ASHA decisions and TPE proposals (CPU time)"
"$build/bench/asha_bench" "${DECISIONS[@]}" > "$WORK/asha.txt"
echo "asha asha.txt" >> "$MANIFEST"
for n in "${DECISIONS[@]}"; do
    "$build/bench/sampler_bench" "tpe:n_startup=$n" mixed 1 $((n + 10)) > "$WORK/tpe.$n.json"
    echo "tpe $n tpe.$n.json" >> "$MANIFEST"
done
machine_facts "after the decisions"

echo "-- 1, 2. utilisation and the coordinator's CPU"
for np in "${RANKS[@]}"; do
    scale_yaml "$WORK/sleep$np.yaml" $((rounds * (np - 1))) 1
    run_sweep "sleep$np" "$np" "$WORK/sleep$np.yaml"
    echo "sleep $np sleep$np" >> "$MANIFEST"
    machine_facts "after $np ranks, 1-second trials"
    scale_yaml "$WORK/instant$np.yaml" $((INSTANT * (np - 1))) 0
    run_sweep "instant$np" "$np" "$WORK/instant$np.yaml"
    echo "instant $np instant$np" >> "$MANIFEST"
    machine_facts "after $np ranks, instant trials"
done

echo "-- 4. resume"
scale_yaml "$WORK/journal.yaml" "${SIZES[0]}" 0
RESULTS=$WORK/resume.h5 run_sweep journal "$resume_np" "$WORK/journal.yaml"
echo "journal ${SIZES[0]} journal" >> "$MANIFEST"
machine_facts "after journaling ${SIZES[0]} trials"
for ((i = 0; i < ${#SIZES[@]}; i++)); do
    n=${SIZES[i]}
    next=${SIZES[i + 1]:-$((n + resume_np - 1))}
    scale_yaml "$WORK/resume$n.yaml" "$next" 0
    RESULTS=$WORK/resume.h5 run_sweep "resume$n" "$resume_np" "$WORK/resume$n.yaml" --resume
    echo "resume $n resume$n" >> "$MANIFEST"
    machine_facts "after resuming $n and running to $next"
    # The same YAML again: the complete sweep resumed from the snapshot that run wrote.
    RESULTS=$WORK/resume.h5 run_sweep "same$n" "$resume_np" "$WORK/resume$n.yaml" --resume
    echo "same $next same$n" >> "$MANIFEST"
done
if [[ ${PERF:-1} != 0 ]] && wrap=$(perf_rank0 "$WORK/perf.data"); then
    if RUN_WRAPPER=$wrap RESULTS=$WORK/resume.h5 run_sweep resumeperf "$resume_np" "$WORK/resume$n.yaml" --resume &&
        perf_table "$WORK/perf.data" "$WORK/perf.txt"; then
        echo "perf $next resumeperf perf.txt" >> "$MANIFEST"
    fi
    machine_facts "after the profiled resume"
fi
echo
"$PY" "$BENCH_DIR/sweep_report.py" scale "$WORK"
