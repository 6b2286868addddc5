#!/usr/bin/env bash
# The real NCCL for the tests that need no GPU (tests/nccl_real.rs): the nvidia-nccl-cu12 wheel,
# fetched with pip and installed as pip installs it, into a virtualenv under a cache directory
# outside git, once (later runs find it there and fetch nothing):
#
#   bash ci/nccl-wheel.sh [DIR]    # DIR: $COLL_BENCH_NCCL_WHEEL_DIR, else target/nccl-wheel
#
# Prints the virtualenv's directory (its site-packages holds nvidia/nccl/lib/libnccl.so.2 and
# nvidia/nccl/include/nccl.h) and exits 0; or prints `SKIPPED: reason` and exits 3 where the
# wheel cannot be had (no python3 or pip, no route to the package index). The version is pinned
# (NCCL_WHEEL_VERSION, default 2.32.3) so the tests meet the same library on every run. Beside
# it, where pip can fetch it, the nvidia-nvml-dev-cu12 wheel (NVML_WHEEL_VERSION, default
# 12.9.79): NVML's header, nvidia/nvml_dev/include/nvml.h, for the NVML ABI probe.
# Concurrent callers wait for each other (flock). Download ~350 MB, installed ~480 MB.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${COLL_BENCH_NCCL_WHEEL_DIR:-$root/target/nccl-wheel}}
version=${NCCL_WHEEL_VERSION:-2.32.3}
nvml_version=${NVML_WHEEL_VERSION:-12.9.79}
venv=$dir/venv-$version-nvml-$nvml_version
skip() { echo "SKIPPED: $*"; exit 3; }

command -v python3 >/dev/null 2>&1 || skip "no python3 to fetch the nvidia-nccl-cu12 wheel with (run ci/setup.sh)"
mkdir -p "$dir" || skip "cannot create $dir"
exec 9>"$dir/.lock"
flock 9

if [ -f "$venv/.complete" ]; then
  echo "$venv"
  exit 0
fi
python3 -m pip --version >/dev/null 2>&1 || skip "python3 has no pip (python3 -m pip) to fetch nvidia-nccl-cu12 with (run ci/setup.sh)"
wheels=$dir/wheels
rm -rf "$wheels" "$venv"
log=$dir/pip.log
if ! python3 -m pip download --disable-pip-version-check -q --no-deps -d "$wheels" "nvidia-nccl-cu12==$version" >"$log" 2>&1; then
  skip "pip could not fetch nvidia-nccl-cu12==$version: $(grep -m1 -i error "$log" || tail -n1 "$log")"
fi
# NVML's header only: optional (the NVML ABI test says SKIPPED without it).
python3 -m pip download --disable-pip-version-check -q --no-deps -d "$wheels" "nvidia-nvml-dev-cu12==$nvml_version" >>"$log" 2>&1 || true
python3 -m venv --without-pip "$venv" >"$log" 2>&1 || skip "python3 -m venv failed: $(tail -n1 "$log") (Debian: apt-get install python3-venv)"
site=$("$venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || skip "the virtualenv's python3 does not run"
# pip installs into the virtualenv's site-packages, exactly as `pip install` inside it would.
if ! python3 -m pip install --disable-pip-version-check -q --no-deps --no-index --target "$site" "$wheels"/*.whl >"$log" 2>&1; then
  skip "pip could not install the wheel: $(tail -n1 "$log")"
fi
[ -f "$site/nvidia/nccl/lib/libnccl.so.2" ] && [ -f "$site/nvidia/nccl/include/nccl.h" ] \
  || skip "the wheel has no nvidia/nccl/lib/libnccl.so.2 or nvidia/nccl/include/nccl.h"
rm -rf "$wheels" "$log"
touch "$venv/.complete"
echo "$venv"
