#!/usr/bin/env bash
# Validate the nccl backend on this machine's GPUs, for the day one is available:
#
#   bash ci/gpu-validate.sh            # 1 to N local GPUs (N: all that nvidia-smi lists, or $GPUS)
#   NCCL_TESTS_DIR=~/nccl-tests/build bash ci/gpu-validate.sh
#
# For each rank count 1..N, one rank per GPU on this host: every collective, with the exact check
# on, for every type the check can judge (integers, float, double; avg only on power-of-two
# counts, where NCCL's pre-multiplied average is exact), then half, bfloat16 and the fp8 types
# checked within their tolerance (what it proves: NCCL's rounding of the narrow floats stays in
# the bound verify.rs derives; on a GPU below compute capability 9.0 the fp8 types are dropped,
# said in the header, and the run still exits 0: the capability query and NCCL agree). The
# CSVs (and each run's table, .txt) go under results/gpu-<GPU name>/ (ranks and check in the
# name), with a summary printed at the end; exit 1 if any run failed (wrong elements, or an
# error). With NCCL_TESTS_DIR pointing at a build of nccl-tests, its *_perf binaries run at the
# same sizes (float, sum, out of place) and the summary gives, per collective and size,
# coll-bench's busbw / nccl-tests' busbw.
#
# Without an NVIDIA GPU (no nvidia-smi, or it lists none) it says so in one line and exits 2.
# SIZES (default "-b 8 -e 256M -f 4") sets the sweep (other flags may ride along); DTYPES the
# checked types (default every type the check can judge); OUT_DIR the output directory;
# COLL_BENCH_MPI picks the MPI (ci/env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

gpus=""
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
fi
if [ -z "$gpus" ]; then
  echo "ci/gpu-validate.sh: no NVIDIA GPU on this machine (nvidia-smi missing or lists none); run it where the nccl backend has GPUs to use" >&2
  exit 2
fi
count=$(printf '%s\n' "$gpus" | wc -l)
n_max=${GPUS:-$count}
if ! [[ "$n_max" =~ ^[1-9][0-9]*$ ]] || [ "$n_max" -gt "$count" ]; then
  echo "ci/gpu-validate.sh: GPUS=$n_max is not a count from 1 to the $count GPU(s) nvidia-smi lists" >&2
  exit 2
fi
name=$(printf '%s\n' "$gpus" | head -n1)
slug=$(printf '%s' "$name" | tr -c 'A-Za-z0-9._-' '-' | tr -s '-' | sed 's/^-//; s/-$//')
out=${OUT_DIR:-results/gpu-$slug}
mkdir -p "$out"
read -r -a sizes <<<"${SIZES:--b 8 -e 256M -f 4}"

. ci/env.sh
cargo build --release --quiet
stamp=$(date -u +%Y%m%dT%H%M%SZ)
exact=${DTYPES:-int8,uint8,int32,uint32,int64,uint64,float,double}
rc=0
summary=$out/summary-$stamp.md
{
  echo "# coll-bench --backend nccl on $count x $name"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo "Driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)."
  echo
  echo "| ranks | run | exit | CSV |"
  echo "|---|---|---|---|"
} >"$summary"

run() { # ranks label args…
  local n=$1 label=$2
  shift 2
  local csv=$out/$label-$n-ranks-$stamp.csv log=$out/$label-$n-ranks-$stamp.txt
  set +e
  "${MPIRUN[@]}" -n "$n" "$COLL_BENCH_BIN" --backend nccl all "${sizes[@]}" --csv "$csv" "$@" >"$log" 2>&1
  local r=$?
  set -e
  [ "$r" -eq 0 ] || echo "ci/gpu-validate.sh: $label on $n rank(s) exited $r: $(grep -m1 'error' "$log" || tail -n1 "$log")" >&2
  echo "| $n | $label | $r | $csv |" >>"$summary"
  [ "$r" -eq 0 ] || rc=1
}

for n in $(seq 1 "$n_max"); do
  ops="sum,prod,min,max"
  if [ $((n & (n - 1))) -eq 0 ]; then ops="all"; fi
  run "$n" checked -d "$exact" -o "$ops"
  run "$n" narrow-checked -d half,bfloat16,fp8e4m3,fp8e5m2 -o all
done

