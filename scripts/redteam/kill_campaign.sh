#!/usr/bin/env bash
# kill_campaign.sh (issue 32): kill -9 a sweep's coordinator, one of its workers or its mpirun
# at a random moment, round after round, each round a `run --resume`; then one last
# --resume to the end. What is left of a round's job after the kill gets what a batch
# system gives it: SIGTERM, then SIGKILL 3 s later (mpirun itself SIGTERMs the ranks when
# one dies). Printed per round: the moment, what was killed (and the trial its worker was
# running), the run's exit code. At the end: every trial must be recorded exactly once
# (journal and /summary), and a trial failed only if its own worker was killed while
# running it at least max_deaths (2) times: a coordinator or an mpirun killed, or a worker
# stopped, is never a death.
# Usage: scripts/redteam/kill_campaign.sh ATTNSWEEP [ROUNDS [SEED [DIR [TRIALS]]]]
#   ROUNDS (default 20), SEED (default 1), DIR (default a new temporary directory; the
#   sweep's files stay there), TRIALS (default 60: 0.4 s each, 2 workers). Exit code 0
#   when every check held, 1 otherwise (the reason on the last line).
set -euo pipefail

bin=$(realpath "${1:?usage: kill_campaign.sh ATTNSWEEP [ROUNDS [SEED [DIR [TRIALS]]]]}")
rounds=${2:-20} seed=${3:-1} dir=${4:-$(mktemp -d /tmp/kill_campaign.XXXXXX)} trials=${5:-60}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
mkdir -p "$dir"
dir=$(realpath "$dir")
RANDOM=$seed
yaml=$dir/campaign.yaml out=$dir/campaign.h5

{
    echo "name: campaign"
    echo "program: $here/slow_trial.py"
    echo "command: [$py, \"\${program}\", \"\${args}\"]"
    echo "method: grid"
    echo "metric: {name: val_loss, goal: minimize}"
    echo "budget: {time_limit: 30, grace: 1}"  # max_deaths: the default, 2
    echo "parameters:"
    echo "  x: {values: [$(seq -s ', ' 0 $((trials - 1)))]}"
    echo "  steps: {value: 4}"
    echo "  pause: {value: 0.1}"
} >"$yaml"

# children_with PID VAR: "pid value" of each child of PID whose environment has VAR.
children_with() {
    local c
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        { tr '\0' '\n' 2>/dev/null <"/proc/$c/environ" || true; } | sed -n "s|^$2=|$c |p"
    done
}
# signal SIG PID: the signal to PID if it is still this campaign's (its command line names
# the YAML): a pid of a job that ended may be another process's by now.
signal() {
    if { tr '\0' ' ' 2>/dev/null <"/proc/$2/cmdline" || true; } | grep -qF "$yaml"; then kill "-$1" "$2" 2>/dev/null || true; fi
}
# end_job PID...: SIGTERM to what is left, SIGKILL after 3 s, as a batch system ends a job.
end_job() {
    local p t=$((SECONDS + 3))
    for p in "$@"; do signal TERM "$p"; done
    for p in "$@"; do
        while [[ -e /proc/$p ]] && ((SECONDS < t)); do sleep 0.05; done
        signal KILL "$p"
    done
}

