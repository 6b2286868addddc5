#!/usr/bin/env bash
# The whole test suite: unit tests and integration tests that launch the real binary under
# mpirun with 1 to 4 ranks. Sets the machine up first (ci/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
cargo test --release -- --test-threads="${TEST_THREADS:-2}"
