#!/usr/bin/env bash
# Why the MPICH half of ci/test.sh is slow on a small machine, and what running its tests one at
# a time saves (issue 25: `.ci/run` under 30 minutes on a fresh 2-core machine).
#   1. A bare loop of 8 B MPI_Allreduce (bench/tools/bare_loop.c, one size, 0.2 s budget), built
#      against each MPI family, at normal priority: 2 ranks alone; 3 ranks (more ranks than
#      cores on a 2-core machine); two 2-rank jobs at once (what two tests at once make). The
#      cases alternate, REPS times; the report gives each case's median time per call.
#   2. The MPICH test files FILES (default: collectives groups step; `FILES=` skips this part),
#      each run whole (`cargo test --release --test F`) with --test-threads=2 (the MPICH pass
#      before) and 1 (after), alternated, REPS times.
# Nothing here changes the MPI library's settings: both families run as ci/env.sh sets them.
# Writes bench/mpich-spin-<host>.md; raw output in target/bench/mpich-spin/ (not committed).
# Run it on a quiet machine: other load changes how long a spinning rank waits for the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
FILES=${FILES-collectives groups step}
out=target/bench/mpich-spin
mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# 1. The bare loop.
for fam in openmpi mpich; do
  (COLL_BENCH_MPI=$fam . ci/env.sh && "$MPICC" -O2 -o "$out/bare_loop-$fam" bench/tools/bare_loop.c)
done
bare() { # family ranks -> time per call (us), rank 0's CSV line
  local fam=$1 n=$2
  (COLL_BENCH_MPI=$fam . ci/env.sh && timeout 300 "${MPIRUN[@]}" -n "$n" "$out/bare_loop-$fam" 8 0.2 8 all-reduce) |
    awk -F, '$1 == "all-reduce" { print $5 }'
}
: >"$out/bare.txt"
for rep in $(seq "$REPS"); do
  for fam in openmpi mpich; do
    echo "$fam two-alone $(bare "$fam" 2)" >>"$out/bare.txt"
    echo "$fam three-ranks $(bare "$fam" 3)" >>"$out/bare.txt"
    a=$(mktemp) b=$(mktemp)
    bare "$fam" 2 >"$a" & bare "$fam" 2 >"$b"; wait
    echo "$fam two-jobs-at-once $(cat "$a") $(cat "$b")" >>"$out/bare.txt"
    rm -f "$a" "$b"
  done
done

# 2. The MPICH test files, before (2 tests at a time) and after (1).
(COLL_BENCH_MPI=mpich . ci/env.sh && for f in $FILES; do cargo test --release --test "$f" --no-run -q; done) >/dev/null 2>&1
: >"$out/files.txt"
for rep in $(seq "$REPS"); do
  for f in $FILES; do
    for tt in 2 1; do
      s=$(date +%s.%N)
      set +e
      (COLL_BENCH_MPI=mpich . ci/env.sh && cargo test --release -q --test "$f" -- --test-threads=$tt) >"$out/$f-tt$tt-$rep.log" 2>&1
      rc=$?
      set -e
      e=$(date +%s.%N)
      echo "$f $tt $(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.1f", b - a }') $rc" >>"$out/files.txt"
    done
  done
done

# The median of the numbers on stdin, one a line ("-" when none).
median() {
  grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else printf "-" }'
}
md="bench/mpich-spin-$(hostname).md"
{
  echo "# MPICH's waiting ranks, and the MPICH tests one at a time"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r);"
  echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD). Load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Command: \`REPS=$REPS FILES=\"$FILES\" bench/mpich-spin.sh\`. $(mpichversion 2>/dev/null | grep -E 'Version|Device' | tr -s '\t ' ' ' | paste -sd';')"
  echo
  echo "## 8 B MPI_Allreduce in a bare loop (median of $REPS, us per call)"
  echo
  echo "| family | 2 ranks alone | 3 ranks | two 2-rank jobs at once |"
  echo "|---|---:|---:|---:|"
  for fam in openmpi mpich; do
    med() { grep "^$fam $1 " "$out/bare.txt" | cut -d' ' -f3- | tr ' ' '\n' | median; }
    echo "| $fam | $(med two-alone) | $(med three-ranks) | $(med two-jobs-at-once) |"
  done
  echo
  echo "## MPICH test files, whole, seconds (alternated; exit code in brackets when not 0)"
  echo
  echo "| file | --test-threads=2 (before) | --test-threads=1 (after) | after / before (median) |"
  echo "|---|---|---|---:|"
  for f in $FILES; do
    runs() { awk -v f="$f" -v t="$1" '$1 == f && $2 == t { printf "%s%s%s", sep, $3, ($4 != 0 ? " [" $4 "]" : ""); sep = ", " }' "$out/files.txt"; }
    m2=$(awk -v f="$f" '$1 == f && $2 == 2 { print $3 }' "$out/files.txt" | median)
    m1=$(awk -v f="$f" '$1 == f && $2 == 1 { print $3 }' "$out/files.txt" | median)
    ratio=$(awk -v a="$m1" -v b="$m2" 'BEGIN { if (b > 0) printf "%.2f", a / b }')
    echo "| $f | $(runs 2) | $(runs 1) | $ratio |"
  done
} | tee "$md"
