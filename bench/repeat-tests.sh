#!/usr/bin/env bash
# The whole suite N times in a row on this machine (default 5), to show it says the same thing
# every time. Writes bench/test-repeat-<host>.md with each run's closing line and exit code,
# and the failing tests' names if any (raw logs in target/bench/repeat/, not committed).
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
out=target/bench/repeat
mkdir -p "$out"
md="bench/repeat-tests-$(hostname).md"
{
  echo "# The whole suite (ci/test.sh) $n times in a row"
  echo
  echo "Machine: $(hostname), $(nproc) cores; commit $(git rev-parse --short HEAD); started $(date -u +%Y-%m-%dT%H:%MZ)."
  echo
  echo "| run | closing line | exit | wall (s) | load average at the end | failed tests |"
  echo "|---:|---|---:|---:|---|---|"
} >"$md"
for i in $(seq 1 "$n"); do
  s=$(date +%s)
  bash ci/test.sh >"$out/run-$i.txt" 2>&1
  rc=$?
  w=$(( $(date +%s) - s ))
  line=$(grep '^tests: ' "$out/run-$i.txt" | tail -1)
  failed=$(grep -E '^test .* FAILED$' "$out/run-$i.txt" | awk '{print $2}' | sort -u | tr '\n' ' ')
  echo "| $i | $line | $rc | $w | $(cut -d' ' -f1-3 /proc/loadavg) | ${failed:-none} |" >>"$md"
done
cat "$md"
