#!/usr/bin/env bash
# Does anything coll-bench does between points disturb the next point? Issue 24 (5c6f16f): the
# MPI_T read of the library's variables, done after the first point, made the second point
# (all-reduce 16 B) run calls of ~4 ms in 3 of 8 sweeps. This runs `all-reduce -b 8 -e 256 -f 2`
# (6 points, both placements) on 2 local ranks with each binary, alternated, REPS times, and counts
# per binary the sweeps in which a point's time per call is over LIMIT_US (default 20 us: these
# sizes take ~0.3-2 us here) — and which points.
# BINS: space-separated list of label=path (default: this build as "now").
# Writes bench/second-point-<host>.md; raw tables in target/bench/second-point/.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
REPS=${REPS:-8}
LIMIT_US=${LIMIT_US:-20}
BINS=${BINS:-now=$COLL_BENCH_BIN}
out=target/bench/second-point
rm -rf "$out"
mkdir -p "$out"
for i in $(seq 1 "$REPS"); do
  for lb in $BINS; do
    label=${lb%%=*}
    bin=${lb#*=}
    "${MPIRUN[@]}" -n 2 "$bin" all-reduce -b 8 -e 256 -f 2 --no-csv > "$out/$label-$i.txt"
  done
done
python3 - "$out" "$REPS" "$LIMIT_US" "$BINS" "$(hostname)" "$(nproc)" > "bench/second-point-${SECOND_POINT_HOST:-$(hostname)}.md" <<'PY'
import sys, re, datetime
out, reps, limit, bins, host, cores = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(), sys.argv[5], sys.argv[6]
print(f"# Between-point disturbance ({host}, {cores} cores), {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC\n")
print(f"`all-reduce -b 8 -e 256 -f 2` on 2 ranks, {reps} sweeps per binary, alternated; a point is")
print(f"disturbed when its time per call (out-of-place or in-place) is over {limit:g} us.\n")
print("| binary | sweeps with a disturbed point | disturbed points (size B: sweeps) | median 16 B out-of-place (us) |")
print("|---|---|---|---|")
row = re.compile(r"^\s+(\d+)\s+\d+\s+float\s+sum\s+-?\d+\s+([\d.]+)\s+\S+\s+\S+\s+\d+\s+([\d.]+)")
for lb in bins:
    label = lb.split("=", 1)[0]
    bad_sweeps, where, s16 = 0, {}, []
    for i in range(1, reps + 1):
        bad = False
        for line in open(f"{out}/{label}-{i}.txt"):
            m = row.match(line)
            if not m:
                continue
            size, oop, ip = int(m[1]), float(m[2]), float(m[3])
            if size == 16:
                s16.append(oop)
            if max(oop, ip) > limit:
                bad = True
                where[size] = where.get(size, 0) + 1
        bad_sweeps += bad
    s16.sort()
    med = s16[len(s16) // 2] if s16 else float("nan")
    pts = ", ".join(f"{k}: {v}" for k, v in sorted(where.items())) or "none"
    print(f"| {label} | {bad_sweeps} of {reps} | {pts} | {med:.2f} |")
PY
cat "bench/second-point-${SECOND_POINT_HOST:-$(hostname)}.md"
