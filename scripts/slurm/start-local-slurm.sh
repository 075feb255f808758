#!/usr/bin/env bash
# Bring up a real one-machine Slurm cluster (munge + slurmctld + slurmd) for tests and
# for trying `attnsweep slurm` without a cluster. Root only; Debian 12; no systemd needed.
#
#   eval "$(bash scripts/slurm/start-local-slurm.sh)"   # start (or find running); sets SLURM_CONF
#   sinfo; sbatch ...; squeue
#   bash scripts/slurm/start-local-slurm.sh stop        # or scripts/slurm/stop-local-slurm.sh
#
# Everything lives in one state directory, $ATTNSWEEP_SLURM_DIR (default
# /tmp/attnsweep-slurm): the generated slurm.conf, controller state, slurmd spool, logs
# and pid files. Nothing under /etc is written, so Slurm's commands need
# SLURM_CONF=$ATTNSWEEP_SLURM_DIR/slurm.conf — the one line this script prints on stdout
# (all progress goes to stderr). Jobs submitted with sbatch's default --export=ALL carry
# it into the job, where `scontrol requeue` needs it.
#
# slurm.conf is generated from `hostname -s` and `slurmd -C` (the node's real CPUs and
# memory), with the settings that work without systemd or cgroups: SlurmUser=root,
# proctrack/linuxproc, task/none, select/cons_tres with CR_Core, MpiDefault=pmix, no
# accounting. The node has as many CPUs as the machine: a job with more tasks than CPUs
# needs `sbatch --overcommit` (or `attnsweep slurm --overcommit`), or it pends forever.
#
# munged is a private one too, on a socket in the state directory (AuthInfo=socket=...)
# with the system's key: the system's munged, if any, is left alone, and two clusters
# of this script (two state directories, two port pairs) can run side by side.
#
# Idempotent: "start" when the cluster of this state directory answers does nothing but
# print the SLURM_CONF line; "stop" when nothing runs does nothing. "stop" cancels the
# cluster's jobs, then ends slurmd, slurmctld and munged by the pids in their pid files;
# "status" says whether it is up.
#
# Environment: ATTNSWEEP_SLURM_DIR (state directory), ATTNSWEEP_SLURMCTLD_PORT and
# ATTNSWEEP_SLURMD_PORT (6817, 6818: Slurm's defaults; tests use others so they never
# meet a cluster someone started by hand).
set -euo pipefail

action=${1:-start}
case $action in
  start | stop | status) ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0 ;;
  *) echo "start-local-slurm: unknown action '$action' (allowed: start, stop, status)" >&2; exit 2 ;;
esac

dir=${ATTNSWEEP_SLURM_DIR:-/tmp/attnsweep-slurm}
ctld_port=${ATTNSWEEP_SLURMCTLD_PORT:-6817}
slurmd_port=${ATTNSWEEP_SLURMD_PORT:-6818}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
conf=$dir/slurm.conf
socket=$dir/munge/munge.socket

say() { echo "start-local-slurm: $*" >&2; }
die() { say "$*"; exit 1; }

# pid_alive FILE NAME: FILE holds the pid of a live process whose command is NAME (a
# zombie counts as ended: in a container, PID 1 may never reap the daemons).
pid_alive() {
  local pid stat
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # the state letter follows "PID (COMM) "
  [[ ${stat:0:1} != Z ]]
}

# stop_pid FILE NAME: TERM the process, wait up to 10 s, then KILL it.
stop_pid() {
  local pid i
  pid_alive "$1" "$2" || { rm -f "$1"; return 0; }
  pid=$(<"$1")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    pid_alive "$1" "$2" || break
    sleep 0.1
  done
  if pid_alive "$1" "$2"; then
    say "$2 (pid $pid) did not stop within 10 s: killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
  say "stopped $2 (pid $pid)"
}

node_state() { SLURM_CONF=$conf sinfo -h -N -o %t 2>/dev/null | head -n1; }

running() {
  pid_alive "$dir/slurmctld.pid" slurmctld && pid_alive "$dir/slurmd.pid" slurmd &&
    [[ $(node_state) =~ ^(idle|mix|alloc) ]]
}

