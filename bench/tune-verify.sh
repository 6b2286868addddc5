#!/usr/bin/env bash
# Does `tune --verify` pass on tune's own file on the same machine (issue 46)? ROUNDS times (5
# by default): `coll-bench tune all-reduce all-gather reduce-scatter -b 8 -e 4M --write-rules F`
# on 2 ranks, then `tune --verify F` twice. Reports each verify's exit code and its verdicts:
# sizes the file leaves to the library, sizes where its choice was faster, within noise of the
# default, or MISSED (slower beyond noise). Writes bench/tune-verify-<host>.md (NAME=x to
# rename). Both families (COLL_BENCH_MPI=mpich).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh "${COLL_BENCH_MPI:-openmpi}"
. ci/env.sh
unset MALLOC_MMAP_MAX_ MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ MALLOC_TOP_PAD_ GLIBC_TUNABLES
ROUNDS=${ROUNDS:-5}
out=target/bench/tune-verify-$COLL_BENCH_MPI
rm -rf "$out"
mkdir -p "$out"
cargo build --release --quiet
for i in $(seq 1 "$ROUNDS"); do
  "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" tune all-reduce all-gather reduce-scatter -b 8 -e 4M --no-csv \
    --write-rules "$out/r$i.rules" > "$out/tune-$i.txt"
  for v in 1 2; do
    rc=0
    "${MPIRUN[@]}" -n 2 "$COLL_BENCH_BIN" tune --verify "$out/r$i.rules" --no-csv > "$out/verify-$i-$v.txt" || rc=$?
    echo "$rc" > "$out/verify-$i-$v.rc"
  done
done
NAME=${NAME:-$(hostname)}
python3 - "$out" "$ROUNDS" "$COLL_BENCH_MPI" <<'PY' | tee "bench/tune-verify-$NAME.md"
import platform, re, subprocess, sys
d, rounds, family = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lib = subprocess.run(["bash", "-c", ". ci/env.sh; ${MPIRUN[0]} --version 2>&1 | head -1"], capture_output=True, text=True).stdout.strip()
print(f"# tune --verify on tune's own file: {platform.node()}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, {family} ({lib})\n")
print("Made by `bench/tune-verify.sh`: per round, `tune all-reduce all-gather reduce-scatter -b 8 -e 4M --write-rules F` on 2 ranks, then `tune --verify F` twice. Verdict counts over the 3 collectives' 20 sizes each.\n")
print("| round | verify | exit | file keeps the default | faster | within noise | MISSED | other |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
total = {"exit0": 0, "runs": 0, "missed": 0, "chosen": 0}
for i in range(1, rounds + 1):
    for v in (1, 2):
        text = open(f"{d}/verify-{i}-{v}.txt").read()
        rc = int(open(f"{d}/verify-{i}-{v}.rc").read())
        rows = [l for l in text.splitlines() if l and not l.startswith("#")]
        keeps = sum("the file keeps" in l for l in rows)
        faster = sum(": faster)" in l for l in rows)
        noise = sum("within noise" in l for l in rows)
        missed = sum(" MISSED (" in l for l in rows)
        other = len(rows) - keeps - faster - noise - missed
        total["exit0"] += rc == 0
        total["runs"] += 1
        total["missed"] += missed
        total["chosen"] += faster + noise + missed
        print(f"| {i} | {v} | {rc} | {keeps} | {faster} | {noise} | {missed} | {other} |")
print(f"\n{total['exit0']} of {total['runs']} verifies exit 0; {total['missed']} MISSED of {total['chosen']} sizes where the file chose another algorithm than the default.")
for i in range(1, rounds + 1):
    for v in (1, 2):
        text = open(f"{d}/verify-{i}-{v}.txt").read()
        for l in text.splitlines():
            if l and not l.startswith("#") and "the file keeps" not in l:
                print(f"\n    round {i} verify {v}: {l.strip()}", end="")
print()
PY
