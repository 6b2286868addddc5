#!/usr/bin/env python3
"""Report of bench/scale.sh: the measured points and a fitted model, extrapolated."""
import glob
import os
import statistics
import sys

out, ranks = sys.argv[1], [int(x) for x in sys.argv[2].split()]
TARGETS = [1024, 4096, 16384]
CHILDREN = 31  # src/watchdog/tree.rs


def fit(xs, ys, quad=False):
    """Least squares y = a + b x (+ c x^2): the coefficients."""
    import itertools
    cols = [lambda x: 1.0, lambda x: float(x)] + ([lambda x: float(x) ** 2] if quad else [])
    k = len(cols)
    if len(xs) < k:
        return None
    m = [[sum(ci(x) * cj(x) for x in xs) for cj in cols] for ci in cols]
    v = [sum(ci(x) * y for x, y in zip(xs, ys)) for ci in cols]
    # Gaussian elimination.
    for i in range(k):
        p = max(range(i, k), key=lambda r: abs(m[r][i]))
        m[i], m[p], v[i], v[p] = m[p], m[i], v[p], v[i]
        for r in range(k):
            if r != i and m[i][i]:
                f = m[r][i] / m[i][i]
                m[r] = [a - f * b for a, b in zip(m[r], m[i])]
                v[r] -= f * v[i]
    return [v[i] / m[i][i] if m[i][i] else 0.0 for i in range(k)]


def at(c, x):
    return sum(ci * x ** i for i, ci in enumerate(c))


def rss(d, cmd):
    """Peak RSS in MiB: rank 0's, and the others' median and max."""
    vals = {}
    for f in glob.glob(f"{d}/rss-{cmd}.*"):
        try:
            vals[int(f.rsplit(".", 1)[1])] = int(open(f).read().split()[-1]) / 1024
        except (ValueError, IndexError):
            pass
    others = [v for r, v in vals.items() if r != 0]
    return vals.get(0), (statistics.median(others) if others else None), (max(others) if others else None)


def size(p):
    return os.path.getsize(p) if os.path.exists(p) else None


print("# Per-rank costs as the number of ranks grows (issue 27)\n")
print(f"Machine: `{os.uname().nodename}`, {os.cpu_count()} cores, Open MPI, all ranks on this one host "
      "(oversubscribed beyond 2: correctness and growth only, not speed). The machine was heavily "
      "loaded by other helpers' builds and tests during the run: wall times are upper bounds. "
      "Written by `bench/scale.sh` (inventory and model: docs/architecture.md, \"Per-rank costs\").\n")

sp = os.path.join(out, "speed.txt")
if os.path.exists(sp):
    t = {"main": [], "branch": []}
    for line in open(sp):
        w, _, end, start = line.split()
        t[w].append(float(end) - float(start))
    mm, mb = statistics.median(t["main"]), statistics.median(t["branch"])
    extra = os.environ.get("SPEED_ARGS", "")
    what = f"the default sweep with `{extra}`" if extra else "the default sweep"
    print(f"## Speed bar: {what} at 2 ranks, main's binary and this branch's (alternated, 3 each)\n")
    print("| binary | runs (s) | median (s) |\n|---|---|---|")
    for w in ("main", "branch"):
        print(f"| {w} | {', '.join(f'{x:.2f}' for x in t[w])} | {statistics.median(t[w]):.2f} |")
    print(f"\nbranch / main: {mb / mm:.3f} (median over median).\n")

rows = []
for n in ranks:
    d = f"{out}/n{n}"
    times = {}
    for line in open(f"{d}/times.txt"):
        cmd, t0, t1, u0, u1 = line.split()
        times[cmd] = (float(t1) - float(t0), int(u1) - int(u0))
    errs = {c: open(f"{d}/{c}.err").read().strip() for c in ("sweep", "info", "pairs") if os.path.exists(f"{d}/{c}.err")}
    csv_rows = sum(1 for l in open(f"{d}/sweep.csv")) - 1 if os.path.exists(f"{d}/sweep.csv") else None
    rows.append(dict(
        n=n, times=times, csv_rows=csv_rows,
        rss={c: rss(d, c) for c in ("sweep", "info", "pairs")},
        sizes={k: size(f"{d}/{k}") for k in ("sweep.csv", "sweep.json", "sweep.out", "info.out", "pairs.csv", "pairs.out")},
        errs={c: e for c, e in errs.items() if e},
    ))

print("## Measured\n")
print("| n | command | wall (s) | RSS rank 0 (MiB) | RSS others, median / max (MiB) | UDP datagrams received (machine) |")
print("|---|---|---|---|---|---|")
f = lambda x: "–" if x is None else f"{x:.1f}"
for r in rows:
    for c in ("sweep", "info", "pairs"):
        w, u = r["times"].get(c, (None, None))
        r0, med, mx = r["rss"][c]
        print(f"| {r['n']} | {c} | {f(w)} | {f(r0)} | {f(med)} / {f(mx)} | {u} |")
