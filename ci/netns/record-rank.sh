#!/bin/bash
# record-rank.sh DIR PROGRAM ARGS…: run one MPI rank and leave its stderr (also passed on), exit
# code and end time (epoch seconds) in DIR/rankN.{err,rc,end}, N = its world rank. For a host
# whose link is down, whose output can no longer reach mpirun (tests/multihost.rs,
# ci/bench-netns.sh).
d=$1
shift
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
"$@" 2> >(tee "$d/rank$r.err" >&2)
rc=$?
date +%s.%N >"$d/rank$r.end"
echo $rc >"$d/rank$r.rc"
exit $rc
