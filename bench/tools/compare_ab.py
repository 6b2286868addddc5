"""Two builds' `compare` on the same saved runs, one run per side: how often each cries wolf on
back-to-back runs, and how often it catches one collective 30% (20%) slower over the largest or
the smallest third of one series' sizes, over every pair and over the quiet pairs only (pairs in
which every collective's median change stayed within QUIET, default 10%: what a machine whose
back-to-back runs agree gives). compare needs no MPI and reads only the files, so the two
builds judge exactly the same numbers.

    python3 bench/tools/compare_ab.py RUNS_DIR LABEL=BIN LABEL=BIN ...

RUNS_DIR holds run-*.csv (bench/order.sh's target/bench/order/size or .../collective). Prints a
Markdown table."""
import csv, math, os, statistics as st, sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doctoring import doctor_third, run_compare  # noqa: E402  (the same doctoring as compare_report.py)

out, builds = sys.argv[1], [b.split("=", 1) for b in sys.argv[2:]]
QUIET = float(os.environ.get("QUIET", "10")) / 100
COLLS = ["all-reduce", "all-gather", "reduce-scatter"]
runs = sorted(os.path.join(out, f) for f in os.listdir(out) if f.startswith("run-") and f.endswith(".csv"))
pairs = [(runs[i], runs[i + 1]) for i in range(0, len(runs) - 1, 2)]


def medians(p):
    return {(r["collective"], r["placement"], r["size_bytes"]): float(r["median_us"])
            for r in csv.DictReader(open(p)) if not r.get("rank")}


def quiet(a, b):
    """Every collective's median change between the two runs within QUIET."""
    x, y = medians(a), medians(b)
    for c in COLLS:
        l = [math.log(y[k] / x[k]) for k in x if k[0] == c and k in y and x[k] > 0 and y[k] > 0]
        if l and abs(math.exp(st.median(l)) - 1) > QUIET:
            return False
    return True


def flagged(binary, base, new):
    code, names, _ = run_compare(binary, [base], [new])
    return code, names


quiet_pairs = [quiet(a, b) for a, b in pairs]
print(f"{len(pairs)} pairs of consecutive runs, {sum(quiet_pairs)} quiet (every collective's median change within "
      f"{QUIET * 100:.0f}%). Caught: exit 1 naming the doctored collective; one comparison per collective, "
      "out-of-place series.\n")
print("| build | pairs | false alarms (exit 1) | top third 30% | top third 20% | bottom third 30% | bottom third 20% |")
print("|---|---|---:|---:|---:|---:|---:|")
for label, binary in builds:
    for which, sel in (("all", [True] * len(pairs)), ("quiet", quiet_pairs)):
        chosen = [p for p, s in zip(pairs, sel) if s]
        alarms = sum(flagged(binary, a, b)[0] == 1 for a, b in chosen)
        cells = []
        for top in (True, False):
            for f in (1.30, 1.20):
                caught = 0
                for i, (a, b) in enumerate(chosen):
                    for c in COLLS:
                        d, _, _ = doctor_third(b, c, "out-of-place", f, f"{label}-{which}-{i}-{c}-{f}-{top}", top)
                        code, names = flagged(binary, a, d)
                        caught += code == 1 and c in names
                cells.append(f"{caught}/{len(chosen) * len(COLLS)}")
        print(f"| {label} | {which} ({len(chosen)}) | {alarms}/{len(chosen)} | " + " | ".join(cells) + " |")
