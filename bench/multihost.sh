#!/usr/bin/env bash
# All-reduce bus bandwidth between two hosts of the namespace test bed (ci/netns-bed.sh: one rank
# per host, TCP across veth pairs and a bridge) beside two ranks on one host over shared memory
# and over loopback TCP, at the same sizes; how long after a host's link goes down each rank and
# mpirun end with -T 5; and the wall time of the multi-host integration tests
# (tests/multihost.rs). Writes bench/multihost-<host>.md (raw output in target/bench/multihost/).
# Needs root (network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
cargo build --release --quiet
cargo test --release --test multihost --no-run --quiet 2>/dev/null
bin=target/release/coll-bench
out=target/bench/multihost
mkdir -p "$out"
sizes=(all-reduce -b 8 -e 32M -f 4)
cat /proc/loadavg >"$out/loadavg.txt"

# A bed of its own (prefix cbb-), so it cannot disturb another bed or the tests'.
export CB_NETNS_PREFIX=cbb-
trap 'bash ci/netns-bed.sh down' EXIT
bash ci/netns-bed.sh up 2
printf 'cbb-node1 slots=1\ncbb-node2 slots=1\n' >"$out/hostfile"
bash ci/netns-bed.sh mpirun -q -n 2 -hostfile "$out/hostfile" --map-by node "$bin" "${sizes[@]}" \
  --csv "$out/netns-tcp.csv" >"$out/netns-tcp.txt"

# Link down: 2 hosts x 2 ranks, host 2's link cut 3 s into the sweep, -T 5. Each rank runs under
# ci/netns/record-rank.sh (a cut-off rank's stderr cannot reach mpirun).
printf 'cbb-node1 slots=2\ncbb-node2 slots=2\n' >"$out/hostfile"
rm -rf "$out/cut" && mkdir -p "$out/cut"
(sleep 3 && date +%s.%N >"$out/cut/cut-at" && bash ci/netns-bed.sh cut 2) &
date +%s.%N >"$out/cut/start"
set +e
(cd "$out/cut" && timeout --kill-after=5 120 bash ../../../ci/netns-bed.sh mpirun -q -n 4 -hostfile ../hostfile \
  --map-by node ../../../ci/netns/record-rank.sh . ../../../"$bin" all-reduce -b 8 -e 64K -f 2 --budget 300ms -T 5 \
  --csv run.csv >stdout.txt 2>stderr.txt)
echo $? >"$out/cut/mpirun-rc"
set -e
date +%s.%N >"$out/cut/end"
wait
bash ci/netns-bed.sh down
trap - EXIT

mpirun -q -n 2 "$bin" "${sizes[@]}" --csv "$out/shm.csv" >"$out/shm.txt"
mpirun -q -n 2 --mca pml ob1 --mca btl tcp,self "$bin" "${sizes[@]}" --csv "$out/loopback-tcp.csv" >"$out/loopback-tcp.txt"

start=$(date +%s.%N)
set +e
cargo test --release --test multihost -- --test-threads=2 >"$out/test.txt" 2>&1
echo "exit $?" >>"$out/test.txt"
set -e
end=$(date +%s.%N)
echo "$start $end" >"$out/test-wall.txt"

python3 bench/tools/netns_report.py "$out" | tee "bench/multihost-$(hostname).md"
