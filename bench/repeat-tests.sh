#!/usr/bin/env bash
# The whole suite N times in a row on this machine (default 5), to show it says the same thing
# every time. Writes bench/repeat-tests-<host>.md with each run's closing line and exit code,
# and the failing tests' names if any (raw logs in target/bench/repeat/, not committed).
#   bench/repeat-tests.sh [N] [-- CARGO TEST ARGS…]: with `--`, only those tests, N times
#   (`bench/repeat-tests.sh 10 -- --test endings`), written to bench/repeat-tests-<host>-${REPEAT_NAME:-some}.md.
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
shift || true
some=()
if [ "${1:-}" = "--" ]; then
  shift
  some=("$@")
fi
out=target/bench/repeat/${REPEAT_NAME:-all}
mkdir -p "$out"
md="bench/repeat-tests-$(hostname).md"
what="The whole suite (ci/test.sh)"
if [ ${#some[@]} -gt 0 ]; then
  md="bench/repeat-tests-$(hostname)-${REPEAT_NAME:-some}.md"
  what="\`cargo test --release ${some[*]}\`"
fi
{
  echo "# $what $n times in a row"
  echo
  echo "Machine: $(hostname), $(nproc) cores; commit $(git rev-parse --short HEAD); started $(date -u +%Y-%m-%dT%H:%MZ)."
  echo
  echo "| run | closing line | exit | wall (s) | load average at the end | failed tests |"
  echo "|---:|---|---:|---:|---|---|"
} >"$md"
for i in $(seq 1 "$n"); do
  s=$(date +%s)
  if [ ${#some[@]} -gt 0 ]; then
    # shellcheck disable=SC1091
    (. ci/env.sh && cargo test --release "${some[@]}") >"$out/run-$i.txt" 2>&1
  else
    bash ci/test.sh >"$out/run-$i.txt" 2>&1
  fi
  rc=$?
  w=$(( $(date +%s) - s ))
  if [ ${#some[@]} -gt 0 ]; then
    # Every test binary's `test result:` line, summed.
    line=$(grep '^test result: ' "$out/run-$i.txt" | awk '{p += $4; f += $6} END {printf "tests: %d passed, %d failed", p, f}')
  else
    line=$(grep '^tests: ' "$out/run-$i.txt" | tail -1)
  fi
  failed=$(grep -E '^test .* FAILED$' "$out/run-$i.txt" | awk '{print $2}' | sort -u | tr '\n' ' ')
  echo "| $i | $line | $rc | $w | $(cut -d' ' -f1-3 /proc/loadavg) | ${failed:-none} |" >>"$md"
done
cat "$md"
