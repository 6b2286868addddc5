#!/usr/bin/env bash
# Set up, build release and run the default sweep on this machine: 2 ranks over shared memory.
# Extra arguments go to coll-bench (e.g. `bash ci/run-local.sh all -d all -o all`).
# COLL_BENCH_MPI=mpich builds against MPICH and launches with Hydra (default: openmpi);
# RANKS=4 changes the rank count.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh "${COLL_BENCH_MPI:-openmpi}"
. ci/env.sh
cargo build --release --quiet
exec "${MPIRUN[@]}" -n "${RANKS:-2}" "$COLL_BENCH_BIN" "$@"
