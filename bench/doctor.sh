#!/usr/bin/env bash
# `coll-bench doctor` (issue 24, part 4): its time and what it names.
#  1. Time bar: doctor with its defaults (all-reduce, all-gather, reduce-scatter at 64 MiB) on
#     4 ranks of a 2-host namespace bed, REPS runs (default 5). Bar: at most 60 s.
#  2. A shaped link: 3-host bed, host 2 capped at 50 Mbit/s, one rank per host,
#     `doctor all-reduce -e 256K`: the first cause, the verdict, the time (REPS runs).
#  3. A forced slow algorithm: Open MPI all-reduce forced to basic_linear on 4 ranks of this
#     host, `doctor all-reduce -e 8M --budget 200ms`, against the same unforced (REPS runs each,
#     alternated): what ran, the algorithm cause and its speed-up.
# Writes bench/doctor-<host>.md (NAME=x: bench/doctor-x.md); raw outputs in target/bench/doctor/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
REPS=${REPS:-5}
out=$PWD/target/bench/doctor
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
export CB_NETNS_PREFIX=cbd-
bed=(bash ci/netns-bed.sh)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
timed() { # NAME CMD...: stdout to $out/NAME.txt, wall seconds appended to $out/times.txt
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@" > "$out/$name.txt" 2> "$out/$name.err" || true
  echo "$name $(echo "$(date +%s.%N) - $t0" | bc)" >> "$out/times.txt"
}
"${bed[@]}" up 2 > /dev/null
for i in $(seq 1 "$REPS"); do
  timed "time-$i" "${bed[@]}" mpirun -q -n 4 -H cbd-node1:2,cbd-node2:2 --bind-to none \
    "$COLL_BENCH_BIN" doctor --json "$out/time-$i.json"
done
"${bed[@]}" down > /dev/null
"${bed[@]}" up 3 > /dev/null
"${bed[@]}" slow 2 50mbit > /dev/null
for i in $(seq 1 "$REPS"); do
  timed "shaped-$i" "${bed[@]}" mpirun -q -n 3 -H cbd-node1,cbd-node2,cbd-node3 --bind-to none \
    "$COLL_BENCH_BIN" doctor all-reduce -e 256K --json "$out/shaped-$i.json"
done
"${bed[@]}" down > /dev/null
for i in $(seq 1 "$REPS"); do
  timed "forced-$i" "${MPIRUN[@]}" -n 4 -x OMPI_MCA_coll_tuned_use_dynamic_rules=1 -x OMPI_MCA_coll_tuned_allreduce_algorithm=1 \
    "$COLL_BENCH_BIN" doctor all-reduce -e 8M --budget 200ms --json "$out/forced-$i.json"
  timed "unforced-$i" "${MPIRUN[@]}" -n 4 "$COLL_BENCH_BIN" doctor all-reduce -e 8M --budget 200ms --json "$out/unforced-$i.json"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$out" "$REPS" "$(hostname)" "$(nproc)" "$load0" "$load1" > "bench/doctor-${NAME:-$(hostname)}.md" <<'PY'
import sys, json, statistics as st, datetime
out, reps, host, cores, load0, load1 = sys.argv[1:7]
reps = int(reps)
times = {}
for line in open(f"{out}/times.txt"):
    k, t = line.split()
    times[k] = float(t)
def j(name):
    try:
        return json.load(open(f"{out}/{name}.json"))
    except Exception:
        return None
def first(d):
    if not d or not d["causes"]:
        return "none"
    c = d["causes"][0]
    return f"{c['cause']} {c['subject']} {c['share']*100:.0f}%"
print(f"# doctor: time and findings ({host}, {cores} cores), {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC\n")
print(f"Made by `bench/doctor.sh`, {reps} runs per case; load average before {load0}, after {load1}.\n")
print("## 1. Time: defaults (three collectives at 64 MiB), 4 ranks on a 2-host bed\n")
print("| run | wall (s) | doctor's own (s) | verdict | %ceil (all-reduce, all-gather, reduce-scatter) | first cause |")
print("|---|---:|---:|---|---|---|")
walls = []
for i in range(1, reps + 1):
    d = j(f"time-{i}")
    walls.append(times[f"time-{i}"])
    pcts = ", ".join(f"{c['pct_of_ceiling']:.0f}" for c in d["collectives"]) if d else "-"
    print(f"| {i} | {times[f'time-{i}']:.1f} | {d['seconds'] if d else float('nan'):.1f} | {d['verdict'] if d else 'no JSON'} | {pcts} | {first(d)} |")
print(f"\nMedian wall time **{st.median(walls):.1f} s**, slowest {max(walls):.1f} s. Bar: at most 60 s.\n")
print("## 2. Host 2's link capped at 50 Mbit/s, 3 hosts, one rank each, all-reduce at 256 KiB\n")
print("| run | wall (s) | exit | ceiling (GB/s) | all-reduce %ceil | first cause |")
print("|---|---:|---:|---:|---:|---|")
for i in range(1, reps + 1):
    d = j(f"shaped-{i}")
    if not d:
        print(f"| {i} | {times[f'shaped-{i}']:.1f} | - | - | - | no JSON |")
        continue
    print(f"| {i} | {times[f'shaped-{i}']:.1f} | {d['exit_code']} | {d['run']['ceiling']['gbps']:.5f} | {d['collectives'][0]['pct_of_ceiling']:.0f} | {first(d)} |")
print("\n## 3. All-reduce forced to basic_linear (Open MPI), 4 ranks on this host, 8 MiB, `--budget 200ms`\n")
print("| run | forced: what ran | its time (us) | fastest measured | its time (us) | speed-up | algorithm cause | unforced: what ran | unforced: algorithm cause |")
print("|---|---|---:|---|---:|---:|---|---|---|")
for i in range(1, reps + 1):
    f, u = j(f"forced-{i}"), j(f"unforced-{i}")
    if not f or not u:
        print(f"| {i} | no JSON | | | | | | | |")
        continue
    a = f["alternatives"][0]
    cause = next((f"{c['share']*100:.0f}%" for c in f["causes"] if c["cause"] == "algorithm"), "none")
    ucause = next((f"{c['evidence']}" for c in u["causes"] if c["cause"] == "algorithm"), "none")
    print(f"| {i} | {f['collectives'][0]['algorithm']} ({f['collectives'][0]['algorithm_source']}) | {a['default_us']:.0f} | {a['fastest']} | {a['fastest_us']:.0f} | {a['default_us']/a['fastest_us']:.2f}x | {cause} | {u['collectives'][0]['algorithm']} | {ucause} |")
PY
echo "wrote bench/doctor-${NAME:-$(hostname)}.md"
