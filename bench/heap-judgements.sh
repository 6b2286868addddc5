#!/usr/bin/env bash
# Does doctor's call cause hold for an application? doctor -e 1M on 2 ranks names
# MPI_Reduce_scatter_block against MPI_Reduce_scatter at 1 MiB with a ratio; this script runs
# doctor and two pairs of bare loops (bench/tools/bare_loop.c: MPI_Reduce_scatter_block, then
# MPI_Reduce_scatter with equal counts, each in its own fresh process), alternated REPS times
# (3 by default): the bare loops as a fresh process with nothing before the loop, and after 20
# one-double MPI_Allreduce calls (an application's history; docs/sweep.md, "The heap"). Each
# round's ratios are taken within the round, so a change of the machine's speed between rounds
# cancels. Under glibc's defaults; and, for doctor's heap measurement (the heap kept against the
# defaults, back to back, in its own run), the history loop of MPI_Reduce_scatter_block again with
# the variables doctor advises (MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295): the gain an
# application gets from the advice, beside the gain doctor measured. Writes
# bench/heap-judgements-<host>.md (NAME=x to rename).
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
  # The allocator doctor advises, in an application with history: its gain, beside doctor's.
  mpirun -q -x MALLOC_MMAP_MAX_=0 -x MALLOC_TRIM_THRESHOLD_=4294967295 -n 2 "$out/bare_loop" $S 0.05 $S reduce-scatter 2 20 \
    | tail -1 > "$out/bare-kept-$i.csv"
  mpirun -q -n 2 "$COLL_BENCH_BIN" doctor -e 1M --json "$out/doctor-$i.json" > "$out/doctor-$i.txt" || true
done
NAME=${NAME:-$(hostname)}
python3 - "$out" "$REPS" <<'PY' | tee "bench/heap-judgements-$NAME.md"
import json, platform, statistics, subprocess, sys
d, reps = sys.argv[1], int(sys.argv[2])
def loop(name):
    row = open(f"{d}/{name}.csv").read().strip().split(",")
    return float(row[4]), float(row[5])
bare = lambda h, c, i: loop(f"bare-{h}-{c}-{i}")
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
print("\n## The heap: doctor's measurement against an application's\n")
print("doctor: reduce-scatter under the defaults and with the heap kept, back to back in its run (`heap[]` of its JSON), and whether it advised the variables; application: the history loop of MPI_Reduce_scatter_block without and with them (µs per call, faults per call).\n")
print("| round | doctor default (faults) | doctor kept (faults) | doctor gain | advised | app default (faults) | app with the variables (faults) | app gain |")
print("|---|---:|---:|---:|---|---:|---:|---:|")
gains = []
for i in range(1, reps + 1):
    j = json.load(open(f"{d}/doctor-{i}.json"))
    h = next((x for x in j.get("heap", []) if x["collective"] == "reduce-scatter"), None)
    cause = next((c for c in j["causes"] if c["subject"] == "reduce-scatter page faults"), None)
    advised = "yes" if cause and "MALLOC_" in (cause.get("remedy") or "") else "no"
    hb = bare(20, "reduce-scatter", i)
    kb = loop(f"bare-kept-{i}")
    if h:
        dg, ag = h["default_us"] / h["kept_us"], hb[0] / kb[0]
        gains.append((dg, ag))
        print(f"| {i} | {h['default_us']:.0f} ({h['default_faults_per_call']:.0f}) | {h['kept_us']:.0f} ({h['kept_faults_per_call']:.0f}) | {dg:.2f}x | {advised} | {hb[0]:.0f} ({hb[1]:.0f}) | {kb[0]:.0f} ({kb[1]:.0f}) | {ag:.2f}x |")
    else:
        print(f"| {i} | not measured | | | {advised} | {hb[0]:.0f} ({hb[1]:.0f}) | {kb[0]:.0f} ({kb[1]:.0f}) | {hb[0] / kb[0]:.2f}x |")
if gains:
    print(f"\nMedians: doctor's gain {statistics.median(g[0] for g in gains):.2f}x, the application's {statistics.median(g[1] for g in gains):.2f}x.")
PY
