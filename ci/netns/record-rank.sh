#!/bin/bash
# record-rank.sh DIR PROGRAM ARGS…: run one MPI rank and leave its pid, stderr (also passed on
# afterwards), exit code and end time (epoch seconds) in DIR/rankN.{pid,err,rc,end}, N = its
# world rank. For a host whose link is down, whose output can no longer reach mpirun
# (tests/multihost.rs, bench/multihost.sh).
#
# The rank writes its stderr straight into the file: a reader on a pipe (tee) can be killed in
# the job's tear-down before it has written what the rank said. A rank the launcher ends
# (SIGTERM) still gets its end time and exit code (143) recorded; after SIGKILL only its pid
# file is left, and a test checks that the pid is gone.
d=$1
shift
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
"$@" 2>"$d/rank$r.err" &
pid=$!
echo "$pid" >"$d/rank$r.pid"
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
while :; do
  wait "$pid"
  rc=$?
  kill -0 "$pid" 2>/dev/null || break
done
date +%s.%N >"$d/rank$r.end"
echo "$rc" >"$d/rank$r.rc"
cat "$d/rank$r.err" >&2
exit "$rc"
