#!/usr/bin/env bash
# Both README commands, word for word, in a clean clone of the committed HEAD inside a brand-new
# Debian 12 root (bench/tools/fresh-machine.sh, a copy of the project's shared tool), each timed.
# Writes bench/fresh-<host>.md
# (raw output in target/bench/fresh/, not committed). Needs root; commit first.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/bench/fresh
mkdir -p "$out"
fresh=${FRESH_MACHINE:-bench/tools/fresh-machine.sh}
set +e
"$fresh" -- 's=$(date +%s); bash ci/run-local.sh; r1=$?; m=$(date +%s); bash ci/test.sh; r2=$?; e=$(date +%s);
  echo "TIMES run-local=$((m - s)) rc=$r1 test=$((e - m)) rc=$r2"; [ $r1 = 0 ] && [ $r2 = 0 ]' >"$out/log.txt" 2>&1
rc=$?
set -e
times=$(grep '^TIMES ' "$out/log.txt" | tail -1)
md="bench/fresh-$(hostname).md"
{
  echo "# Both README commands on a brand-new Debian 12 root"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%Y-%m-%dT%H:%MZ);"
  echo "commit $(git rev-parse --short HEAD); load average before: see below. Command: \`bench/fresh.sh\` →"
  echo "\`bench/tools/fresh-machine.sh -- 'bash ci/run-local.sh && bash ci/test.sh'\` (each command timed)."
  echo
  echo "| command | wall time (s) | exit |"
  echo "|---|---:|---:|"
  echo "$times" | sed -n 's/.*run-local=\([0-9]*\) rc=\([0-9]*\) test=\([0-9]*\) rc=\([0-9]*\).*/| `bash ci\/run-local.sh` (installs Open MPI, libclang, builds, 2-rank sweep) | \1 | \2 |\n| `bash ci\/test.sh` (installs MPICH; fmt, clippy, Open MPI suite, MPICH build and suite) | \3 | \4 |/p'
  echo
  echo "fresh-machine.sh exit: $rc. Test summary lines:"
  echo
  echo '```'
  grep -E '^(tests: |SKIPPED|== |fresh-machine.sh: exit)' "$out/log.txt" || true
  echo '```'
  echo
  echo "Load average at the end: $(cat /proc/loadavg)"
} | tee "$md"
exit "$rc"
