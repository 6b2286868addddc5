#!/usr/bin/env bash
# Fidelity: coll-bench's reported time (float, sum, out of place, mean over ranks) against a
# minimal C program timing the same MPI call in a bare loop (bench/tools/bare_loop.c), on 2 local
# ranks, 8 B to 64 MiB, in the same go. Runs both alternately REPS times and compares, per size,
# the median over runs. Bar: within 5% at every size (within 0.05 us below 1 KiB).
# Writes bench/fidelity-<host>.md (and .csv files beside it).
#
# BAR=heap runs issue 24's fidelity bar instead: all-reduce at 1 MiB and 64 MiB and reduce-scatter
# at 1 MiB (-b 1M -e 64M -f 64, both programs), REPS_HEAP=5 by default, under glibc's defaults (no
# MALLOC_* variable reaches the ranks, coll-bench's default --malloc): within 10% of the bare
# loop, median of the runs; the report adds each side's minor page faults per call.
#
# BASELINE=PATH also runs that coll-bench binary (e.g. a build of the previous commit) in every
# round, between the bare loop and this build, and writes bench/fidelity-<host>-baseline.md
# beside it: before/after ratios taken under the same conditions. NAME=x names the reports
# bench/fidelity-x.md (and -x-baseline.md) instead (default: the host, with -heap for BAR=heap). REPS and MAX shrink the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
MAX=${MAX:-67108864}
MIN=8 FACTOR=2 COLLS=all-reduce,all-gather,reduce-scatter REPS=${REPS:-3}
if [ "${BAR:-}" = heap ]; then
  MIN=1048576 FACTOR=64 COLLS=all-reduce,reduce-scatter REPS=${REPS_HEAP:-5}
  unset MALLOC_MMAP_MAX_ MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ GLIBC_TUNABLES
fi
out=target/bench/fidelity
rm -rf "$out/baseline" "$out"/coll-bench-*.csv "$out"/bare-*.csv   # a run starts from nothing: --csv never overwrites
mkdir -p "$out"
cargo build --release --quiet
mpicc -O2 -o "$out/bare_loop" bench/tools/bare_loop.c
NAME=${NAME:-$(hostname)${BAR:+-$BAR}}
if [ -n "${BASELINE:-}" ]; then
  mkdir -p "$out/baseline"
fi
for i in $(seq 1 "$REPS"); do
  mpirun -q -n 2 "$out/bare_loop" "$MAX" 0.05 "$MIN" "$COLLS" "$FACTOR" > "$out/bare-$i.csv"
  if [ -n "${BASELINE:-}" ]; then
    cp "$out/bare-$i.csv" "$out/baseline/bare-$i.csv"
    mpirun -q -n 2 "$BASELINE" ${COLLS//,/ } -b "$MIN" -e "$MAX" -f "$FACTOR" -d float -o sum -a 1 --csv "$out/baseline/coll-bench-$i.csv" > /dev/null
  fi
  mpirun -q -n 2 target/release/coll-bench ${COLLS//,/ } -b "$MIN" -e "$MAX" -f "$FACTOR" -d float -o sum -a 1 --csv "$out/coll-bench-$i.csv" > /dev/null
done
python3 bench/tools/fidelity_report.py "$out" "$REPS" ${BAR:-} | tee "bench/fidelity-$NAME.md"
if [ -n "${BASELINE:-}" ]; then
  python3 bench/tools/fidelity_report.py "$out/baseline" "$REPS" > "bench/fidelity-$NAME-baseline.md"
  echo "baseline ($BASELINE): bench/fidelity-$NAME-baseline.md"
fi
