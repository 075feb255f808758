#!/usr/bin/env bash
# coordinator_overhead.sh: what the coordinator costs per trial. 400 trials that train in
# about 10 ms each (scripts/bench/overhead.yaml: recall, d_model 8) on 16 oversubscribed
# ranks (mpirun -np 16: the coordinator and 15 workers on 2 cores). Reports the
# coordinator's own numbers (CPU ms per trial, target < 1 ms; ms answering per trial, the
# journal's fsync and the HDF5 write included), the same CPU split into MPI start-up and
# the sweep from an MPI trace, the latency of an answer, the bytes per trial, and this
# disk's fsync cost measured in the same run (append + fsync of a journal-record-sized
# buffer in the same directory), so a reader can see what part is the disk; then, when
# perf works (PERF=0 skips it), the same sweep again with the coordinator under perf, to
# show where its CPU goes (HDF5 write and flush, journal, MPI, polling); last, the same
# sweep with method: tpe, whose coordinator also builds a TPE proposal for every trial
# (with up to 400 finished trials), its CPU per trial beside random's.
# Asserts nothing. About a minute (seconds with PERF=0).
#
#   bash scripts/bench/coordinator_overhead.sh   (ATTNSWEEP_BIN=..., KEEP=1, NP=16)
set -euo pipefail
# shellcheck source=scripts/bench/sweep_bench_lib.sh
source "$(dirname "$0")/sweep_bench_lib.sh"
bench_setup
NP=${NP:-16}
cp "$BENCH_DIR/overhead.yaml" "$WORK/"

echo "== coordinator overhead: $BIN"
echo "   sweep overhead.yaml: $("$BIN" validate "$WORK/overhead.yaml" | sed -n 's/^ *trials *//p'); $("$BIN" validate "$WORK/overhead.yaml" | sed -n 's/^ *budget *//p'), d_model 8"
echo "   mpirun -np $NP (oversubscribed); $(mpirun --version 2>/dev/null | head -n 1)"
machine_facts "before"
run_sweep ov "$NP" "$WORK/overhead.yaml"
machine_facts "after the sweep"

# The disk: the journal's pattern (append one record, fsync) in the same directory.
JOURNAL_BYTES=$(stat -c %s "$WORK/ov.h5.journal" 2>/dev/null || echo 0)
TRIALS=$(sed -n 's/^trials: *\([0-9]*\).*/\1/p' "$WORK/overhead.yaml")
"$PY" - "$WORK" "$JOURNAL_BYTES" "$TRIALS" > "$WORK/fsync.txt" <<'PYEOF'
import os, sys, time
work, journal, trials = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = max(512, journal // trials)
buf = os.urandom(size)
path = os.path.join(work, "fsync.probe")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
n, ts = 300, []
for _ in range(n):
    t = time.perf_counter()
    os.write(fd, buf)
    os.fsync(fd)
    ts.append(time.perf_counter() - t)
os.close(fd)
os.unlink(path)
print("fsync", n, size, " ".join(f"{x:.6f}" for x in ts))
PYEOF
machine_facts "after the fsync loop"

# Where the coordinator's CPU goes: the same sweep again with rank 0 under perf
# (PERF=0 skips it; perf's own cost inflates this run's numbers a little).
PERF_TXT=
if [[ ${PERF:-1} != 0 ]] && wrap=$(perf_rank0 "$WORK/perf.data"); then
    if RUN_WRAPPER=$wrap run_sweep ovperf "$NP" "$WORK/overhead.yaml" && perf_table "$WORK/perf.data" "$WORK/perf.txt"; then
        PERF_TXT=$WORK/perf.txt
    fi
    machine_facts "after the profiled run"
fi
sed 's/^method: random$/method: tpe/' "$WORK/overhead.yaml" > "$WORK/overhead_tpe.yaml"
run_sweep ovtpe "$NP" "$WORK/overhead_tpe.yaml"
machine_facts "after the tpe run"
echo
"$PY" "$BENCH_DIR/sweep_report.py" overhead "$WORK" ov "$WORK/fsync.txt" ${PERF_TXT:+"$PERF_TXT"} ${PERF_TXT:+ovperf}
echo
echo "== the coordinator's own line, method random against method tpe (a proposal per trial):"
for name in ov ovtpe; do
    printf '   %-6s %s\n' "$([[ $name == ov ]] && echo random || echo tpe)" \
        "$(grep -o 'coordinator [0-9.]* ms CPU and [0-9.]* ms answering' "$WORK/$name.log" | tail -n 1)"
done
