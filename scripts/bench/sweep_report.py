#!/usr/bin/python3
"""sweep_report.py: the reports of the sweep benchmarks (run by sweep_scaling.sh,
coordinator_overhead.sh and asha_vs_full.sh; see sweep_bench_lib.sh for the files
a run leaves in the work directory).

    sweep_report.py scaling  WORK NAME1 NAME2        1 worker against 2 workers
    sweep_report.py overhead WORK NAME FSYNC_FILE    coordinator cost per trial
    sweep_report.py asha     WORK FULL ASHA          best reward and steps of each
    sweep_report.py asha_repeats WORK FULL PERCONF PERTRIAL   the same with repeats
    sweep_report.py scale    WORK                    scale.sh's table (WORK/scale.manifest)

Times: Unix seconds. Wall time of a run is reported three ways: mpirun (launch to
exit, measured by the script), MPI start-up (launch until every rank is past MPI_Init,
from the trace library), and the coordinator's wall (from its first output line,
printed just before it opens the results file, to its "finished" line; the results
file's root start_time/end_time say nearly the same). Speed-up and
utilisation use the coordinator's wall: the sweep itself, without Open MPI's start-up.
"""
import glob
import json
import os
import re
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from attnsweep.results import BadResults, Results, Statuses  # noqa: E402  (python/attnsweep/ in the repository)

TAG = {"READY": 1, "TRIAL": 2, "DONE": 3, "EVAL": 4, "DECISION": 5, "STOP": 6, "RESULT": 7}


def open_results(path):
    """The results file (attnsweep.results.Results), or exit with one line when it is no
    results file this attnsweep reads."""
    try:
        return Results(path)
    except BadResults as e:
        sys.exit(f"sweep_report.py: {e}")


class Run:
    def __init__(self, work, name, results="trials"):
        """results: "trials" reads WORK/NAME.h5's /summary and every trial's attributes,
        "summary" its /summary alone (a big sweep), None nothing (scale.sh's resumed file,
        which later runs went on writing)."""
        self.name = name
        self.lines = []  # (time, text)
        self.launch = self.exit = None
        with open(os.path.join(work, name + ".log")) as f:
            for raw in f:
                head, _, rest = raw.rstrip("\n").partition(" ")
                if head == "launch":
                    self.launch = float(rest)
                elif head == "exit":
                    t, rc = rest.split()
                    self.exit, self.rc = float(t), int(rc)
                else:
                    self.lines.append((float(head), rest))
        self.coord_start = next((t for t, l in self.lines if re.match(r"sweep \S+: \d+ trials \(", l)), None)
        self.coord_end = next((t for t, l in self.lines if re.search(r": finished \d+ trials in", l)), None)
        self.coord_cpu_ms = self.coord_answer_ms = None
        for _, l in self.lines:
            m = re.search(r"coordinator ([\d.]+) ms CPU and ([\d.]+) ms answering", l)
            if m:
                self.coord_cpu_ms, self.coord_answer_ms = float(m.group(1)), float(m.group(2))
        self.stat = {}
        self.loadavg = None  # 1, 5 and 15 minutes at the end (older .stat files lack it)
        with open(os.path.join(work, name + ".stat")) as f:
            for raw in f:
                k, *v = raw.split()
                if k == "load":
                    self.loadavg = tuple(float(x) for x in v)
                else:
                    self.stat[k] = (float(v[0]), float(v[1]))
        if results:
            self.read_results(os.path.join(work, name + ".h5"), results == "trials")
        self.trace_dir = os.path.join(work, "trace." + name)
        self.read_trace(self.trace_dir)

    def read_results(self, path, per_trial):
        with open_results(path) as rs:
            root = rs.attributes
            self.file_start = float(root["start_time"])
            self.file_end = float(root.get("end_time", float("nan")))
            self.summary = rs.summary
            self.ok = Statuses(rs.schema).ok  # the status of a trial that finished, as the file's schema names it
            if not per_trial:
                return
            steps = dict(zip(self.summary["trial"].astype(int), self.summary["steps"].astype(int)))
            self.trials = []
            for k in rs.trial_ids():
                a = rs.trial_attrs(k)
                self.trials.append({
                    "id": k, "rank": int(a["rank"]), "seconds": float(a["seconds"]), "steps": steps[k],
                    "status": a["status"], "start": float(a["start_time"]), "end": float(a["end_time"]),
                })

    def read_trace(self, tdir):
        self.trace = {}
        for p in glob.glob(os.path.join(tdir, "rank*.log")):
            rank = int(re.search(r"rank(\d+)\.log$", p).group(1))
            ev = {"msgs": []}
            with open(p) as f:
                for raw in f:
                    w = raw.split()
                    if w[0] == "init":
                        ev["init"], ev["init_cpu"] = float(w[1]), float(w[2])
                    elif w[0] == "finalize":
                        ev["finalize"], ev["fin_cpu"] = float(w[1]), float(w[2])
                    else:
                        ev["msgs"].append((w[0], int(w[1]), int(w[2]), float(w[3])))
            self.trace[rank] = ev

    # ---- derived numbers
    @property
    def mpirun_wall(self):
        return self.exit - self.launch

    @property
    def coord_wall(self):
        return self.coord_end - self.coord_start

    @property
    def mpi_startup(self):
        if not self.trace or any("init" not in e for e in self.trace.values()):
            return None
        return max(e["init"] for e in self.trace.values()) - self.launch

    @property
    def workers(self):
        return sorted(r for r in self.trace if r != 0) if self.trace else sorted({t["rank"] for t in self.trials})

    def worker_intervals(self, rank):
        """Busy intervals (TRIAL received → RESULT sent), waits (request sent → answer: a
        leader asks with READY the first time and with its RESULT after every trial, so a
        wait includes handing the result over), and ASHA round trips (EVAL sent →
        DECISION received) of one worker leader."""
        busy, waits, evals = [], [], []
        t_trial = t_ask = t_eval = None
        for kind, tag, _, t in self.trace.get(rank, {"msgs": []})["msgs"]:
            if kind == "send" and tag == TAG["READY"]:
                t_ask = t
            elif kind == "recv" and tag in (TAG["TRIAL"], TAG["DONE"]):
                if t_ask is not None:
                    waits.append(t - t_ask)
                    t_ask = None
                if tag == TAG["TRIAL"]:
                    t_trial = t
            elif kind == "send" and tag == TAG["RESULT"] and t_trial is not None:
                busy.append((t_trial, t))
                t_trial = None
                t_ask = t
            elif kind == "send" and tag == TAG["EVAL"]:
                t_eval = t
            elif kind == "recv" and tag == TAG["DECISION"] and t_eval is not None:
                evals.append(t - t_eval)
                t_eval = None
        return busy, waits, evals

    def answers(self):
        """The coordinator's answers (trace): READY or RESULT received -> TRIAL or DONE sent to
        the same rank, in seconds."""
        msgs = self.trace.get(0, {"msgs": []})["msgs"]
        lat = []
        for i, (kind, tag, peer, t) in enumerate(msgs):
            if kind == "recv" and tag in (TAG["READY"], TAG["RESULT"]):
                for kind2, tag2, peer2, t2 in msgs[i + 1:i + 3]:
                    if kind2 == "send" and peer2 == peer and tag2 in (TAG["TRIAL"], TAG["DONE"]):
                        lat.append(t2 - t)
                        break
        return lat

    def waits(self):
        """Every worker's waits for its next trial (worker_intervals), in seconds."""
        return [w for r in self.workers for w in self.worker_intervals(r)[1]]

    def our_cpu(self):
        """CPU seconds of every rank (MPI_Init included) from the trace."""
        if not self.trace or any("fin_cpu" not in e for e in self.trace.values()):
            return None
        return sum(e["fin_cpu"] for e in self.trace.values())


