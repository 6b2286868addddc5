"""Report of bench/fidelity-single.sh: per collective and size, the median over the repeats of
each program's time per call (µs) and minor page faults per call, and coll-bench's time over
each bare loop's. Usage: fidelity_single_report.py DIR REPS HISTORY "COLLS" "SIZES" [BARE_BUDGET]."""
import csv
import platform
import statistics
import subprocess
import sys

d, reps, history = sys.argv[1], int(sys.argv[2]), sys.argv[3]
colls, sizes = sys.argv[4].split(), [int(s) for s in sys.argv[5].split()]
bare_budget = sys.argv[6] if len(sys.argv) > 6 else "0.05"


def bare(prog, c, s, i):
    # collective,size_bytes,count,iters,time_us,minor_faults_per_call
    row = open(f"{d}/{prog}-{c}-{s}-{i}.csv").read().strip().split(",")
    return float(row[4]), float(row[5])


def ours(prog, c, s, i):
    for r in csv.DictReader(open(f"{d}/{prog}-{c}-{s}-{i}.csv")):
        if r["placement"] == "out-of-place":
            return float(r["time_us"]), float(r["minor_faults_per_call"] or "nan")
    raise SystemExit(f"no out-of-place row in {prog}-{c}-{s}-{i}.csv")


def med(xs):
    return statistics.median(xs)


def human(s):
    return f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"


mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"# Fidelity, one size alone in a fresh process ({platform.node()}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, {mpi})\n")
print(f"2 ranks, float sum, out of place; median of {reps} alternated repeats; every program in a fresh process under glibc's")
print(f"default allocator. `bare`: bench/tools/bare_loop.c timing {bare_budget} s after its warm-up; `bare+hist`: the same after {history} one-double MPI_Allreduce calls;")
print("`coll-bench`: its defaults (ceiling pass and check on); `kept`: coll-bench --malloc kept. Times µs, faults: minor page faults per call.\n")
print("| collective | size | bare | bare+hist | coll-bench | kept | faults bare / +hist / coll-bench / kept | coll-bench ÷ bare | coll-bench ÷ bare+hist | best of each: coll-bench ÷ bare+hist | kept ÷ bare |")
print("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
repeats = {}
for c in colls:
    for s in sizes:
        cells = {}
        for prog, read in (("bare", bare), ("barehist", bare), ("coll-bench", ours), ("kept", ours)):
            got = [read(prog, c, s, i) for i in range(1, reps + 1)]
            cells[prog] = (med([g[0] for g in got]), med([g[1] for g in got]))
            repeats[(c, s, prog)] = got
        t = {k: v[0] for k, v in cells.items()}
        best = lambda prog: min(g[0] for g in repeats[(c, s, prog)])
        f = " / ".join(f"{cells[k][1]:.0f}" for k in ("bare", "barehist", "coll-bench", "kept"))
        print(f"| {c} | {human(s)} | {t['bare']:.1f} | {t['barehist']:.1f} | {t['coll-bench']:.1f} | {t['kept']:.1f} | {f} | "
              f"{t['coll-bench'] / t['bare']:.2f} | {t['coll-bench'] / t['barehist']:.2f} | {best('coll-bench') / best('barehist'):.2f} | {t['kept'] / t['bare']:.2f} |")

print("\nEach repeat (time µs / faults per call), in the order run:\n")
print("| collective | size | bare | bare+hist | coll-bench | kept |")
print("|---|---|---|---|---|---|")
for c in colls:
    for s in sizes:
        row = [" ".join(f"{t:.0f}/{f:.0f}" for t, f in repeats[(c, s, p)]) for p in ("bare", "barehist", "coll-bench", "kept")]
        print(f"| {c} | {human(s)} | " + " | ".join(row) + " |")
