"""Compare coll-bench's CSVs with bare_loop's: per collective and size, median over runs."""
import csv, statistics, sys, platform, os, subprocess

out, reps = sys.argv[1], int(sys.argv[2])
bare, ours = {}, {}
for i in range(1, reps + 1):
    for r in csv.DictReader(open(f"{out}/bare-{i}.csv")):
        bare.setdefault((r["collective"], int(r["size_bytes"])), []).append(float(r["time_us"]))
    for r in csv.DictReader(open(f"{out}/coll-bench-{i}.csv")):
        if r["placement"] in ("out-of-place", "out_of_place"):
            ours.setdefault((r["collective"], int(r["size_bytes"])), []).append(float(r["time_us"]))

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"# Fidelity: coll-bench vs a bare C loop (ci/bench/bare_loop.c)\n")
print(f"Machine: {platform.node()}, {os.cpu_count()} cores, {cpu}; 2 ranks, shared memory; "
      f"{subprocess.run(['mpirun', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}; "
      f"median of {reps} alternating runs each.\n")
print("Noise floor: 'bare spread' is (max - min) / median of the bare loop itself over the runs; where it")
print("exceeds 5%, this machine cannot resolve a 5% difference at that size.\n")
print("| collective | size (B) | bare loop (us) | coll-bench (us) | ratio | diff (us) | within bar | bare spread |")
print("|---|---:|---:|---:|---:|---:|:---:|---:|")
misses, ratios, noisy_misses = 0, [], 0
for key in sorted(bare, key=lambda k: (k[0], k[1])):
    if key not in ours:
        continue
    b, o = statistics.median(bare[key]), statistics.median(ours[key])
    ratio, diff = o / b, o - b
    ok = abs(diff) <= 0.05 if key[1] < 1024 else abs(ratio - 1) <= 0.05
    spread = (max(bare[key]) - min(bare[key])) / b
    misses += not ok
    noisy_misses += (not ok) and spread > 0.05
    ratios.append(ratio)
    print(f"| {key[0]} | {key[1]} | {b:.3f} | {o:.3f} | {ratio:.3f} | {diff:+.3f} | {'yes' if ok else 'NO'} | {spread*100:.0f}% |")
print(f"\n{misses} of {len(ratios)} points outside the bar ({noisy_misses} of them where the bare loop's own spread exceeds 5%).")
print(f"Ratio coll-bench / bare loop over all points: median {statistics.median(ratios):.3f}, "
      f"geometric mean {statistics.geometric_mean(ratios):.3f}, "
      f"{sum(r > 1 for r in ratios)} of {len(ratios)} above 1.")
