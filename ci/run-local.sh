#!/usr/bin/env bash
# Set up, build release and run the default sweep on this machine: 2 ranks over shared memory.
# Extra arguments go to coll-bench (e.g. `bash ci/run-local.sh all -d all -o all`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
cargo build --release --quiet
exec mpirun -q -n "${RANKS:-2}" target/release/coll-bench "$@"
