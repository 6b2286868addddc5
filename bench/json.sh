#!/usr/bin/env bash
# The JSON writer's cost (issue 10): a 5000-point run with --json against the same run without
# it, alternating, REPS times each (default 5); bar: the medians within 10%. The points are tiny
# (all-reduce of 8 B .. 40000 B in steps of 8, one timed call, no warm-up, no check) so the
# writer, not the measurement, is what differs. Judged on the fastest run of each kind (the one
# least disturbed by other load; a shared machine adds seconds at random), medians shown too.
# Prints a Markdown report on stdout (bench/json-vm.md).
# Usage: bash bench/json.sh [REPS]     (COLL_BENCH_MPI=mpich for the MPICH build)
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
cargo build --release --quiet
reps=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(all-reduce -b 8 -i 8 -e 40000 -n 1 -w 0 -c 0 --no-csv)
secs() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
plain=() json=()
for i in $(seq "$reps"); do
  plain+=("$(secs "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" "${args[@]}")")
  rm -f "$tmp/r.json"
  json+=("$(secs "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" "${args[@]}" --json "$tmp/r.json")")
done
points=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["complete"]; print(len(d["points"]))' "$tmp/r.json")
bytes=$(stat -c %s "$tmp/r.json")
python3 - "$points" "$bytes" "${plain[*]}" "${json[*]}" <<'PY'
import statistics, subprocess, sys
points, size = int(sys.argv[1]), int(sys.argv[2])
plain = [float(x) for x in sys.argv[3].split()]
json_ = [float(x) for x in sys.argv[4].split()]
mp, mj = statistics.median(plain), statistics.median(json_)
ratio = min(json_) / min(plain)
host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
print(f"# JSON writer cost: {points} points with and without --json\n")
print(f"Machine: `{host}`, {cores} cores; 2 ranks; `all-reduce -b 8 -i 8 -e 40000 -n 1 -w 0 -c 0 --no-csv`,")
print(f"alternating runs, {len(plain)} each; wall time of the whole launch (mpirun included).\n")
print("| run | fastest (s) | median (s) | runs (s) |\n|---|---:|---:|---|")
print(f"| without --json | {min(plain):.2f} | {mp:.2f} | {', '.join(f'{x:.2f}' for x in plain)} |")
print(f"| with --json ({size/1e6:.1f} MB) | {min(json_):.2f} | {mj:.2f} | {', '.join(f'{x:.2f}' for x in json_)} |")
verdict = "PASS" if ratio <= 1.10 else "FAIL"
print(f"\nRatio with/without, fastest runs: {ratio:.3f} (bar: <= 1.10): {verdict}; medians: {mj / mp:.3f}")
PY
