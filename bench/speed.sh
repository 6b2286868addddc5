#!/usr/bin/env bash
# Time to result and memory: the default sweep (core three, 8 B .. 64 MiB, factor 2) on 2 local
# ranks, twice back to back. Bars: each run <= 20 s; the two runs agree within a few percent at
# every size >= 1 KiB; peak RSS per rank <= 3 x 64 MiB + 32 MiB. Also: a size that cannot fit
# is refused up front. Writes bench/speed-<host>.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
cargo build --release --quiet
out=target/bench/speed
rm -rf "$out"   # a run starts from nothing: --csv never overwrites
mkdir -p "$out"
for i in 1 2; do
  start=$(date +%s.%N)
  mpirun -q -n 2 target/release/coll-bench --csv "$out/run-$i.csv" > "$out/run-$i.txt"
  end=$(date +%s.%N)
  echo "$start $end" > "$out/wall-$i.txt"
done
set +e
mpirun -q -n 2 target/release/coll-bench -e 64G > "$out/too-big.txt" 2>&1
echo "exit $?" >> "$out/too-big.txt"
set -e
python3 bench/tools/speed_report.py "$out" | tee "bench/speed-$(hostname).md"
