# shellcheck shell=bash
# sweep_bench_lib.sh: shared by the sweep benchmarks (sweep_scaling.sh,
# coordinator_overhead.sh, asha_vs_full.sh, scale.sh); sourced, not run.
#
# bench_setup          the binary (ATTNSWEEP_BIN, else build/attnsweep, built Release if
#                      missing), the MPI environment, a temp dir $WORK (removed at exit
#                      unless KEEP=1), the trace library (sweep_trace.c: CMake target
#                      sweep_trace) when it builds
# machine_facts LABEL  cores, CPU, load average, memory
# run_sweep NAME NP YAML [ARGS...]
#                      mpirun -np NP attnsweep run YAML -o $WORK/NAME.h5 ARGS, every output
#                      line time-stamped on arrival ($WORK/NAME.log: "launch T", "T line",
#                      "exit T RC"), the machine's CPU counters before and after and its
#                      load averages at the end ($WORK/NAME.stat), and the trace in
#                      $WORK/trace.NAME/.
#                      RUN_WRAPPER=PROGRAM (optional) goes before the binary on every rank;
#                      RESULTS=FILE (optional) writes FILE instead, and keeps what FILE and
#                      its journal hold (for --resume).
# perf_rank0 DATA      the path of a wrapper (for RUN_WRAPPER) that runs rank 0 under
#                      perf record (call graphs) into DATA and the other ranks as they are;
#                      fails when perf cannot record here.
# perf_table DATA TXT  perf report of DATA, inclusive shares by symbol, into TXT
# Python with h5py: /usr/bin/python3 (see ../shared/ENVIRONMENT.md).

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
PY=/usr/bin/python3  # used by the scripts that source this file
export PY
SWEEP_TIMEOUT=${SWEEP_TIMEOUT:-900}

bench_setup() {
    if [[ -n ${ATTNSWEEP_BIN:-} ]]; then
        BIN=$ATTNSWEEP_BIN
    else
        BIN=$ROOT/build/attnsweep
        if [[ ! -x $BIN ]]; then
            echo "building attnsweep (Release) into $ROOT/build ..." >&2
            (cd "$ROOT" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j >/dev/null)
        fi
    fi
    [[ -x $BIN ]] || { echo "no attnsweep binary at $BIN" >&2; exit 1; }
    BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
    export OPENBLAS_NUM_THREADS=1

    WORK=$(mktemp -d "${TMPDIR:-/tmp}/attnsweep-bench.XXXXXX")
    if [[ ${KEEP:-0} == 1 ]]; then
        echo "keeping $WORK" >&2
    else
        trap 'rm -rf "$WORK"' EXIT
    fi

    # The trace library from the binary's CMake build (target sweep_trace), else build/.
    TRACE_LIB=
    local build
    build=$(dirname "$BIN")
    [[ -f $build/CMakeCache.txt ]] || build=$ROOT/build
    if cmake --build "$build" --target sweep_trace >"$WORK/trace_build.err" 2>&1 &&
        cp "$build/bench/sweep_trace.so" "$WORK/sweep_trace.so"; then
        TRACE_LIB=$WORK/sweep_trace.so
    else
        echo "note: the MPI trace library did not build; reporting without per-message times" >&2
    fi
}

machine_facts() {
    local label=$1
    read -r l1 l5 l15 _ < /proc/loadavg
    echo "machine ($label): $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), load average $l1 $l5 $l15 (1/5/15 min)"
}

# The machine's busy and total CPU time in seconds (all cores), from /proc/stat.
cpu_counters() {
    awk -v hz="$(getconf CLK_TCK)" '/^cpu / {busy = $2 + $3 + $4 + $7 + $8 + $9; total = busy + $5 + $6;
        printf "%.2f %.2f\n", busy / hz, total / hz}' /proc/stat
}

run_sweep() {
    local name=$1 np=$2 yaml=$3
    shift 3
    local log=$WORK/$name.log tdir=$WORK/trace.$name out=${RESULTS:-$WORK/$name.h5}
    local pre=()
    mkdir -p "$tdir"
    [[ -n $TRACE_LIB ]] && pre=(-x "LD_PRELOAD=$TRACE_LIB" -x "SWEEP_TRACE_DIR=$tdir")
    [[ -n ${RESULTS:-} ]] || rm -f "$out" "$out.journal"
    echo "before $(cpu_counters)" > "$WORK/$name.stat"
    echo "launch $EPOCHREALTIME" > "$log"
    set +e
    timeout "$SWEEP_TIMEOUT" mpirun -np "$np" "${pre[@]}" ${RUN_WRAPPER:+"$RUN_WRAPPER"} "$BIN" run "$yaml" -o "$out" "$@" 2>&1 |
        while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >> "$log"
    local rc=${PIPESTATUS[0]}
    set -e
    echo "exit $EPOCHREALTIME $rc" >> "$log"
    echo "after $(cpu_counters)" >> "$WORK/$name.stat"
    echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$WORK/$name.stat"
    if [[ $rc -ne 0 ]]; then
        echo "mpirun -np $np attnsweep run $(basename "$yaml") exited with $rc$([[ $rc -eq 124 ]] && echo " (timed out after $SWEEP_TIMEOUT s)"); its output:" >&2
        cut -d' ' -f2- "$log" | tail -n 30 >&2
        return 1
    fi
}

perf_rank0() {
    local data=$1 wrap
    wrap=$WORK/perf_rank0.$(basename "$data").sh
    command -v perf >/dev/null && perf record -q -o "$WORK/perf.probe" true >/dev/null 2>&1 || return 1
    cat > "$wrap" <<WRAP
#!/bin/bash
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then exec perf record -q -F 999 --call-graph dwarf,16384 -o "$data" "\$@"; else exec "\$@"; fi
WRAP
    chmod +x "$wrap"
    echo "$wrap"
}

perf_table() {
    perf report -i "$1" --children --sort symbol --stdio -g none > "$2" 2>/dev/null
}
