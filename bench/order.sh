#!/usr/bin/env bash
# Does measuring size by size (`--order size`: every collective at one size, then the next) keep
# the machine's changes of speed from looking like one collective's regression? RUNS alternated
# pairs of runs of the same short sweep (core three, 8 B .. 1 MiB, --budget 5ms) on 2 local ranks,
# one in the default order and one with --order size, then for each order:
# - bench/tools/order_residuals.py: per pair of consecutive runs, each collective's median change
#   and the worst stretch of one collective relative to the others at the same sizes / to the run;
# - bench/tools/compare_report.py: `compare`'s false alarms and detection on that order's runs.
# Writes bench/order-<host>.md; raw runs in target/bench/order/{collective,size}/ (not committed).
# REPORT_ONLY=1 skips the runs and writes the report again from the saved ones, judged by this
# build's compare.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
chrt -i 0 nice -n 19 cargo build --release --quiet
runs=${RUNS:-36}
out=target/bench/order
if [ "${REPORT_ONLY:-0}" = 1 ]; then
  # The saved runs judged again by this build's compare (the report's compare tables).
  cp "$COLL_BENCH_BIN" "$out/bin"
  runs=$(ls "$out/size" | grep -c '^run-')
  wall=$(cat "$out/size/wall-s.txt")
else
  rm -rf "$out"
  mkdir -p "$out/collective" "$out/size"
  cp "$COLL_BENCH_BIN" "$out/bin"
  uptime > "$out/load-start.txt"
  start=$(date +%s)
  for i in $(seq -w 1 "$runs"); do
    "${MPIRUN[@]}" -n 2 "$out/bin" -e 1M --budget 5ms --csv "$out/collective/run-$i.csv" > /dev/null
    "${MPIRUN[@]}" -n 2 "$out/bin" -e 1M --budget 5ms --order size --csv "$out/size/run-$i.csv" > /dev/null
  done
  wall=$(( $(date +%s) - start ))
  uptime > "$out/load-end.txt"
fi
for o in collective size; do
  echo "$wall" > "$out/$o/wall-s.txt"
  cp "$out/load-start.txt" "$out/load-end.txt" "$out/$o/"
  : > "$out/$o/contention.txt"
done
report="bench/order-$(hostname).md"
{
  echo "# --order size against the default order: one-run comparisons"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(. /etc/os-release; echo "$PRETTY_NAME"). $runs alternated pairs of runs of"
  echo "\`mpirun -n 2 coll-bench -e 1M --budget 5ms\` (default order) and the same with \`--order size\`, ${wall} s;"
  echo "load at the start: $(cat "$out/load-start.txt"); at the end: $(cat "$out/load-end.txt"). Made by \`bench/order.sh\`."
  echo
  echo "## Each collective's change between consecutive runs, and the worst stretch of one collective"
  python3 bench/tools/order_residuals.py "$out/collective" "$out/size"
  for o in collective size; do
    echo
    echo "## compare on the $o order's runs"
    echo
    python3 bench/tools/compare_report.py "$out/$o" "$out/bin" | sed -n '/^| runs per side/,/^Sizes doctored/p'
  done
} > "$report"
echo "wrote $report"
