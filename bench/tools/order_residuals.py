"""bench/order.sh: for each pair of consecutive runs (run-01 -> run-02, ...), per collective the
median over its points of NEW/BASE median_us, and the worst stretch (a third of a series' sizes
or 3, whichever is more) of one collective's change relative to (a) the other collectives at the
same size and placement, (b) the whole run's median change: what a one-run comparison must tell
from a regression."""
import csv, os, sys, math, statistics as st
def load(p):
    d = {}
    for r in csv.DictReader(open(p)):
        if r.get("rank"): continue
        k = (r["collective"], r["placement"], int(r["size_bytes"]))
        d[k] = float(r["median_us"])
    return d
for name in sys.argv[1:]:
    runs = sorted(os.path.join(name, f) for f in os.listdir(name) if f.startswith("run-"))
    print(f"\n### {os.path.basename(name)} order\n")
    print("| pair | all-reduce | all-gather | reduce-scatter | worst stretch vs the other collectives at its sizes | worst stretch vs the whole run |\n|---|---:|---:|---:|---:|---:|")
    for i in range(0, len(runs) - 1, 2):
        a, b = load(runs[i]), load(runs[i + 1])
        keys = [k for k in a if k in b and a[k] > 0 and b[k] > 0 and k[2] > 0]
        lr = {k: math.log(b[k] / a[k]) for k in keys}
        colls = ["all-reduce", "all-gather", "reduce-scatter"]
        med = {c: math.exp(st.median([v for k, v in lr.items() if k[0] == c])) for c in colls}
        # per-size reference: median over the other collectives at the same size and placement
        res = {}
        for k, v in lr.items():
            others = [lr[(c, k[1], k[2])] for c in colls if c != k[0] and (c, k[1], k[2]) in lr]
            if others:
                res[k] = v - st.median(others)
        # worst: for each series, the largest value m such that >= 1/3 of consecutive sizes have residual >= m
        worst = 0.0
        for c in colls:
            for pl in ["out-of-place", "in-place"]:
                ks = sorted((k for k in res if k[0] == c and k[1] == pl), key=lambda k: k[2])
                vals = [res[k] for k in ks]
                L = max(3, len(vals) // 3)
                for s in range(0, len(vals) - L + 1):
                    worst = max(worst, min(vals[s:s + L]))
        # same with the whole-run reference (median of all points)
        allmed = st.median(lr.values())
        worst_run = 0.0
        for c in colls:
            for pl in ["out-of-place", "in-place"]:
                ks = sorted((k for k in lr if k[0] == c and k[1] == pl), key=lambda k: k[2])
                vals = [lr[k] - allmed for k in ks]
                L = max(3, len(vals) // 3)
                for s in range(0, len(vals) - L + 1):
                    worst_run = max(worst_run, min(vals[s:s + L]))
        print(f"| {os.path.basename(runs[i])[4:6]}-{os.path.basename(runs[i+1])[4:6]} | {med['all-reduce']:.2f} | {med['all-gather']:.2f} | {med['reduce-scatter']:.2f} | {math.exp(worst):.2f} | {math.exp(worst_run):.2f} |")
