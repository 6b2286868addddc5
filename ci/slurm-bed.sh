#!/usr/bin/env bash
# A real Slurm cluster on one machine, on the network-namespace bed (ci/netns-bed.sh): its N hosts
# (2 to 4) each run a slurmd under their host name, its launcher namespace runs munged and
# slurmctld and is where srun and sbatch are typed. Debian's packages (slurmctld, slurmd,
# slurm-client, slurm-wlm-basic-plugins, munge: `bash ci/setup.sh slurm`, which `up` runs when
# one is missing), started as root without systemd, with a configuration of their own in the bed's
# state directory, so the machine's /etc/slurm and /etc/munge are never read or changed.
#
#   ci/slurm-bed.sh up N             the namespace bed of N hosts, then munged, slurmctld, N slurmd;
#                                    returns once every node is idle (≤ 60 s, else it fails)
#   ci/slurm-bed.sh down             stop every daemon, job and step, remove the namespaces and state
#   ci/slurm-bed.sh with N CMD…      up N, run CMD (in this environment plus SLURM_CONF), down
#   ci/slurm-bed.sh srun ARGS…       srun in the launcher namespace (exit code: srun's)
#   ci/slurm-bed.sh sbatch FILE …    sbatch --wait there: returns when the job ends, with its exit
#                                    code; its output goes where the script's #SBATCH -o says (default
#                                    slurm-JOBID.out in the current directory)
#   ci/slurm-bed.sh run CMD…         any command in the launcher namespace (sinfo, squeue, scontrol…)
#   ci/slurm-bed.sh mpi TYPE         exit 0 if `srun --mpi=TYPE` can work on this bed, else say why,
#                                    exit 3 (pmi2, pmix)
#   ci/slurm-bed.sh check            exit 0 if this machine can host a Slurm bed, else print why, exit 3
#
# Names (CB_NETNS_PREFIX, CB_NETNS_NET) as for ci/netns-bed.sh: hosts PREFIXnode1..N in one
# partition `bed` (2 CPUs each, CB_SLURM_CPUS to change), controller PREFIXhead. Two beds with
# different prefixes share nothing: namespaces, munge socket, state and ports are all their own.
# Example (docs/cluster.md, "Slurm"):
#
#     ci/slurm-bed.sh up 2
#     ci/slurm-bed.sh srun -N 2 --ntasks-per-node=2 --mpi=pmix target/release/coll-bench all-reduce
#     ci/slurm-bed.sh down
set -Eeuo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/netns/common.sh"
NETNS_BED=$HERE/netns-bed.sh
STATE=/run/coll-bench-slurm/$PREFIX
CONF=$STATE/slurm.conf
CPUS=${CB_SLURM_CPUS:-2}
PLUGINS=$(ls -d /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib/*/slurm-wlm /usr/lib64/slurm /usr/lib/slurm 2>/dev/null | head -1 || true)

die() {
  echo "slurm-bed: $*" >&2
  exit 2
}

usage() {
  sed -n '/^#   ci/p' "$0" | sed 's/^#   //' >&2
  exit 2
}

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

# Why this machine cannot host a Slurm bed (empty: it can). Missing packages are not a reason
# when we are root and have apt-get: `up` installs them.
why_not() {
  local why
  why=$(bash "$NETNS_BED" check 2>&1) || { echo "$why"; return; }
  local missing=""
  for c in slurmctld slurmd srun sbatch munged; do have "$c" || missing+=" $c"; done
  if [ -n "$missing" ] && ! command -v apt-get >/dev/null; then
    echo "Slurm is not installed (missing:$missing) and there is no apt-get to install it"
  fi
}

# Start CMD in namespace NS under host name NAME, detached, its output in LOG. Not `ip netns exec`:
# it mounts a fresh /sys, without the cgroup file systems that slurmd's cgroup plugin (loaded even
# with proctrack/linuxproc and task/none) insists on finding; nsenter joins only the network
# namespace, and a private mount namespace puts the bed's hosts file over /etc/hosts, as
# `ip netns exec` would, and the host's own directory over the bed's TmpFS: every host has a /tmp
# of its own, as on a cluster (PMIx's per-step directories there have the same name on each host).
start_in() {
  local ns=$1 name=$2 log=$3
  shift 3
  mkdir -p "$STATE/tmp.$name"
  setsid nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private -- \
    sh -c 'echo "$0" > /proc/sys/kernel/hostname && mount --bind "/etc/netns/$1/hosts" /etc/hosts &&
           mount --bind "$2.$0" "$2" && shift 2 && exec "$@"' \
    "$name" "$ns" "$STATE/tmp" "$@" </dev/null >>"$log" 2>&1 &
}

in_head() {
  ip netns exec "$HEAD" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$HEAD" "$@"
}

write_conf() {
  local n=$1 i
  cat <<EOF
# Written by ci/slurm-bed.sh for the bed $PREFIX; removed by \`down\`.
ClusterName=cbbed
SlurmctldHost=$HEAD($HEAD_ADDR)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.%n.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
PropagateResourceLimitsExcept=ALL
InactiveLimit=0
KillWait=3
MessageTimeout=10
SlurmdTimeout=60
MinJobAge=30
TmpFS=$STATE/tmp
EOF
  for i in $(seq 1 "$n"); do
    echo "NodeName=$(host_name "$i") NodeAddr=$(host_addr "$i") CPUs=$CPUS State=UNKNOWN"
  done
  echo "PartitionName=bed Nodes=ALL Default=YES MaxTime=30 State=UP"
}

up() {
  local n=${1:-}
  [[ $n =~ ^[2-4]$ ]] || die "up: '$n' is not a host count; expected 2, 3 or 4"
  local t0=$SECONDS why
  why=$(why_not)
  [ -z "$why" ] || die "this machine cannot host the bed: $why"
  local c missing=""
  for c in slurmctld slurmd srun sbatch munged; do have "$c" || missing+=" $c"; done
  if [ -n "$missing" ]; then
    echo "slurm-bed: installing Slurm (missing:$missing): bash ci/setup.sh slurm" >&2
    bash "$HERE/setup.sh" slurm || die "could not install Slurm (bash ci/setup.sh slurm)"
  fi
  down quiet
  trap 'echo "slurm-bed: up failed; tearing down (logs were in $STATE)" >&2; for f in "$STATE"/*.log; do tail -n 5 "$f" >&2; done 2>/dev/null || true; down quiet; exit 2' ERR INT TERM
  local err
  err=$(bash "$NETNS_BED" up "$n" 2>&1) || { echo "$err" >&2; false; }
  mkdir -p "$STATE/munge" "$STATE/ctld" "$STATE/tmp"
  chmod 700 "$STATE" "$STATE/munge"
  for i in $(seq 1 "$n"); do mkdir -p "$STATE/spool/$(host_name "$i")"; done
  write_conf "$n" >"$CONF"
  # munge: one daemon for the bed, in the launcher namespace (so `down` ends it with the rest); its
  # socket is a file, which every namespace of the bed reaches (network namespaces do not
  # separate path-named Unix sockets). The key is fresh for each bed.
  head -c 1024 /dev/urandom >"$STATE/munge/munge.key"
  chmod 600 "$STATE/munge/munge.key"
  ip netns exec "$HEAD" "$(command -v munged || echo /usr/sbin/munged)" --force \
    --key-file="$STATE/munge/munge.key" --socket="$STATE/munge/munge.socket.2" \
    --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/munge/munged.log" \
    --seed-file="$STATE/munge/munged.seed" </dev/null >/dev/null 2>&1
  export SLURM_CONF=$CONF
  start_in "$HEAD" "$HEAD" "$STATE/slurmctld.out" "$(command -v slurmctld || echo /usr/sbin/slurmctld)" -D -i -f "$CONF"
  local i
  for i in $(seq 1 "$n"); do
    start_in "$(host_name "$i")" "$(host_name "$i")" "$STATE/slurmd.$(host_name "$i").out" \
      "$(command -v slurmd || echo /usr/sbin/slurmd)" -D -f "$CONF" -N "$(host_name "$i")"
  done
  # Ready when every node reports idle: poll with a deadline (a start-up, not a test's ordering).
  local idle=0
  while [ $((SECONDS - t0)) -lt 60 ]; do
    idle=$(in_head sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$' || true)
    [ "$idle" = "$n" ] && break
    sleep 0.5
  done
  [ "$idle" = "$n" ] || { echo "slurm-bed: $idle of $n nodes idle after 60 s" >&2; false; }
  trap - ERR INT TERM
  echo "slurm-bed: up in $((SECONDS - t0)) s: $n nodes $(bed_hosts | tr '\n' ' ')in partition bed; controller $HEAD; SLURM_CONF=$CONF" >&2
}

down() {
  # Every daemon, step and job of the bed lives in one of its namespaces: the netns bed's `down`
  # kills what is left in them (SIGKILL). Wait until they are gone, then remove the state
  # directory (configuration, munge key, spools).
  local ns pids=""
  for ns in $(bed_hosts) "$HEAD"; do
    [ -e "/run/netns/$ns" ] && pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
  done
  bash "$NETNS_BED" down quiet >/dev/null 2>&1 || bash "$NETNS_BED" down >/dev/null
  # Gone means reaped too (the daemons' parent is init once `up` has returned), at most 10 s.
  local pid t
  for pid in $pids; do
    for t in $(seq 1 100); do
      [ -e "/proc/$pid" ] || break
      sleep 0.1
    done
  done
  rm -rf "$STATE"
  rmdir /run/coll-bench-slurm 2>/dev/null || true
  [ "${1:-}" = quiet ] || echo "slurm-bed: down (prefix $PREFIX)" >&2
}

need_up() {
  [ -e "/run/netns/$HEAD" ] && [ -f "$CONF" ] || die "$1: no Slurm bed is up (ci/slurm-bed.sh up N)"
  export SLURM_CONF=$CONF
}

# Whether `srun --mpi=TYPE` has what it needs here: Slurm's plugin and, for PMIx, the library
# it loads at run time.
mpi_why_not() {
  case $1 in
    pmi2) [ -e "$PLUGINS/mpi_pmi2.so" ] || echo "Slurm's mpi_pmi2 plugin is not installed ($PLUGINS/mpi_pmi2.so)" ;;
    pmix)
      [ -e "$PLUGINS/mpi_pmix.so" ] || { echo "Slurm's mpi_pmix plugin is not installed ($PLUGINS/mpi_pmix.so; Debian: slurm-wlm-basic-plugins)"; return; }
      ldconfig -p | grep -q 'libpmix\.so' || echo "libpmix is not installed (Slurm's mpi_pmix plugin loads it: apt-get install libpmix2)"
      ;;
    *) echo "unknown --mpi type '$1'; expected pmi2 or pmix" ;;
  esac
}

with() {
  local n=${1:-}
  shift || true
  [ $# -gt 0 ] || die "with: expected a host count and a command"
  up "$n"
  trap 'down quiet' EXIT
  trap 'exit 130' INT TERM
  export SLURM_CONF=$CONF
  "$@"
}

cmd=${1:-}
shift || true
case $cmd in
  up) up "$@" ;;
  down) down ;;
  with) with "$@" ;;
  srun)
    need_up srun
    exec ip netns exec "$HEAD" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$HEAD" srun "$@"
    ;;
  sbatch)
    need_up sbatch
    [ $# -ge 1 ] || die "sbatch: expected a batch script"
    exec ip netns exec "$HEAD" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$HEAD" sbatch --wait "$@"
    ;;
  run)
    need_up run
    [ $# -ge 1 ] || die "run: expected a command"
    exec ip netns exec "$HEAD" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$HEAD" "$@"
    ;;
  mpi)
    why=$(mpi_why_not "${1:-}")
    [ -z "$why" ] || { echo "$why"; exit 3; }
    ;;
  check)
    why=$(why_not)
    [ -z "$why" ] || { echo "$why"; exit 3; }
    ;;
  *) usage ;;
esac
