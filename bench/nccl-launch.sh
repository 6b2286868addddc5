#!/usr/bin/env bash
# Issue 23's first speed bar, on the stand-ins (no GPU needed): small-message NCCL timing does no
# per-call thread and no per-call host wait in the timed loop. Two ranks, all-reduce of 8 B
# (int32), -n N calls, the stand-ins claiming NCCL 2.23 (each call on a non-blocking
# communicator launches from a thread of its own); the stand-ins' trace (FAKE_NCCL_TRACE) counts,
# per rank: calls handed to NCCL ("launch"), threads made for them, host waits for the device
# ("sync"), and the most launches between two waits, beside the CSV's batch_iters. Three ways:
# the default, -z 1, and COLL_BENCH_DEBUG_NCCL_NONBLOCKING_TIMING=1 (timed on the non-blocking
# communicator, as before issue 23). The bar: default launches per sync >= batch_iters (here
# >= N: one wait per timed run), 0 threads.
#
#   bash bench/nccl-launch.sh [N]     (default N = 1000; report on stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
. ci/env.sh >/dev/null
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O1 -o "$work/libcuda.so.1" src/backend/nccl/fake/fake_cuda.c
cc -shared -fPIC -O1 -o "$work/libnccl.so.2" src/backend/nccl/fake/fake_nccl.c
echo "# NCCL launch trace on the stand-ins: $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
echo
echo "| timing | rank pid | launches | threads | syncs | most launches per sync | batch_iters |"
echo "|---|---|---|---|---|---|---|"
for mode in default z1 non-blocking; do
  rm -f "$work/trace" "$work/run.csv"
  extra=() envs=()
  [ "$mode" = z1 ] && extra=(-z 1)
  [ "$mode" = non-blocking ] && envs=(COLL_BENCH_DEBUG_NCCL_NONBLOCKING_TIMING=1)
  env ${envs[@]+"${envs[@]}"} COLL_BENCH_CUDA_LIBRARY="$work/libcuda.so.1" COLL_BENCH_NCCL_LIBRARY="$work/libnccl.so.2" \
    FAKE_CUDA_DEVICES=2 FAKE_NCCL_VERSION=22304 FAKE_NCCL_TRACE="$work/trace" \
    "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" --backend nccl all-reduce -d int32 -b 8 -e 8 -n "$n" -w 2 \
    --csv "$work/run.csv" ${extra[@]+"${extra[@]}"} >/dev/null
  batch=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["batch_iters"]; exit }' "$work/run.csv")
  awk -v mode="$mode" -v batch="$batch" '
    { p[$1] = 1 }
    $2 == "launch" { l[$1]++; run[$1]++; if (run[$1] > most[$1]) most[$1] = run[$1] }
    $2 == "sync" { s[$1]++; run[$1] = 0 }
    $2 == "thread" { t[$1]++ }
    END { for (k in p) printf "| %s | %s | %d | %d | %d | %d | %s |\n", mode, k, l[k], t[k], s[k], most[k], batch }
  ' "$work/trace"
done
