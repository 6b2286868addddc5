#!/usr/bin/env bash
# The ceiling pass (issue 24, part 3): what it costs and whether its number is the library's.
#  1. Cost: the default sweep (`mpirun -n 2 coll-bench --no-csv`) with the pass and with
#     `--no-ceiling`, alternated REPS times (default 5): medians of the wall time and their
#     ratio. Bar: at most 10% and 2 s more.
#  2. Fidelity: the pass's time per call (the JSON's `run.ceiling.time_us`, sendrecv of 64 MiB
#     around the ring) against a bare C loop of MPI_Sendrecv around the ring at that size
#     (bench/tools/bare_loop.c), in the same rounds.
#  3. What it says: each core collective's `pct_of_ceiling` at 64 MiB, out of place (medians).
#  4. Between hosts: the default sweep on 4 ranks of a 2-host namespace bed (ci/netns-bed.sh),
#     with the pass (the ring's ceiling, the hosts' nominal rates, each host pair the ring
#     crosses on its own) and with `--no-ceiling`, alternated BED_REPS times (default 3).
# Writes bench/ceiling-<host>.md (NAME=x: bench/ceiling-x.md); raw outputs in target/bench/ceiling/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
REPS=${REPS:-5}
out=target/bench/ceiling
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
mpicc -O2 -o "$out/bare_loop" bench/tools/bare_loop.c
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq 1 "$REPS"); do
  t0=$(date +%s.%N)
  "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" --no-csv --json "$out/on-$i.json" > "$out/on-$i.txt"
  echo "on $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
  t0=$(date +%s.%N)
  "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" --no-csv --no-ceiling --json "$out/off-$i.json" > "$out/off-$i.txt"
  echo "off $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
  "${MPIRUN[@]}" -n 2 "$out/bare_loop" 67108864 0.05 67108864 sendrecv > "$out/bare-$i.csv"
done
export CB_NETNS_PREFIX=cbc-
BED_REPS=${BED_REPS:-3}
bed=(bash ci/netns-bed.sh)
"${bed[@]}" up 2 > /dev/null
printf 'cbc-node1 slots=2\ncbc-node2 slots=2\n' > "$out/hostfile"
onbed=("${bed[@]}" mpirun -q --bind-to none --map-by slot -hostfile "$out/hostfile" -n 4 "$PWD/$COLL_BENCH_BIN" --no-csv)
for i in $(seq 1 "$BED_REPS"); do
  t0=$(date +%s.%N)
  "${onbed[@]}" --json "$out/bed-on-$i.json" > "$out/bed-on-$i.txt"
  echo "bed-on $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
  t0=$(date +%s.%N)
  "${onbed[@]}" --no-ceiling --json "$out/bed-off-$i.json" > "$out/bed-off-$i.txt"
  echo "bed-off $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
done
"${bed[@]}" down > /dev/null
load1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$out" "$REPS" "$(hostname)" "$(nproc)" "$load0" "$load1" "$BED_REPS" > "bench/ceiling-${NAME:-$(hostname)}.md" <<'PY'
import sys, json, csv, statistics as st, datetime
out, reps, host, cores, load0, load1, bed_reps = sys.argv[1:8]
reps = int(reps)
times = {"on": [], "off": [], "bed-on": [], "bed-off": []}
for line in open(f"{out}/times.txt"):
    k, t = line.split()
    times[k].append(float(t))
on, off = st.median(times["on"]), st.median(times["off"])
print(f"# The ceiling pass: cost and fidelity ({host}, {cores} cores), {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC\n")
print(f"Made by `bench/ceiling.sh`; {reps} rounds, each: the default sweep with the pass, the same with `--no-ceiling`, "
      f"then a bare C loop of MPI_Sendrecv around the ring at 64 MiB. Load average before {load0}, after {load1}.\n")
