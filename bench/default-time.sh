#!/usr/bin/env bash
# The default sweep's wall time (`coll-bench` with no flags but --no-csv: core three, float sum,
# 8 B .. 64 MiB) on 2 local ranks, for each binary in BINS (label=path ...), alternated, REPS
# times (default 5): the bar of issues 26 and 27, "the default sweep's time within noise of
# before". Reports each binary's median and spread and each one's median over the first's.
# Writes bench/default-time-<host>.md; raw outputs in target/bench/default-time/.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
REPS=${REPS:-5}
BINS=${BINS:-now=$COLL_BENCH_BIN}
out=target/bench/default-time
rm -rf "$out"
mkdir -p "$out"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq 1 "$REPS"); do
  for lb in $BINS; do
    label=${lb%%=*}
    bin=${lb#*=}
    t0=$(date +%s.%N)
    "${MPIRUN[@]}" -n 2 "$bin" --no-csv > "$out/$label-$i.txt"
    echo "$label $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$out/times.txt" "$REPS" "$BINS" "$(hostname)" "$(nproc)" "$load0" "$load1" > "bench/default-time-${DEFAULT_TIME_HOST:-$(hostname)}.md" <<'PY'
import sys, statistics, datetime
times, reps, bins, host, cores, load0, load1 = sys.argv[1:8]
per = {}
for line in open(times):
    label, t = line.split()
    per.setdefault(label, []).append(float(t))
labels = [b.split("=", 1)[0] for b in bins.split()]
print(f"# The default sweep's wall time ({host}, {cores} cores), {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC\n")
print(f"`mpirun -n 2 BIN --no-csv`, {reps} runs per binary, alternated; load average before {load0}, after {load1}.\n")
for b in bins.split():
    print(f"- `{b.split('=', 1)[0]}`: `{b.split('=', 1)[1]}`")
print("\n| binary | runs (s) | median (s) | spread (max/min) | median / first binary's |")
print("|---|---|---|---|---|")
first = statistics.median(per[labels[0]])
for l in labels:
    ts = per[l]
    med = statistics.median(ts)
    print(f"| {l} | {', '.join(f'{t:.1f}' for t in ts)} | {med:.2f} | {max(ts)/min(ts):.3f} | {med/first:.3f} |")
PY
cat "bench/default-time-${DEFAULT_TIME_HOST:-$(hostname)}.md"
