#!/usr/bin/env bash
# What pins the heap top in a fresh bare reduce-scatter loop (docs/sweep.md, "The heap"), Open MPI
# only: a bare loop (bench/tools/bare_loop.c) of MPI_Reduce_scatter_block at SIZE (1 MiB) on 2
# local ranks, in a fresh process, timing BUDGET (0.3 s) after its warm-up, with
#   - HISTORY one-double MPI_Allreduce calls before it (0, 1, 2, 12, 16, 20), and
#   - the shared-memory transport's fast-box threshold (btl_vader_fbox_threshold: the message to
#     a peer after which a fast box is set up for it; 16 by default) at 1, 16 and 1000,
# beside coll-bench at the same size (its defaults), REPS (3) rounds, the arms in turn.
# Writes bench/heap-fbox-<host>.md (NAME=x: bench/heap-fbox-x.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
unset MALLOC_MMAP_MAX_ MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ MALLOC_TOP_PAD_ GLIBC_TUNABLES
REPS=${REPS:-3} SIZE=${SIZE:-1048576} BUDGET=${BUDGET:-0.3}
out=target/bench/heap-fbox
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
mpicc -O2 -o "$out/bare_loop" bench/tools/bare_loop.c
arms="h0-t16 h1-t16 h2-t16 h12-t16 h16-t16 h20-t16 h0-t1 h0-t1000 h20-t1000 cb-t16 cb-t1000"
for i in $(seq 1 "$REPS"); do
  for a in $arms; do
    h=${a%%-*} t=${a##*-t}
    if [ "$h" = cb ]; then
      mpirun -q -n 2 --mca btl_vader_fbox_threshold "$t" "$COLL_BENCH_BIN" reduce-scatter -b "$SIZE" -e "$SIZE" \
        -d float -o sum --csv "$out/$a-$i.csv" > /dev/null
      python3 -c "
import csv, sys
r = [r for r in csv.DictReader(open(sys.argv[1])) if r['placement'] == 'out-of-place'][0]
print(r['time_us'], r['minor_faults_per_call'])" "$out/$a-$i.csv" > "$out/$a-$i.txt"
    else
      mpirun -q -n 2 --mca btl_vader_fbox_threshold "$t" "$out/bare_loop" "$SIZE" "$BUDGET" "$SIZE" reduce-scatter 2 "${h#h}" \
        | tail -1 | awk -F, '{print $5, $6}' > "$out/$a-$i.txt"
    fi
  done
done
NAME=${NAME:-$(hostname)}
{
  echo "# What pins the heap top: reduce-scatter $((SIZE >> 10)) KiB, 2 ranks ($(hostname), $(nproc) cores, $(mpirun --version | head -1))"
  echo
  echo "Each program in a fresh process under glibc's defaults; bare loops time $BUDGET s after their warm-up, coll-bench its"
  echo "defaults (out of place). \`hN\`: N one-double MPI_Allreduce calls before the loop; \`tN\`:"
  echo "\`--mca btl_vader_fbox_threshold N\` (16 is Open MPI's default). Median of $REPS rounds; each round's time µs / faults per call."
  echo
  echo "| program | history (calls) | fbox threshold | time µs (median) | faults per call (median) | rounds |"
  echo "|---|---:|---:|---:|---:|---|"
  for a in $arms; do
    h=${a%%-*} t=${a##*-t}
    prog=bare; [ "$h" = cb ] && { prog=coll-bench; h=-; } || h=${h#h}
    python3 -c "
import statistics, sys
rows = [open(f).read().split() for f in sys.argv[4:]]
t = [float(r[0]) for r in rows]; f = [float(r[1]) for r in rows]
print(f'| {sys.argv[1]} | {sys.argv[2]} | {sys.argv[3]} | {statistics.median(t):.1f} | {statistics.median(f):.0f} | ' + ' '.join(f'{a:.0f}/{b:.0f}' for a, b in zip(t, f)) + ' |')
" "$prog" "$h" "$t" $(for i in $(seq 1 "$REPS"); do echo "$out/$a-$i.txt"; done)
  done
} | tee "bench/heap-fbox-$NAME.md"
