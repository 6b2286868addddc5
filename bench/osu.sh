#!/usr/bin/env bash
# Issue 27: coll-bench's whole-process time against OSU's for the same work, at OSU_RANKS ranks
# (default 2 64 128; ranks beyond the cores are oversubscribed: growth, not speed).
#
# The work, identical on both sides: all-reduce of float sums at every power of two from 4 B to
# 1 MiB, 100 timed calls and 10 warm-up calls a size, a barrier after every call.
#   OSU:        osu_allreduce -m 4:1048576 -i 100 -x 10   (OSU's loop: call, barrier)
#   coll-bench: all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv -c 0
#               (out-of-place and in-place, 50 + 5 each, -z 1: a barrier after every call; its
#               watchdog, per-point exchanges and table as users get them; -c 0: no check of the
#               results, as OSU makes none)
# and coll-bench as above with its default check of every point's results (-c 1), this build
# ($BIN) and, where $MAIN_BIN is set, an earlier one. Each runs OSU_REPEATS times (default 3),
# alternated, whole `mpirun` wall time each; the report gives the medians and each coll-bench
# variant's median over OSU's.
#
# OSU is not on a package registry: OSU_SRC is an OSU micro-benchmarks source tree (5.x: its
# mpi/collective/ has osu_allreduce.c and osu_coll.c), built here with $MPICC into
# target/bench/osu/. GitHub's forresti/osu-micro-benchmarks is an import of the 5.3 release.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
BIN=${BIN:-$COLL_BENCH_BIN}
MAIN_BIN=${MAIN_BIN:-}
RANKS=${OSU_RANKS:-2 64 128}
REPEATS=${OSU_REPEATS:-3}
: "${OSU_SRC:?set OSU_SRC to an OSU micro-benchmarks source tree (its mpi/collective/ is built)}"
out=target/bench/osu
rm -rf "$out"
mkdir -p "$out"
src="$OSU_SRC/mpi/collective"
"$MPICC" -O2 -DPACKAGE_VERSION='"source"' -o "$out/osu_allreduce" "$src/osu_allreduce.c" "$src/osu_coll.c" -lm
now() { date +%s.%N; }

osu=("$out/osu_allreduce" -m 4:1048576 -i 100 -x 10)
ours=(all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv)
for n in $RANKS; do
  for i in $(seq 1 "$REPEATS"); do
    for which in osu same checked main; do
      case $which in
        osu) cmd=("${osu[@]}") ;;
        same) cmd=("$BIN" "${ours[@]}" -c 0) ;;
        checked) cmd=("$BIN" "${ours[@]}" -c 1) ;;
        main) [ -n "$MAIN_BIN" ] || continue; cmd=("$MAIN_BIN" "${ours[@]}" -c 1) ;;
      esac
      t0=$(now)
      rc=0
      "${MPIRUN[@]}" -n "$n" "${cmd[@]}" > "$out/$which-n$n-$i.out" 2> "$out/$which-n$n-$i.err" || rc=$?
      echo "$n $which $i $t0 $(now) $rc" | tee -a "$out/times.txt"
    done
  done
done

python3 - "$out" "$MAIN_BIN" <<'EOF' | tee "bench/osu-${OSU_HOST:-$(hostname)}.md"
import statistics, sys, subprocess
out, main_bin = sys.argv[1], sys.argv[2]
runs = {}
for line in open(f"{out}/times.txt"):
    n, which, i, t0, t1, rc = line.split()
    runs.setdefault((int(n), which), []).append((float(t1) - float(t0), int(rc)))
host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
print("# coll-bench against OSU's osu_allreduce: whole-process time for the same work (issue 27)\n")
print(f"Machine: `{host}`, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, Open MPI, all ranks on this host (oversubscribed beyond the cores).")
print("Written by `bench/osu.sh`. The work: all-reduce, float sum, 4 B to 1 MiB by powers of two, 100 timed")
print("and 10 warm-up calls a size, a barrier after every call; OSU 5.3's `osu_allreduce -m 4:1048576 -i 100 -x 10`")
print("against `coll-bench all-reduce -b 4 -e 1M -n 50 -w 5 -z 1 --no-ceiling --no-csv` (out-of-place and in-place, 50 + 5")
print("each; its watchdog, per-point exchanges and table as users get them), with `-c 0` (no check of the results:")
print("the same work as OSU, which checks none) and with its default `-c 1` (every point's results checked: a call,")
print("a fill and a comparison of the buffers per point)" + (", and `-c 1` with the build before this change" if main_bin else "") + ".")
print("Each row: whole `mpirun` wall time, the variants alternated within each repeat.\n")
whiches = ["osu", "same", "checked"] + (["main"] if main_bin else [])
names = {"osu": "OSU", "same": "coll-bench -c 0", "checked": "coll-bench -c 1", "main": "before, -c 1"}
print("| ranks | " + " | ".join(f"{names[w]} runs (s)" for w in whiches) + " | " + " | ".join(f"{names[w]} median (s)" for w in whiches) + " | " + " | ".join(f"{names[w]} / OSU" for w in whiches[1:]) + " |")
print("|" + "---|" * (1 + 2 * len(whiches) + len(whiches) - 1))
for n in sorted({k[0] for k in runs}):
    med = {w: statistics.median(t for t, _ in runs.get((n, w), [(float("nan"), 0)])) for w in whiches}
    cells = [", ".join(f"{t:.2f}" + ("" if rc == 0 else f" (exit {rc})") for t, rc in runs.get((n, w), [])) for w in whiches]
    cells += [f"{med[w]:.2f}" for w in whiches]
    cells += [f"{med[w] / med['osu']:.3f}" for w in whiches[1:]]
    print(f"| {n} | " + " | ".join(cells) + " |")
EOF
