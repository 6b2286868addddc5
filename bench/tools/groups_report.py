"""Summarise bench/groups.sh: (a) no --groups against --groups world and split=mod:1, (b) node
against rail all-reduce bus bandwidth on the namespace test bed."""
import csv, glob, os, platform, statistics, sys

out, rounds, bed, family = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "yes", sys.argv[4]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")


def rows(path):
    return {int(r["size_bytes"]): r for r in csv.DictReader(open(path))
            if r["placement"] == "out-of-place" and not r.get("rank") and not r.get("group")}


def series(prefix, col):
    """size -> [value per round]"""
    s = {}
    for r in range(1, rounds + 1):
        for size, row in rows(f"{out}/{prefix}-{r}.csv").items():
            s.setdefault(size, []).append(float(row[col]))
    return s


print("# --groups: speed bars (issue 12)\n")
print(f"Machine: {platform.node()} (vm, {os.cpu_count()} cores, Debian 12), {cpu}; Linux {platform.release()}; "
      f"MPI family {family}. Produced by `bench/groups.sh` ({rounds} rounds, runs alternating).\n")
for f in ("loadavg-start", "loadavg-end"):
    print(f"Load average (1 min) at {f.split('-')[1]}: {open(f'{out}/{f}.txt').read().split()[0]}  ")
print()
print("## (a) `--groups world` against no `--groups`\n")
print("All-reduce, float sum, out-of-place, 4 ranks on this host, 8 B .. 4 MiB (factor 8), default "
      "budget. Per size the median over the rounds of each run's time per call (µs); ratios to "
      "no flag. `split=mod:1` is one group of every rank on a communicator of `MPI_Comm_split` "
      "(the path every other layout takes), `world` the default path itself.\n")
a = {v: series(f"a-{v}", "time_us") for v in ("none", "world", "split1")}
print("| size (B) | no flag (µs) | world (µs) | split=mod:1 (µs) | world / no flag | split=mod:1 / no flag | no-flag spread (max/min over rounds) |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for size in sorted(a["none"]):
    m = {v: statistics.median(a[v][size]) for v in a}
    spread = max(a["none"][size]) / min(a["none"][size])
    print(f"| {size} | {m['none']:.2f} | {m['world']:.2f} | {m['split1']:.2f} | {m['world']/m['none']:.2f} | "
          f"{m['split1']/m['none']:.2f} | {spread:.2f} |")
print()
print("## (b) `--groups node` against `--groups rail` on the test bed\n")
if not bed:
    print("Not run: the namespace test bed is not available here (needs root and Open MPI).\n")
    sys.exit(0)
print("`ci/netns-bed.sh`: 2 namespace hosts × 2 ranks (`--map-by slot`: ranks 0,1 on host 1, 2,3 on "
      "host 2), Open MPI. All-reduce, float sum, out-of-place, 1 MiB .. 16 MiB (factor 2), default "
      "budget; both groups of each layout run at the same time. Bus bandwidth (GB/s, groups of 2: "
      "factor 1) per size, median over the rounds; the bar: node ≥ 2 × rail.\n")
print("The bed lets ranks on one host use shared memory (`--mca btl vader,tcp,self`), as a cluster "
      "does. `node over TCP` is `--groups node` again with `CB_NETNS_BTL=tcp,self`: the same pairs "
      "on one host, but over TCP (how the bed ran every pair before), for reference. `worst "
      "round` is the slowest node round against the fastest rail round.\n")
b = {v: series(f"b-{v}", "busbw_gbps") for v in ("node", "rail", "node-tcp")}
print("| size (B) | node busbw | rail busbw | node / rail | worst round: node min / rail max | ≥ 2? | node over TCP busbw |")
print("|---:|---:|---:|---:|---:|:---:|---:|")
worst = None
for size in sorted(b["node"]):
    n, r = statistics.median(b["node"][size]), statistics.median(b["rail"][size])
    ratio = n / r if r > 0 else float("inf")
    low = min(b["node"][size]) / max(b["rail"][size])
    t = statistics.median(b["node-tcp"][size])
    worst = ratio if worst is None else min(worst, ratio)
    print(f"| {size} | {n:.3f} | {r:.3f} | {ratio:.1f} | {low:.1f} | {'yes' if ratio >= 2 else 'NO'} | {t:.3f} |")
print(f"\nSmallest node / rail ratio at ≥ 1 MiB: {worst:.1f} (bar: ≥ 2).")
