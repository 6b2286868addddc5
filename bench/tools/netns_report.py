"""Summarise bench/multihost.sh: all-reduce busbw over the namespace TCP path beside shared memory
and loopback TCP, and the wall time of the multi-host tests."""
import csv, os, platform, re, sys

out = sys.argv[1]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mpi = re.search(r"^# MPI library: (.*?),", open(f"{out}/shm.txt").read(), re.M)
print("# Multi-host on one machine: namespace TCP against shared memory\n")
print(f"Machine: {platform.node()} (a {os.cpu_count()}-core VM), {cpu}; Linux {platform.release()}; "
      f"{mpi.group(1) if mpi else 'MPI ?'}. Produced by `bench/multihost.sh`.\n")
load = open(f"{out}/loadavg.txt").read().split()[0]
print(f"Load average (1 min) when it started: {load}"
      + (" — other work shared the 2 cores, so compare the columns with each other more than with other runs.\n"
         if float(load) > 0.5 else ".\n"))
print("All-reduce, float sum, out-of-place, 2 ranks, 8 B .. 32 MiB (factor 4), default time budget "
      "(50 ms per size), check on. Bus bandwidth in GB/s (all-reduce: algbw x 2(n-1)/n = algbw for "
      "2 ranks), from the mean time per call, as in the table:\n")
print("- **netns TCP**: one rank on each of two hosts of `ci/netns-bed.sh` (network namespaces, veth "
      "pairs, a bridge), `--mca pml ob1 --mca btl vader,tcp,self`: the pair crosses hosts, so TCP;")
print("- **shm**: both ranks on one host, Open MPI's default (shared memory, `vader`);")
print("- **loopback TCP**: both ranks on one host, `--mca btl tcp,self` (TCP without the veth/bridge "
      "hop).\n")
runs = [("netns TCP", "netns-tcp"), ("shm", "shm"), ("loopback TCP", "loopback-tcp")]
data = {}
for _, f in runs:
    data[f] = {int(r["size_bytes"]): r for r in csv.DictReader(open(f"{out}/{f}.csv"))
               if r["placement"] in ("out-of-place", "out_of_place") and not r.get("rank")}
sizes = sorted(data["shm"])
print("| size (B) | " + " | ".join(f"{n} busbw" for n, _ in runs) + " | netns TCP time (us) | shm time (us) | shm / netns TCP |")
print("|---:|" + "---:|" * (len(runs) + 3))
for s in sizes:
    b = {f: float(data[f][s]["busbw_gbps"]) for _, f in runs if s in data[f]}
    t = {f: float(data[f][s]["time_us"]) for _, f in runs if s in data[f]}
    ratio = b["shm"] / b["netns-tcp"] if b.get("netns-tcp") else float("nan")
    print(f"| {s} | " + " | ".join(f"{b.get(f, float('nan')):.3f}" for _, f in runs)
          + f" | {t['netns-tcp']:.1f} | {t['shm']:.1f} | {ratio:.1f}x |")
big = [s for s in sizes if s >= sizes[-1] // 8]
avg = {f: sum(float(data[f][s]["busbw_gbps"]) for s in big) / len(big) for _, f in runs}
print(f"\nLevelled-off average ({big[0]} B .. {big[-1]} B): "
      + ", ".join(f"{n} {avg[f]:.2f} GB/s" for n, f in runs) + ".")
lat = {f: float(data[f][sizes[0]]["time_us"]) for _, f in runs}
print(f"Smallest size ({sizes[0]} B), time per call: " + ", ".join(f"{n} {lat[f]:.1f} us" for n, f in runs) + ".\n")
cut = f"{out}/cut"
at = float(open(f"{cut}/cut-at").read())
print("Link down: 2 hosts x 2 ranks (`--map-by node`), all-reduce 8 B .. 64 KiB with a 300 ms budget "
      "per size and `-T 5`; host 2's link taken down (`ci/netns-bed.sh cut 2`) "
      f"{at - float(open(f'{cut}/start').read()):.1f} s after mpirun started. Seconds after the cut:\n")
print("| rank | host | exit code | ended after the cut (s) | its line |")
print("|---:|---|---:|---:|---|")
for r in range(4):
    err = open(f"{cut}/rank{r}.err").read().strip()
    host = re.search(r"on rank \d+ \((.*?)\)", err)
    print(f"| {r} | {host.group(1) if host else '?'} | {open(f'{cut}/rank{r}.rc').read().strip()} | "
          f"{float(open(f'{cut}/rank{r}.end').read()) - at:.2f} | `{err}` |")
rows = list(csv.reader(open(f"{cut}/run.csv")))
print(f"\nmpirun: exit code {open(f'{cut}/mpirun-rc').read().strip()}, "
      f"{float(open(f'{cut}/end').read()) - at:.1f} s after the cut (TCP in the bed gives up on the "
      f"cut-off daemon after ~6 s of retransmissions). CSV: header + {len(rows) - 1} complete rows "
      f"({len(set(len(r) for r in rows))} distinct row width), written before the cut.\n")
a, b = map(float, open(f"{out}/test-wall.txt").read().split())
test = open(f"{out}/test.txt").read()
res = re.search(r"^test result: .*$", test, re.M)
skips = re.findall(r"^SKIPPED: .*$", test, re.M)
print(f"Multi-host integration tests (`cargo test --release --test multihost -- --test-threads=2`, "
      f"built beforehand): {b - a:.1f} s wall; {res.group(0) if res else 'no result line'}"
      + (f"; {len(skips)} skipped" if skips else "") + ".")
for line in re.findall(r"^test \S+ \.\.\. \S+$", test, re.M):
    print(f"- `{line}`")