# What only a GPU can show, one line per check in the summary:
# - launch: all-reduce, float, 8 B to 1 MiB on all N GPUs, timed three ways, run one after the
#   other: "back to back" (the default: a blocking communicator split from the non-blocking
#   init, each timed run's calls launched back to back with one host wait, as nccl-tests),
#   "non-blocking comm" (COLL_BENCH_DEBUG_NCCL_NONBLOCKING_TIMING=1: timed on the non-blocking
#   communicator; from NCCL 2.23 each call launches from a thread of its own) and "-z 1" (the
#   host waits for each call, then an MPI barrier). Proves, per size: non-blocking / back to back
#   (> 1 where the per-call thread costs, about 1 on NCCL < 2.23) and -z 1 / back to back (> 1
#   where launch overlap hides launch cost; ~1 at large sizes). The stand-ins cannot show
#   either: their calls finish before they return.
# - nccl-tests ratio (below, with NCCL_TESTS_DIR): coll-bench busbw / nccl-tests busbw per
#   collective and size; ~1 proves we time what nccl-tests times.
launch_run() { # label env… -- args…
  local label=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local csv=$out/launch-$label-$n_max-ranks-$stamp.csv log=$out/launch-$label-$n_max-ranks-$stamp.txt r=0
  env ${envs[@]+"${envs[@]}"} "${MPIRUN[@]}" -n "$n_max" "$COLL_BENCH_BIN" --backend nccl all-reduce -d float -b 8 -e 1M -f 8 \
    --csv "$csv" "$@" >"$log" 2>&1 || r=$?
  if [ "$r" -ne 0 ]; then
    echo "ci/gpu-validate.sh: launch run '$label' exited $r: $(grep -m1 'error' "$log" || tail -n1 "$log")" >&2
    rc=1
  fi
}
launch_run back-to-back --
launch_run non-blocking COLL_BENCH_DEBUG_NCCL_NONBLOCKING_TIMING=1 --
launch_run z1 -- -z 1
{
  echo
  echo "## launch: all-reduce time per call on $n_max rank(s), µs (median), and ratios to back to back"
  echo
  echo "| size (B) | back to back | non-blocking comm | -z 1 | non-blocking / back to back | -z 1 / back to back |"
  echo "|---|---|---|---|---|---|"
  awk -F, '
    FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; file++; next }
    $col["placement"] ~ /^out/ { t[file, $col["size_bytes"]] = $col["median_us"]; sizes[$col["size_bytes"]] = 1 }
    END {
      for (s in sizes) if (t[1, s] > 0) printf "%d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", s, t[1, s], t[2, s], t[3, s], t[2, s] / t[1, s], t[3, s] / t[1, s]
    }' "$out/launch-back-to-back-$n_max-ranks-$stamp.csv" "$out/launch-non-blocking-$n_max-ranks-$stamp.csv" \
    "$out/launch-z1-$n_max-ranks-$stamp.csv" 2>/dev/null | sort -n | sed 's/^/| /'
} >>"$summary"

# - binding: one GPU visible per rank, as Slurm's --gpus-per-task=1 or a wrapper setting
#   CUDA_VISIBLE_DEVICES=$LOCAL_RANK leaves it: each rank must run on its ordinal 0 and the header
#   must list N distinct PCI bus ids (proves gpu.rs's one-visible-GPU rule on a real driver); then
#   every rank shown the same one GPU: the run must refuse with exit 2 and "would share one GPU"
#   before measuring (proves the bus-id check sees a real shared device).
if [ "$n_max" -ge 2 ]; then
  pick='export CUDA_VISIBLE_DEVICES=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}; exec "$0" "$@"'
  blog=$out/binding-own-$n_max-ranks-$stamp.txt
  set +e
  "${MPIRUN[@]}" -n "$n_max" bash -c "$pick" "$COLL_BENCH_BIN" --backend nccl all-reduce -d float -b 8 -e 1M -f 8 --no-csv >"$blog" 2>&1
  b1=$?
  set -e
  buses=$(grep -o '(PCI [^)]*)' "$blog" | sort -u | wc -l)
  blog2=$out/binding-shared-$n_max-ranks-$stamp.txt
  set +e
  CUDA_VISIBLE_DEVICES=0 "${MPIRUN[@]}" -n "$n_max" "$COLL_BENCH_BIN" --backend nccl all-reduce -d float -b 8 -e 1M -f 8 --no-csv >"$blog2" 2>&1
  b2=$?
  set -e
  shared=no
  grep -q 'would share one GPU' "$blog2" && shared=yes
  verdict=ok
  if [ "$b1" -ne 0 ] || [ "$buses" -ne "$n_max" ] || [ "$b2" -ne 2 ] || [ "$shared" != yes ]; then
    verdict=FAILED
    rc=1
    echo "ci/gpu-validate.sh: binding check FAILED (see its section of the summary)" >&2
  fi
  {
    echo
    echo "## binding: one GPU visible per rank ($verdict)"
    echo
    echo "- own GPU each (CUDA_VISIBLE_DEVICES=local rank): exit $b1 (want 0), $buses distinct PCI bus ids in the header (want $n_max): $blog"
    echo "- one GPU for all (CUDA_VISIBLE_DEVICES=0): exit $b2 (want 2), refusal naming the shared GPU: $shared (want yes): $blog2"
  } >>"$summary"
