#!/usr/bin/env bash
# Issue 27: the watchdog's links (watchdog/liveness.rs) at LINKS_RANKS ranks (default 64):
# how many TCP sockets each rank holds while a sweep runs, with this build ($BIN) and an earlier
# one ($MAIN_BIN, where set: before the tree, every rank had one connection to rank 0).
# Each binary runs a long all-reduce sweep; 3 s after its first table row every rank's open TCP
# sockets are counted (its /proc/PID/fd entries that are sockets listed in /proc/PID/net/tcp as
# established or listening, by inode), then the job is stopped with SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
BIN=${BIN:-$COLL_BENCH_BIN}
MAIN_BIN=${MAIN_BIN:-}
n=${LINKS_RANKS:-64}
out=target/bench/links
rm -rf "$out"
mkdir -p "$out"

count() { # pid -> number of TCP sockets it holds
  local pid=$1 inodes
  inodes=$(ls -l "/proc/$pid/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | sort -u)
  [ -n "$inodes" ] || { echo 0; return; }
  awk 'NR > 1 {print $10}' "/proc/$pid/net/tcp" "/proc/$pid/net/tcp6" 2>/dev/null | sort -u | comm -12 - <(echo "$inodes") | wc -l
}

for which in branch main; do
  b=$BIN
  if [ $which = main ]; then [ -n "$MAIN_BIN" ] || continue; b=$MAIN_BIN; fi
  "${MPIRUN[@]}" -n "$n" "$b" all-reduce -b 8 -e 16K -i 8 -n 20 -w 2 --no-ceiling --no-csv > "$out/$which.out" 2> "$out/$which.err" &
  launcher=$!
  while ! grep -q '^ *[0-9]' "$out/$which.out" 2>/dev/null; do sleep 0.2; done
  sleep 3
  # `#  Rank   1 Pid  12345 on HOST`
  awk '/^#  Rank/ {print $3, $5}' "$out/$which.out" | while read -r rank pid; do
    echo "$which $rank $(count "$pid")"
  done > "$out/$which.counts"
  kill -TERM "$launcher" 2>/dev/null || true
  wait "$launcher" 2>/dev/null || true
done

python3 - "$out" "$n" <<'EOF' | tee "bench/links-${LINKS_HOST:-$(hostname)}.md"
import os, subprocess, sys
out, n = sys.argv[1], int(sys.argv[2])
host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
print("# The watchdog's links: TCP sockets per rank (issue 27)\n")
print(f"Machine: `{host}`, Open MPI, {n} ranks on this one host (oversubscribed). Written by `bench/links.sh`: every")
print("rank's TCP sockets (established or listening) 3 s into an all-reduce sweep. Open MPI's own sockets (its")
print("out-of-band link to the launcher) are counted too: the same on both builds.\n")
print("| build | rank 0 | rank 1 | ranks 2-31, max | ranks 32-63, max | any rank, max |")
print("|---|---:|---:|---:|---:|---:|")
for which, name in [("main", "before (every rank linked to rank 0)"), ("branch", "tree (each rank linked to its parent)")]:
    p = f"{out}/{which}.counts"
    if not os.path.exists(p):
        continue
    c = {int(r): int(k) for _, r, k in (l.split() for l in open(p))}
    mx = lambda rs: max((c[r] for r in rs if r in c), default=0)
    print(f"| {name} | {c.get(0, 0)} | {c.get(1, 0)} | {mx(range(2, 32))} | {mx(range(32, n))} | {max(c.values())} |")
EOF
