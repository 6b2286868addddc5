#!/usr/bin/env bash
# Issue 47: a gate learned from this machine passes it unchanged and fails it degraded.
#
#   bench/gate.sh baseline   3 sweeps (`coll-bench -e 1M`, 2 ranks) 2 minutes apart, then
#                            `spec from-run` on them -> target/bench/gate/spec.toml
#   bench/gate.sh quiet      10 checks of that spec, one a minute (>= 10 minutes)
#   bench/gate.sh pinned     3 checks with both ranks on one core (taskset -c 0 around each rank)
#   bench/gate.sh busy       5 checks beside a busy loop (sh -c 'while :; do :; done')
#   bench/gate.sh tick       the 4 ms case: a sweep of 4 ranks on one core, then spec from-run on it
#   bench/gate.sh slowlink   3-host bed: spec learned from 3 sweeps on the unshaped bed, then a check
#                            with cb-node2's link capped at 50 Mbit (ci/netns-bed.sh slow)
#   bench/gate.sh report     bench/gate-<host>.md from what the phases left in target/bench/gate
#
# Each phase keeps every check's output (check-<phase>-<k>.out) and its exit code; `report` counts
# the verdicts (PASS/FAIL/NOISY) of every rule's checks across the checks of a phase.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
BIN=${BIN:-$COLL_BENCH_BIN}
out=target/bench/gate
mkdir -p "$out"
phase=${1:?usage: bench/gate.sh baseline|quiet|pinned|busy|tick|slowlink|report}

check() { # NAME [launcher prefix…] -- runs one check of spec.toml, keeps output and exit code
  local name=$1
  shift
  local start rc
  start=$(date +%s.%N)
  set +e
  "$@" check "$out/spec.toml" --csv "$out/$name.csv" --force > "$out/$name.out" 2> "$out/$name.err"
  rc=$?
  set -e
  echo "$rc $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") $(date -u +%H:%M:%S) $(cut -d' ' -f1 /proc/loadavg)" > "$out/$name.rc"
  echo "$name: exit $rc, $(tail -n1 "$out/$name.out")"
}

case "$phase" in
  baseline)
    for i in 1 2 3; do
      [ "$i" = 1 ] || sleep 120
      echo "load before baseline $i: $(cut -d' ' -f1 /proc/loadavg)" | tee "$out/baseline-$i.load"
      "${MPIRUN[@]}" -n 2 "$BIN" -e 1M --csv "$out/b$i.csv" --force > "$out/b$i.out"
    done
    "$BIN" spec from-run "$out/b1.csv" "$out/b2.csv" "$out/b3.csv" > "$out/spec.toml" 2> "$out/from-run.err"
    cat "$out/from-run.err"
    grep -c '^\[\[rule\]\]' "$out/spec.toml"
    ;;
  quiet)
    for k in $(seq 1 10); do
      t0=$(date +%s)
      check "quiet-$k" "${MPIRUN[@]}" -n 2 "$BIN"
      [ "$k" = 10 ] || sleep $((60 - ($(date +%s) - t0) > 0 ? 60 - ($(date +%s) - t0) : 0))
    done
    ;;
  pinned)
    for k in 1 2 3; do
      check "pinned-$k" "${MPIRUN[@]}" -n 2 taskset -c 0 "$BIN"
    done
    ;;
  busy)
    sh -c 'while :; do :; done' &
    loop=$!
    trap 'kill $loop 2>/dev/null || true' EXIT
    for k in 1 2 3 4 5; do
      check "busy-$k" "${MPIRUN[@]}" -n 2 "$BIN"
    done
    ;;
  tick)
    # Open MPI yields when it knows it has more ranks than cores (4 ranks, 2 cores: taskset
    # hides the binding from it), and spins when it does not (2 ranks on 2 cores it believes
    # free): both shapes, each a sweep and spec from-run on it.
    for n in 4 2; do
      "${MPIRUN[@]}" -n $n taskset -c 0 "$BIN" -e 1M --csv "$out/tick$n.csv" --force > "$out/tick$n.out" || true
      set +e
      "$BIN" spec from-run "$out/tick$n.csv" > "$out/tick$n-spec.toml" 2> "$out/tick$n-from-run.err"
      echo $? > "$out/tick$n-from-run.rc"
      set -e
      echo "ranks $n: $(grep -c scheduler_tick "$out/tick$n.csv") rows with scheduler_tick, from-run exit $(cat "$out/tick$n-from-run.rc")"
    done
    ;;
  slowlink)
    bed() { bash ci/netns-bed.sh "$@"; }
    bed down >/dev/null 2>&1 || true
    bed up 3 > /dev/null
    trap 'bash ci/netns-bed.sh down >/dev/null 2>&1 || true' EXIT
    hf=$out/bed.hostfile
    printf 'cb-node1 slots=1\ncb-node2 slots=1\ncb-node3 slots=1\n' > "$hf"
    run=(bash ci/netns-bed.sh mpirun -q -n 3 -hostfile "$hf" --map-by node)
    for i in 1 2 3; do
      [ "$i" = 1 ] || sleep 60
      "${run[@]}" "$BIN" -e 1M --csv "$out/bed-b$i.csv" --force > "$out/bed-b$i.out"
    done
    "$BIN" spec from-run "$out/bed-b1.csv" "$out/bed-b2.csv" "$out/bed-b3.csv" > "$out/bed-spec.toml" 2> "$out/bed-from-run.err"
    cp "$out/spec.toml" "$out/spec-local.toml" 2>/dev/null || true
    cp "$out/bed-spec.toml" "$out/spec.toml"
    check "bed-unshaped" "${run[@]}" "$BIN"
    bed slow 2 50mbit
    for k in 1 2 3; do
      check "bed-slow-$k" "${run[@]}" "$BIN"
    done
    cp "$out/spec.toml" "$out/bed-spec.toml"
    [ ! -f "$out/spec-local.toml" ] || cp "$out/spec-local.toml" "$out/spec.toml"
    ;;
  report)
    python3 - "$out" "${GATE_HOST:-$(hostname)}" <<'EOF' | tee "bench/gate-${GATE_HOST:-$(hostname)}.md"
