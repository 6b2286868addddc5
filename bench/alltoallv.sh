#!/usr/bin/env bash
# all-to-all-v against a bare C loop of MPI_Alltoallv with the same counts (issue 50's speed bar:
# within 10%, 2 ranks, uniform and moe patterns, median of 5 alternated runs), each side a fresh
# process at one size. coll-bench writes each pattern's matrix (--write-matrix) and the bare loop
# (bench/tools/bare_alltoallv.c) reads it; coll-bench itself runs the pattern, not the file.
# The bare loop runs twice a round: with coll-bench's -w, and with STEADY (1000) warm-up calls.
# coll-bench's ceiling pass (sendrecv around the ring at the run's size, before the first point)
# warms the shared-memory path as well, so the steady loop is the like-for-like reference (seen:
# bare -w 30 at 99-107 us, -w 1000 at 86-102, coll-bench 87-102, coll-bench --no-ceiling 104-111).
# Then the skew bar: on 4 ranks, moe:experts=8,topk=2 at 1 MiB, skew 0 against 1.5, median of 3:
# the imbalance and the time. Writes bench/alltoallv-<NAME>.md (NAME: the host by default).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh >/dev/null
. ci/env.sh
REPS=${REPS:-5} SIZE=${SIZE:-1M} ITERS=${ITERS:-300} WARM=${WARM:-30} STEADY=${STEADY:-1000}
out=target/bench/alltoallv
rm -rf "$out" && mkdir -p "$out"
cargo build --release --quiet
mpicc -O2 -o "$out/bare" bench/tools/bare_alltoallv.c
BIN=$PWD/target/release/coll-bench
NAME=${NAME:-$(hostname)}
run() { "${MPIRUN[@]}" "$@"; }
# 4 ranks on fewer cores: Open MPI needs leave to oversubscribe (Hydra takes it by default).
over=(); case "${MPIRUN[0]}" in *mpirun*) over=(--oversubscribe) ;; esac
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
report="bench/alltoallv-$NAME.md"
{
  echo "# all-to-all-v: coll-bench against a bare MPI_Alltoallv loop"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(mpirun --version 2>/dev/null | head -1 || true)."
  echo "$(date -u +%FT%TZ), bench/alltoallv.sh: 2 ranks, $SIZE a rank, float, -n $ITERS -w $WARM on both sides, each run a fresh process, the sides alternated, $REPS rounds."
  echo
  echo "| pattern | imbalance (sent, received) | bare loop -w $WARM µs | bare loop -w $STEADY µs | coll-bench µs | ratio to -w $STEADY | ratio to -w $WARM | bare faults/call | coll-bench faults/call | rounds (bare -w $WARM / -w $STEADY / coll-bench, µs) |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$report"
for pattern in uniform "moe:experts=8,topk=2,skew=1.5"; do
  m="$out/matrix-${pattern%%:*}.txt"
  run -n 2 "$BIN" all-to-all-v --pattern "$pattern" -b "$SIZE" -e "$SIZE" -n 1 -w 0 --no-ceiling --no-csv --write-matrix "$m" > /dev/null
  bare=() steady=() cb=() bf=() cf=() rounds=""
  for i in $(seq 1 "$REPS"); do
    read -r t fl < <(run -n 2 "$out/bare" "$m" "$ITERS" "$WARM")
    bare+=("$t") bf+=("$fl")
    read -r ts _ < <(run -n 2 "$out/bare" "$m" "$ITERS" "$STEADY")
    steady+=("$ts")
    csv="$out/cb-${pattern%%:*}-$i.csv"
    run -n 2 "$BIN" all-to-all-v --pattern "$pattern" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARM" -d float --csv "$csv" > /dev/null
    read -r c cfl imb < <(python3 -c "import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if not x['rank']][0]; print(r['time_us'], r['minor_faults_per_call'] or 0, r['imbalance_sent']+','+r['imbalance_received'])" "$csv")
    cb+=("$c") cf+=("$cfl")
    rounds+="$t/$ts/$(printf '%.1f' "$c") "
  done
  b=$(printf '%s\n' "${bare[@]}" | median) s=$(printf '%s\n' "${steady[@]}" | median) c=$(printf '%s\n' "${cb[@]}" | median)
  ratio=$(python3 -c "print(f'{$c/$s:.3f}')") ratio30=$(python3 -c "print(f'{$c/$b:.3f}')")
  c=$(printf '%.1f' "$c")
  echo "| \`$pattern\` | $imb | $b | $s | $c | $ratio | $ratio30 | $(printf '%s\n' "${bf[@]}" | median) | $(printf '%s\n' "${cf[@]}" | median) | $rounds |" >> "$report"
done
{
  echo
  echo "## What skew costs: 4 ranks, moe:experts=8,topk=2, $SIZE a rank, median of 3 (coll-bench, default budget)"
  echo
  echo "| skew | imbalance received | time µs (median of 3) | rounds |"
  echo "|---|---:|---:|---|"
} >> "$report"
for z in 0 0.5 1 1.5; do
  ts=() rounds=""
  for i in 1 2 3; do
    csv="$out/skew-$z-$i.csv"
    run "${over[@]}" -n 4 "$BIN" all-to-all-v --pattern "moe:experts=8,topk=2,skew=$z" -b "$SIZE" -e "$SIZE" -d float --csv "$csv" > /dev/null
    read -r t imb < <(python3 -c "import csv,sys; r=[x for x in csv.DictReader(open(sys.argv[1])) if not x['rank']][0]; print(r['time_us'], r['imbalance_received'])" "$csv")
    ts+=("$t") rounds+="$(printf '%.1f' "$t") "
  done
  echo "| $z | $imb | $(printf '%.1f' "$(printf '%s\n' "${ts[@]}" | median)") | $rounds |" >> "$report"
done
cat "$report"