fi

# - algorithm: NCCL's tuning line for one call after each point's timed calls (NCCL 2.24+;
#   src/backend/nccl/tuning.rs), read against a real GPU for the first time: all-reduce, float,
#   on all N GPUs, (1) as NCCL chooses: every row's algorithm_source must be "library log" (or the
#   header must say why not: an NCCL before 2.24); (2) with NCCL_ALGO=Ring NCCL_PROTO=Simple:
#   every row must say ring/simple; (3) with the user's own NCCL_DEBUG=INFO
#   NCCL_DEBUG_SUBSYS=TUNING (to stdout): the table must hold NCCL's tuning lines of the largest
#   size, so the timed calls ran under the user's settings, not the probe's. ALGORITHM_SIZES
#   (default "-b 8 -e 64M -f 8") sets their sweep.
alg_run() { # label env… -- (writes $out/algorithm-LABEL-…{csv,txt})
  local label=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  env ${envs[@]+"${envs[@]}"} "${MPIRUN[@]}" -n "$n_max" "$COLL_BENCH_BIN" --backend nccl all-reduce -d float "${alg_sizes[@]}" \
    --csv "$out/algorithm-$label-$stamp.csv" >"$out/algorithm-$label-$stamp.txt" 2>&1
}
column_of() { # csv column → the out-of-place rows' values, one per line (quoted fields hold commas)
  python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r["placement"] == "out-of-place": print(r[sys.argv[2]])' "$1" "$2"
}
read -r -a alg_sizes <<<"${ALGORITHM_SIZES:--b 8 -e 64M -f 8}"
a_verdict=ok
if alg_run chosen --; then
  sources=$(column_of "$out/algorithm-chosen-$stamp.csv" algorithm_source | sort -u | tr '\n' ' ')
  chosen=$(column_of "$out/algorithm-chosen-$stamp.csv" algorithm | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  why=$(grep -m1 '^# NCCL algorithm:' "$out/algorithm-chosen-$stamp.txt" || true)
  case "$sources" in "library log ") ;; *) case "$why" in *"not reported"*) a_verdict="not available" ;; *) a_verdict=FAILED ;; esac ;; esac
else
  a_verdict=FAILED
fi
forced=""
if [ "$a_verdict" = ok ]; then
  if alg_run forced NCCL_ALGO=Ring NCCL_PROTO=Simple --; then
    forced=$(column_of "$out/algorithm-forced-$stamp.csv" algorithm | sort -u | tr '\n' ' ')
    [ "$forced" = "ring/simple " ] || a_verdict=FAILED
  else
    a_verdict=FAILED
  fi
  if alg_run users NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING --; then
    largest=$(column_of "$out/algorithm-users-$stamp.csv" size_bytes | sort -n | tail -n1)
    users=$(grep -c "NCCL INFO AllReduce: $largest Bytes -> " "$out/algorithm-users-$stamp.txt" || true)
    [ "$users" -gt 3 ] || a_verdict=FAILED
  else
    a_verdict=FAILED
  fi
fi
if [ "$a_verdict" = FAILED ]; then
  rc=1
  echo "ci/gpu-validate.sh: algorithm check FAILED (see its section of the summary)" >&2
