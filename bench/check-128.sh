#!/usr/bin/env bash
# Issue 49's second check bar: at 128 ranks (oversubscribed on this host), bench/osu.sh's
# coll-bench work with its check on (-c 1) within 5% of the same with it off (-c 0): all-reduce
# of float sums, 4 B to 1 MiB, -n 50 -w 5 -z 1, no ceiling, no CSV (osu.sh's line; OSU itself is
# not needed for this ratio). Whole `mpirun` wall time, the two alternated REPS times (default 3),
# medians; the order of the two alternates from one repeat to the next. Writes bench/check-128-<host>.md (NAME=x to rename).
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
N=${CHECK_RANKS:-128}
REPS=${REPS:-3}
BIN=${BIN:-$COLL_BENCH_BIN}
out=target/bench/check-128
rm -rf "$out"
mkdir -p "$out"
for i in $(seq 1 "$REPS"); do
  # The order alternates too (0 1, then 1 0): neither setting always runs second.
  order="0 1"
  if [ $((i % 2)) -eq 0 ]; then order="1 0"; fi
  for c in $order; do
    t0=$(date +%s.%N)
    "${MPIRUN[@]}" --oversubscribe -n "$N" "$BIN" all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv -c "$c" > "$out/c$c-$i.txt"
    echo "$c $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
  done
done
NAME=${NAME:-$(hostname)}
REV=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo "+changes")
python3 - "$out/times.txt" "$N" "$REPS" "$REV" "$(nproc)" "$("${MPIRUN[@]}" --version 2>&1 | head -1)" <<'PY' | tee "bench/check-128-$NAME.md"
import sys, statistics
times, n, reps, rev, cores, mpi = sys.argv[1:7]
per = {}
for line in open(times):
    c, t = line.split()
    per.setdefault(c, []).append(float(t))
m0, m1 = statistics.median(per["0"]), statistics.median(per["1"])
print(f"# The check at {n} ranks, on and off ({__import__('platform').node()})\n")
print(f"Machine: {__import__('platform').node()} ({cores} cores, {mpi}), binary {rev}.\n")
print(f"`mpirun --oversubscribe -n {n} coll-bench all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv -c C`")
print(f"(bench/osu.sh's coll-bench line), whole wall time, {reps} alternated runs each (order swapped every repeat), seconds.\n")
print("| check | runs (s) | median (s) | ÷ -c 0 |")
print("|---|---|---:|---:|")
for c, m in (("0", m0), ("1", m1)):
    print(f"| -c {c} | {', '.join(f'{t:.1f}' for t in per[c])} | {m:.1f} | {m / m0:.3f} |")
print(f"\nThe bar (issue 49): -c 1 within 5% of -c 0 (≤ 1.050).")
PY
