#!/usr/bin/env bash
# step's expert parallelism against its own all-to-all-v's measured alone (issue 50's bar: the ep
# time of `step --layout tp=1,ep=4` on 4 ranks equals the sum of its all-to-all-v calls measured
# alone, within 15%). Per skew, alternated rounds, each side a fresh process:
#   step:  --layout tp=1,ep=4 --experts 8 --topk 2 --skew Z (default model: 4 layers, 4
#          micro-batches, seq 512, hidden 512, bf16 moved as float on mpi): 64 all-to-all-v's of
#          1 MiB (the mean rank's) per step; its ep time per step / 64 is the time per call;
#   sweep: all-to-all-v --pattern moe:experts=8,topk=2,skew=Z,seed=1 at 1 MiB, float, the same
#          counts (the step's router is that pattern with seed 1), the mean time per call.
# The median of the rounds, each side; the ratio step/sweep. Writes bench/step-ep-<NAME>.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh >/dev/null
. ci/env.sh
REPS=${REPS:-3} ITERS=${ITERS:-5}
out=target/bench/step-ep
rm -rf "$out" && mkdir -p "$out"
cargo build --release --quiet
BIN=$PWD/target/release/coll-bench
NAME=${NAME:-$(hostname)}
over=(); case "${MPIRUN[0]}" in *mpirun*) over=(--oversubscribe) ;; esac
run() { "${MPIRUN[@]}" "${over[@]}" "$@"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[0][sys.argv[2]])" "$@"; }
report="bench/step-ep-$NAME.md"
{
  echo "# step's expert parallelism against its all-to-all-v's alone"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(mpirun --version 2>/dev/null | head -1 || true)."
  echo "$(date -u +%FT%TZ), bench/step-ep.sh: 4 ranks, step --layout tp=1,ep=4 --experts 8 --topk 2 -n $ITERS (64 all-to-all-v's of 1 MiB a step) against the sweep's all-to-all-v --pattern moe:experts=8,topk=2,skew=Z,seed=1 -b 1M -e 1M -n 200, each a fresh process, alternated, $REPS rounds, medians."
  echo
  echo "| skew | imbalance received | step: ep µs per call | sweep: µs per call | ratio | rounds (step / sweep, µs) |"
  echo "|---:|---:|---:|---:|---:|---|"
} > "$report"
for z in 0 1.5; do
  st=() sw=() rounds=""
  for i in $(seq "$REPS"); do
    run -n 4 "$BIN" step --layout tp=1,ep=4 --experts 8 --topk 2 --skew "$z" -n "$ITERS" --csv "$out/s.csv" --force > "$out/step.txt"
    s=$(python3 -c "print($(col "$out/s.csv" time_per_step_us) / 64)")
    run -n 4 "$BIN" all-to-all-v --pattern "moe:experts=8,topk=2,skew=$z,seed=1" -b 1M -e 1M -n 200 -d float --csv "$out/w.csv" --force > "$out/sweep.txt"
    w=$(col "$out/w.csv" time_us)
    imb=$(col "$out/w.csv" imbalance_received)
    st+=("$s") sw+=("$w") rounds="$rounds $(printf '%.0f/%.0f' "$s" "$w")"
  done
  ms=$(printf '%s\n' "${st[@]}" | median) mw=$(printf '%s\n' "${sw[@]}" | median)
  printf '| %s | %s | %.1f | %.1f | %.3f |%s |\n' "$z" "$imb" "$ms" "$mw" "$(python3 -c "print($ms/$mw)")" "$rounds" >> "$report"
done
cat "$report"
