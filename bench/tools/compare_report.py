"""Summarise bench/compare.sh: false alarms of `coll-bench compare` on back-to-back runs of the
same sweep, and how often it catches one collective made 10/20/30% slower in the NEW runs."""
import csv, os, platform, sys, tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doctoring import TIMES, doctor_third, run_compare  # noqa: E402

out, binary = sys.argv[1], sys.argv[2]
runs = sorted(os.path.join(out, f) for f in os.listdir(out) if f.startswith("run-") and f.endswith(".csv"))
COLLS = ["all-reduce", "all-gather", "reduce-scatter"]
LEVELS = [1.10, 1.20, 1.30]
tmp = tempfile.mkdtemp()


def doctor(path, coll, factor, tag):
    """A copy of the run with every time of `coll` scaled by `factor`."""
    dst = os.path.join(tmp, f"{tag}-{os.path.basename(path)}")
    with open(path, newline="") as f, open(dst, "w", newline="") as g:
        rd = csv.reader(f)
        wr = csv.writer(g, lineterminator="\n")
        header = next(rd)
        wr.writerow(header)
        cols = [header.index(c) for c in TIMES if c in header]
        ci = header.index("collective")
        for row in rd:
            if row[ci] == coll:
                for c in cols:
                    if row[c]:
                        row[c] = repr(float(row[c]) * factor)
            wr.writerow(row)
    return dst


def compare(base, new, *extra):
    code, flagged, lines = run_compare(binary, base, new, *extra)
    return code, flagged, lines[-1], lines


def trials(k):
    """Disjoint groups of 2k consecutive runs: the first k are BASE, the next k NEW."""
    return [(runs[i:i + k], runs[i + k:i + 2 * k]) for i in range(0, len(runs) - 2 * k + 1, 2 * k)]


def load():
    return open(os.path.join(out, "load-start.txt")).read().split("load average:")[1].strip(), \
        open(os.path.join(out, "load-end.txt")).read().split("load average:")[1].strip()


def stalls():
    """Runs in which some points took 100x or more their median over all runs (another job's
    time slices: the 2-core machine shared with a timing job at normal priority)."""
    vals = {}
    per_run = []
    for p in runs:
        rows = {(r["collective"], r["placement"], r["size_bytes"]): float(r["median_us"]) for r in csv.DictReader(open(p))}
        per_run.append(rows)
        for k, v in rows.items():
            vals.setdefault(k, []).append(v)
    med = {k: sorted(v)[len(v) // 2] for k, v in vals.items()}
    out = []
    for p, rows in zip(runs, per_run):
        n = sum(1 for k, v in rows.items() if v >= 100 * med[k])
        if n:
            out.append(f"{os.path.basename(p)} ({n} of {len(rows)} points)")
    return out


cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
osname = next((l.split("=", 1)[1].strip().strip('"') for l in open("/etc/os-release") if l.startswith("PRETTY_NAME=")), "?")
SWEEP = os.environ.get("SWEEP", "-e 1M")
npoints = sum(1 for _ in open(runs[0])) - 1
wall = open(os.path.join(out, "wall-s.txt")).read().strip()
ls, le = load()
print("# compare: false alarms on back-to-back runs, detection of doctored slowdowns\n")
print(f"Machine: {platform.node()}, {os.cpu_count()} cores ({cpu}), {osname}; shared with other work "
      f"(load average at the start {ls}, at the end {le}). {len(runs)} runs of "
      f"`mpirun -n 2 coll-bench {SWEEP} --budget 5ms` (all-reduce, all-gather, reduce-scatter; float sum; "
      f"out-of-place and in-place: {npoints} points), back to back, at normal priority, in {wall} s. "
      "Made by `bench/compare.sh` (raw runs in target/bench/compare-noise/, not committed).\n")
st = stalls()
print("Runs with stalls (points 100x or more slower than their median over all runs): "
      + (", ".join(st) if st else "none") + ".\n")
print("Each comparison uses consecutive runs (no run in two comparisons of one mode): one run per side "
      "(`compare run-01.csv run-02.csv`), two (`compare run-01 run-02 -- run-03 run-04`) or three per side. "
      "A false alarm is exit 1 on undoctored runs. Detection: every NEW run's rows of one collective "
      "(every size, both placements, every time column) scaled by 1.1, 1.2 or 1.3, one collective at a time; "
      "caught = exit 1 naming that collective (a point or its series); `+other` counts the doctored "
      "comparisons that also named something else (an undoctored collective, or the whole run). "
      "Defaults: `--stat median --threshold 5 --alpha 0.05 --drift 25`.\n")
print("| runs per side | comparisons | false alarms (exit 1) | points flagged, total | caught 10% | caught 20% | caught 30% | +other |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
details = []
for k in (1, 2, 3):
    ts = trials(k)
    if not ts:
        continue
    alarms, points = 0, 0
    caught = {f: 0 for f in LEVELS}
    other = 0
    for ti, (base, new) in enumerate(ts):
        code, flagged, summary, lines = compare(base, new)
        alarms += code == 1
        points += sum(1 for l in lines if l.startswith("regressed: "))
        details.append(f"- {k} per side, {' '.join(map(os.path.basename, base))} -> "
                       f"{' '.join(map(os.path.basename, new))}: exit {code}; `{summary}`")
        for f in LEVELS:
            for c in COLLS:
                dn = [doctor(p, c, f, f"{k}-{ti}-{c}-{f}") for p in new]
                code, flagged, _, _ = compare(base, dn)
                caught[f] += code == 1 and c in flagged
                other += bool(flagged - {c})
    n = len(ts)
    cells = " | ".join(f"{caught[f]}/{n * len(COLLS)}" for f in LEVELS)
    print(f"| {k} | {n} | {alarms}/{n} | {points} | {cells} | {other}/{n * len(COLLS) * len(LEVELS)} |")
print("\nA third of one series: every NEW run's rows of one collective in one placement (out-of-place), "
      "at the largest third of its sizes (`top`) or the smallest third (`bottom`), scaled by 1.3 (and 1.2); "
      "caught = exit 1 naming that collective.\n")
print("| runs per side | comparisons | top third 30% | top third 20% | bottom third 30% | bottom third 20% | +other |")
print("|---:|---:|---:|---:|---:|---:|---:|")
span = None
for k in (1, 2, 3):
    ts = trials(k)
    if not ts:
        continue
    cells, other = [], 0
    for top in (True, False):
        for f in (1.30, 1.20):
            caught = 0
            for ti, (base, new) in enumerate(ts):
                for c in COLLS:
                    dn = []
                    for p in new:
                        d, lo, hi = doctor_third(p, c, "out-of-place", f, f"t{k}-{ti}-{c}-{f}-{top}", top)
                        dn.append(d)
                        span = span or {}
                        span[top] = (lo, hi)
                    code, flagged, _, _ = compare(base, dn)
                    caught += code == 1 and c in flagged
                    other += bool(flagged - {c})
            cells.append(f"{caught}/{len(ts) * len(COLLS)}")
    print(f"| {k} | {len(ts)} | {' | '.join(cells)} | {other}/{len(ts) * len(COLLS) * 4} |")
if span:
    print(f"\nSizes doctored: top third {span[True][0]}..{span[True][1]} B, bottom third {span[False][0]}..{span[False][1]} B.")
print("\nEvery undoctored comparison's summary line:\n")
print("\n".join(details))
