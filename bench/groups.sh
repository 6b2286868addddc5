#!/usr/bin/env bash
# The speed bars of --groups (issue 12), measured:
#  (a) `--groups world` measures the same as no --groups: the same all-reduce sweep, alternating
#      runs of no flag, `--groups world` and `--groups split=mod:1` (one group of every rank, but
#      on a communicator of MPI_Comm_split), ROUNDS rounds; per size the median over rounds of
#      each one's time and its ratio to no flag.
#  (b) on the namespace test bed (ci/netns-bed.sh: 2 hosts x 2 ranks, --map-by slot), all-reduce
#      bus bandwidth with `--groups node` (each pair on one host: shared memory) against
#      `--groups rail` (each pair across the hosts: TCP over the bridge), at 1 MiB and up,
#      alternating, ROUNDS rounds; the ratio of the medians per size (the bar: >= 2). For
#      reference, `--groups node` once more with CB_NETNS_BTL=tcp,self (the pair on one host over
#      TCP, as the bed ran every pair before it let ranks on one host use shared memory).
# Writes bench/groups-<host>.md (raw CSVs in target/bench/groups/). (b) needs root (namespaces);
# without it, (b) is reported as not run.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
cargo build --release --quiet
bin=$COLL_BENCH_BIN
out=target/bench/groups
rounds=${ROUNDS:-5}
rm -rf "$out" && mkdir -p "$out"
cat /proc/loadavg >"$out/loadavg-start.txt"

# (a) 4 ranks on this host.
for r in $(seq 1 "$rounds"); do
  for v in none world split1; do
    case $v in
      none) flag=() ;;
      world) flag=(--groups world) ;;
      split1) flag=(--groups split=mod:1) ;;
    esac
    "${MPIRUN[@]}" -n 4 "$bin" all-reduce -b 8 -e 4M -f 8 "${flag[@]}" --csv "$out/a-$v-$r.csv" >/dev/null
  done
done

# (b) the bed.
bed=no
if bash ci/netns-bed.sh check >/dev/null 2>&1 && [ "$COLL_BENCH_MPI" = openmpi ]; then
  bed=yes
  export CB_NETNS_PREFIX=cbg-
  trap 'bash ci/netns-bed.sh down' EXIT
  bash ci/netns-bed.sh up 2
  printf 'cbg-node1 slots=2\ncbg-node2 slots=2\n' >"$out/hostfile"
  for r in $(seq 1 "$rounds"); do
    for v in node rail node-tcp; do
      btl=vader,tcp,self
      [ "$v" = node-tcp ] && btl=tcp,self
      CB_NETNS_BTL=$btl bash ci/netns-bed.sh mpirun -q --bind-to none -n 4 -hostfile "$out/hostfile" --map-by slot \
        "$bin" all-reduce -b 1M -e 16M -f 2 --groups "${v%-tcp}" --csv "$out/b-$v-$r.csv" >"$out/b-$v-$r.txt"
    done
  done
  bash ci/netns-bed.sh down
  trap - EXIT
fi
cat /proc/loadavg >"$out/loadavg-end.txt"
python3 bench/tools/groups_report.py "$out" "$rounds" "$bed" "$COLL_BENCH_MPI" | tee "bench/groups-$(hostname).md"