all=()
trap 'end_job "${all[@]}"' EXIT  # a campaign stopped half-way leaves no job behind
declare -A killed  # trial id -> times its own worker was killed -9 while running it
kills=0 start=$SECONDS
for ((round = 1; round <= rounds; round++)); do
    mpirun -np 3 "$bin" run "$yaml" -o "$out" --resume --quiet >>"$dir/out" 2>>"$dir/err" &
    job=$!
    wait_s=$((5 + RANDOM % 20))  # tenths of a second: 0.5-2.4 s
    sleep "$((wait_s / 10)).$((wait_s % 10))"
    if ! kill -0 "$job" 2>/dev/null; then
        rc=0
        wait "$job" || rc=$?
        echo "round $round: the run ended by itself (exit $rc) before its kill"
        [[ $rc == 0 ]] && break
        continue
    fi
    mapfile -t rk < <(children_with "$job" OMPI_COMM_WORLD_RANK)  # "pid rank" of each rank
    all=("$job")
    for r in "${rk[@]}"; do all+=("${r% *}"); done
    what=$((RANDOM % 3)) victim= trial= name=
    if ((what == 2)); then  # a worker, if one runs a program now (else the coordinator)
        for r in "${rk[@]}"; do
            [[ ${r#* } != 0 ]] || continue
            trial=$(children_with "${r% *}" ATTNSWEEP_TRIAL_DIR | sed -n 's|.*/0*\([0-9][0-9]*\)$|\1|p')
            [[ -n $trial ]] && { victim=${r% *}; name="worker rank ${r#* } (pid $victim, trial $trial)"; break; }
        done
        [[ -n $victim ]] || what=0
    fi
    if ((what == 0)); then
        for r in "${rk[@]}"; do [[ ${r#* } == 0 ]] && victim=${r% *}; done
        name="coordinator (pid $victim)"
    elif ((what == 1)); then
        victim=$job name="mpirun (pid $job)"
    fi
    if [[ -z $victim ]]; then
        echo "round $round: no rank to kill yet at $((wait_s / 10)).$((wait_s % 10)) s"
    else
        signal KILL "$victim"
        [[ -n $trial ]] && killed[$trial]=$((${killed[$trial]:-0} + 1))
        kills=$((kills + 1))
    fi
    # Let the job end as it would (mpirun SIGTERMs the ranks when one dies), then end the rest.
    t=$((SECONDS + 5))
    while kill -0 "$job" 2>/dev/null && ((SECONDS < t)); do sleep 0.05; done
    end_job "${all[@]}"
    rc=0
    wait "$job" 2>/dev/null || rc=$?
    echo "round $round: at $((wait_s / 10)).$((wait_s % 10)) s killed -9 the ${name:-nothing}; run exit $rc"
done

echo "final --resume"
rc=0
mpirun -np 3 "$bin" run "$yaml" -o "$out" --resume --quiet >>"$dir/out" 2>>"$dir/err" || rc=$?
[[ $rc == 0 ]] || { echo "FAIL: the final --resume exited $rc: $(tail -3 "$dir/err")"; exit 1; }

# Where cgroup v2 is writable the trials' cgroups are gone, the killed workers' included
# (each trial's worker removes those of dead workers before it starts).
v2=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
left=0
for d in "$v2${own%/}"/attnsweep-*; do
    [[ -d $d ]] || continue
    p=${d##*/attnsweep-}
    [[ -e /proc/${p%-*} ]] || { left=$((left + 1)); echo "left: the cgroup $d of a dead worker"; }
done
((left == 0)) || { echo "FAIL: $left cgroups of dead workers left"; exit 1; }

deaths=$(for t in "${!killed[@]}"; do echo "$t:${killed[$t]}"; done | sort -n | tr '\n' ' ')
PYTHONPATH=$here/../../tests "$py" - "$out" "$trials" "$deaths" <<'PY'
import sys, h5py, journal
out, n, deaths = sys.argv[1], int(sys.argv[2]), dict(map(int, d.split(":")) for d in sys.argv[3].split())
ids = journal.trial_ids(out + ".journal")
rows = h5py.File(out, "r")["summary"][:]
status = {}
for r in rows:
    status.setdefault(int(r["trial"]), []).append(r["status"].decode())
problems = []
twice = sorted({i for i in ids if ids.count(i) > 1})
if twice or sorted(set(ids)) != list(range(n)):
    problems.append(f"the journal holds {len(ids)} records of {len(set(ids))} trials of {n}; twice: {twice[:10]}")
if sorted(status) != list(range(n)) or any(len(s) > 1 for s in status.values()):
    problems.append(f"/summary holds {len(rows)} rows of {len(status)} trials of {n}")
once = list(problems)
failed = sorted(t for t, s in status.items() if s[-1] == "failed")
false = [t for t in failed if deaths.get(t, 0) < 2]
if false:
    problems.append(f"falsely failed (their worker killed fewer than 2 times while running them): {false}")
counts = {s: sum(v[-1] == s for v in status.values()) for s in ("ok", "pruned", "failed")}
print(f"trials: {n}, recorded once each: {not once}; {counts['ok']} ok, {counts['failed']} failed "
      f"({', '.join(f'trial {t}: worker killed {deaths.get(t, 0)} times' for t in failed) or 'none'}); "
      f"trials whose worker was killed while running them: {deaths or 'none'}")
for p in problems:
    print(f"FAIL: {p}")
sys.exit(1 if problems else 0)
PY
echo "kill_campaign: $rounds rounds, $kills kills -9 (seed $seed), $((SECONDS - start)) s, in $dir"
