#!/usr/bin/env bash
# Issue 65 item 10: timing tests beside a busy loop. Runs each named test (FILE::NAME) N times
# with `sh -c 'while :; do :; done'` running beside it, and writes a report of each run's outcome
# and wall time. The machine is whatever it is when this runs (say what else ran in the report).
#
#   bash bench/busy-tests.sh [N] [FILE::NAME ...]      (default: 10, the two tests of item 10)
#
# Report: bench/busy-tests-<host>.md (HOST=vm names the project's VM). Raw logs:
# target/bench/busy-tests/.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
shift || true
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(
  "watchdog::a_batch_slowed_far_past_its_estimate_is_not_a_hang"
  "multihost::a_ceiling_rule_fails_on_a_capped_link_and_names_it"
)
host=${HOST:-$(hostname)}
raw=target/bench/busy-tests
mkdir -p "$raw"
. ci/env.sh
cargo test --release --no-run -q 2>/dev/null
report=bench/busy-tests-$host.md
{
  echo "# Timing tests beside a busy loop ($host)"
  echo
  echo "\`bash bench/busy-tests.sh $n\` at $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (dirty tree)'), $(date -u +%FT%TZ), $(nproc) cores, MPI: $COLL_BENCH_MPI."
  echo "Each run: one busy loop (\`sh -c 'while :; do :; done'\`) beside the test; load average at the start of each run shown."
  echo
  echo "| test | run | outcome | wall (s) | load average |"
  echo "|---|---:|---|---:|---|"
} >"$report"
summary=()
for t in "${tests[@]}"; do
  file=${t%%::*}
  name=${t#*::}
  pass=0
  for i in $(seq 1 "$n"); do
    sh -c 'while :; do :; done' &
    busy=$!
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s.%N)
    if cargo test --release -q --test "$file" "$name" -- --exact --test-threads=1 >"$raw/$file-$name-$i.log" 2>&1; then
      outcome=pass
      pass=$((pass + 1))
    else
      outcome=FAIL
    fi
    kill "$busy" 2>/dev/null || true
    wait "$busy" 2>/dev/null || true
    grep -q "SKIPPED: $name" "$raw/$file-$name-$i.log" && outcome="$outcome (skipped: $(grep -o "SKIPPED: $name: .*" "$raw/$file-$name-$i.log" | head -1 | cut -c1-80))"
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    printf '| %s | %d | %s | %.1f | %s |\n' "$name" "$i" "$outcome" "$wall" "$load" >>"$report"
  done
  echo "$name: $pass of $n passed" >&2
  summary+=("$name: **$pass of $n passed**")
done
printf '\n' >>"$report"
printf '%s\n\n' "${summary[@]}" >>"$report"
echo "bench/busy-tests.sh: wrote $report" >&2
