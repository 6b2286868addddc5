"""Doctored copies of a coll-bench CSV, for the compare benchmarks (compare_report.py,
compare_ab.py)."""
import csv, os, tempfile

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
