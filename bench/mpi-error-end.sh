#!/usr/bin/env bash
# How a forced MPI error (--debug-mpi-error) ends the job under MPICH's Hydra: for each case,
# RUNS runs by hand (default 20), counting outcomes by mpiexec's exit code, whether Hydra's
# BAD TERMINATION banner appeared, coll-bench's lines on stderr, and every rank's own wait status
# (-print-all-exitcodes: 512 = exited by itself with 2; 9 = SIGKILLed by Hydra; 0 = killed and
# not yet collected when Hydra reported; 1 = ended by SIGHUP).
# Usage: bash bench/mpi-error-end.sh [OTHER_BINARY]: this tree's MPICH build, and first, if
# given, another MPICH build of coll-bench (e.g. main's, to compare). Writes
# bench/mpi-error-end-<host>.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export COLL_BENCH_MPI=mpich
. ci/env.sh
cargo build --release --quiet
ours=$(realpath "$COLL_BENCH_BIN")
other=${1:+$(realpath "$1")}
runs=${RUNS:-20}
launcher=${MPIRUN[0]}
md="bench/mpi-error-end-$(hostname).md"

count() { # BINARY NP FAIL [extra args]
  local bin=$1 np=$2 fail=$3; shift 3
  declare -A seen=()
  for _ in $(seq "$runs"); do
    local d; d=$(mktemp -d)
    set +e
    (cd "$d" && timeout 120 "$launcher" -print-all-exitcodes -n "$np" "$bin" all-reduce -b 8 -e 64 -n 3 -w 1 \
      --csv run.csv --debug-mpi-error "$fail" "$@" > out 2> err)
    local rc=$?
    set -e
    local banner=0 lines codes
    grep -q "BAD TERMINATION" "$d/out" "$d/err" && banner=1
    lines=$(grep -c . "$d/err" || true)
    codes=$(grep "Exit codes" "$d/out" | sed 's/.*Exit codes: //')
    local key="exit $rc, banner $banner, stderr lines $lines, rank statuses $codes"
    seen[$key]=$(( ${seen[$key]:-0} + 1 ))
    rm -rf "$d"
  done
  for k in "${!seen[@]}"; do echo "  - ${seen[$k]}x: $k"; done | sort -r
}

cases() { # BINARY
  echo "- 2 ranks, rank 1 fails:"; count "$1" 2 1
  echo "- 3 ranks, rank 0 fails:"; count "$1" 3 0
  echo "- 2 ranks, rank 1 fails, -T 0:"; count "$1" 2 1 -T 0
  echo "- 3 ranks, every rank fails:"; count "$1" 3 0,1,2
}

{
  echo "# How a failed MPI call ends the job under Hydra"
  echo
  echo "Machine: $(hostname), $(nproc) cores, $(. /etc/os-release && echo "$PRETTY_NAME"); $("$launcher" --version | sed -n 's/ *Version: *//p' | head -1 | sed 's/^/Hydra /')."
  echo "$runs runs per case, each:"
  echo "\`mpiexec -print-all-exitcodes -n NP coll-bench all-reduce -b 8 -e 64 -n 3 -w 1 --csv run.csv --debug-mpi-error RANKS [-T 0]\`"
  if [ -n "$other" ]; then
    echo
    echo "## $other ($(date -u -r "$other" '+built %Y-%m-%d %H:%M UTC'))"
    echo
    cases "$other"
  fi
  echo
  echo "## this tree, $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo ' with changes')"
  echo
  cases "$ours"
} | tee "$md"
