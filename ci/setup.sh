#!/usr/bin/env bash
# Install what coll-bench needs to build and run on a fresh Debian/Ubuntu machine: Open MPI
# (library, headers, mpirun), libclang (rsmpi's bindgen) and a C compiler. Idempotent: installs
# only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail

need=()
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
command -v mpicc >/dev/null 2>&1 || need+=(libopenmpi-dev)
ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/*/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
# ip and tc, for the multi-host test bed (ci/netns-bed.sh, tests/multihost.rs).
{ command -v tc || [ -x /usr/sbin/tc ] || [ -x /sbin/tc ]; } >/dev/null 2>&1 || need+=(iproute2)

if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "ci/setup.sh: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

command -v cargo >/dev/null 2>&1 || { echo "ci/setup.sh: cargo not found; install Rust (https://rustup.rs) first" >&2; exit 2; }