fi
{
  echo
  echo "## algorithm: NCCL's tuning line ($a_verdict)"
  echo
  echo "- as NCCL chooses: algorithm_source ${sources:-none} (want library log); algorithms (rows each): ${chosen:-none}; ${why:-no header line}"
  echo "- NCCL_ALGO=Ring NCCL_PROTO=Simple: ${forced:-not run} (want ring/simple)"
  echo "- the user's NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING: ${users:-not run} tuning lines of the largest size's calls (${largest:-?} B) in the table (want more than 3: the timed calls logged where the user asked)"
} >>"$summary"

# - PCIe and NVLink: each GPU's links as the header states them (the kernel's
#   current_link_speed/width; NVML's active NVLinks × their common speed), for a reader to
#   compare with lspci -vv's LnkSta and nvidia-smi nvlink -s; "below its …" names a PCIe link
#   trained under its maximum.
{
  echo
  echo "## PCIe and NVLink as the header states them"
  echo
  grep -o '(PCI [^)]*)' "$out/algorithm-chosen-$stamp.txt" 2>/dev/null | sort -u | sed 's/^/- /' || true
} >>"$summary"

# One table row per size both ran: "| ranks | collective | size | ours | theirs | ratio |", from our
# CSV (float, sum or none, out of place) and nccl-tests' log (size count type redop root time
# algbw busbw #wrong, out of place first).
compare_rows() { # collective ranks our.csv their.log
  awk -v coll="$1" -v n="$2" -v ours="$3" '
    BEGIN {
      FS = ","
      while ((getline line < ours) > 0) {
        split(line, f, ",")
        if (!hdr) { for (i = 1; i in f; i++) col[f[i]] = i; hdr = 1; continue }
        if (f[col["collective"]] == coll && f[col["dtype"]] == "float" && (f[col["placement"]] == "out-of-place" || f[col["placement"]] == "out_of_place") \
            && (f[col["op"]] == "sum" || f[col["op"]] == "none"))
          bw[f[col["size_bytes"]]] = f[col["busbw_gbps"]]
      }
      FS = " "
    }
    /^ *[0-9]/ && NF >= 8 {
      size = $1; theirs = $8
      if ((size in bw) && theirs > 0) printf "| %d | %s | %s | %.3f | %.3f | %.3f |\n", n, coll, size, bw[size], theirs, bw[size] / theirs
    }' "$4"
}

# nccl-tests beside it: float, sum, out of place, at the same sizes.
if [ -n "${NCCL_TESTS_DIR:-}" ]; then
  declare -A perf=([all-reduce]=all_reduce_perf [all-gather]=all_gather_perf [reduce-scatter]=reduce_scatter_perf
                   [broadcast]=broadcast_perf [reduce]=reduce_perf [all-to-all]=alltoall_perf
                   [gather]=gather_perf [scatter]=scatter_perf [sendrecv]=sendrecv_perf)
  echo >>"$summary"
  echo "## coll-bench / nccl-tests busbw (float, sum, out of place)" >>"$summary"
  echo >>"$summary"
  echo "nccl-tests run with NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE=0 NCCL_P2P_MAX_PEERS=<ranks>: NCCL's defaults, which coll-bench keeps, over the nvlinkCentricSched and maxP2pPeers nccl-tests sets." >>"$summary"
  for n in $(seq 1 "$n_max"); do
    ours=$out/checked-$n-ranks-$stamp.csv
    for coll in "${!perf[@]}"; do
      bin=$NCCL_TESTS_DIR/${perf[$coll]}
      [ -x "$bin" ] || { echo "ci/gpu-validate.sh: $bin missing; skipped $coll" >&2; continue; }
      log=$out/nccl-tests-$coll-$n-ranks-$stamp.txt
      # nccl-tests sets nvlinkCentricSched = 1 (built against NCCL 2.28+) and, for sendrecv,
      # maxP2pPeers = 2 (2.30+) in its config; coll-bench leaves NCCL's defaults, as an
      # application does. NCCL's variables override any config: compare at the defaults.
      NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE=0 NCCL_P2P_MAX_PEERS=$n \
        "${MPIRUN[@]}" -n "$n" "$bin" "${sizes[@]}" -g 1 -d float -o sum >"$log" 2>&1 || {
          echo "ci/gpu-validate.sh: $bin on $n rank(s) failed: $(tail -n1 "$log")" >&2
          rc=1
          continue
        }
      # Built without MPI=1, each process under mpirun runs a 1-rank test of its own and prints
      # its own header ("# nThread …", printed by rank 0 alone when built with MPI): its rows
      # would be compared with our n-rank ones.
      if [ "$(grep -c '^# nThread' "$log")" -gt 1 ]; then
        echo "ci/gpu-validate.sh: $bin ran as $n separate 1-rank tests (build nccl-tests with make MPI=1); skipped $coll on $n ranks: $log" >&2
        rc=1
        continue
      fi
      compare_rows "$coll" "$n" "$ours" "$log" >>"$summary.rows"
    done
  done
  {
    echo
    echo "| ranks | collective | size (B) | coll-bench busbw | nccl-tests busbw | ratio |"
    echo "|---|---|---|---|---|---|"
    sort -t'|' -k2,2n -k3,3 -k4,4n "$summary.rows" 2>/dev/null || true
  } >>"$summary"
  rm -f "$summary.rows"
