#!/usr/bin/env bash
# What the real-NCCL tests cost and how fast `coll-bench info` answers, written to
# bench/nccl-real-vm.md (or $OUT):
#   1. tests/nccl_real.rs (Open MPI build) with an empty wheel cache: pip download + install +
#      the ABI and real-library tests, as on a fresh machine;
#   2. the same with the cache filled (every later run), Open MPI, then MPICH;
#   3. `coll-bench info` on 4 ranks under mpirun, REPS times (default 5), and alone.
# Builds first (not timed). Run from anywhere; needs network access to the package index for 1.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
OUT=${OUT:-bench/nccl-real-vm.md}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

. ci/env.sh
cargo build --release --quiet
cargo test --release --quiet --test nccl_real --no-run 2>/dev/null
(export COLL_BENCH_MPI=mpich && . ci/env.sh && cargo test --release --quiet --test nccl_real --no-run 2>/dev/null)

cold_dir=$(mktemp -d)
trap 'rm -rf "$cold_dir"' EXIT
t0=$(now)
COLL_BENCH_NCCL_WHEEL_DIR=$cold_dir cargo test --release --quiet --test nccl_real >"$cold_dir.log" 2>&1
t1=$(now)
cold=$(secs "$t0" "$t1")
grep -q '^test result: ok. 4 passed' "$cold_dir.log" || { cat "$cold_dir.log"; echo "bench-nccl-real: the cold run failed" >&2; exit 1; }
grep -q SKIPPED "$cold_dir.log" && { cat "$cold_dir.log"; echo "bench-nccl-real: the cold run skipped" >&2; exit 1; }
rm -f "$cold_dir.log"

# Warm: the shared cache (fills it if empty, untimed).
bash ci/nccl-wheel.sh >/dev/null
t0=$(now); cargo test --release --quiet --test nccl_real >/dev/null 2>&1; t1=$(now)
warm=$(secs "$t0" "$t1")
t0=$(now); (export COLL_BENCH_MPI=mpich && . ci/env.sh && cargo test --release --quiet --test nccl_real >/dev/null 2>&1); t1=$(now)
warm_mpich=$(secs "$t0" "$t1")

launcher=(mpirun.openmpi -q --oversubscribe --bind-to none)
info4=()
for _ in $(seq "$REPS"); do
  t0=$(now); "${launcher[@]}" -n 4 target/release/coll-bench info >/dev/null; t1=$(now)
  info4+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')")
done
t0=$(now); target/release/coll-bench info >/dev/null; t1=$(now)
alone=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
sorted=$(printf '%s\n' "${info4[@]}" | sort -n)
median=$(echo "$sorted" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
max=$(echo "$sorted" | tail -n1)

load=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# The real NCCL without a GPU: test cost, and \`coll-bench info\` speed"
  echo
  echo "Machine: vm, $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"); loaded by other work at the"
  echo "time (load average $load at the end). Measured by \`bash bench/nccl-real.sh\` on $(date -u +%Y-%m-%d) at"
  echo "commit $(git rev-parse --short HEAD). Wall-clock seconds."
  echo
  echo "| what | s |"
  echo "|---|---|"
  echo "| \`cargo test --release --test nccl_real\`, empty wheel cache (pip download ~350 MB + venv + install + 4 tests), Open MPI | $cold |"
  echo "| the same, cache filled (every later run), Open MPI | $warm |"
  echo "| the same, cache filled, MPICH build | $warm_mpich |"
  echo "| \`mpirun -n 4 coll-bench info\`, median of $REPS (max) | $median ($max) |"
  echo "| \`coll-bench info\` alone (MPI singleton) | $alone |"
  echo
  echo "Bars: the ABI and real-library tests add at most 2 minutes to a CI run on a fresh machine,"
  echo "download included: the cold Open MPI run plus the warm MPICH run above is what \`ci/test.sh\` pays"
  echo "($(awk -v a="$cold" -v b="$warm_mpich" 'BEGIN { printf "%.1f", a + b }') s). \`info\` on 4 ranks in at most 3 s."
  echo
  echo "Each of the 4 ranks of \`info\` runs MPI_Init; one rank per host and library-steering"
  echo "environment looks NCCL and libcuda up (the NCCL search runs python3, ~0.3-1 s on this loaded"
  echo "machine), and the others take its answer; before that change 4 ranks took 2.0-3.0 s here."
  echo
  echo "Not in these numbers: on a brand-new Debian 12, \\`ci/setup.sh\\` first installs python3-pip and"
  echo "python3-venv where \\`python3 -m pip\\` or \\`venv\\` is missing (this VM's python3 had both)."
} >"$OUT"
cat "$OUT"
