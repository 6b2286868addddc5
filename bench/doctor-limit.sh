#!/usr/bin/env bash
# `coll-bench doctor` within its time limit (issue 51), with its defaults (three collectives,
# -e 64M, --max-time 2m):
#  1. 3-host namespace bed, one rank per host, host 3's link capped at 50 Mbit/s: the wall time,
#     the size chosen, the first cause, and any host-memory claim (REPS runs; the bar: within
#     the limit + 20%, the link named first, no memory claim between hosts of one machine).
#  2. the same bed unshaped (REPS runs): within the limit, the verdict.
#  3. 2 ranks on this host (REPS runs): within the limit, the verdict.
# Writes bench/doctor-limit-<host>.md (NAME=x: bench/doctor-limit-x.md); raw outputs in
# target/bench/doctor-limit/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh > /dev/null
. ci/env.sh
REPS=${REPS:-3}
out=$PWD/target/bench/doctor-limit
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
export CB_NETNS_PREFIX=cbl-
bed=(bash ci/netns-bed.sh)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
timed() { # NAME CMD...: stdout to $out/NAME.txt, wall seconds to $out/NAME.s
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@" > "$out/$name.txt" 2> "$out/$name.err" || true
  echo "$(date +%s.%N) - $t0" | bc > "$out/$name.s"
}
hosts=cbl-node1,cbl-node2,cbl-node3
"${bed[@]}" up 3 > /dev/null
"${bed[@]}" slow 3 50mbit > /dev/null
for i in $(seq 1 "$REPS"); do
  timed "slow-$i" "${bed[@]}" mpirun -q -n 3 -H $hosts --bind-to none "$COLL_BENCH_BIN" doctor --json "$out/slow-$i.json"
done
"${bed[@]}" heal 3 > /dev/null
for i in $(seq 1 "$REPS"); do
  timed "bed-$i" "${bed[@]}" mpirun -q -n 3 -H $hosts --bind-to none "$COLL_BENCH_BIN" doctor --json "$out/bed-$i.json"
done
"${bed[@]}" down > /dev/null
for i in $(seq 1 "$REPS"); do
  timed "local-$i" mpirun -n 2 "$COLL_BENCH_BIN" doctor --json "$out/local-$i.json"
done
report=bench/doctor-limit-${NAME:-$(hostname)}.md
{
  echo "# doctor within --max-time (issue 51): $(hostname), $(nproc) cores, $(date -u +%Y-%m-%d)"
  echo
  echo "Load before: $load0. Each row one run of \`coll-bench doctor --json\` with its defaults (-e 64M, --max-time 2m)."
  echo "Bar: wall time at most the limit + 20% (144 s)."
  echo
  echo "| run | wall (s) | size | estimated (s) | first cause | memory claim | verdict |"
  echo "|---|---:|---|---:|---|---|---|"
  for f in "$out"/slow-*.txt "$out"/bed-*.txt "$out"/local-*.txt; do
    n=$(basename "$f" .txt)
    j="$out/$n.json"
    python3 - "$j" "$n" "$(cat "$out/$n.s")" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])) if __import__('os').path.exists(sys.argv[1]) else None
n, wall = sys.argv[2], float(sys.argv[3])
if j is None:
    print(f"| {n} | {wall:.1f} | – | – | (no JSON) | – | – |"); sys.exit()
p = j["run"]["plan"]
c = j["causes"]
first = f'{c[0]["cause"]} {c[0]["subject"]} {c[0]["share"]*100:.0f}%' if c else "none"
mem = [x["subject"] for x in c if "copies its memory" in x["evidence"]]
print(f'| {n} | {wall:.1f} | {p["size_bytes"]>>10}K | {p["estimated_s"]:.0f} | {first} | {", ".join(mem) or "none"} | {j["verdict"]} |')
PY
  done
} > "$report"
cat "$report"
