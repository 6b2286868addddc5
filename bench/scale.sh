#!/usr/bin/env bash
# Issue 27: what each per-rank cost does as the number of ranks grows, measured here at
# SCALE_RANKS (default 2 8 32 64; add 128 where the machine allows: ranks are oversubscribed,
# correctness only), and the 2-rank speed bar of the announcement tree.
#
# 1. Speed bar: the default sweep at 2 ranks (SPEED_ARGS added to its flags: empty for the bar
#    itself), this branch's binary and main's ($MAIN_BIN, default
#    /work/main/target/release/coll-bench), alternated, 3 each: medians of the wall time.
# 2. At each n: a small watched sweep (all-reduce 8 B .. 2 KiB, x4, 20 calls, -T 30, --per-rank,
#    CSV and JSON), `info --json` and `pairs` (8 B and 64 KiB, 5 ms budget): wall time, peak RSS
#    of rank 0 and of the others (/usr/bin/time per rank), UDP datagrams received on the machine
#    during the sweep (/proc/net/snmp: every rank's, and other users' on a shared machine), and
#    the output files' sizes.
# The report (bench/scale-<host>.md) fits each measure to a + b·n (+ c·n² where the code says
# so) and extrapolates to 1 024, 4 096 and 16 384 ranks (bench/tools/scale_report.py).
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
BIN=${BIN:-$COLL_BENCH_BIN}
MAIN_BIN=${MAIN_BIN:-/work/main/target/release/coll-bench}
RANKS=${SCALE_RANKS:-2 8 32 64}
SPEED_ARGS=${SPEED_ARGS:-}
out=${SCALE_OUT:-target/bench/scale}
rm -rf "$out"
mkdir -p "$out"
udp_in() { awk '/^Udp: [0-9]/ {print $2}' /proc/net/snmp; }
now() { date +%s.%N; }

for n in $RANKS; do
  d="$out/n$n"
  mkdir -p "$d"
  # Each rank under /usr/bin/time: its peak RSS (KiB) in rss-<cmd>.<rank>.
  run() {
    local cmd=$1
    shift
    local t0 u0
    t0=$(now)
    u0=$(udp_in)
    "${MPIRUN[@]}" -n "$n" bash -c 'exec /usr/bin/time -f %M -o "$0/rss-$1.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" "${@:2}"' \
      "$d" "$cmd" "$BIN" "$@" > "$d/$cmd.out" 2> "$d/$cmd.err" || echo "exit $?" >> "$d/$cmd.err"
    echo "$cmd $t0 $(now) $u0 $(udp_in)" >> "$d/times.txt"
  }
  run sweep all-reduce -b 8 -e 2K -f 4 -n 20 -w 2 -T 30 --per-rank --csv "$d/sweep.csv" --json "$d/sweep.json"
  run info info --json
  run pairs pairs -b 8 -e 64K --budget 5ms --csv "$d/pairs.csv"
done
if [ -x "$MAIN_BIN" ] && [ "${SKIP_SPEED:-0}" != 1 ]; then
  for i in 1 2 3; do
    for which in main branch; do
      b=$BIN; [ $which = main ] && b=$MAIN_BIN
      t0=$(now)
      "${MPIRUN[@]}" -n 2 "$b" $SPEED_ARGS --no-csv > "$out/default-$which-$i.txt"
      echo "$which $i $(now) $t0" >> "$out/speed.txt"
    done
  done
fi

SPEED_ARGS="$SPEED_ARGS" python3 bench/tools/scale_report.py "$out" "$RANKS" | tee "bench/scale-${SCALE_HOST:-$(hostname)}.md"
