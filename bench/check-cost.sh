#!/usr/bin/env bash
# The check pass's CPU cost on rank 0, before (BASE, default 956b049: issue 49's tree) and now
# (this work tree): bench/tools/check_cost.rs copied into a worktree of BASE and into this tree's
# tests/ (removed after) and run as an ignored integration test, REPS times alternated (default 5); fill_input and verify seconds
# over the default sweep's points (core three, float sum, 8 B to 64 MiB, both placements, rank 0
# of 2). Issue 49's bar: fill + verify at least 3x lower than BASE's. Writes
# bench/check-cost-<host>.md (NAME=x to rename). No MPI run; each tree is built once (minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
BASE=${BASE:-956b049}
REPS=${REPS:-5}
out=target/bench/check-cost
mkdir -p "$out"
# BASE in a worktree of its own (built once, target-BASE); HEAD is this tree (the work tree as it
# is), the test copied into tests/ for the run and removed after it.
tree="$out/tree-$BASE"
if [ ! -f "$tree/tests/check_cost.rs" ]; then
  git worktree remove --force "$tree" 2> /dev/null || rm -rf "$tree"
  git worktree prune
  git worktree add --detach "$tree" "$BASE" > /dev/null
  cp bench/tools/check_cost.rs "$tree/tests/check_cost.rs"
fi
trap 'rm -f tests/check_cost.rs' EXIT
cp bench/tools/check_cost.rs tests/check_cost.rs
run() { # dir target
  (cd "$1" && CARGO_TARGET_DIR="$2" cargo test --release --quiet --test check_cost -- --ignored --nocapture 2>&1 | grep '^CHECK_COST')
}
run "$tree" "$PWD/$out/target-$BASE" > /dev/null
run . "$PWD/target" > /dev/null
rm -f "$out/times.txt"
for i in $(seq 1 "$REPS"); do
  echo "$BASE $(run "$tree" "$PWD/$out/target-$BASE")" >> "$out/times.txt"
  echo "HEAD $(run . "$PWD/target")" >> "$out/times.txt"
done
NAME=${NAME:-$(hostname)}
python3 - "$out/times.txt" "$BASE" "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' + work tree')" "$REPS" <<'PY' | tee "bench/check-cost-$NAME.md"
import sys, statistics, platform
times, base, head, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
per = {}
for line in open(times):
    rev, _, fill, ver, _ = line.split()
    per.setdefault(rev, []).append((float(fill), float(ver)))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"# The check pass's CPU cost on rank 0 ({platform.node()}, {cpu})\n")
print("`fill_input` + `verify` over the default sweep's points (all-reduce, all-gather, reduce-scatter; float sum;")
print("8 B to 64 MiB by 2; out of place and in place; rank 0 of 2): what a run with `-n 1 -w 1` spends checking,")
print(f"without MPI (bench/tools/check_cost.rs). {reps} alternated runs, medians, seconds.\n")
print("| tree | fill (s) | verify (s) | fill + verify (s) | before ÷ now |")
print("|---|---:|---:|---:|---:|")
med = {}
for rev in (base, "HEAD"):
    f = statistics.median(x[0] for x in per[rev]); v = statistics.median(x[1] for x in per[rev])
    med[rev] = (f, v)
b = sum(med[base])
for rev, label in ((base, base), ("HEAD", head)):
    f, v = med[rev]
    print(f"| {label} | {f:.3f} | {v:.3f} | {f + v:.3f} | {b / (f + v):.2f} |")
print(f"\nThe bar (issue 49): fill + verify at least 3x lower than {base}'s.")
PY
