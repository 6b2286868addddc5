"""Summarise bench/speed.sh: wall time per run, run-to-run agreement, peak memory."""
import csv, os, platform, re, sys

out = sys.argv[1]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print("# Time to result, run-to-run agreement and memory of the default sweep\n")
print(f"Machine: {platform.node()}, {os.cpu_count()} cores, {cpu}; 2 ranks over shared memory; "
      "default sweep (all-reduce, all-gather, reduce-scatter; float sum; 8 B .. 64 MiB, factor 2; "
      "out-of-place and in-place; check on).\n")
walls = []
for i in (1, 2):
    a, b = map(float, open(f"{out}/wall-{i}.txt").read().split())
    walls.append(b - a)
    rss = re.search(r"Peak memory per rank: (.*?) \(", open(f"{out}/run-{i}.txt").read()).group(1)
    print(f"- run {i}: {b - a:.1f} s wall (bar: <= 20 s: {'met' if b - a <= 20 else 'NOT met'}); peak RSS per rank {rss} "
          f"(bar: <= 3 x 64 MiB + 32 MiB = 224 MiB)")
rows = [{(r['collective'], r['placement'], int(r['size_bytes'])): r for r in csv.DictReader(open(f"{out}/run-{i}.csv"))}
        for i in (1, 2)]
print("\nRun-to-run agreement (run 2 / run 1) at sizes >= 1 KiB:\n")
print("| collective | placement | size (B) | time run 1 (us) | time run 2 (us) | ratio | median ratio |")
print("|---|---|---:|---:|---:|---:|---:|")
worst, worst_med, n = 0.0, 0.0, 0
for key in sorted(rows[0]):
    if key[2] < 1024 or key not in rows[1]:
        continue
    a, b = rows[0][key], rows[1][key]
    r = float(b['time_us']) / float(a['time_us'])
    rm = float(b['median_us']) / float(a['median_us'])
    worst, worst_med, n = max(worst, abs(r - 1)), max(worst_med, abs(rm - 1)), n + 1
    print(f"| {key[0]} | {key[1]} | {key[2]} | {float(a['time_us']):.2f} | {float(b['time_us']):.2f} | {r:.3f} | {rm:.3f} |")
print(f"\nLargest deviation over {n} points: mean time {worst*100:.1f}%, median time {worst_med*100:.1f}%.")
print("\nA sweep whose buffers cannot fit (`-e 64G`):\n\n```\n" + open(f"{out}/too-big.txt").read().strip() + "\n```")