def fmt_pct(x):
    return "n/a" if x is None else f"{100 * x:.1f} %"


def machine_load(run):
    """The machine's CPU during the run (/proc/stat, all cores): busy and total
    core-seconds, this sweep's ranks' CPU (None without a trace), and everything else in
    cores on average (None without a trace): mpirun, trial programs, other people's work."""
    busy = run.stat["after"][0] - run.stat["before"][0]
    total = run.stat["after"][1] - run.stat["before"][1]
    ours = run.our_cpu()
    other = None if ours is None else max(0.0, busy - ours) / (total / os.cpu_count())
    return busy, total, ours, other


def load_line(run):
    busy, total, ours, other = machine_load(run)
    s = f"machine CPU during the run: {busy:.1f} of {total:.1f} core-seconds busy ({100 * busy / total:.0f} %)"
    if ours is not None:
        s += (f"; this sweep's ranks {ours:.1f}, everything else (mpirun, trial programs, other work)"
              f" {busy - ours:.1f} core-s = {other:.2f} cores on average")
    return s


def describe_run(run, label):
    W = len(run.workers)
    print(f"--- {label}: mpirun -np {W + 1} ({W} worker{'s' if W > 1 else ''} + the coordinator)")
    print(f"  mpirun wall (launch -> exit, measured by the script)      {run.mpirun_wall:8.2f} s")
    if run.mpi_startup is not None:
        print(f"    MPI start-up (launch -> every rank past MPI_Init)       {run.mpi_startup:8.2f} s")
    print(f"    coordinator wall (first line -> 'finished' line)         {run.coord_wall:8.2f} s"
          f"   (file root start_time..end_time: {run.file_end - run.file_start:.2f} s)")
    print(f"    shut-down ('finished' -> mpirun exit)                   {run.exit - run.coord_end:8.2f} s")
    ok = [t for t in run.trials if t["status"] == run.ok]
    secs = [t["seconds"] for t in run.trials]
    print(f"  trials: {len(run.trials)} recorded ({len(ok)} ok); trial seconds (training + evaluation, the trial's own clock):"
          f" mean {statistics.mean(secs):.2f}, min {min(secs):.2f}, max {max(secs):.2f}, sum {sum(secs):.2f} s")
    return W


def worker_accounting(run):
    """Per worker and in total: where workers x coordinator wall went."""
    W = run.workers
    tot = {"seconds": 0.0, "outside": 0.0, "first_extra": 0.0, "wait": 0.0, "head": 0.0, "tail": 0.0,
           "busy": 0.0, "cpu": 0.0, "cpu_wall": 0.0}
    rows = []
    for r in W:
        mine = sorted((t for t in run.trials if t["rank"] == r), key=lambda t: t["id"])
        sec = sum(t["seconds"] for t in mine)
        busy, waits, _ = run.worker_intervals(r)
        row = {"rank": r, "n": len(mine), "seconds": sec}
        if busy:
            b = sum(e - s for s, e in busy)
            row.update(busy=b, outside=b - sec, first_extra=(busy[0][1] - busy[0][0]) - mine[0]["seconds"],
                       wait=sum(waits[1:len(busy)]),  # RESULT -> TRIAL between trials (the first is in head)
                       head=busy[0][0] - run.coord_start, tail=max(0.0, run.coord_end - busy[-1][1]))
            ev = run.trace[r]
            if "fin_cpu" in ev:
                row["cpu"] = ev["fin_cpu"] - ev["init_cpu"]
                row["cpu_wall"] = ev["finalize"] - ev["init"]
        rows.append(row)
        for k in tot:
            tot[k] += row.get(k, 0.0)
    return rows, tot


