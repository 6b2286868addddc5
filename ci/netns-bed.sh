#!/usr/bin/env bash
# A multi-host test bed on one machine: N "hosts" (2 to 4) as Linux network namespaces, each with
# its own address and host name, joined by veth pairs to a bridge, plus a launcher namespace that
# runs mpirun. Open MPI starts its daemons on the hosts through ci/netns/rsh-agent.sh (an ssh
# stand-in: `ip netns exec HOST unshare --uts`), so no sshd is needed, and the ranks talk TCP
# across the bridge exactly as they would between machines. Needs root, `ip` and `tc` (iproute2).
#
#   ci/netns-bed.sh up N             create hosts PREFIXnode1..N and the launcher PREFIXhead
#   ci/netns-bed.sh down             remove everything (also done by `up` when it fails)
#   ci/netns-bed.sh status           hosts, addresses, links and shaping
#   ci/netns-bed.sh mpirun ARGS…     mpirun in the launcher namespace: shared memory within a host, TCP
#                                    across the bed's subnet (CB_NETNS_BTL=tcp,self: TCP for every pair)
#   ci/netns-bed.sh mpiexec ARGS…    MPICH's Hydra mpiexec there instead (for an MPICH build; its
#                                    hostfile lines are host:N; host:1 lines place ranks round-robin)
#   ci/netns-bed.sh exec HOST CMD…   a command on one host, under its host name
#   ci/netns-bed.sh slow HOST RATE   cap HOST's link in both directions (tc tbf, e.g. 20mbit)
#   ci/netns-bed.sh cut HOST         take HOST's link down; `heal HOST` undoes cut and slow
#   ci/netns-bed.sh with N CMD…      up N, run CMD, down (even when CMD fails or is interrupted)
#   ci/netns-bed.sh check            exit 0 if this machine can host a bed, else print why, exit 3
#
# HOST is a host name (cb-node2) or its number (2). Names and addresses: ci/netns/common.sh
# (CB_NETNS_PREFIX, default cb-; CB_NETNS_NET, default 10.231.0 → hosts 10.231.0.1..N, launcher
# .254). Host names resolve inside the bed through /etc/netns/NS/hosts, which `ip netns exec`
# mounts over /etc/hosts. Nothing is addressed outside the bed: the bridge and the root
# namespace have no address on it. Example (docs/cluster.md, "Multi-node"):
#
#     ci/netns-bed.sh up 2
#     ci/netns-bed.sh mpirun -q -n 4 -hostfile hostfiles/netns.hostfile --map-by node \
#         target/release/coll-bench all-reduce sendrecv
#     ci/netns-bed.sh down
set -Eeuo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/netns/common.sh"
AGENT=$HERE/netns/rsh-agent.sh
# Open MPI's launcher (the bed drives its rsh agent): Debian's per-family name where both
# families are installed.
MPIRUN_OMPI=$(command -v mpirun.openmpi || echo mpirun)
STATE=/run/coll-bench-netns/$PREFIX

usage() {
  sed -n '/^#   ci/p' "$0" | sed 's/^#   //' >&2
  exit 2
}

# Why this machine cannot host a bed (empty: it can). Makes and removes a throw-away bridge.
why_not() {
  [ "$(id -u)" -eq 0 ] || { echo "not root (network namespaces need CAP_NET_ADMIN)"; return; }
  command -v ip >/dev/null || { echo "no 'ip' command (apt-get install iproute2)"; return; }
  command -v tc >/dev/null || { echo "no 'tc' command (apt-get install iproute2)"; return; }
  command -v unshare >/dev/null || { echo "no 'unshare' command (util-linux)"; return; }
  command -v "$MPIRUN_OMPI" >/dev/null || { echo "no Open MPI mpirun (bash ci/setup.sh)"; return; }
  local probe=${PREFIX}probe
  ip netns add "$probe" 2>/dev/null || { echo "cannot create a network namespace (ip netns add failed)"; return; }
  # `ip netns exec` remounts / and /sys: a chroot whose / is not a mount point cannot.
  local err
  if ! err=$(ip netns exec "$probe" true 2>&1); then
    ip netns del "$probe"
    echo "cannot enter a network namespace (ip netns exec: ${err%%$'\n'*})"
    return
  fi
  ip netns del "$probe"
  ip link add "${PREFIX}bp" type bridge 2>/dev/null || { echo "cannot create a bridge (ip link add type bridge failed)"; return; }
  ip link del "${PREFIX}bp"
}

