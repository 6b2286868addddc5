#!/usr/bin/env bash
# Fidelity in the shape users run one size: each of all-reduce, all-gather and reduce-scatter at
# 256 KiB, 1 MiB, 4 MiB and 16 MiB alone, every program in a fresh process, on 2 local ranks,
# alternated REPS times (5 by default). Four programs per cell:
#   bare        bench/tools/bare_loop.c, the MPI call in a loop and nothing before it
#   bare+hist   the same after 20 one-double MPI_Allreduce calls (an application's history: a
#               step count, a loss), which change nothing but the MPI library's own state
#               (Open MPI: 16 messages to a peer set up its shared-memory fast box,
#               bench/heap-fbox.sh)
# Both bare loops time BARE_BUDGET (0.5 s by default) after their warm-up: an application's
# loop in its steady state. A 50 ms loop in a fresh process still holds the process's first
# calls (a fresh reduce-scatter loop faults 3-12 times per call over 50 ms, 0 over 0.5 s).
#   coll-bench  `coll-bench COLL -b S -e S` with its defaults (ceiling pass and check on)
#   kept        the same with --malloc kept (freed memory kept in the heap: no trimming)
# Both bare loops and coll-bench run under glibc's defaults (no MALLOC_* variable reaches the
# ranks). The report gives each cell's median time per call and minor page faults per call
# (out of place), and coll-bench's time over each bare loop's. Why there are two bare loops:
# docs/sweep.md, "The heap".
# Writes bench/fidelity-single-<host>.md (NAME=x: bench/fidelity-single-x.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
unset MALLOC_MMAP_MAX_ MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ MALLOC_TOP_PAD_ GLIBC_TUNABLES
REPS=${REPS:-5} HISTORY=${HISTORY:-20} BARE_BUDGET=${BARE_BUDGET:-0.5}
COLLS=${COLLS:-"all-reduce all-gather reduce-scatter"}
SIZES=${SIZES:-"262144 1048576 4194304 16777216"}
out=target/bench/fidelity-single
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
mpicc -O2 -o "$out/bare_loop" bench/tools/bare_loop.c
for i in $(seq 1 "$REPS"); do
  for c in $COLLS; do
    for s in $SIZES; do
      mpirun -q -n 2 "$out/bare_loop" "$s" "$BARE_BUDGET" "$s" "$c" 2 0 | tail -1 > "$out/bare-$c-$s-$i.csv"
      mpirun -q -n 2 "$COLL_BENCH_BIN" "$c" -b "$s" -e "$s" -d float -o sum -a 1 --csv "$out/coll-bench-$c-$s-$i.csv" > /dev/null
      mpirun -q -n 2 "$out/bare_loop" "$s" "$BARE_BUDGET" "$s" "$c" 2 "$HISTORY" | tail -1 > "$out/barehist-$c-$s-$i.csv"
      mpirun -q -n 2 "$COLL_BENCH_BIN" "$c" -b "$s" -e "$s" -d float -o sum -a 1 --malloc kept --csv "$out/kept-$c-$s-$i.csv" > /dev/null
    done
  done
done
NAME=${NAME:-$(hostname)}
python3 bench/tools/fidelity_single_report.py "$out" "$REPS" "$HISTORY" "$COLLS" "$SIZES" "$BARE_BUDGET" | tee "bench/fidelity-single-$NAME.md"
