#!/usr/bin/env bash
# The watchdog's inquiry after a hang at 64 and 128 real ranks: a rank is stopped (SIGSTOP) in
# an all-reduce sweep with -T 5, and the job must end through the watchdog with one line naming
# it. Measured per run: seconds from the stop to the launcher's end, and the UDP datagrams the
# machine received meanwhile and dropped for a full socket buffer (/proc/net/snmp, Udp
# InDatagrams and RcvbufErrors: the side channel is the only UDP traffic here, so nothing else
# may run beside it). OLD_BIN (default: none) is a build from before the change, run alternately
# with this tree's build. Writes bench/inquiry-<host>.md. Open MPI only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh openmpi
. ci/env.sh
cargo build --release --quiet
md="bench/inquiry-$(hostname).md"
old_rev=$( [ -n "${OLD_BIN:-}" ] && (cd "$(dirname "$OLD_BIN")/../.." && git rev-parse --short HEAD 2>/dev/null) || echo '?')
python3 - "$md" "${OLD_BIN:-}" "${RANKS:-64 128}" "${REPEATS:-2}" "$old_rev" <<'PY'
import os, re, signal, subprocess, sys, time
md, old, ranks, repeats, old_rev = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split()], int(sys.argv[4]), sys.argv[5]
new = os.path.abspath("target/release/coll-bench")
bins = [("this tree", new)] + ([("before", old)] if old else [])

def udp():
    lines = [l.split() for l in open("/proc/net/snmp") if l.startswith("Udp:")]
    d = dict(zip(lines[0][1:], map(int, lines[1][1:])))
    return d["InDatagrams"], d["RcvbufErrors"]

def run(binary, n, victim):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-q", "-n", str(n), binary, "all-reduce",
           "-b", "8", "-e", "16K", "-i", "8", "-w", "2", "-n", "20", "-T", "5", "--no-csv"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids, rows = {}, 0
    for line in p.stdout:
        m = re.match(r"#  Rank\s+(\d+) Pid\s+(\d+) on (\S+)", line)
        if m:
            pids[int(m.group(1))] = int(m.group(2))
        if not line.startswith("#") and line.strip():
            rows += 1
            if rows == 2:
                break
    before, t0 = udp(), time.monotonic()
    os.kill(pids[victim], signal.SIGSTOP)
    p.stdout.read()
    err = p.stderr.read()
    p.wait()
    took = time.monotonic() - t0
    after = udp()
    named = [l for l in err.splitlines() if l.startswith("coll-bench: ")]
    ok = len(named) == 1 and f"rank {victim} " in named[0]
    try:
        os.kill(pids[victim], signal.SIGKILL)
    except ProcessLookupError:
        pass
    return took, after[0] - before[0], after[1] - before[1], ok, named[:1]

out = ["# The watchdog's inquiry at 64 and 128 ranks", "",
       f"Machine: {os.uname().nodename}, {os.cpu_count()} cores; Open MPI, oversubscribed; `all-reduce -b 8 -e 16K -i 8 -w 2 -n 20 -T 5`,",
       "rank 40 stopped (SIGSTOP) after the second row. Seconds from the stop to the launcher's end; UDP",
       "datagrams received on the machine meanwhile, and dropped for a full socket buffer. Alternated, "
       f"{repeats} of each." + (f' "before": {old} ({old_rev}).' if old else ""), "",
       "| ranks | build | run | s to the end | UDP received | UDP dropped | one line naming rank 40 |",
       "|---:|---|---:|---:|---:|---:|---|"]
lines = []
for n in ranks:
    for i in range(repeats):
        for name, b in bins:
            took, got, dropped, ok, named = run(b, n, 40)
            row = f"| {n} | {name} | {i + 1} | {took:.1f} | {got} | {dropped} | {'yes' if ok else 'NO: ' + repr(named)} |"
            print(row, flush=True)
            out.append(row)
open(md, "w").write("\n".join(out) + "\n")
PY