def report_scaling(work, n1, n2):
    runs = [Run(work, n1), Run(work, n2)]
    accts = []
    for run in runs:
        W = describe_run(run, f"{len(run.workers)} worker{'s' if len(run.workers) > 1 else ''}")
        rows, tot = worker_accounting(run)
        accts.append((rows, tot))
        wall = run.coord_wall
        cap = W * wall
        print("  per worker (rank: trials, trial seconds, busy = TRIAL received -> RESULT sent):")
        for row in rows:
            extra = ""
            if "busy" in row:
                extra = (f", busy {row['busy']:.2f} s, between trials {1e3 * row['wait']:.0f} ms,"
                         f" before its first trial {row['head']:.2f} s, after its last result {row['tail']:.2f} s")
                if row.get("cpu_wall"):
                    extra += f", CPU {row['cpu']:.1f} s in {row['cpu_wall']:.1f} s ({100 * row['cpu'] / row['cpu_wall']:.0f} % of a core)"
            print(f"    rank {row['rank']}: {row['n']} trials, {row['seconds']:.2f} s{extra}")
        print(f"  worker utilisation = sum busy / (workers x coordinator wall) = "
              f"{tot['seconds']:.2f} / ({W} x {wall:.2f})  = {fmt_pct(tot['seconds'] / cap)} (busy = trial seconds)")
        if tot["busy"]:
            print(f"                                                                   "
                  f"{fmt_pct(tot['busy'] / cap)} (busy = TRIAL received -> RESULT sent)")
            print(f"  where workers x wall = {cap:.2f} worker-seconds went:")
            parts = [("training + evaluation (trial seconds)", tot["seconds"]),
                     ("outside the trial's clock: dataset load, final scoring, packing", tot["outside"]),
                     ("   of which the first trial's extra (dataset load)", tot["first_extra"]),
                     ("between trials (RESULT sent -> next TRIAL received)", tot["wait"]),
                     ("before the first trial (coordinator start -> first TRIAL)", tot["head"]),
                     ("after the last result (tail imbalance + DONE)", tot["tail"])]
            for label, v in parts:
                print(f"    {label:<66} {v:8.2f} s  {100 * v / cap:5.1f} %")
            rest = cap - tot["seconds"] - tot["outside"] - tot["wait"] - tot["head"] - tot["tail"]
            print(f"    {'unaccounted':<66} {rest:8.2f} s  {100 * rest / cap:5.1f} %")
        c0 = run.trace.get(0, {})
        if run.coord_cpu_ms is not None:
            n = len(run.trials)
            s = (f"  coordinator: {run.coord_cpu_ms:.2f} ms CPU and {run.coord_answer_ms:.2f} ms answering per trial (its own report;"
                 f" CPU from the sweep's start, MPI's threads included: {run.coord_cpu_ms * n / 1e3:.2f} s")
            if "init_cpu" in c0 and "fin_cpu" in c0:
                loop = c0["fin_cpu"] - c0["init_cpu"]
                s += (f", of which MPI_Init {c0['init_cpu']:.2f} s; after MPI_Init {loop:.2f} s ="
                      f" {1e3 * loop / n:.1f} ms per trial, {100 * loop / (c0['finalize'] - c0['init']):.1f} % of a core while it ran")
            print(s + ")")
        print("  " + load_line(run))
    print()
    print("=== scaling summary")
    sp_c = runs[0].coord_wall / runs[1].coord_wall
    sp_m = runs[0].mpirun_wall / runs[1].mpirun_wall
    print(f"  wall, 1 worker: coordinator {runs[0].coord_wall:.2f} s, mpirun {runs[0].mpirun_wall:.2f} s")
    print(f"  wall, 2 workers: coordinator {runs[1].coord_wall:.2f} s, mpirun {runs[1].mpirun_wall:.2f} s")
    print(f"  speed-up (coordinator wall)    {sp_c:.2f}x   (target >= 1.8x: {'met' if sp_c >= 1.8 else 'MISSED'})")
    print(f"  speed-up (mpirun wall)         {sp_m:.2f}x   (MPI start-up and shut-down included)")
    for run, (rows, tot) in zip(runs, accts):
        u = tot["seconds"] / (len(run.workers) * run.coord_wall)
        ub = tot["busy"] / (len(run.workers) * run.coord_wall) if tot["busy"] else None
        print(f"  utilisation, {len(run.workers)} worker(s): {fmt_pct(u)} (trial seconds), {fmt_pct(ub)} (TRIAL -> RESULT)"
              f"   (target >= 95 %: {'met' if u >= 0.95 else 'MISSED'} on trial seconds)")
    cpu1 = [row.get("cpu") for row in accts[0][0]]
    cpu2 = [row.get("cpu") for row in accts[1][0]]
    if all(cpu1) and all(cpu2):
        print(f"  work split (worker CPU seconds, which other load on the machine does not inflate):"
              f" {sum(cpu1):.1f} s on 1 worker, {' + '.join(f'{c:.1f}' for c in cpu2)} s on 2:"
              f" CPU-bound speed-up {sum(cpu1) / max(cpu2):.2f}x (what a quiet machine would show, contention aside)")
    other = []
    for run in runs:
        busy = run.stat["after"][0] - run.stat["before"][0]
        total = run.stat["after"][1] - run.stat["before"][1]
        ours = run.our_cpu()
        if ours is not None:
            other.append(max(0.0, busy - ours) / (total / os.cpu_count()))
    if len(other) == 2:
        quiet = max(other) < 0.15
        print(f"  other work on the machine: {other[0]:.2f} cores on average during the 1-worker run, {other[1]:.2f} during"
              f" the 2-worker run" + ("" if quiet else
              " -- NOT a quiet machine: the 1-worker run had a core to spare for it, the 2-worker run did not,"
              " so the wall-time speed-up understates the runner; rerun on a quiet machine"))
    m1 = statistics.mean(t["seconds"] for t in runs[0].trials)
    m2 = statistics.mean(t["seconds"] for t in runs[1].trials)
    print(f"  mean trial seconds: {m1:.2f} s with 1 worker, {m2:.2f} s with 2 ({100 * (m2 / m1 - 1):+.1f} %):"
          f" the per-trial slowdown when two trainers (and the coordinator) share the 2 cores")
    ideal = runs[0].coord_wall / 2
    print(f"  2-worker wall against half the 1-worker wall ({ideal:.2f} s): {runs[1].coord_wall - ideal:+.2f} s, of which"
          f" slower trials {(sum(t['seconds'] for t in runs[1].trials) - sum(t['seconds'] for t in runs[0].trials)) / 2:+.2f} s"
          f" (sum of trial seconds difference / 2)")


def read_fsync(path):
    """The fsync loop's numbers: one line 'fsync N BYTES t1 t2 ...' (seconds)."""
    with open(path) as f:
        w = f.read().split()
    ts = sorted(float(x) for x in w[3:])
    return int(w[1]), int(w[2]), ts


