#!/usr/bin/env bash
# Does `coll-bench compare` cry wolf, and does it still catch a real slowdown? RUNS back-to-back
# runs of one short sweep (core three, float sum, 8 B .. 64 KiB, --budget 5ms: 84 points) on 2
# local ranks, then:
# - false alarms: compare of consecutive runs, which differ only by the machine's drift: one run
#   per side (pairs 1-2, 3-4, …), two per side (1 2 -- 3 4, …) and three per side (1 2 3 -- 4 5 6);
# - detection: the same comparisons with every NEW run's rows of one collective (all sizes, both
#   placements) made 10%, 20%, 30% slower (every time column scaled), one collective at a time.
# Writes results/compare-noise-<host>.md; raw runs in results/compare-noise/ (not committed).
# RUNS=24 by default (12 pairs); about 10 min on the 2-core VM while other work loads it.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
nice -n 19 cargo build --release --quiet
runs=${RUNS:-24}
out=results/compare-noise
rm -rf "$out"
mkdir -p "$out"
cp "$COLL_BENCH_BIN" "$out/coll-bench"   # a rebuild meanwhile changes nothing here
uptime > "$out/load-start.txt"
start=$(date +%s)
for i in $(seq -w 1 "$runs"); do
  nice -n 19 "${MPIRUN[@]}" -n 2 "$out/coll-bench" -e 64K --budget 5ms --csv "$out/run-$i.csv" > /dev/null
done
echo $(( $(date +%s) - start )) > "$out/wall-s.txt"
uptime > "$out/load-end.txt"
python3 ci/bench/compare_report.py "$out" "$out/coll-bench" | tee "results/compare-noise-$(hostname).md"
