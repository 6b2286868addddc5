#!/usr/bin/env bash
# Speed bar of `coll-bench step`: `step --layout all` on 4 ranks, default settings (4 layers,
# hidden 512, seq 512, micro-batch 1, 4 micro-batches, bf16, ddp with 25 MiB buckets, 1 warm-up
# and 5 timed steps per layout and per dimension alone, every phase checked), finishes in <= 60 s,
# wall clock of the whole mpirun. Three runs back to back. Writes bench/step-<host>.md (pass the
# machine's description as $1, e.g. "vm, 2 cores, Debian 12") and keeps the outputs in target/bench/step/.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
cargo build --release --quiet
machine=${1:-$(hostname)}
out=target/bench/step
rm -rf "$out"   # a run starts from nothing: --csv never overwrites
mkdir -p "$out"
md=bench/step-vm.md
{
  echo "# \`coll-bench step --layout all\` on 4 ranks: time to result"
  echo
  echo "Machine: $machine. $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), ${COLL_BENCH_MPI}."
  echo "Command: \`${MPIRUN[*]} -n 4 --oversubscribe $COLL_BENCH_BIN step --layout all --csv $out/run-N.csv\` (defaults otherwise)."
  echo "Bar: each run <= 60 s (wall clock of the whole mpirun). Load before the runs: $(cut -d' ' -f1-3 /proc/loadavg) (other work shares the machine)."
  echo
  echo "| run | wall (s) | coll-bench's own 'Took' (s) | layouts | all data correct | exit |"
  echo "|---|---|---|---|---|---|"
  for i in 1 2 3; do
    start=$(date +%s.%N)
    set +e
    "${MPIRUN[@]}" -n 4 --oversubscribe "$COLL_BENCH_BIN" step --layout all --csv "$out/run-$i.csv" > "$out/run-$i.txt"
    rc=$?
    set -e
    end=$(date +%s.%N)
    took=$(sed -n 's/^# Took \(.*\) s$/\1/p' "$out/run-$i.txt")
    layouts=$(sed -n 's/^# Layouts (\([0-9]*\)).*/\1/p' "$out/run-$i.txt")
    ok=$(grep -c '; all data correct' "$out/run-$i.txt" || true)
    echo "| $i | $(python3 -c "print(f'{$end-$start:.2f}')") | $took | $layouts | $ok of $layouts | $rc |"
  done
  echo
  echo "The ranking of run 1:"
  echo
  echo '```'
  grep -A20 '^# Ranked' "$out/run-1.txt" | grep -v '^# Wrote'
  echo '```'
  echo
  echo "Load after the runs: $(cut -d' ' -f1-3 /proc/loadavg)."
} | tee "$md"