def report_overhead(work, name, fsync_path, perf_path=None, perf_name=None):
    run = Run(work, name)
    describe_run(run, "coordinator overhead")
    n = len(run.trials)
    ids = sorted(t["id"] for t in run.trials)
    rows = len(run.summary)
    print(f"  counts: /summary {rows} rows, /trials {n} groups, ids {ids[0]}..{ids[-1]} ({len(set(ids))} distinct),"
          f" status {dict((s, sum(t['status'] == s for t in run.trials)) for s in sorted({t['status'] for t in run.trials}))},"
          f" per rank min {min(sum(t['rank'] == r for t in run.trials) for r in run.workers)}"
          f" max {max(sum(t['rank'] == r for t in run.trials) for r in run.workers)}")
    print(f"  throughput: {n / run.coord_wall:.1f} trials/s over the coordinator wall ({1e3 * run.coord_wall / n:.2f} ms per trial)")
    jpath = os.path.join(work, name + ".h5.journal")
    jbytes = os.path.getsize(jpath) if os.path.exists(jpath) else 0
    hbytes = os.path.getsize(os.path.join(work, name + ".h5"))
    print(f"  per trial on disk: journal {jbytes / n / 1024:.1f} KiB, HDF5 file {hbytes / n / 1024:.1f} KiB")
    print()
    print(f"  coordinator, its own report: {run.coord_cpu_ms:.3f} ms CPU per trial (getrusage from the sweep's start: MPI's threads included, MPI_Init not)"
          f"   target < 1 ms: {'met' if run.coord_cpu_ms < 1 else 'MISSED'}")
    print(f"                               {run.coord_answer_ms:.3f} ms answering per trial (results and READYs: journal append + fsync,"
          f" HDF5 write + flush)")
    c0 = run.trace.get(0, {})
    if "init_cpu" in c0 and "fin_cpu" in c0:
        loop = c0["fin_cpu"] - c0["init_cpu"]
        print(f"  coordinator, from the trace: MPI_Init {1e3 * c0['init_cpu']:.0f} ms CPU ({c0['init_cpu'] * 1e3 / n:.3f} ms per trial);"
              f" after MPI_Init {1e3 * loop:.0f} ms = {1e3 * loop / n:.3f} ms per trial"
              f" ({100 * loop / (c0['finalize'] - c0['init']):.0f} % of a core over {c0['finalize'] - c0['init']:.2f} s)")
        lat = run.answers()
        if lat:
            print(f"  answering a request (RESULT or READY received -> TRIAL sent; the journal's fsync included): median {1e6 * statistics.median(lat):.0f} us,"
                  f" max {1e6 * max(lat):.0f} us")
    waits = run.waits()
    if waits:
        print(f"  a worker's wait for its next trial (RESULT or READY sent -> TRIAL received; queueing behind other workers and"
              f" 16 processes sharing 2 cores included): median {1e3 * statistics.median(waits):.2f} ms,"
              f" mean {1e3 * statistics.mean(waits):.2f} ms")
    N, size, ts = read_fsync(fsync_path)
    med, mean = statistics.median(ts), statistics.mean(ts)
    p90 = ts[int(0.9 * (len(ts) - 1))]
    print(f"  this disk: append {size} bytes + fsync, {N} times in {work}: median {1e3 * med:.3f} ms, mean {1e3 * mean:.3f} ms,"
          f" p90 {1e3 * p90:.3f} ms, min {1e3 * ts[0]:.3f} ms")
    print(f"  => of the {run.coord_answer_ms:.3f} ms answering per trial, about {1e3 * mean:.3f} ms ({100 * 1e3 * mean / run.coord_answer_ms:.0f} %)"
          f" is the journal's fsync (the disk); the rest, {run.coord_answer_ms - 1e3 * mean:.3f} ms, is unpacking, the journal"
          f" write, the HDF5 write and flush (page cache) and bookkeeping")
    print("  " + load_line(run))
    if perf_path:
        report_perf(Run(work, perf_name), perf_path)


PERF_ROWS = [
    ("the sweep loop (sweep_coordinate)", r"sweep_coordinate$"),
    ("  a result: on_result", r"on_result\b"),
    ("    HDF5 write of the trial (h5store_write_trial)", r"h5store_write_trial$"),
    ("      of which H5Fflush", r"H5Fflush$"),
    ("        of which H5C_set_slist_enabled (metadata-cache scan)", r"H5C_set_slist_enabled$"),
    ("    journal append (journal_append_packed)", r"journal_append_packed$"),
    ("      of which fsync (kernel side)", r"__x64_sys_fsync$"),
    ("    unpacking the result (trial_unpack)", r"trial_unpack$"),
    ("    handing out the next trial (hand_out: sampler, MPI_Isend)", r"hand_out$"),
    ("  polling: MPI_Iprobe", r"P?MPI_Iprobe$"),
    ("  polling: nanosleep", r"(__GI___)?nanosleep|clock_nanosleep"),
    ("sched_yield (Open MPI's yield_when_idle, anywhere)", r"(__GI_)?_?_?sched_yield"),
    ("MPI_Init (ompi_mpi_init)", r"ompi_mpi_init$"),
    ("opening / closing the results file", r"h5store_(rebuild|close)$"),
]


def perf_shares(path, table):
    """Inclusive shares (%) of rank 0's perf samples for each (label, symbol pattern) of
    table, from perf report --children --sort symbol."""
    rows = []
    with open(path) as f:
        for line in f:
            m = re.match(r"\s+([\d.]+)%\s+([\d.]+)%\s+\[[.k]\]\s+(.*?)\s{2,}", line)
            if m:
                rows.append((float(m.group(1)), m.group(3).replace(" (inlined)", "")))
    return [(label, max((p for p, sym in rows if re.match(pat, sym)), default=0.0)) for label, pat in table]


def report_perf(run, path):
    cpu = run.coord_cpu_ms
    print(f"  where the coordinator's CPU goes (perf, inclusive, a second run of the same sweep: {cpu:.3f} ms CPU per trial"
          f" by its own report):")
    for label, share in perf_shares(path, PERF_ROWS):
        print(f"    {label:<68} {share:5.1f} %  {cpu * share / 100:7.3f} ms per trial")
    print("    (shares of the rank-0 process's samples; inclusive, so the indented rows are parts of the row above)")


def summary_rows(run):
    return run.summary.to_dict("records")


