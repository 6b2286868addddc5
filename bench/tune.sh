#!/usr/bin/env bash
# coll-bench tune's bars (issue 13), Open MPI, 2 local ranks:
#  1. `tune` of the core three, 8 B .. 64 MiB, finishes in <= 3 minutes (wall time of the launch).
#  2. With the rules file tune writes for reduce-scatter, the library's default path is >= 2x
#     faster at 1 MiB than without it, and no size is slower beyond noise. Measured as ratios
#     within one run: plain sweeps of reduce-scatter without and with the file applied
#     (OMPI_MCA_coll_tuned_use_dynamic_rules=1 + ..._dynamic_rules_filename), alternating REPS
#     times each (default 5: with 3, every run of one beating every run of the other happens by chance
#     at 1 size in 20); per size the median over the runs of each run's median time.
# Prints a Markdown report on stdout (bench/tune-vm.md); the load average is shown, because the
# machine may be shared.
# Usage: bash bench/tune.sh [REPS]     (SKIP_CORE=1: part 2 only; SKIP_BUILD=1: use the binary
# already built). Run it at normal priority: under nice/SCHED_IDLE beside other work the ranks
# wait for scheduler slices and the timings measure the scheduler.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release --quiet
reps=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }

load0=$(load)
core_s=-1
if [ "${SKIP_CORE:-0}" != 1 ]; then
  t0=$(date +%s.%N)
  "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" tune all-reduce all-gather reduce-scatter -b 8 -e 64M --csv "$tmp/core.csv" > "$tmp/core.txt"
  t1=$(date +%s.%N)
  core_s=$(echo "$t1 - $t0" | bc -l)
fi

"${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" tune reduce-scatter -b 8 -e 64M --no-csv --write-rules "$tmp/rs.rules" > "$tmp/rs.txt"
for i in $(seq "$reps"); do
  "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" reduce-scatter -b 8 -e 64M --csv "$tmp/without-$i.csv" > /dev/null
  OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_dynamic_rules_filename="$tmp/rs.rules" \
    "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" reduce-scatter -b 8 -e 64M --csv "$tmp/with-$i.csv" > /dev/null
done
load1=$(load)
python3 - "$tmp" "$reps" "$core_s" "$load0" "$load1" <<'PY'
import csv, statistics, subprocess, sys
tmp, reps, core_s, load0, load1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
def medians(path):
    out = {}
    for r in csv.DictReader(open(path)):
        if r["placement"] in ("out-of-place", "out_of_place") and not r["rank"]:
            out[int(r["size_bytes"])] = float(r["median_us"])
    return out
without = [medians(f"{tmp}/without-{i}.csv") for i in range(1, reps + 1)]
with_ = [medians(f"{tmp}/with-{i}.csv") for i in range(1, reps + 1)]
sizes = sorted(without[0])
host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
lib = next(csv.DictReader(open(f"{tmp}/with-1.csv")))["mpi_library"].split(",")[0]
rules = [l.rstrip() for l in open(f"{tmp}/rs.rules") if l.strip() and not l.startswith("# coll-bench-measured")]
print("# coll-bench tune: speed bars\n")
print(f"Machine: `{host}` (VM), {cores} cores, Debian 12, {lib}; 2 local ranks (shared memory).")
print(f"Load average before / after: {load0} / {load1} (the machine was shared with other work).")
print("Produced by `bash bench/tune.sh`.\n")
print("## 1. Tune of the core three, 8 B .. 64 MiB\n")
if core_s < 0:
    print("Not run (SKIP_CORE=1).\n")
else:
    rows = list(csv.DictReader(open(f"{tmp}/core.csv")))
    ran = [r for r in rows if not r.get("skipped")]
    calls = sum((int(r["warmup_iters"]) + int(r["iters"])) * float(r["median_us"]) for r in ran) / 1e6
    print(f"`tune all-reduce all-gather reduce-scatter -b 8 -e 64M` (default 20 ms budget per cell): "
          f"**{core_s:.0f} s** wall (bar: <= 180 s): {'PASS' if core_s <= 180 else 'FAIL'}. "
          f"Its calls at their median time (warm-up + timed; the check rides on the first round; from its CSV): {calls:.0f} s. "
          f"Cells: {len(rows)}, of which {len(rows) - len(ran)} skipped by the skip rule.\n")
    print("Where the time went (tune's own lines, rank 0's clock):\n")
    print("```")
    for l in open(f"{tmp}/core.txt"):
        if " s in all " in l or "skip rule" in l:
            print(l.rstrip())
    print("```\n")
print("## 2. Reduce-scatter with tune's rules file\n")
print("tune's table (`tune reduce-scatter -b 8 -e 64M --write-rules`):\n")
print("```")
for l in open(f"{tmp}/rs.txt"):
    if not l.startswith("# apply") and not l.startswith("# verify") and not l.startswith("# rules written"):
        print(l.rstrip())
print("```\n")
print("The file it wrote, without its measured lines:\n")
print("```\n" + "\n".join(rules) + "\n```\n")
print(f"Plain sweeps `reduce-scatter -b 8 -e 64M` without and with the file applied, alternating, {reps} each;")
print("per size the median over the runs of each run's median time per call (out of place). Ratio = without / with.\n")
print("| size (B) | without (us) | runs min-max | with (us) | runs min-max | ratio |\n|---:|---:|---:|---:|---:|---:|")
ratios = {}
apart = []
for s in sizes:
    wo = [w[s] for w in without]
    wi = [w[s] for w in with_]
    a, b = statistics.median(wo), statistics.median(wi)
    ratios[s] = a / b
    # Slower beyond the run-to-run noise: every run with the file slower than every run
    # without it, and the medians more than 10% apart (tune's own rule, MIN_GAIN).
    if min(wi) > max(wo) and a / b < 1 / 1.1:
        apart.append(s)
    print(f"| {s} | {a:.1f} | {min(wo):.1f}-{max(wo):.1f} | {b:.1f} | {min(wi):.1f}-{max(wi):.1f} | {a / b:.2f} |")
r1m = ratios.get(1 << 20)
slow = [s for s, r in ratios.items() if r < 0.8]
print()
print(f"- 1 MiB: ratio **{r1m:.2f}** (bar: >= 2): {'PASS' if r1m and r1m >= 2 else 'FAIL'}.")
print(f"- Sizes slower with the file by more than 20% (this machine's run-to-run noise): "
      f"{', '.join(map(str, slow)) if slow else 'none'}: {'PASS' if not slow else 'FAIL'}.")
print(f"- Sizes slower with the file beyond this run's own noise (every run with the file slower than every run "
      f"without, and the medians more than 10% apart): {', '.join(map(str, apart)) if apart else 'none'}: "
      f"{'PASS' if not apart else 'FAIL'}.")
PY
