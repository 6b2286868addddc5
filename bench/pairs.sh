#!/usr/bin/env bash
# `coll-bench pairs` in tournament rounds (n-1) against the sequential all-pairs loop
# (n(n-1)/2 runs), for 2, 4 and 8 ranks on this machine. Writes bench/pairs-<host>.md.
# (Ranks beyond the core count share cores: the point is the schedule, not the bandwidth.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
cargo build --release --quiet
md="bench/pairs-$(hostname).md"
{
  echo "# pairs: tournament rounds vs a sequential all-pairs loop"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); shared memory;"
  echo "\`coll-bench pairs -e 1M --budget 10ms\` (latency at 8 B, bandwidth at 1 MiB per pair). Time as reported by the"
  echo "tool (from the first round to the last, excluding MPI start-up)."
  echo
  echo "| ranks | pairs | tournament rounds | tournament time (s) | sequential runs | sequential time (s) | speed-up |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
  for n in 2 4 8; do
    t=$(mpirun -q -n "$n" target/release/coll-bench pairs -e 1M --budget 10ms --no-csv)
    s=$(mpirun -q -n "$n" target/release/coll-bench pairs -e 1M --budget 10ms --no-csv --sequential)
    tr=$(echo "$t" | sed -n 's/.* \([0-9]*\) pairs in \([0-9]*\) tournament.*/\1 \2/p')
    sr=$(echo "$s" | sed -n 's/.* in \([0-9]*\) sequential.*/\1/p')
    tt=$(echo "$t" | sed -n 's/# Took \(.*\) s/\1/p')
    st=$(echo "$s" | sed -n 's/# Took \(.*\) s/\1/p')
    set -- $tr
    echo "| $n | $1 | $2 | $tt | $sr | $st | $(python3 -c "print(f'{$st/$tt:.1f}x')") |"
  done
} | tee "$md"