def report_asha(work, full_name, asha_name, params):
    full, asha = Run(work, full_name), Run(work, asha_name)
    print("--- the same 27 configurations, every trial to the full budget, then with ASHA")
    for label, run in (("full", full), ("asha", asha)):
        print(f"  {label}: mpirun wall {run.mpirun_wall:.2f} s (MPI start-up {run.mpi_startup or float('nan'):.2f} s),"
              f" coordinator wall {run.coord_wall:.2f} s; coordinator {run.coord_cpu_ms:.2f} ms CPU and"
              f" {run.coord_answer_ms:.2f} ms answering per trial")
    rf, ra = summary_rows(full), summary_rows(asha)
    key = lambda d: tuple(d[p] for p in params)
    bf = max(rf, key=lambda d: d["reward"])
    ba = max((d for d in ra if d["status"] == asha.ok), key=lambda d: d["reward"])
    cfg = lambda d: ", ".join(f"{p}={d[p]:g}" if isinstance(d[p], (float, np.floating)) else f"{p}={d[p]}" for p in params)
    full_by = {key(d): d for d in rf}
    print()
    print(f"  full: best reward {bf['reward']:.4f} (trial {bf['trial']}: {cfg(bf)}; val_accuracy {bf['val_accuracy']:.4f},"
          f" test_accuracy {bf['test_accuracy']:.4f})")
    print(f"  asha: best reward {ba['reward']:.4f} (trial {ba['trial']}: {cfg(ba)}; val_accuracy {ba['val_accuracy']:.4f},"
          f" test_accuracy {ba['test_accuracy']:.4f});"
          f" the same configuration in the full run: {full_by[key(ba)]['reward']:.4f}")
    rank_full = sorted(rf, key=lambda d: -d["reward"])
    pos = [key(d) for d in rank_full].index(key(ba)) + 1
    diff = bf["reward"] - ba["reward"]
    print(f"  difference (full best - asha best): {diff:+.4f}   (target <= 0.01: {'met' if diff <= 0.01 else 'MISSED'});"
          f" ASHA's winner is number {pos} of 27 in the full run")
    sf = sum(int(d["steps"]) for d in rf)
    sa = sum(int(d["steps"]) for d in ra)
    print(f"  optimizer steps (sum of /summary steps): full {sf}, asha {sa} = {100 * sa / sf:.1f} %"
          f"   (target <= 40 %: {'met' if sa / sf <= 0.40 else 'MISSED'})")
    st = {}
    for d in ra:
        st.setdefault(int(d["steps"]), []).append(d)
    print("  asha trials by steps taken: " + ", ".join(
        f"{k} steps: {len(v)} ({sum(x['status'] == 'ok' for x in v)} ok, {sum(x['status'] == 'pruned' for x in v)} pruned)"
        for k, v in sorted(st.items())))
    print(f"  wall: asha {asha.coord_wall:.1f} s against full {full.coord_wall:.1f} s = {100 * asha.coord_wall / full.coord_wall:.0f} %"
          f" (coordinator walls)")
    # How well early evaluations predict the final ones, on the full run's curves.
    print("  how well the full run's early evaluations predict its final val_accuracy (Spearman over the 27):")
    with open_results(os.path.join(work, full_name + ".h5")) as rs:
        curves = {k: (c["step"], c["val_accuracy"]) for k in rs.trial_ids() for c in [rs.curves(k)]}
    final = np.array([curves[i][1][-1] for i in sorted(curves)])
    steps0 = curves[min(curves)][0]
    def ranks(x):
        return np.argsort(np.argsort(x)).astype(float)
    out = []
    for j, s in enumerate(steps0[:-1]):
        early = np.array([curves[i][1][j] for i in sorted(curves)])
        out.append(f"step {s}: {np.corrcoef(ranks(early), ranks(final))[0, 1]:.2f}")
    print("    " + ", ".join(out))
    evals = []
    for r in asha.workers:
        evals += asha.worker_intervals(r)[2]
    if evals:
        print(f"  rung decisions: {len(evals)}, round trip (EVAL sent -> DECISION received) median {1e3 * statistics.median(evals):.1f} ms,"
              f" max {1e3 * max(evals):.1f} ms")
    replay_asha(full, rf, params, bf["reward"])
    print("  " + load_line(full))
    print("  " + load_line(asha))


def asha_replay(order, acc, cost, reward, rungs, max_steps, eta, workers):
    """ASHA's rule (coordinator.c: asha_continue) replayed on known curves: trials handed
    out in `order` to `workers` free workers, each reaching its rungs at times given by
    its measured seconds per step. Returns (steps spent, best final reward)."""
    import heapq
    seen = [[] for _ in rungs]
    events, nxt, steps, finals = [], 0, 0, []
    for w in range(min(workers, len(order))):
        heapq.heappush(events, (cost[order[nxt]] * rungs[0], nxt, order[nxt], 0))
        nxt += 1
    while events:
        t, seq, c, k = heapq.heappop(events)
        if k < len(rungs):
            m = acc[c][rungs[k]]
            seen[k].append(m)
            s = sorted(seen[k])
            pos = (1 - 1 / eta) * (len(s) - 1)
            lo = int(np.floor(pos))
            cut = s[lo] + (pos - lo) * (s[lo + 1] - s[lo]) if lo + 1 < len(s) else s[lo]
            if m >= cut:
                upto = rungs[k + 1] if k + 1 < len(rungs) else max_steps
                heapq.heappush(events, (t + cost[c] * (upto - rungs[k]), seq, c, k + 1))
                continue
            steps += rungs[k]
        else:
            steps += max_steps
            finals.append(reward[c])
        if nxt < len(order):
            heapq.heappush(events, (t + cost[order[nxt]] * rungs[0], nxt, order[nxt], 0))
            nxt += 1
    return steps, max(finals)


