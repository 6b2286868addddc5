#!/usr/bin/env bash
# What skew costs across hosts (issue 50: "also on the 3-host bed"): all-to-all-v of
# moe:experts=8,topk=2 at 1 MiB a rank, skew 0 against 1.5, on 4 ranks, median of 3 runs each,
# alternated: on the namespace bed (ci/netns-bed.sh: 3 hosts, --map-by node, so ranks 0,3 share
# host 1 and ranks 1, 2 have hosts 2 and 3; TCP across veth pairs and a bridge) and on one host
# (shared memory) beside it. Writes bench/alltoallv-bed-<NAME>.md. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh >/dev/null
. ci/env.sh
REPS=${REPS:-3} ITERS=${ITERS:-50}
out=target/bench/alltoallv-bed
rm -rf "$out" && mkdir -p "$out"
cargo build --release --quiet
bin=$PWD/target/release/coll-bench
NAME=${NAME:-$(hostname)}
export CB_NETNS_PREFIX=cbv-
trap 'bash ci/netns-bed.sh down' EXIT
bash ci/netns-bed.sh up 3 >/dev/null
printf 'cbv-node1 slots=2\ncbv-node2 slots=2\ncbv-node3 slots=2\n' >"$out/hostfile"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0][sys.argv[2]])" "$@"; }
args() { echo all-to-all-v --pattern "moe:experts=8,topk=2,skew=$1,seed=1" -b 1M -e 1M -n "$ITERS" -d float --force --csv; }
report="bench/alltoallv-bed-$NAME.md"
{
  echo "# What skew costs, within a host and across the namespace bed's hosts"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(mpirun --version 2>/dev/null | head -1 || true)."
  echo "$(date -u +%FT%TZ), bench/alltoallv-bed.sh: 4 ranks, all-to-all-v --pattern moe:experts=8,topk=2,skew=Z,seed=1 -b 1M -e 1M -n $ITERS -d float, $REPS alternated rounds, medians of the mean time per call."
  echo "Bed: 3 hosts (network namespaces, TCP over veth and a bridge), --map-by node: host 1 has ranks 0 and 3."
  echo
  echo "| where | skew | imbalance received | µs per call | rounds (µs) |"
  echo "|---|---:|---:|---:|---|"
} >"$report"
declare -A runs imb
for i in $(seq "$REPS"); do
  for z in 0 1.5; do
    bash ci/netns-bed.sh mpirun -q --bind-to none --map-by node -hostfile "$out/hostfile" -n 4 "$bin" $(args "$z") "$out/bed.csv" >"$out/bed-$z-$i.txt"
    runs[bed-$z]+="$(col "$out/bed.csv" time_us) " imb[bed-$z]=$(col "$out/bed.csv" imbalance_received)
    mpirun -q --oversubscribe -n 4 "$bin" $(args "$z") "$out/one.csv" >"$out/one-$z-$i.txt"
    runs[one-$z]+="$(col "$out/one.csv" time_us) " imb[one-$z]=$(col "$out/one.csv" imbalance_received)
  done
done
for where in one bed; do
  for z in 0 1.5; do
    m=$(printf '%s\n' ${runs[$where-$z]} | median)
    label=$([ "$where" = one ] && echo "one host (shared memory)" || echo "3-host bed (TCP)")
    printf '| %s | %s | %s | %.1f | %s|\n' "$label" "$z" "${imb[$where-$z]}" "$m" "$(printf '%.0f ' ${runs[$where-$z]})" >>"$report"
  done
done
cat "$report"
