#!/usr/bin/env bash
# Issue 27: where coll-bench's whole-process time goes beside OSU's, at PHASES_RANKS ranks
# (default 128, oversubscribed), for bench/osu.sh's work (all-reduce, float sum, 4 B to 1 MiB,
# 110 calls a size, a barrier after each; coll-bench with -c 0, as OSU checks nothing, and with its
# default -c 1).
#
# Two views, OSU and coll-bench alternated, PHASES_REPEATS times (default 3):
# - rank 0's table rows as they arrive (OSU under `stdbuf -oL`, so its rows are not held in a
#   buffer): start-up to the first row (the first size's calls included), the rows' span (the
#   sweep), and the first row to the 64 KiB row (the small sizes, where per-point work shows);
# - coll-bench built with bench/tools/sweep-phases.patch (a copy of this tree in
#   target/bench/osu-phases/, never the build under test): the wall seconds rank 0 and the last
#   rank spend in each phase of the sweep, printed at its end (`PHASES rank R ...`, in the order
#   of NAMES below).
#
# Needs OSU's osu_allreduce built by bench/osu.sh (target/bench/osu/osu_allreduce).
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
N=${PHASES_RANKS:-128}
R=${PHASES_REPEATS:-3}
osu_bin=target/bench/osu/osu_allreduce
[ -x "$osu_bin" ] || { echo "bench/osu-phases.sh: $osu_bin is missing: run bench/osu.sh first" >&2; exit 2; }
out=target/bench/osu-phases
rm -rf "$out/runs"
mkdir -p "$out/runs"
# The instrumented build, from this commit, in a work tree of its own.
src="$out/src"
git worktree remove --force "$src" 2> /dev/null || rm -rf "$src"
git worktree prune
git worktree add -q --detach "$src" HEAD
git -C "$src" apply "$PWD/bench/tools/sweep-phases.patch"
(cd "$src" && CARGO_TARGET_DIR="$PWD/../target" cargo build --release -q)
phased="$out/target/release/coll-bench"
git worktree remove --force "$src"

rows() { # label: rank 0's rows with their arrival times, then the end
  python3 -c '
import sys, time
t0 = time.time()
for l in sys.stdin:
    t = time.time() - t0
    w = l.split()
    if w and w[0].isdigit() and len(w) >= 2:
        print("ROW", w[0], f"{t:.3f}")
    elif l.startswith("PHASES"):
        print(l.strip())
print("END", f"{time.time() - t0:.3f}")'
}
for i in $(seq 1 "$R"); do
  for which in osu c0 c1; do
    case $which in
      osu) cmd=(stdbuf -oL "$osu_bin" -m 4:1048576 -i 100 -x 10) ;;
      c0) cmd=("$phased" all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv -c 0) ;;
      c1) cmd=("$phased" all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv -c 1) ;;
    esac
    { "${MPIRUN[@]}" -n "$N" "${cmd[@]}" 2>&1 || true; } | rows > "$out/runs/$which-$i.txt"
    echo "$which $i $(tail -1 "$out/runs/$which-$i.txt")"
  done
done

python3 - "$out/runs" "$N" "$R" <<'EOF' | tee "bench/osu-phases-${OSU_HOST:-$(hostname)}.md"
import statistics, subprocess, sys
runs, n, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
NAMES = ["warm-up calls", "warm-up agreement", "timed calls", "check", "means", "all-gather of means",
         "reduce of samples", "point's statistics", "name and sink agreement", "sink (table)"]
host, cores = (subprocess.run([c], capture_output=True, text=True).stdout.strip() for c in ("hostname", "nproc"))
print(f"# Where the time goes at {n} ranks: coll-bench against OSU (issue 27)\n")
print(f"Machine: `{host}`, {cores} cores, Open MPI, {n} ranks on this host. Written by `bench/osu-phases.sh`,")
print(f"{r} alternated repeats of bench/osu.sh's work (coll-bench with `-c 0` and `-c 1`). Times in seconds from `mpirun`'s start.\n")
print("| run | start-up to first row | first row to 64 KiB row | rows' span | tail | whole |")
print("|---|---:|---:|---:|---:|---:|")
NAME = {"osu": "OSU", "c0": "coll-bench -c 0", "c1": "coll-bench -c 1"}
phases = {}
summary = {}
for which in ["osu", "c0", "c1"]:
    for i in range(1, r + 1):
        rows, end = {}, None
        for line in open(f"{runs}/{which}-{i}.txt"):
            w = line.split()
            if w[0] == "ROW":
                rows[int(w[1])] = float(w[2])
            elif w[0] == "END":
                end = float(w[1])
            elif w[0] == "PHASES":
                phases.setdefault((which, int(w[2])), []).append([float(x) for x in w[3:]])
        if not rows:
            print(f"| {which} {i} | no rows | | | | {end:.2f} |")
            continue
        first, last = min(rows), max(rows)
        cells = [rows[first], rows.get(65536, float("nan")) - rows[first], rows[last] - rows[first], end - rows[last], end]
        summary.setdefault(which, []).append(cells)
        print(f"| {NAME[which]} {i} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
for which, cells in summary.items():
    med = [statistics.median(c[k] for c in cells) for k in range(5)]
    print(f"| **{NAME[which]} median** | " + " | ".join(f"{c:.2f}" for c in med) + " |")
print("\ncoll-bench's phases (wall seconds over the whole sweep, median over the runs):\n")
print("| phase | " + " | ".join(f"{NAME[w]}, rank {k}" for w, k in sorted(phases)) + " |")
print("|---|" + "---:|" * len(phases))
for j, name in enumerate(NAMES):
    print(f"| {name} | " + " | ".join(f"{statistics.median(p[j] for p in phases[k]):.3f}" for k in sorted(phases)) + " |")
EOF