def replay_asha(full, rows, params, best):
    """What ASHA would spend on this grid in grid order and in random orders, replayed on
    the full run's evaluation curves (same rule, eta 3, rungs from the asha run's YAML)."""
    with open_results(os.path.join(os.path.dirname(full.trace_dir), full.name + ".h5")) as rs:
        curves = {k: dict(zip(c["step"].tolist(), c["val_accuracy"].tolist())) for k in rs.trial_ids()
                  for c in [rs.curves(k)]}
    max_steps = max(int(d["steps"]) for d in rows)
    rungs, r = [], max_steps // 9
    while r < max_steps:
        rungs.append(r)
        r *= 3
    reward = {int(d["trial"]): float(d["reward"]) for d in rows}
    cost = {int(d["trial"]): float(d["seconds"]) / max(1, int(d["steps"])) for d in rows}
    ids = sorted(curves)
    total = len(ids) * max_steps
    s0, b0 = asha_replay(ids, curves, cost, reward, rungs, max_steps, 3, len(full.workers))
    rng = np.random.default_rng(1)
    res = [asha_replay([ids[i] for i in rng.permutation(len(ids))], curves, cost, reward, rungs, max_steps, 3,
                       len(full.workers)) for _ in range(200)]
    fr = np.array([s for s, _ in res]) / total
    df = best - np.array([b for _, b in res])
    print(f"  replay of ASHA's rule on the full run's curves (rungs {rungs}, eta 3, {len(full.workers)} workers, measured step times):")
    print(f"    trials handed out in grid (id) order (the runner shuffles them under ASHA; this shows why): {100 * s0 / total:.1f} % of the steps, best reward"
          f" {b0:.4f} (difference {best - b0:+.4f})")
    print(f"    in 200 random orders: {100 * fr.mean():.1f} % of the steps on average (10-90 %: {100 * np.percentile(fr, 10):.1f}"
          f"-{100 * np.percentile(fr, 90):.1f} %), difference {df.mean():+.4f} on average, <= 0.01 in {100 * (df <= 0.01).mean():.0f} %"
          f" of orders, <= 40 % of the steps in {100 * (fr <= 0.40).mean():.0f} %")
    print("    (asynchronous ASHA promotes a trial in the top 1/eta of those seen so far at its rung, so what it prunes"
          " depends on the order trials arrive: in a grid's order, quality drifts with the slower-varying parameters)")


def report_asha_repeats(work, full_name, config_name, trial_name, params):
    """Repeats under ASHA: each configuration's mean reward over its repeats, the best one
    each run finds among the configurations whose every repeat finished, the steps spent,
    and how many configurations had their repeats end differently."""
    full_run = Run(work, full_name)
    full = summary_rows(full_run)
    total = sum(int(d["steps"]) for d in full)
    key = lambda d: tuple(d[p] for p in params)
    def by_config(rows):
        out = {}
        for d in rows:
            out.setdefault(key(d), []).append(d)
        return out
    def mean_ok(trials):
        ok = [float(d["reward"]) for d in trials if d["status"] == full_run.ok]
        return sum(ok) / len(ok) if len(ok) == len(trials) else None
    full_mean = {k: mean_ok(v) for k, v in by_config(full).items()}
    best_key = max(full_mean, key=lambda k: full_mean[k])
    ranked = sorted(full_mean, key=lambda k: -full_mean[k])
    cfg = lambda k: ", ".join(f"{p}={v:g}" if isinstance(v, (float, np.floating)) else f"{p}={v}" for p, v in zip(params, k))
    print(f"--- {len(full)} trials, {len(full_mean)} configurations x 2 repeats")
    print(f"  full: best configuration by mean reward {full_mean[best_key]:.4f} ({cfg(best_key)})")
    for label, name in (("asha per configuration", config_name), ("asha per trial", trial_name)):
        rows = summary_rows(Run(work, name))
        groups = by_config(rows)
        means = {k: mean_ok(v) for k, v in groups.items()}
        done = {k: m for k, m in means.items() if m is not None}
        split = sum(len({(d["status"], int(d["steps"])) for d in v}) > 1 for v in groups.values())
        steps = sum(int(d["steps"]) for d in rows)
        pruned_n = [len(v) for v in groups.values() if all(d["status"] == "pruned" for d in v)]
        line = f"  {label}: {100 * steps / total:.1f} % of the full run's steps; {split} of {len(groups)} configurations split"
        line += f" between ok and pruned or across rungs; {len(done)} with both repeats to the end"
        if done:
            k = max(done, key=lambda c: done[c])
            line += (f"; best of those {done[k]:.4f} ({cfg(k)}), number {ranked.index(k) + 1} of {len(ranked)} in the"
                     f" full run (difference {full_mean[best_key] - full_mean[k]:+.4f})")
        print(line)
        print(f"    configurations pruned whole: {len(pruned_n)} (their per-configuration mean over n = 2 at one rung)"
              if pruned_n else "    no configuration pruned whole")


RESUME_PERF_ROWS = [
    ("opening the results (open_results)", r"open_results$"),
    ("  h5store_rebuild: the journal replayed into a new results file", r"h5store_rebuild$"),
    ("    the journal read: frames, CRCs, the calls below (replay_fd)", r"replay_fd$"),
    ("      first pass: the superseded records (superseded_records)", r"superseded_records$"),
    ("      a trial's bytes unpacked (trial_unpack)", r"trial_unpack$"),
    ("      the check against the space and the state rebuilt (resumed)", r"resumed$"),
    ("        the configuration the space gives the id (sampler_config)", r"sampler_config$"),
    ("        the sampler and ASHA told (record)", r"record$"),
    ("        the hand-outs counted (recovery_visit)", r"recovery_visit$"),
    ("      the trial written into the new file (write_trial)", r"write_trial$"),
    ("        its attributes (write_attr)", r"write_attr$"),
    ("        each closed object's metadata flushed (H5AC_flush_tagged_metadata)", r"H5AC_flush_tagged_metadata$"),
    ("    the new file flushed and renamed (h5store_publish)", r"h5store_publish$"),
    ("configurations as JSON text (config_to_json_text: the check and write_trial)", r"config_to_json_text$"),
    ("MPI_Init (ompi_mpi_init)", r"ompi_mpi_init$"),
    ("the sweep after the resume (on_result)", r"on_result$"),
]


def first_sent(run, tag):
    """Unix time of rank 0's first message of this tag sent (trace), or None."""
    return next((t for kind, tg, _, t in run.trace.get(0, {"msgs": []})["msgs"] if kind == "send" and tg == TAG[tag]),
                None)


