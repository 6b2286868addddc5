#!/usr/bin/env bash
# Issue 49's second check bar: at 128 ranks (oversubscribed on this host), bench/osu.sh's
# coll-bench work with its check on (-c 1) within 5% of the same with it off (-c 0): all-reduce
# of float sums, 4 B to 1 MiB, -n 50 -w 5 -z 1, no ceiling, no CSV (osu.sh's line; OSU itself is
# not needed for this ratio). Whole `mpirun` wall time, the two alternated REPS times (default 3),
# medians. Writes bench/check-128-<host>.md (NAME=x to rename).
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
  for c in 0 1; do
    t0=$(date +%s.%N)
    "${MPIRUN[@]}" --oversubscribe -n "$N" "$BIN" all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv -c "$c" > "$out/c$c-$i.txt"
    echo "$c $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
  done
done
NAME=${NAME:-$(hostname)}
python3 - "$out/times.txt" "$N" "$REPS" <<'PY' | tee "bench/check-128-$NAME.md"
import sys, statistics
times, n, reps = sys.argv[1:4]
per = {}
for line in open(times):
    c, t = line.split()
    per.setdefault(c, []).append(float(t))
m0, m1 = statistics.median(per["0"]), statistics.median(per["1"])
print(f"# The check at {n} ranks, on and off ({__import__('platform').node()})\n")
print(f"`mpirun --oversubscribe -n {n} coll-bench all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv -c C`")
print(f"(bench/osu.sh's coll-bench line), whole wall time, {reps} alternated runs each, seconds.\n")
print("| check | runs (s) | median (s) | ÷ -c 0 |")
print("|---|---|---:|---:|")
for c, m in (("0", m0), ("1", m1)):
    print(f"| -c {c} | {', '.join(f'{t:.1f}' for t in per[c])} | {m:.1f} | {m / m0:.3f} |")
print(f"\nThe bar (issue 49): -c 1 within 5% of -c 0 (≤ 1.050).")
PY
