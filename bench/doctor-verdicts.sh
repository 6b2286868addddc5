#!/usr/bin/env bash
# doctor's verdict before and after a change (issue 51: "the verdict unchanged from today's on
# quiet runs"): OLD_BIN (a coll-bench built from the commit before) and this build, alternated,
# REPS runs each, with their defaults, on 3 hosts of the namespace bed (one rank each, no
# shaping) and on 2 local ranks: the wall time, the size measured at, the verdict, the causes
# (cause and subject, in rank order). Writes bench/doctor-verdicts-<host>.md (NAME=x).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OLD_BIN:?OLD_BIN=path to the coll-bench binary to compare with}"
bash ci/setup.sh > /dev/null
. ci/env.sh
REPS=${REPS:-3}
out=$PWD/target/bench/doctor-verdicts
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
export CB_NETNS_PREFIX=cbv-
bed=(bash ci/netns-bed.sh)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
timed() { # NAME CMD...
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@" > "$out/$name.txt" 2> "$out/$name.err" || true
  echo "$(date +%s.%N) - $t0" | bc > "$out/$name.s"
}
"${bed[@]}" up 3 > /dev/null
for i in $(seq 1 "$REPS"); do
  for side in old new; do
    bin=$COLL_BENCH_BIN; [ $side = old ] && bin=$OLD_BIN
    timed "bed-$side-$i" "${bed[@]}" mpirun -q -n 3 -H cbv-node1,cbv-node2,cbv-node3 --bind-to none "$bin" doctor --json "$out/bed-$side-$i.json"
  done
done
"${bed[@]}" down > /dev/null
for i in $(seq 1 "$REPS"); do
  for side in old new; do
    bin=$COLL_BENCH_BIN; [ $side = old ] && bin=$OLD_BIN
    timed "local-$side-$i" mpirun -n 2 "$bin" doctor --json "$out/local-$side-$i.json"
  done
done
report=bench/doctor-verdicts-${NAME:-$(hostname)}.md
{
  echo "# doctor's verdicts, before and after (issue 51): $(hostname), $(nproc) cores, $(date -u +%Y-%m-%d)"
  echo
  echo "Load before: $load0. old: \`$OLD_BIN\` ($(cd "$(dirname "$OLD_BIN")/../.." 2>/dev/null && git rev-parse --short HEAD 2>/dev/null || echo '?')); new: this tree ($(git rev-parse --short HEAD)). Alternated, defaults (-e 64M)."
  echo
  echo "| run | wall (s) | size | verdict | causes (in rank order) |"
  echo "|---|---:|---|---|---|"
  for f in "$out"/*.txt; do
    n=$(basename "$f" .txt)
    python3 - "$out/$n.json" "$n" "$(cat "$out/$n.s")" <<'PY'
import json, os, sys
path, n, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
if not os.path.exists(path):
    print(f"| {n} | {wall:.1f} | – | (no JSON) | |"); sys.exit()
j = json.load(open(path))
size = j["run"].get("plan", {}).get("size_bytes", j["run"]["options"]["size_bytes"]) >> 20
causes = "; ".join(f'{c["cause"]} {c["subject"]}' for c in j["causes"])
print(f'| {n} | {wall:.1f} | {size}M | {j["verdict"]} | {causes} |')
PY
  done
} > "$report"
cat "$report"
