#!/usr/bin/env bash
# Start-up under Slurm against mpirun, on the same bed: the time from typing the launch to the
# first table row, `srun -N 2 --ntasks-per-node=2 --mpi=pmix` against Open MPI's
# `mpirun -n 4 --map-by slot` (two ranks on each of the same two hosts), RUNS times each,
# alternately, median of each (issue 25: srun within 2 s of mpirun). Also how long the bed takes
# to come up and whether `down` leaves anything behind (processes, mounts, namespaces, links,
# state). Needs root (the bed); builds nothing: run after `. ci/env.sh && cargo build --release`.
#
#   bash bench/slurm.sh [RUNS]        (default 5; report on stdout, bench/slurm-vm.md by hand)
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
RUNS=${1:-5}
export CB_NETNS_PREFIX=cbsbench-
BIN=$PWD/target/release/coll-bench
[ -x "$BIN" ] || { echo "bench-slurm: no $BIN (cargo build --release)" >&2; exit 2; }
ARGS=(all-reduce -b 8 -e 8 -n 1 -w 0 --no-csv)
# The same Open MPI settings for both launchers: the bed's mpirun passes them as --mca, srun's
# tasks read them from the environment (TCP between hosts, shared memory within one, ranks that
# yield while they wait: more ranks than cores here).
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=vader,tcp,self OMPI_MCA_mpi_yield_when_idle=1

# Seconds from start to the first line of stdout that is a table row (not a `#` line).
first_row() {
  python3 - "$@" <<'EOF'
import subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
took = None
for line in p.stdout:
    if took is None and line.strip() and not line.startswith("#"):
        took = time.monotonic() - t0
p.wait()
if p.returncode != 0 or took is None:
    sys.exit(f"bench-slurm: {sys.argv[1:]} ended with {p.returncode}, first row {took}")
print(f"{took:.3f}")
EOF
}

leftovers() {
  {
    ps -eo pid,comm | grep -E 'slurmctld|slurmd|slurmstepd|munged' | grep -v grep || true
    ip netns list | grep "$CB_NETNS_PREFIX" || true
    ip -o link | grep "$CB_NETNS_PREFIX" || true
    grep "$CB_NETNS_PREFIX" /proc/mounts || true
    ls -d "/run/coll-bench-slurm/$CB_NETNS_PREFIX" "/run/coll-bench-netns/$CB_NETNS_PREFIX" 2>/dev/null || true
  } | sed 's/^/    /'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "# bench-slurm: $(date -u +%FT%TZ) on $(hostname): $(nproc) cores, $(grep MemTotal /proc/meminfo | awk '{printf "%.0f GiB", $2/1048576}'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# slurm $(dpkg-query -W -f="${Version}" slurm-client 2>/dev/null || echo ?), $(mpirun.openmpi --version 2>/dev/null | head -1 || true)"
ups=()
for i in 1 2 3; do
  t0=$(date +%s.%N)
  bash ci/slurm-bed.sh up 2 2>/dev/null
  ups+=("$(echo "$(date +%s.%N) - $t0" | bc)")
  if [ "$i" -lt 3 ]; then
    bash ci/slurm-bed.sh down 2>/dev/null
    left=$(leftovers)
    [ -z "$left" ] || { echo "bench-slurm: down left behind:"; echo "$left"; exit 1; }
  fi
done
echo "bed up (s), 3 times: ${ups[*]}"
hostfile=/run/coll-bench-netns/$CB_NETNS_PREFIX/hostfile
mpirun_s=() srun_s=()
for i in $(seq 1 "$RUNS"); do
  mpirun_s+=("$(first_row bash ci/netns-bed.sh mpirun -q --bind-to none -n 4 --map-by slot -hostfile "$hostfile" "$BIN" "${ARGS[@]}")")
  srun_s+=("$(first_row bash ci/slurm-bed.sh srun -N 2 --ntasks-per-node=2 --mpi=pmix "$BIN" "${ARGS[@]}")")
done
m=$(printf '%s\n' "${mpirun_s[@]}" | median)
s=$(printf '%s\n' "${srun_s[@]}" | median)
echo "mpirun to first row (s): ${mpirun_s[*]}  median $m"
echo "srun   to first row (s): ${srun_s[*]}  median $s"
echo "srun - mpirun (median): $(echo "$s - $m" | bc) s (bar: within 2 s)"
t0=$(date +%s.%N)
bash ci/slurm-bed.sh down 2>/dev/null
echo "bed down (s): $(echo "$(date +%s.%N) - $t0" | bc)"
left=$(leftovers)
if [ -n "$left" ]; then echo "left behind after down:"; echo "$left"; exit 1; fi
echo "left behind after down: nothing (no slurm/munge process, namespace, link, mount or state directory of the bed)"