def steady_state(run):
    """(utilisation, seconds) of the sweep's steady state, or None without a trace: from the
    coordinator's first TRIAL sent to its first DONE sent (the first time a worker is told
    there is no more work: from then on the workers run out of trials one by one), the
    trials' own clocks inside that window (each trial's the interval of its `seconds`
    ending at its end_time), summed / (workers x the window)."""
    t0, t1 = first_sent(run, "TRIAL"), first_sent(run, "DONE")
    if t0 is None or t1 is None or t1 <= t0:
        return None
    busy = sum(max(0.0, min(t["end"], t1) - max(t["end"] - t["seconds"], t0)) for t in run.trials)
    return busy / (len(run.workers) * (t1 - t0)), t1 - t0


def resume_times(run):
    """(rebuild, resume, whole) in seconds: the coordinator's first line to its 'resuming with'
    line (output arrival times), rank 0 past MPI_Init to its first TRIAL sent (its own clock:
    the trace), and mpirun's launch to that TRIAL. None where a piece is missing."""
    t_res = next((t for t, l in run.lines if re.search(r": resuming with \d+ of", l)), None)
    rebuild = t_res - run.coord_start if t_res is not None and run.coord_start is not None else None
    first = first_sent(run, "TRIAL")
    c0 = run.trace.get(0, {})
    resume = first - c0["init"] if first is not None and "init" in c0 else None
    whole = first - run.launch if first is not None else None
    return rebuild, resume, whole


