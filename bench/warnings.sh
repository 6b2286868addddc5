#!/usr/bin/env bash
# Warnings worth reading (issue 11, point 6): how many of a default 2-rank sweep's measurements
# get each warning under the old rules (any outlier sample; a first call 10x the median and
# 100 us over it; the median's interval wider than 10% of it) and under the current ones (the
# interval rule; the time, a mean, more than 10% from the median). Both are computed from the
# same runs' CSVs (columns outlier_samples, first_call_us, median_us, ci95_*, time_us), so the
# comparison is within one run; the footer's own warning lines are counted too.
# Prints a Markdown report on stdout (bench/warnings-vm.md).
# Usage: bash bench/warnings.sh [RUNS]     (COLL_BENCH_MPI=mpich for the MPICH build)
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
cargo build --release --quiet
runs=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do
  "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" --csv "$tmp/run$i.csv" > "$tmp/run$i.out"
done
python3 - "$tmp" "$runs" <<'PY'
import csv, subprocess, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
load = open("/proc/loadavg").read().split()[:3]
print("# Warnings worth reading: before and after on the default sweep\n")
print(f"Machine: `{host}`, {cores} cores, Debian 12, a VM shared with other work at the time (load average {' '.join(load)});")
print(f"`mpirun -n 2 coll-bench` (all-reduce, all-gather, reduce-scatter, 8 B .. 64 MiB: 2 placements each), {runs} runs.")
print("Counts are measurements (point x placement) out of the run's total; old and new rules judged on the same CSV.\n")
print("| run | measurements | old: outliers | old: slow first call | noisy (both) | new: mean off median | old: any | new: any | footer lines old → new |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
f = lambda v: float(v) if v not in ("", None) else None
for i in range(1, runs + 1):
    rows = [r for r in csv.DictReader(open(f"{tmp}/run{i}.csv")) if not r.get("rank")]
    n = len(rows)
    out_, first, noisy, off, old_any, new_any = 0, 0, 0, 0, 0, 0
    for r in rows:
        med, t = f(r["median_us"]), f(r["time_us"])
        lo, hi, fc = f(r["ci95_lo_us"]), f(r["ci95_hi_us"]), f(r["first_call_us"])
        o = int(r["outlier_samples"] or 0) > 0
        s = fc is not None and med and fc > 10 * med and fc - med > 100
        nz = med and lo is not None and hi is not None and (hi - lo) / med > 0.10
        mo = med and t is not None and abs(t - med) > 0.10 * med
        # The CSV's own column says what the run warned about: it must agree with the rule.
        kinds = set(filter(None, r["warnings"].split(";")))
        assert ("mean_off_median" in kinds) == bool(mo), (r, mo)
        assert ("noisy" in kinds) == bool(nz), (r, nz)
        out_ += o; first += bool(s); noisy += bool(nz); off += bool(mo)
        old_any += bool(o or s or nz); new_any += bool(nz or mo)
    kinds_old = (out_ > 0) + (first > 0) + (noisy > 0)
    lines = [l for l in open(f"{tmp}/run{i}.out") if l.startswith("# Warning")]
    print(f"| {i} | {n} | {out_} | {first} | {noisy} | {off} | {old_any} | {new_any} | {kinds_old} → {len(lines)} |")
print()
print("Old rules: outliers = any sample with a modified z-score > 14.8; slow first call = first warm-up call > 10x the")
print("median and > 100 us above it; noisy = the median's 95% interval wider than 10% of it. New: noisy (unchanged) and")
print("mean off median = the table's time (a mean) more than 10% from the median. Outlier counts and the first call stay")
print("in the CSV (`outlier_samples`, `first_call_us`).")
PY
