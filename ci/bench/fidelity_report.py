"""Compare coll-bench's CSVs with bare_loop's: per collective and size, median over runs."""
import csv, statistics, sys, platform, os, subprocess

out, reps = sys.argv[1], int(sys.argv[2])
bare, ours = {}, {}
for i in range(1, reps + 1):
    for r in csv.DictReader(open(f"{out}/bare-{i}.csv")):
        bare.setdefault((r["collective"], int(r["size_bytes"])), []).append(float(r["time_us"]))
    for r in csv.DictReader(open(f"{out}/coll-bench-{i}.csv")):
        if r["placement"] == "out_of_place":
            ours.setdefault((r["collective"], int(r["size_bytes"])), []).append(float(r["time_us"]))

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"# Fidelity: coll-bench vs a bare C loop (ci/bench/bare_loop.c)\n")
print(f"Machine: {platform.node()}, {os.cpu_count()} cores, {cpu}; 2 ranks, shared memory; "
      f"{subprocess.run(['mpirun', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}; "
      f"median of {reps} alternating runs each.\n")
print("| collective | size (B) | bare loop (us) | coll-bench (us) | ratio | diff (us) | within bar |")
print("|---|---:|---:|---:|---:|---:|:---:|")
misses = 0
for key in sorted(bare, key=lambda k: (k[0], k[1])):
    if key not in ours:
        continue
    b, o = statistics.median(bare[key]), statistics.median(ours[key])
    ratio, diff = o / b, o - b
    ok = abs(diff) <= 0.05 if key[1] < 1024 else abs(ratio - 1) <= 0.05
    misses += not ok
    print(f"| {key[0]} | {key[1]} | {b:.3f} | {o:.3f} | {ratio:.3f} | {diff:+.3f} | {'yes' if ok else 'NO'} |")
print(f"\n{misses} of {len(bare)} points outside the bar.")