fi

# The launch modes (docs/gpu.md "Launch modes"): coll-bench's -G 1, -m 4 and -R 2 beside
# nccl-tests' same flags, all-reduce, all-gather and reduce-scatter on all N GPUs, check off on
# both sides (nccl-tests checks outside its timed loop too); a ratio outside 0.98-1.02 is marked.
# -R 2 where coll-bench refuses it (NCCL before 2.27, or no symmetric-memory support: nccl-tests
# would quietly fall back to -R 1 or run unregistered) is a row saying why, not a failure.
if [ -n "${NCCL_TESTS_DIR:-}" ]; then
  : >"$summary.rows"
  for mode in "-G 1" "-m 4" "-R 2"; do
    for coll in all-reduce all-gather reduce-scatter; do
      bin=$NCCL_TESTS_DIR/${perf[$coll]}
      [ -x "$bin" ] || continue
      tag=${mode// /}
      ours=$out/mode$tag-$coll-$n_max-ranks-$stamp.csv
      log=$out/nccl-tests-mode$tag-$coll-$n_max-ranks-$stamp.txt
      # shellcheck disable=SC2086 # the mode is two words on purpose
      "${MPIRUN[@]}" -n "$n_max" "$COLL_BENCH_BIN" --backend nccl "$coll" "${sizes[@]}" -d float -o sum -c 0 $mode \
        --csv "$ours" >"${ours%.csv}.txt" 2>&1 || {
          r=$?
          why=$(grep -m1 -o -- '-R/--register [0-9]: .*' "${ours%.csv}.txt")
          if [ "$r" = 2 ] && [ -n "$why" ]; then
            echo "| $mode | $n_max | $coll | - | - | - | - | not run: ${why//|/\\|} |" >>"$summary.rows"
            continue
          fi
          echo "ci/gpu-validate.sh: coll-bench $coll $mode failed: ${ours%.csv}.txt" >&2
          rc=1
          continue
        }
      # shellcheck disable=SC2086
      NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE=0 NCCL_P2P_MAX_PEERS=$n_max \
        "${MPIRUN[@]}" -n "$n_max" "$bin" "${sizes[@]}" -g 1 -d float -o sum -c 0 $mode >"$log" 2>&1 || {
          echo "ci/gpu-validate.sh: $bin $mode failed: $log" >&2
          rc=1
          continue
        }
      if [ "$(grep -c '^# nThread' "$log")" -gt 1 ]; then
        echo "ci/gpu-validate.sh: $bin ran as $n_max separate 1-rank tests (build nccl-tests with make MPI=1); skipped $coll $mode: $log" >&2
        rc=1
        continue
      fi
      compare_rows "$coll" "$n_max" "$ours" "$log" | awk -v mode="$mode" -F'|' '{
        r = $7 + 0; mark = (r < 0.98 || r > 1.02) ? "outside ±2%" : "ok"
        printf "| %s %s %s |\n", mode, $0, mark }' >>"$summary.rows"
    done
  done
  {
    echo
    echo "## launch modes: coll-bench / nccl-tests busbw with the same flag (float, sum, out of place, -c 0)"
    echo
    echo "| mode | ranks | collective | size (B) | coll-bench busbw | nccl-tests busbw | ratio | within ±2% |"
    echo "|---|---|---|---|---|---|---|---|"
    cat "$summary.rows"
  } >>"$summary"
  rm -f "$summary.rows"
fi

cat "$summary"
exit "$rc"