def report_scale(work):
    """scale.sh's table: WORK/scale.manifest names each measurement (KIND ARGS... per line)."""
    with open(os.path.join(work, "scale.manifest")) as f:
        entries = [line.split() for line in f if line.strip()]
    rows = []  # (measure, measured, steady state, threshold, verdict, load)
    def row(measure, value, threshold="", met=None, load="", steady=""):
        rows.append((measure, value, steady, threshold, "" if met is None else ("met" if met else "MISSED"), load))
    def load_of(run):
        busy, total, _, other = machine_load(run)
        s = f"{100 * busy / total:.0f} % busy"
        s += f", {other:.1f} cores not ranks" if other is not None else ""
        return s + (f", load {run.loadavg[0]:.0f}" if run.loadavg else "")
    details = []
    for e in entries:
        kind = e[0]
        if kind == "asha":
            with open(os.path.join(work, e[1])) as f:
                for line in f:
                    w = line.split()
                    if len(w) == 5 and w[0].isdigit():
                        n, new_ms = int(w[0]), float(w[3])
                        row(f"ASHA decision, {n:,} finished", f"{1e3 * new_ms:.2f} µs", "< 0.5 ms" if n == 10000 else "",
                            new_ms < 0.5 if n == 10000 else None, "CPU time")
        elif kind == "tpe":
            n = int(e[1])
            with open(os.path.join(work, e[2])) as f:
                ms = json.loads(f.readline())["propose_last_ms"]
            row(f"TPE proposal, {n:,} finished", f"{ms:.2f} ms", "< 10 ms" if n == 10000 else "",
                ms < 10 if n == 10000 else None, "CPU time")
        elif kind in ("sleep", "instant", "journal"):
            # The journal's results file is the one the resumes go on writing: its log alone.
            run = Run(work, e[-1], {"journal": None, "instant": "summary", "sleep": "trials"}[kind])
            W = len(run.workers)
            if kind == "journal":
                n = int(e[1])
                details.append(f"  {run.name}: {n} instant trials on {W} workers, the journal the resumes replay;"
                               f" coordinator wall {run.coord_wall:.2f} s, mpirun {run.mpirun_wall:.2f} s;"
                               f" coordinator {run.coord_cpu_ms:.3f} ms CPU and {run.coord_answer_ms:.3f} ms answering a trial")
            else:
                n = len(run.summary)
                secs = float(np.sum(run.summary["seconds"]))
                ok = int((run.summary["status"] == run.ok).sum())
                details.append(f"  {run.name}: {n} trials ({ok} ok) on {W} workers; coordinator wall"
                               f" {run.coord_wall:.2f} s, mpirun {run.mpirun_wall:.2f} s (MPI start-up"
                               f" {run.mpi_startup or float('nan'):.2f} s); trial seconds: sum {secs:.1f}, mean {secs / n:.3f};"
                               f" coordinator {run.coord_cpu_ms:.3f} ms CPU and {run.coord_answer_ms:.3f} ms answering a trial")
            details.append("    " + load_line(run))
            lat, waits = run.answers(), run.waits()
            if lat and waits:
                details.append(f"    the coordinator's answer (RESULT or READY received -> TRIAL sent): median"
                               f" {1e3 * statistics.median(lat):.1f} ms, mean {1e3 * statistics.mean(lat):.1f} ms;"
                               f" a worker's wait for its next trial (its RESULT sent -> TRIAL received, queueing"
                               f" behind the others): median {1e3 * statistics.median(waits):.1f} ms, mean"
                               f" {1e3 * statistics.mean(waits):.1f} ms, max {1e3 * max(waits):.0f} ms")
            steady = steady_state(run) if kind == "sleep" else None
            if kind == "sleep" and run.trace:
                _, tot = worker_accounting(run)
                cap = W * run.coord_wall / 100
                last = max(t for kind2, tag, _, t in run.trace[0]["msgs"] if kind2 == "recv" and tag == TAG["RESULT"])
                close = W * max(0.0, run.coord_end - last)
                details.append(f"    where workers x wall went: the trials' own clocks {tot['seconds'] / cap:.1f} %, outside them"
                               f" (the trial's directory and files, its result read and packed) {tot['outside'] / cap:.1f} %, between trials {tot['wait'] / cap:.1f} %,"
                               f" before a worker's first trial {tot['head'] / cap:.1f} %, after its last result {tot['tail'] / cap:.1f} %"
                               f" (of which the last trials' spread, until the coordinator took the last result,"
                               f" {(tot['tail'] - close) / cap:.1f} %, and the coordinator's close after it"
                               f" {1e3 * (run.coord_end - last):.0f} ms = {close / cap:.1f} %); then mpirun's shut-down"
                               f" ('finished' line -> its exit) {run.exit - run.coord_end:.2f} s")
            if steady:
                details.append(f"    steady state (the first TRIAL sent -> the first DONE sent, {steady[1]:.2f} s): the trials'"
                               f" own clocks {100 * steady[0]:.1f} % of workers x that window")
            if kind == "sleep":  # the trial's clock starts just before its program's fork
                starts = sorted(1e3 * (t["end"] - t["seconds"] - t["start"]) for t in run.trials)
                details.append(f"    a trial's start (the runner's trial_run begun -> its program's fork: start_time ->"
                               f" end_time - seconds): median {statistics.median(starts):.2f} ms, mean"
                               f" {statistics.mean(starts):.2f} ms, 90th percentile {starts[int(0.9 * len(starts))]:.2f} ms")
            if kind == "sleep":
                u = secs / (W * run.coord_wall)
                row(f"utilisation, {int(e[1])} ranks, 1-s trials", f"{100 * u:.1f} %", "≥ 95 %", u >= 0.95, load_of(run),
                    f"{100 * steady[0]:.1f} %" if steady else "n/a")
                row(f"coordinator CPU a trial, {int(e[1])} ranks, 1-s trials", f"{run.coord_cpu_ms:.2f} ms", load=load_of(run))
            else:
                what = f"{int(e[1])} ranks, instant trials" if kind == "instant" else f"{n:,} instant trials journaled"
                row(f"throughput, {what}", f"{n / run.coord_wall:.0f} trials/s", load=load_of(run))
                row(f"coordinator CPU a trial, {what}", f"{run.coord_cpu_ms:.2f} ms", load=load_of(run))
        elif kind == "resume":
            n = int(e[1])
            run = Run(work, e[2], None)
            rebuild, resume, whole = resume_times(run)
            shown = resume if resume is not None else rebuild
            row(f"resume, {n:,} journaled trials", f"{shown:.2f} s" if shown is not None else "n/a",
                "< 2 s" if n == 10000 else "", (shown < 2) if n == 10000 and shown is not None else None, load_of(run))
            f = lambda x: "n/a" if x is None else f"{x:.2f} s"
            per = "" if rebuild is None else f" ({1e3 * rebuild / n:.3f} ms a journaled trial)"
            done = [int(m.group(1)) for _, l in run.lines for m in [re.search(r": (\d+)/\d+ done", l)] if m]
            if done and run.coord_cpu_ms is not None:  # its CPU a trial is over the trials run after the resume
                ran = done[-1] - n
                cpu = run.coord_cpu_ms / 1e3 * ran
                per += (f"; the coordinator's CPU in the whole run {cpu:.1f} s ({1e3 * cpu / n:.3f} ms a journaled trial,"
                        f" the {ran} trials run after it included)")
            details.append(f"  {run.name}: the journal's {n:,} trials: the coordinator's first line -> 'resuming' line"
                           f" (the rebuild) {f(rebuild)}{per}; rank 0 past MPI_Init -> first trial handed out {f(resume)};"
                           f" mpirun's launch -> first trial {f(whole)}")
            details.append("    " + load_line(run))
        elif kind == "same":
            n, run = int(e[1]), Run(work, e[2], None)
            rebuild = resume_times(run)[0]
            c0 = run.trace.get(0, {})
            cpu = c0["fin_cpu"] - c0["init_cpu"] if "fin_cpu" in c0 and "init_cpu" in c0 else None
            row(f"resume from its snapshot, {n:,} trials (the same YAML)", "n/a" if cpu is None else f"{cpu:.2f} s CPU",
                load=load_of(run))
            details.append(f"  {run.name}: the complete sweep of {n:,} trials resumed with its YAML, from the snapshot"
                           f" its last run wrote: rank 0's CPU past MPI_Init to MPI_Finalize"
                           f" {'n/a' if cpu is None else f'{cpu:.2f} s'}; the coordinator's first line -> 'resuming' line"
                           f" {'n/a' if rebuild is None else f'{rebuild:.2f} s'}")
            details.append("    " + load_line(run))
        elif kind == "perf":
            n, run, path = int(e[1]), Run(work, e[2], None), os.path.join(work, e[3])
            c0 = run.trace.get(0, {})
            cpu = c0["fin_cpu"] if "fin_cpu" in c0 else None
            rebuild = resume_times(run)[0]
            details.append(f"  where a resume of {n:,} journaled trials goes (perf on rank 0, a run resuming the complete sweep;"
                           f" rank 0's CPU {'n/a' if cpu is None else f'{cpu:.2f} s'} in all, MPI_Init included;"
                           f" the rebuild took {'n/a' if rebuild is None else f'{rebuild:.2f} s'} of wall):")
            for label, share in perf_shares(path, RESUME_PERF_ROWS):
                sec = "" if cpu is None else f"  {cpu * share / 100:6.2f} s  {1e6 * cpu * share / 100 / n:7.1f} µs a trial"
                details.append(f"    {label:<70} {share:5.1f} %{sec}")
            details.append("    (shares of the rank-0 process's samples; inclusive: indented rows are parts of the row above)")
        else:
            sys.exit(f"sweep_report.py: {work}/scale.manifest: unknown entry '{kind}'")
    head = ("measure", "measured", "steady state", "threshold", "", "machine during it")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print("=== scale (issue 31): thresholds at 10,000 finished trials and 65 ranks")
    for r in [head] + rows:
        print("  " + "  ".join(c.rjust(w) if i in (1, 2) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    print("  (machine during it: all cores' busy share over the run, the CPU not of the sweep's ranks (mpirun, the trial"
          " programs, other people's work) in cores on average, and the 1-minute load average at its end)")
    print("  (utilisation: the trials' own seconds summed / (workers x the coordinator's wall), the whole run; steady"
          " state: the same between the coordinator's first trial handed out and the first time it tells a worker there"
          " is no more work, without the start-up and the last round's ramp-down)")
    print()
    print("=== details")
    for d in details:
        print(d)

if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "scaling":
        report_scaling(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "overhead":
        report_overhead(*sys.argv[2:])
    elif cmd == "asha":
        report_asha(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(","))
    elif cmd == "scale":
        report_scale(sys.argv[2])
    elif cmd == "asha_repeats":
        report_asha_repeats(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6].split(","))
    else:
        sys.exit(f"unknown report {cmd}")
