#!/usr/bin/env bash
# What `-T` (the watchdog armed around every call of `coll-bench step`) costs: `step --layouts
# all` on 4 ranks with the default settings, BASE (a binary without it) and this tree's build
# in turn, three runs each (base, new, base, new, …, so both see the same load), wall clock of
# the whole mpirun (bar: <= 60 s) and the step's own time per step of each layout. Appends a
# section to bench/step-vm.md. Usage: bash bench/step-watchdog.sh BASE_BINARY "machine words"
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/env.sh
base=${1:?the binary to compare against (e.g. one built from main)}
machine=${2:-$(hostname)}
cargo build --release --quiet
out=target/bench/step-watchdog
rm -rf "$out"
mkdir -p "$out"
md=bench/step-vm.md
run() { # NAME BINARY I
  local start end rc
  start=$(date +%s.%N)
  set +e
  "${MPIRUN[@]}" -n 4 --oversubscribe "$2" step --layouts all --no-csv > "$out/$1-$3.txt"
  rc=$?
  set -e
  end=$(date +%s.%N)
  python3 -c "print(f'{$end-$start:.2f}')" > "$out/$1-$3.wall"
  echo "$rc" > "$out/$1-$3.rc"
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in 1 2 3; do
  run base "$base" "$i"
  run new "$COLL_BENCH_BIN" "$i"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo
  echo "## With the watchdog (\`-T\`, default) around every call of the step"
  echo
  echo "Machine: $machine. $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD) against \`$base\`, ${COLL_BENCH_MPI}; \`bench/step-watchdog.sh\`."
  echo "Command: \`${MPIRUN[*]} -n 4 --oversubscribe BINARY step --layouts all --no-csv\` (defaults otherwise), base and new in turn."
  echo "Bar: each run <= 60 s (wall clock of the whole mpirun). Load before: $load_before; after: $load_after (other work shares the machine)."
  echo
  echo "| run | binary | wall (s) | 'Took' (s) | all data correct | exit | ms/step: dp=4, pp=2 dp=2, pp=4, tp=2 dp=2, tp=2 pp=2, tp=4 |"
  echo "|---|---|---|---|---|---|---|"
  for i in 1 2 3; do
    for b in base new; do
      f="$out/$b-$i.txt"
      took=$(sed -n 's/^# Took \(.*\) s$/\1/p' "$f")
      ok=$(grep -c '; all data correct' "$f" || true)
      steps=$(grep '^#   total communication per step' "$f" | sed 's/.*step: \([0-9.]*\) ms.*/\1/' | paste -sd' ')
      echo "| $i | $b | $(cat "$out/$b-$i.wall") | $took | $ok of 6 | $(cat "$out/$b-$i.rc") | $steps |"
    done
  done
} | tee -a "$md"