print("## 1. Cost: the default sweep's wall time (`mpirun -n 2 coll-bench --no-csv --json …`)\n")
print("| | runs (s) | median (s) |")
print("|---|---|---:|")
for k, label in (("on", "with the ceiling pass"), ("off", "`--no-ceiling`")):
    print(f"| {label} | {', '.join(f'{t:.2f}' for t in times[k])} | {st.median(times[k]):.2f} |")
print(f"\nWith the pass / without: **{on / off:.3f}** ({on - off:+.2f} s). Bar: at most 1.10 and +2 s.\n")
own = [json.load(open(f"{out}/on-{i}.json"))["run"]["ceiling"]["seconds"] for i in range(1, reps + 1)]
print(f"The pass's own wall time (`run.ceiling.seconds`, rank 0): {', '.join(f'{t:.2f}' for t in own)} s, median "
      f"{st.median(own):.2f} s = **{st.median(own) / on:.1%}** of the run with it (the wall times above also carry "
      f"the machine's drift between runs).\n")
print("## 2. Fidelity: the pass's sendrecv against a bare loop of MPI_Sendrecv (64 MiB, ring of 2 ranks)\n")
ceil_us, ceil_gbps, bare_us = [], [], []
pct = {}
for i in range(1, reps + 1):
    d = json.load(open(f"{out}/on-{i}.json"))
    c = d["run"]["ceiling"]
    ceil_us.append(c["time_us"])
    ceil_gbps.append(c["gbps"])
    for p in d["points"]:
        if p["size_bytes"] == 64 << 20:
            pct.setdefault(p["collective"], []).append(p["out_of_place"]["pct_of_ceiling"])
    for r in csv.DictReader(open(f"{out}/bare-{i}.csv")):
        bare_us.append(float(r["time_us"]))
print("| | per round (us) | median (us) |")
print("|---|---|---:|")
print(f"| coll-bench's ceiling pass (`run.ceiling.time_us`) | {', '.join(f'{t:.0f}' for t in ceil_us)} | {st.median(ceil_us):.0f} |")
print(f"| bare loop | {', '.join(f'{t:.0f}' for t in bare_us)} | {st.median(bare_us):.0f} |")
print(f"\ncoll-bench / bare loop: **{st.median(ceil_us) / st.median(bare_us):.3f}**; ceiling {st.median(ceil_gbps):.2f} GB/s (median).\n")
print("## 3. The core collectives at 64 MiB against the ceiling (out of place)\n")
print("| collective | pct_of_ceiling per round | median |")
print("|---|---|---:|")
for k, v in pct.items():
    print(f"| {k} | {', '.join(f'{x:.0f}' for x in v)} | {st.median(v):.0f}% |")
print(f"\n## 4. Between hosts: the default sweep on 4 ranks of a 2-host namespace bed ({bed_reps} rounds)\n")
print("| | runs (s) | median (s) |")
print("|---|---|---:|")
for k, label in (("bed-on", "with the ceiling pass (ring, nominal rates, each host pair)"), ("bed-off", "`--no-ceiling`")):
    print(f"| {label} | {', '.join(f'{t:.2f}' for t in times[k])} | {st.median(times[k]):.2f} |")
bon, boff = st.median(times["bed-on"]), st.median(times["bed-off"])
print(f"\nWith the pass / without: **{bon / boff:.3f}** ({bon - boff:+.2f} s). Bar: at most 1.10 and +2 s.\n")
own = [json.load(open(f"{out}/bed-on-{i}.json"))["run"]["ceiling"]["seconds"] for i in range(1, int(bed_reps) + 1)]
print(f"The pass's own wall time (`run.ceiling.seconds`, rank 0): {', '.join(f'{t:.2f}' for t in own)} s, median "
      f"{st.median(own):.2f} s = **{st.median(own) / bon:.1%}** of the run with it.\n")
print("What the header said, first round:\n\n```")
for line in open(f"{out}/bed-on-1.txt"):
    if line.startswith(("# ceiling", "# nominal")):
        print(line.rstrip())
print("```")
PY
cat "bench/ceiling-${NAME:-$(hostname)}.md"
