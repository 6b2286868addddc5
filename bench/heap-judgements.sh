#!/usr/bin/env bash
# Does doctor's call cause hold for an application? doctor -e 1M on 2 ranks names
# MPI_Reduce_scatter_block against MPI_Reduce_scatter at 1 MiB with a ratio; this script runs
# doctor and two pairs of bare loops (bench/tools/bare_loop.c: MPI_Reduce_scatter_block, then
# MPI_Reduce_scatter with equal counts, each in its own fresh process), alternated REPS times
# (3 by default): the bare loops as a fresh process with nothing before the loop, and after 20
# one-double MPI_Allreduce calls (an application's history; docs/sweep.md, "The heap"). Each
# round's ratios are taken within the round, so a change of the machine's speed between rounds
# cancels. Under glibc's defaults. Writes bench/heap-judgements-<host>.md (NAME=x to rename).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
unset MALLOC_MMAP_MAX_ MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ MALLOC_TOP_PAD_ GLIBC_TUNABLES
REPS=${REPS:-3} S=1048576
out=target/bench/heap-judgements
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
mpicc -O2 -o "$out/bare_loop" bench/tools/bare_loop.c
for i in $(seq 1 "$REPS"); do
  for h in 0 20; do
    for c in reduce-scatter reduce-scatter-counts; do
      mpirun -q -n 2 "$out/bare_loop" $S 0.05 $S $c 2 $h | tail -1 > "$out/bare-$h-$c-$i.csv"
    done
  done
  mpirun -q -n 2 "$COLL_BENCH_BIN" doctor -e 1M --json "$out/doctor-$i.json" > "$out/doctor-$i.txt" || true
done
NAME=${NAME:-$(hostname)}
python3 - "$out" "$REPS" <<'PY' | tee "bench/heap-judgements-$NAME.md"
import json, platform, statistics, subprocess, sys
d, reps = sys.argv[1], int(sys.argv[2])
def bare(h, c, i):
    row = open(f"{d}/bare-{h}-{c}-{i}.csv").read().strip().split(",")
    return float(row[4]), float(row[5])
mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"# doctor's call cause against an application's bare loops ({platform.node()}, {mpi})\n")
print("2 ranks, reduce-scatter at 1 MiB, float sum. µs per call; faults: minor page faults per call of")
print("MPI_Reduce_scatter_block. `fresh`: a bare loop with nothing before it; `history`: after 20 one-double")
print("MPI_Allreduce calls. Ratio: MPI_Reduce_scatter_block's time over MPI_Reduce_scatter's.\n")
print("| round | doctor _block | doctor counts | doctor ratio | fresh _block (faults) | fresh counts | fresh ratio | history _block (faults) | history counts | history ratio | doctor ÷ history |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
ratios = []
for i in range(1, reps + 1):
    j = json.load(open(f"{d}/doctor-{i}.json"))
    call = next((c for c in j["calls"] if c["collective"] == "reduce-scatter"), None)
    db, dc = (call["function_us"], call["other_us"]) if call else (float("nan"), float("nan"))
    fb, fc = bare(0, "reduce-scatter", i), bare(0, "reduce-scatter-counts", i)
    hb, hc = bare(20, "reduce-scatter", i), bare(20, "reduce-scatter-counts", i)
    dr, fr, hr = db / dc, fb[0] / fc[0], hb[0] / hc[0]
    ratios.append((dr, fr, hr))
    print(f"| {i} | {db:.0f} | {dc:.0f} | {dr:.2f} | {fb[0]:.0f} ({fb[1]:.0f}) | {fc[0]:.0f} | {fr:.2f} | {hb[0]:.0f} ({hb[1]:.0f}) | {hc[0]:.0f} | {hr:.2f} | {dr / hr:.2f} |")
med = lambda k: statistics.median(r[k] for r in ratios)
print(f"\nMedians: doctor {med(0):.2f}, fresh {med(1):.2f}, history {med(2):.2f}; doctor ÷ history {med(0) / med(2):.2f}, doctor ÷ fresh {med(0) / med(1):.2f}.")
PY
