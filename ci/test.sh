#!/usr/bin/env bash
# The whole test suite: unit tests and integration tests that launch the real binary under
# mpirun with 1 to 4 ranks (and across network-namespace hosts where the machine allows it).
# Sets the machine up first (ci/setup.sh). Ends with one line: "tests: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --release -- --test-threads="${TEST_THREADS:-2}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$rc"
