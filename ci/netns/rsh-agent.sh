#!/bin/sh
# Open MPI's remote-shell agent for the network-namespace test bed (ci/netns-bed.sh): mpirun calls
# it as `rsh-agent.sh [-options] HOST COMMAND…`, the way it would call ssh. Instead of logging in,
# it runs COMMAND (a shell command line, as ssh would hand it to a remote shell) inside the
# namespace HOST, in a UTS namespace of its own whose host name is HOST, so every MPI process
# there sees HOST as its processor name. No sshd involved.
set -eu
while [ $# -gt 0 ]; do
  case $1 in
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "rsh-agent.sh: usage: rsh-agent.sh HOST COMMAND..." >&2; exit 2; }
host=$1
shift
if [ ! -e "/run/netns/$host" ]; then
  echo "rsh-agent.sh: no network namespace '$host' (is the bed up? ci/netns-bed.sh up N)" >&2
  exit 255
fi
# $0 = host name, $1 = the command line: set the name, then run the line through a shell.
exec ip netns exec "$host" unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && eval "$1"' "$host" "$*"