import collections, glob, os, re, sys
out, host = sys.argv[1], sys.argv[2]
def read(p):
    return open(p).read() if os.path.exists(p) else ""
print("# A gate learned from this machine, checked quiet and degraded (issue 47)\n")
print(f"Machine: `{host}` (2 cores, Debian 12, Open MPI 4.1, no GPU). Written by `bench/gate.sh`; every")
print("check is `mpirun -n 2 coll-bench check spec.toml` of the spec `spec from-run` learned from 3 sweeps")
print("(`coll-bench -e 1M`, 2 ranks, 2 minutes apart). Load is the 1-minute load average as each check ended.\n")
print("## The learned spec\n")
print("```")
print(read(f"{out}/from-run.err").strip() or "(spec from-run said nothing on stderr)")
print("```\n")
rules = re.findall(r'^name = "(.*)"', read(f"{out}/spec.toml"), re.M)
print(f"{len(rules)} rules: " + ", ".join(rules) + "\n")
verdict_re = re.compile(r'^  (.*\(line \d+\))\s+(\S+)\s+(\S+)\s+.*\s(PASS|FAIL|NOISY|SKIP)\s*$')
for phase, title in [("quiet", "Quiet machine: 10 checks, one a minute"),
                     ("pinned", "Both ranks on one core (taskset -c 0): a real, consistent degradation"),
                     ("busy", "A busy loop on the machine (one of the two cores)"),
                     ("bed-unshaped", "3-host bed, unshaped (spec learned on it)"),
                     ("bed-slow", "3-host bed, cb-node2's link at 50 Mbit")]:
    files = sorted(glob.glob(f"{out}/{phase}-*.out") + glob.glob(f"{out}/{phase}.out"),
                   key=lambda p: int(re.sub(r'\D', '', os.path.basename(p)) or 0))
    if not files:
        continue
    print(f"## {title}\n")
    print("| check | ended (UTC) | load | wall s | exit | PASS | FAIL | NOISY | footer |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    per = collections.defaultdict(collections.Counter)
    lines = []
    for f in files:
        name = os.path.basename(f)[:-4]
        rc, wall, when, load = (read(f"{out}/{name}.rc").split() + ["?"] * 4)[:4]
        c = collections.Counter()
        for l in read(f).splitlines():
            m = verdict_re.match(l)
            if m:
                c[m.group(4)] += 1
                per[(m.group(1).strip(), m.group(3))][m.group(4)] += 1
                if m.group(4) in ("FAIL", "NOISY"):
                    lines.append(f"{name}: {l.strip()}")
        foot = [l for l in read(f).splitlines() if l.startswith("# ") and "passed" in l]
        print(f"| {name} | {when} | {load} | {wall} | {rc} | {c['PASS']} | {c['FAIL']} | {c['NOISY']} | `{foot[-1][2:] if foot else ''}` |")
    print()
    print("Per rule and check (PASS/FAIL/NOISY over the checks above):\n")
    print("| rule | check | PASS | FAIL | NOISY |")
    print("|---|---|---:|---:|---:|")
    for (r, k), c in sorted(per.items()):
        print(f"| {r} | {k} | {c['PASS']} | {c['FAIL']} | {c['NOISY']} |")
    if lines:
        print("\nEvery FAIL and NOISY line:\n\n```")
        print("\n".join(lines))
        print("```")
    print()
import csv
for n in (4, 2):
    if not os.path.exists(f"{out}/tick{n}.out"):
        continue
    print(f"## The 4 ms case: {n} ranks on one core (`mpirun -n {n} taskset -c 0 coll-bench -e 1M`)\n")
    t = read(f"{out}/tick{n}.out").splitlines()
    start = [i for i, x in enumerate(t) if x.startswith("# Collective: all-reduce")]
    if start:
        rows = [l.split() for l in t[start[0] + 1:] if l.strip() and l.strip()[0].isdigit()]
        print("all-reduce out of place, time per call (us) by size: " + ", ".join(f"{r[0]}: {r[5]}" for r in rows[:18]) + "\n")
    print("The footer's warnings (`# Warning: …` lines of the table):\n\n```")
    print("\n".join(l for l in t if l.startswith("# Warning")))
    print("```\n")
    rows = list(csv.DictReader(open(f"{out}/tick{n}.csv"))) if os.path.exists(f"{out}/tick{n}.csv") else []
    for kind in ("scheduler_tick", "above_trend"):
        ft = [r for r in rows if kind in r.get("warnings", "").split(";")]
        print(f"CSV: {len(ft)} of {len(rows)} rows carry `{kind}` in `warnings`" + (", e.g.:\n" if ft else ".\n"))
        if ft:
            print("| collective | placement | size_bytes | median_us | warnings |")
            print("|---|---|---:|---:|---|")
            for r in ft[:6]:
                print(f"| {r['collective']} | {r['placement']} | {r['size_bytes']} | {float(r['median_us']):.1f} | {r['warnings']} |")
            print()
    print(f"`spec from-run tick{n}.csv`: exit {read(f'{out}/tick{n}-from-run.rc').strip()}\n\n```")
    print(read(f"{out}/tick{n}-from-run.err").strip() or "(nothing on stderr)")
    print("```\n")
EOF
    ;;
  *)
    echo "bench/gate.sh: unknown phase '$phase'" >&2
    exit 2
    ;;
esac