ensure_tools() {
  if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    [ "$(id -u)" -eq 0 ] || bed_die "iproute2 (ip, tc) is missing and we are not root"
    echo "netns-bed: installing iproute2" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2 >/dev/null
  fi
}

hosts_file() {
  local n=$1 i
  echo "127.0.0.1 localhost"
  echo "$HEAD_ADDR $HEAD"
  for i in $(seq 1 "$n"); do echo "$(host_addr "$i") $(host_name "$i")"; done
}

# One namespace, its veth pair (eth0 inside, $veth on the bridge), address and hosts file.
add_ns() {
  local ns=$1 veth=$2 addr=$3 n=$4
  ip netns add "$ns"
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" master "$BRIDGE" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
  # Give up on a peer that stops answering after ~6 s of retransmissions, not the default
  # ~15 min, so that mpirun notices a host whose link is cut (see `cut`) and ends the job.
  # Written to /proc directly: a minimal Debian has no sysctl (procps).
  ip netns exec "$ns" sh -c 'echo 4 >/proc/sys/net/ipv4/tcp_retries2'
  mkdir -p "/etc/netns/$ns"
  hosts_file "$n" >"/etc/netns/$ns/hosts"
}

# A TCP connect from the launcher to an unused port: "refused" proves the host answers.
reachable() {
  local out
  out=$(ip netns exec "$HEAD" timeout 3 bash -c "exec 3<>/dev/tcp/$1/9" 2>&1 || true)
  [[ $out == *refused* ]]
}

up() {
  local n=${1:-}
  [[ $n =~ ^[2-4]$ ]] || bed_die "up: '$n' is not a host count; expected 2, 3 or 4"
  ensure_tools
  local why
  why=$(why_not)
  [ -z "$why" ] || bed_die "this machine cannot host the bed: $why"
  down quiet
  trap 'echo "netns-bed: up failed; tearing down" >&2; down quiet; exit 2' ERR INT TERM
  mkdir -p "$STATE"
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  add_ns "$HEAD" "$HEAD_VETH" "$HEAD_ADDR" "$n"
  local i
  for i in $(seq 1 "$n"); do
    add_ns "$(host_name "$i")" "$(host_veth "$i")" "$(host_addr "$i")" "$n"
  done
  for i in $(seq 1 "$n"); do
    local ok=0 try
    for try in 1 2 3 4 5 6 7 8 9 10; do
      if reachable "$(host_addr "$i")"; then ok=1; break; fi
      sleep 0.2
    done
    [ $ok = 1 ] || { echo "netns-bed: $(host_name "$i") ($(host_addr "$i")) does not answer from $HEAD" >&2; false; }
  done
  for i in $(seq 1 "$n"); do echo "$(host_name "$i") slots=${SLOTS:-2}"; done >"$STATE/hostfile"
  trap - ERR INT TERM
  echo "netns-bed: up: $n hosts $(bed_hosts | tr '\n' ' ')on $SUBNET via bridge $BRIDGE; launcher $HEAD ($HEAD_ADDR); hostfile $STATE/hostfile" >&2
}

down() {
  local ns veth
  for ns in $(bed_hosts) "$HEAD"; do
    [ -e "/run/netns/$ns" ] || continue
    # Daemons and ranks left in the namespace (a killed mpirun leaves its orteds behind).
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  # veth ends die with their namespaces, but the kernel frees a namespace lazily: delete the
  # root-side ends now, so that an `up` right after finds their names free. The bridge stays
  # unless deleted.
  local i
  for i in $(seq 1 $MAX_HOSTS) h; do
    [ "$i" = h ] && veth=$HEAD_VETH || veth=$(host_veth "$i")
    ip link del "$veth" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$STATE"
  [ "${1:-}" = quiet ] || echo "netns-bed: down (prefix $PREFIX)" >&2
}

status() {
  local hosts
  hosts=$(bed_hosts)
  [ -n "$hosts" ] || { echo "netns-bed: no bed with prefix $PREFIX is up"; return 0; }
  local h i
  for h in $hosts; do
    i=$(host_index "$h")
    echo "$h $(host_addr "$i") link $(cat "/sys/class/net/$(host_veth "$i")/operstate" 2>/dev/null || echo '?')" \
      "qdisc $(tc qdisc show dev "$(host_veth "$i")" | head -1)"
  done
  echo "$HEAD $HEAD_ADDR (launcher); bridge $BRIDGE; subnet $SUBNET"
}

