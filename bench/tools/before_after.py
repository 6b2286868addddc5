#!/usr/bin/env python3
"""Before/after ratios of two sets of coll-bench CSVs taken alternately in one session:
median time_us per (collective, size) over the runs of each side, out-of-place rows.
  python3 bench/tools/before_after.py 'AFTER_GLOB' 'BEFORE_GLOB'
Prints a Markdown table and the geometric mean of after/before (all, <= 1 MiB, > 1 MiB)."""
import csv, glob, math, statistics as st, sys

def load(pat):
    d = {}
    for f in sorted(glob.glob(pat)):
        for r in csv.DictReader(open(f)):
            if r.get('placement') != 'out-of-place' or r.get('rank', '') != '':
                continue
            d.setdefault((r['collective'], int(r['size_bytes'])), []).append(float(r['time_us']))
    return d

after, before = load(sys.argv[1]), load(sys.argv[2])
rows = []
print("| collective | size (B) | before (us) | after (us) | after/before | before spread | after spread |")
print("|---|---:|---:|---:|---:|---:|---:|")
for k in sorted(after):
    if k not in before:
        continue
    a, b = after[k], before[k]
    ma, mb = st.median(a), st.median(b)
    rows.append((k, ma / mb))
    print(f"| {k[0]} | {k[1]} | {mb:.3f} | {ma:.3f} | {ma/mb:.3f} | {(max(b)-min(b))/mb*100:.0f}% | {(max(a)-min(a))/ma*100:.0f}% |")
def geo(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')
for name, sel in [("all", lambda s: True), ("<= 1 MiB", lambda s: s <= 1 << 20), ("> 1 MiB", lambda s: s > 1 << 20)]:
    xs = [r for (k, r) in rows if sel(k[1])]
    if xs:
        print(f"\n{name}: {len(xs)} points, geometric mean after/before {geo(xs):.3f}, median {st.median(xs):.3f}")
