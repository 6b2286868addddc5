#!/usr/bin/env bash
# Do tune's rules hold for an application (issue 46)? `coll-bench tune reduce-scatter -b 256K
# -e 4M --write-rules F` on 2 ranks, then an application's loop (bench/tools/bare_loop.c,
# MPI_Reduce_scatter_block at 256 KiB, 1 MiB and 4 MiB, each size in a fresh process) with and
# without the file applied (Open MPI's coll_tuned_use_dynamic_rules + _dynamic_rules_filename),
# alternated REPS times (3 by default), both as a fresh process (nothing before the loop) and
# after 20 one-double all-reduces (an application's history; docs/sweep.md, "The heap"). Reports
# per size the median time with and without the file, their ratio (the bar: >= 0.95, never
# slower), and beside it the speed-up tune predicted for the file's choice at that size.
# Writes bench/tune-app-<host>.md (NAME=x to rename). Open MPI only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
. ci/env.sh
unset MALLOC_MMAP_MAX_ MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ MALLOC_TOP_PAD_ GLIBC_TUNABLES
REPS=${REPS:-3}
BUDGET=${BUDGET:-1.0} # seconds of timed calls per loop (was 0.1 until 2026-12-03: 130 calls at 1 MiB, too few against the faults' spread)
SIZES="262144 1048576 4194304"
out=target/bench/tune-app
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
mpicc -O2 -o "$out/bare_loop" bench/tools/bare_loop.c
"${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" tune reduce-scatter -b 256K -e 4M --no-csv --write-rules "$out/rs.rules" > "$out/tune.txt"
rules=$(realpath "$out/rs.rules")
run_arm() { # ARM HISTORY SIZE REP
  local extra=()
  case "$1" in
    with) extra=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename "$rules") ;;
    # the switch alone: dynamic rules on, no file (does turning the decision on cost anything by itself?)
    switch) extra=(--mca coll_tuned_use_dynamic_rules 1) ;;
  esac
  "${MPIRUN[@]}" -n 2 "${extra[@]}" "$out/bare_loop" "$3" "$BUDGET" "$3" reduce-scatter 2 "$2" | tail -1 > "$out/$1-$2-$3-$4.csv"
}
# The arms' order turns each repeat (without/with/switch, with/switch/without, switch/without/with),
# so no arm always runs first or after the same neighbour.
arms=(without with switch)
for i in $(seq 1 "$REPS"); do
  for h in 0 20; do
    for s in $SIZES; do
      for k in 0 1 2; do
        run_arm "${arms[$(( (i + k - 1) % 3 ))]}" "$h" "$s" "$i"
      done
    done
  done
done
NAME=${NAME:-$(hostname)}
python3 - "$out" "$REPS" "$SIZES" "$BUDGET" <<'PY' | tee "bench/tune-app-$NAME.md"
import platform, re, statistics, subprocess, sys
d, reps, sizes, budget = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split()], sys.argv[4]
t = lambda w, h, s, i: float(open(f"{d}/{w}-{h}-{s}-{i}.csv").read().split(",")[4])
f = lambda w, h, s, i: float(open(f"{d}/{w}-{h}-{s}-{i}.csv").read().split(",")[5])
table = open(f"{d}/tune.txt").read()
# tune's row per size: its file's choice and the speed-up it predicts for the fastest selectable.
pred = {}
for line in table.splitlines():
    m = re.match(r"\s+(\d+)\s.*\s(\S+) / (\S+) / ([\d.]+)x", line)
    if m:
        pred[int(m.group(1))] = (m.group(2), m.group(3), float(m.group(4)))
mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"# tune's rules in an application's loop ({platform.node()}, {mpi})\n")
print(f"2 ranks; MPI_Reduce_scatter_block, float sum; {reps} alternated repeats (the arms' order turned each repeat), median; µs per call (faults per call);")
print(f"each loop {budget} s of timed calls. `switch`: coll_tuned_use_dynamic_rules 1 and no file (the switch the file needs, alone).")
print("`fresh`: a bare loop with nothing before it; `history`: after 20 one-double all-reduces. The file: `coll-bench tune")
print("reduce-scatter -b 256K -e 4M --write-rules`; `predicted`: tune's fastest selectable / the file's choice / its speed-up over the default.\n")
print("| size | predicted | fresh without | fresh with | fresh switch | with ÷ without | history without | history with | history switch | with ÷ without |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    row = [f"{s >> 10} KiB" if s < 1 << 20 else f"{s >> 20} MiB"]
    p = pred.get(s)
    row.append(f"{p[0]} / {p[1]} / {p[2]:.2f}x" if p else "-")
    for h in (0, 20):
        w = statistics.median(t("without", h, s, i) for i in range(1, reps + 1))
        x = statistics.median(t("with", h, s, i) for i in range(1, reps + 1))
        fw = statistics.median(f("without", h, s, i) for i in range(1, reps + 1))
        fx = statistics.median(f("with", h, s, i) for i in range(1, reps + 1))
        y = statistics.median(t("switch", h, s, i) for i in range(1, reps + 1))
        fy = statistics.median(f("switch", h, s, i) for i in range(1, reps + 1))
        row += [f"{w:.1f} ({fw:.0f})", f"{x:.1f} ({fx:.0f})", f"{y:.1f} ({fy:.0f})", f"{w / x:.2f}"]
    print("| " + " | ".join(row) + " |")
print("\n`with ÷ without` is the speed-up the file gives the application (the bar: ≥ 0.95 at every size).")
print("\nThe rules file:\n\n```")
print(open(f"{d}/rs.rules").read().rstrip())
print("```")
PY