run_mpirun() {
  [ -e "/run/netns/$HEAD" ] || bed_die "mpirun: no bed is up (ci/netns-bed.sh up N)"
  # The daemons are started by the agent, on this machine, so they inherit this environment
  # (OMPI_ALLOW_RUN_AS_ROOT…). As on a cluster, ranks on one host talk through shared memory
  # (vader) and ranks on two hosts through TCP over the bed's subnet, which also carries the
  # launcher's own traffic (oob); CB_NETNS_BTL=tcp,self makes every pair use TCP. ob1 keeps UCX,
  # if installed, out of it. Ranks outnumber cores on
  # small machines: let idle ranks yield. Our "ssh" starts at once, so mpirun's setpgid on it
  # often comes too late and warns (harmlessly) on stderr: that one line is filtered out.
  local BTL=${CB_NETNS_BTL:-vader,tcp,self}
  exec 2> >(grep -v --line-buffered 'plm:rsh: Warning: setpgid' >&2)
  exec ip netns exec "$HEAD" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$HEAD" \
    "$MPIRUN_OMPI" --mca plm_rsh_agent "$AGENT" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca btl "$BTL" \
    --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET" \
    --mca mpi_yield_when_idle 1 "$@"
}

# MPICH's Hydra: proxies started through the same agent (as if by ssh), control traffic on the
# launcher's eth0 (the bed's subnet), and UCX (MPICH's ch4:ucx) kept to TCP over eth0, so ranks on
# two hosts never take a shared-memory shortcut. Hydra places ranks by the hostfile's `host:N`
# counts, wrapping round: `host:1` lines give round-robin (Open MPI's --map-by node).
run_mpiexec() {
  [ -e "/run/netns/$HEAD" ] || bed_die "mpiexec: no bed is up (ci/netns-bed.sh up N)"
  local mpiexec
  mpiexec=$(command -v mpiexec.mpich || command -v mpiexec) || bed_die "mpiexec: MPICH's mpiexec not found (bash ci/setup.sh mpich)"
  exec ip netns exec "$HEAD" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$HEAD" \
    "$mpiexec" -launcher ssh -launcher-exec "$AGENT" -iface eth0 \
    -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0 "$@"
}

run_exec() {
  local i ns
  i=$(host_index "${1:-}")
  ns=$(host_name "$i")
  shift
  [ -e "/run/netns/$ns" ] || bed_die "exec: $ns is not up"
  exec ip netns exec "$ns" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$ns" "$@"
}

slow() {
  local i rate=${2:-}
  i=$(host_index "${1:-}")
  [[ $rate =~ ^[0-9]+(kbit|mbit|gbit)$ ]] || bed_die "slow: '$rate' is not a rate; expected e.g. 20mbit"
  # tbf shapes what leaves an interface: the bridge side caps traffic to the host, eth0 inside
  # caps traffic from it.
  tc qdisc replace dev "$(host_veth "$i")" root tbf rate "$rate" burst 64kb latency 400ms
  ip netns exec "$(host_name "$i")" tc qdisc replace dev eth0 root tbf rate "$rate" burst 64kb latency 400ms
  echo "netns-bed: $(host_name "$i") capped at $rate each way" >&2
}

heal() {
  local i
  i=$(host_index "${1:-}")
  tc qdisc del dev "$(host_veth "$i")" root 2>/dev/null || true
  ip netns exec "$(host_name "$i")" tc qdisc del dev eth0 root 2>/dev/null || true
  ip link set "$(host_veth "$i")" up
}

cut() {
  local i
  i=$(host_index "${1:-}")
  ip link set "$(host_veth "$i")" down
  echo "netns-bed: $(host_name "$i") link down" >&2
}

with() {
  local n=${1:-}
  shift || true
  [ $# -gt 0 ] || bed_die "with: expected a host count and a command"
  up "$n"
  trap 'down quiet' EXIT
  trap 'exit 130' INT TERM
  "$@"
}

cmd=${1:-}
shift || true
case $cmd in
  up) up "$@" ;;
  down) down ;;
  status) status ;;
  mpirun) run_mpirun "$@" ;;
  mpiexec) run_mpiexec "$@" ;;
  exec) run_exec "$@" ;;
  slow) slow "$@" ;;
  heal) heal "$@" ;;
  cut) cut "$@" ;;
  with) with "$@" ;;
  check)
    why=$(why_not)
    [ -z "$why" ] || { echo "$why"; exit 3; }
    ;;
  *) usage ;;
esac
