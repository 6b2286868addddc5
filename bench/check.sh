#!/usr/bin/env bash
# Time of `coll-bench check` with the example single-node spec on 2 local ranks (bar: <= 30 s).
# Writes bench/acceptance-<host>.md with the verdict table and the wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
cargo build --release --quiet
md="bench/check-$(hostname).md"
out=$(mktemp)
start=$(date +%s.%N)
set +e
mpirun -q -n 2 target/release/coll-bench check ci/acceptance/single-node.toml --junit "$out.xml" > "$out"
rc=$?
set -e
end=$(date +%s.%N)
wall=$(python3 -c "print(f'{$end - $start:.1f}')")
{
  echo "# Acceptance check with ci/acceptance/single-node.toml"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); 2 ranks over shared memory."
  echo "Command: \`mpirun -n 2 coll-bench check ci/acceptance/single-node.toml --junit out.xml\`"
  echo
  echo "- wall time: $wall s (bar: <= 30 s: $(python3 -c "print('met' if $wall <= 30 else 'NOT met')")); exit code $rc"
  echo "- JUnit: $(grep -o '<testsuites[^>]*>' "$out.xml")"
  echo
  echo '```'
  cat "$out"
  echo '```'
} | tee "$md"
rm -f "$out" "$out.xml"
