#!/usr/bin/env bash
# `coll-bench pairs` at 32, 64 and 128 ranks: rank 0's peak memory and the whole process's time,
# this tree (a round at a time to rank 0, a bounded summary) against OLD_BIN (a build from
# before: the whole matrix gathered at the end, the schedule of n²/2 pairs on every rank),
# alternated. `-e 4K --budget 1ms`: the point is what rank 0 holds, not the bandwidth. Writes
# bench/pairs-scale-<host>.md. Open MPI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh openmpi
. ci/env.sh
cargo build --release --quiet
: "${OLD_BIN:?set OLD_BIN to a build from before}"
md="bench/pairs-scale-$(hostname).md"
new="$PWD/target/release/coll-bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# pairs at scale: rank 0's memory and the time, a round at a time vs the matrix at the end"
  echo
  echo "Machine: $(hostname), $(nproc) cores; Open MPI, oversubscribed; \`pairs -e 4K --budget 1ms --csv\`."
  echo "Rank 0's peak RSS (\`/usr/bin/time -f %M\` around rank 0), the launcher's wall time, the CSV's rows."
  echo "\"before\": $OLD_BIN ($(cd "$(dirname "$OLD_BIN")/../.." && git rev-parse --short HEAD 2>/dev/null || echo '?'))."
  echo
  echo "| ranks | build | run | rank 0 peak RSS (MiB) | wall (s) | CSV rows |"
  echo "|---:|---|---:|---:|---:|---:|"
  for n in ${RANKS:-32 64 128}; do
    for i in 1 2; do
      for build in "this tree:$new" "before:$OLD_BIN"; do
        name=${build%%:*}; bin=${build#*:}
        rm -f "$tmp/p.csv" "$tmp/rss"
        start=$(date +%s.%N)
        mpirun --allow-run-as-root --oversubscribe -q -n "$n" sh -c \
          'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec /usr/bin/time -o "$0/rss" -f %M "$1" pairs -e 4K --budget 1ms --csv "$0/p.csv"; else exec "$1" pairs -e 4K --budget 1ms --csv "$0/p.csv"; fi' \
          "$tmp" "$bin" > "$tmp/out"
        end=$(date +%s.%N)
        rss=$(tail -1 "$tmp/rss")
        rows=$(( $(wc -l < "$tmp/p.csv") - 1 ))
        echo "| $n | $name | $i | $(python3 -c "print(f'{$rss/1024:.1f}')") | $(python3 -c "print(f'{$end-$start:.1f}')") | $rows |"
      done
    done
  done
} | tee "$md"