stop_all() {
  if pid_alive "$dir/slurmctld.pid" slurmctld; then
    local jobs i
    jobs=$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null || true)
    if [[ -n $jobs ]]; then
      say "cancelling jobs: $(echo "$jobs" | tr '\n' ' ')"
      # shellcheck disable=SC2086  # one word per job id
      SLURM_CONF=$conf scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [[ -z $(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null) ]] && break
        sleep 0.2
      done
    fi
  fi
  stop_pid "$dir/slurmd.pid" slurmd
  stop_pid "$dir/slurmctld.pid" slurmctld
  stop_pid "$dir/munged.pid" munged
}

case $action in
  stop) stop_all; exit 0 ;;
  status)
    if running; then say "running: node $(node_state)"; echo "export SLURM_CONF=$conf"; exit 0; fi
    say "not running"; exit 1 ;;
esac

# ---- start
[[ $(id -u) -eq 0 ]] || die "must run as root (it starts munged, slurmctld and slurmd)"
if running; then
  say "already running (state in $dir)"
  echo "export SLURM_CONF=$conf"
  exit 0
fi
bash "$root/scripts/install-deps.sh" slurm-wlm slurmctld slurmd slurm-client munge
for prog in munged munge unmunge slurmctld slurmd sinfo sbatch scontrol; do
  command -v "$prog" >/dev/null || die "$prog not found after installing the Slurm packages"
done

# A half-started or stale cluster of this directory: end what is left, start afresh.
stop_all
rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
mkdir -p "$dir/state" "$dir/spool" "$dir/log"

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$ctld_port" "$slurmd_port"; do
  port_in_use "$port" && die "port $port is in use (another Slurm?): set ATTNSWEEP_SLURMCTLD_PORT/ATTNSWEEP_SLURMD_PORT"
done

# ---- munge: a munged of our own, on a socket in the state directory (the system's
# key, /etc/munge/munge.key), so that two clusters of this script never share one.
[[ -s /etc/munge/munge.key ]] || {
  say "creating /etc/munge/munge.key"
  runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key
}
mkdir -p "$dir/munge"
runuser -u munge -- test -x "$dir" ||
  die "user munge cannot reach $dir: every directory above it must be searchable by all (chmod a+x)"
chown munge:munge "$dir/munge"
chmod 0755 "$dir/munge"  # munged insists that everyone may reach its socket
runuser -u munge -- /usr/sbin/munged --socket="$socket" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" ||
  die "munged failed to start (see $dir/munge/munged.log)"
cp "$dir/munge/munged.pid" "$dir/munged.pid"
munge_ok() { munge -n --socket="$socket" 2>/dev/null | unmunge --socket="$socket" >/dev/null 2>&1; }
for ((i = 0; i < 50; i++)); do
  munge_ok && break
  sleep 0.1
done
munge_ok || die "munged started but 'munge -n | unmunge' fails (see $dir/munge/munged.log)"
say "started munged (pid $(<"$dir/munged.pid"))"

# ---- slurm.conf from this machine
host=$(hostname -s)
hw=$(slurmd -C | head -n1)
[[ $hw == "NodeName=$host "* ]] || die "unexpected 'slurmd -C' output: $hw"
cat >"$conf" <<CONF
# Generated by scripts/slurm/start-local-slurm.sh on $(date '+%F %T'): a one-node cluster
# for tests. State, spool, logs and pid files live in $dir.
ClusterName=attnsweep-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
MpiDefault=pmix
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# Finished jobs stay visible to 'scontrol show job' for 10 minutes; KillWait is how long
# a job has between SIGTERM and SIGKILL at its time limit or on scancel.
MinJobAge=600
KillWait=30
InactiveLimit=0
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
$hw NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

export SLURM_CONF=$conf
slurmctld -i -f "$conf" || die "slurmctld failed to start (see $dir/log/slurmctld.log)"
slurmd -f "$conf" || die "slurmd failed to start (see $dir/log/slurmd.log)"

# ---- wait until the node is idle
state=""
for ((i = 0; i < 300; i++)); do
  state=$(node_state)
  [[ $state == idle ]] && break
  if [[ $state == down* || $state == drain* ]] && ((i % 20 == 19)); then
    scontrol update NodeName="$host" State=RESUME 2>/dev/null || true
  fi
  sleep 0.1
done
[[ $state == idle ]] || die "node $host is '${state:-not listed}' after 30 s (logs in $dir/log)"
say "Slurm is up: node $host idle, partition debug (state in $dir)"
echo "export SLURM_CONF=$conf"