print()
print("| n | sweep CSV rows | sweep.csv (B) | sweep.json (B) | sweep stdout (B) | info --json (B) | pairs.csv (B) | pairs stdout (B) |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    s = r["sizes"]
    print(f"| {r['n']} | {r['csv_rows']} | {s['sweep.csv']} | {s['sweep.json']} | {s['sweep.out']} | {s['info.out']} | {s['pairs.csv']} | {s['pairs.out']} |")
bad = [(r["n"], c, e) for r in rows for c, e in r["errs"].items()]
if bad:
    print("\nStderr of runs that printed any:\n")
    for n, c, e in bad:
        print(f"- n={n} {c}: `{e.splitlines()[0][:200]}`")

print("\n## Watchdog announcements reaching rank 0\n")
big = max(rows, key=lambda r: r["n"])
steps = big["times"]["sweep"][1] / big["n"]
print("Every rank sends one announcement per armed step, and the sweep's steps are the same at "
      "every n, so they are estimated once from the largest run, where the job's own datagrams "
      f"outnumber the rest of the machine's (the counter is machine-wide): {steps:.0f} steps "
      f"= {big['times']['sweep'][1]} datagrams / {big['n']} ranks. Rank 0 receives n − 1 "
      f"announcements per step on main and min(n − 1, {CHILDREN}) with the tree (34 B of payload "
      "each, 62 B with UDP/IP headers).\n")
print("| n | sweep wall (s) | steps | steps/s | rank 0 packets/s, main | rank 0 packets/s, tree | rank 0 B/s, tree |")
print("|---|---|---|---|---|---|---|")
rates = []
for r in rows:
    w, u = r["times"]["sweep"]
    sps = steps / w
    rates.append(sps)
    k = min(r["n"] - 1, CHILDREN)
    print(f"| {r['n']} | {w:.1f} | {steps:.0f} | {sps:.0f} | {sps * (r['n'] - 1):.0f} | {sps * k:.0f} | {sps * k * 62:.0f} |")
print("\nAt the issue's 30 steps a second: rank 0 receives 30·(n − 1) packets/s on main (122 850/s at "
      f"4 096 ranks, 491 490/s at 16 384) and at most 30·{CHILDREN + 1} = {30 * (CHILDREN + 1)}/s with the tree, at any n.\n")

print("## Fitted model, extrapolated\n")
print("Each measure fitted to a + b·n over the measured points (least squares; n² terms where the "
      "code has them: pairs' gather at rank 0, and the sweep's per-point all-gather summed over ranks, "
      "are in docs/architecture.md). Oversubscribed wall times grow with n for the CPU share alone, "
      "so the wall-time lines say little about a real cluster; the memory and size lines do.\n")
print("| measure | a | b (per rank) | n=1 024 | n=4 096 | n=16 384 |\n|---|---|---|---|---|---|")
ns = [r["n"] for r in rows]
series = [
    ("sweep RSS rank 0 (MiB)", [r["rss"]["sweep"][0] for r in rows]),
    ("sweep RSS others, max (MiB)", [r["rss"]["sweep"][2] or r["rss"]["sweep"][0] for r in rows]),
    ("info RSS rank 0 (MiB)", [r["rss"]["info"][0] for r in rows]),
    ("pairs RSS rank 0 (MiB)", [r["rss"]["pairs"][0] for r in rows]),
    ("sweep.csv with --per-rank (MiB)", [(r["sizes"]["sweep.csv"] or 0) / 2**20 for r in rows]),
    ("sweep.json with --per-rank (MiB)", [(r["sizes"]["sweep.json"] or 0) / 2**20 for r in rows]),
    ("info --json (MiB)", [(r["sizes"]["info.out"] or 0) / 2**20 for r in rows]),
    ("sweep wall (s)", [r["times"]["sweep"][0] for r in rows]),
    ("pairs wall (s)", [r["times"]["pairs"][0] for r in rows]),
]
for name, ys in series:
    pts = [(x, y) for x, y in zip(ns, ys) if y is not None]
    c = fit([p[0] for p in pts], [p[1] for p in pts])
    if not c:
        continue
    print(f"| {name} | {c[0]:.3g} | {c[1]:.3g} | " + " | ".join(f"{at(c, t):.3g}" for t in TARGETS) + " |")
print("\nFrom the code (docs/architecture.md, \"Per-rank costs\"), not fitted: terms the measured "
      "points are too small to show.\n")
print("| term | formula | n=64 | n=1 024 | n=4 096 | n=16 384 |\n|---|---|---|---|---|---|")
model = [
    ("pairs: rank 0's gather (MiB)", "32·n·(n − 1) B", lambda n: 32 * n * (n - 1) / 2**20),
    ("pairs: rounds (at least 2 × 20 ms budget each, s)", "(n − 1) × 0.04 s", lambda n: (n - 1) * 0.04),
    ("start-up addresses received per rank (MiB)", "128·n B", lambda n: 128 * n / 2**20),
    ("per point: times all-gathered per rank (KiB)", "8·n B", lambda n: 8 * n / 2**10),
    ("watchdog: rank 0's announcements per step, main", "n − 1", lambda n: n - 1),
    ("watchdog: any rank's announcements per step, tree", "≤ 32", lambda n: min(n - 1, CHILDREN + 1)),
    ("watchdog inquiry (after a hang): packets per rank per 200 ms round", "≈ 2·(n − 1)", lambda n: 2 * (n - 1)),
    ("--per-rank CSV rows per point and placement", "n", lambda n: n),
]
for name, formula, fn in model:
    print(f"| {name} | {formula} | " + " | ".join(f"{fn(t):.4g}" for t in [64] + TARGETS) + " |")
