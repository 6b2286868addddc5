"""Doctored copies of a coll-bench CSV, and running `compare` on them, for the compare
benchmarks (compare_report.py, compare_ab.py)."""
import csv, os, subprocess, sys, tempfile

TIMES = ["time_us", "median_us", "p95_us", "p99_us", "min_us", "max_us", "stddev_us", "ci95_lo_us", "ci95_hi_us"]
TMP = tempfile.mkdtemp()


def doctor_third(path, coll, placement, factor, tag, top=True, tmp=None):
    """A copy of the run with one series (`coll`, `placement`) made slower by `factor` over a
    third of its sizes: the largest third (`top`) or the smallest."""
    dst = os.path.join(tmp or TMP, f"{tag}-{os.path.basename(path)}")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    ci, pi, si = header.index("collective"), header.index("placement"), header.index("size_bytes")
    sizes = sorted({int(r[si]) for r in rows[1:] if r[ci] == coll and r[pi] == placement})
    third = max(1, len(sizes) // 3)
    chosen = set(sizes[-third:] if top else sizes[:third])
    cols = [header.index(c) for c in TIMES if c in header]
    with open(dst, "w", newline="") as g:
        wr = csv.writer(g, lineterminator="\n")
        wr.writerow(header)
        for row in rows[1:]:
            if row[ci] == coll and row[pi] == placement and int(row[si]) in chosen:
                for c in cols:
                    if row[c]:
                        row[c] = repr(float(row[c]) * factor)
            wr.writerow(row)
    return dst, min(chosen), max(chosen)


def run_compare(binary, base, new, *extra):
    """`coll-bench compare` of the runs `base` against `new` (one per side, or several with `--`):
    (exit code, what it named as regressed — collectives, or `whole-run` —, its stdout lines)."""
    args = [binary, "compare", *extra, *base] + (["--", *new] if len(base) > 1 or len(new) > 1 else new)
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"compare failed ({p.returncode}): {p.stderr}")
    names = set()
    for line in p.stdout.splitlines():
        if line.startswith(("regressed: ", "regressed series: ", "regressed stretch: ")):
            names.add(line.split(": ", 1)[1].split()[0])
        elif line.startswith("regressed whole run: "):
            names.add("whole-run")
    return p.returncode, names, p.stdout.splitlines()
