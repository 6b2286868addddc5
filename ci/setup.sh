#!/usr/bin/env bash
# Install what coll-bench needs to build and run: an MPI family (library, headers, compiler
# wrapper, launcher), libclang (rsmpi's bindgen loads it), a C compiler, pkg-config, ip/tc
# for the multi-host test bed, and python3 with pip and venv (the real-NCCL tests). Each need is
# judged by the file the build or the tests really use, not by a look-alike (LLVM's
# libclang-cpp.so is not the libclang bindgen loads). Idempotent:
# installs only what is missing, with one `apt-get update` first. Needs root (or sudo) for
# apt-get; on a machine without apt-get it names the packages to install and exits 2.
#
#   bash ci/setup.sh                 # the family in COLL_BENCH_MPI (default: openmpi)
#   bash ci/setup.sh openmpi mpich   # both families (what ci/test.sh uses)
#   bash ci/setup.sh slurm           # Slurm and munge for the Slurm test bed (ci/slurm-bed.sh asks
#                                    # for it; daemons are never started or enabled by the install)
set -euo pipefail

families=("$@")
[ ${#families[@]} -gt 0 ] || families=("${COLL_BENCH_MPI:-openmpi}")

need=()      # Debian package names
missing=()   # what is missing, in words, for machines without apt-get
add() { need+=("$1"); missing+=("$2"); }

have_file() { for f in "$@"; do [ -e "$f" ] && return 0; done; return 1; }

for fam in "${families[@]}"; do
  case "$fam" in
    openmpi)
      # Debian installs each family's wrappers under its own name (mpicc.openmpi, mpirun.openmpi);
      # elsewhere (a module, a source build) the plain names must be Open MPI's.
      if ! command -v mpicc.openmpi >/dev/null 2>&1 && ! { command -v mpicc >/dev/null 2>&1 && mpicc --showme:version >/dev/null 2>&1; }; then
        add libopenmpi-dev "Open MPI's compiler wrapper and headers (mpicc)"
      fi
      if ! command -v mpirun.openmpi >/dev/null 2>&1 && ! { command -v mpirun >/dev/null 2>&1 && mpirun --version 2>/dev/null | grep -q 'Open MPI'; }; then
        add openmpi-bin "Open MPI's launcher (mpirun)"
      fi
      ;;
    mpich)
      if ! command -v mpicc.mpich >/dev/null 2>&1; then add libmpich-dev "MPICH's compiler wrapper and headers (mpicc.mpich)"; fi
      if ! command -v mpiexec.mpich >/dev/null 2>&1; then add mpich "MPICH's launcher (mpiexec.mpich, Hydra)"; fi
      ;;
    slurm)
      # Debian's Slurm 22.05: the controller, the node daemon, srun/sbatch, the plugins (mpi_pmi2
      # and mpi_pmix_v4 are in slurm-wlm-basic-plugins) and munge, its authentication.
      command -v slurmctld >/dev/null 2>&1 || add slurmctld "Slurm's controller (slurmctld)"
      command -v slurmd >/dev/null 2>&1 || add slurmd "Slurm's node daemon (slurmd)"
      command -v srun >/dev/null 2>&1 || add slurm-client "Slurm's client commands (srun, sbatch)"
      have_file /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmi2.so /usr/lib/*/slurm-wlm/mpi_pmi2.so /usr/lib*/slurm/mpi_pmi2.so \
        || add slurm-wlm-basic-plugins "Slurm's plugins (mpi_pmi2, mpi_pmix)"
      command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || add munge "munge, Slurm's authentication (munged)"
      ;;
    *) echo "ci/setup.sh: unknown MPI family or part '$fam' (accepted: openmpi, mpich, slurm)" >&2; exit 2 ;;
  esac
done

# clang-sys (bindgen) loads libclang.so, libclang.so.N or libclang-N.so*; never libclang-cpp.
libclang_found() {
  [ -n "${LIBCLANG_PATH:-}" ] && have_file "$LIBCLANG_PATH"/libclang.so* "$LIBCLANG_PATH"/libclang-[0-9]*.so* && return 0
  have_file /usr/lib/llvm-*/lib/libclang.so /usr/lib/llvm-*/lib/libclang.so.[0-9]* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
    /usr/lib/*/libclang.so /usr/lib/*/libclang.so.[0-9]* /usr/lib/*/libclang-[0-9]*.so* \
    /usr/lib/libclang.so /usr/lib/libclang.so.[0-9]* /usr/lib64/libclang.so /usr/lib64/libclang.so.[0-9]* \
    /usr/local/lib/libclang.so /usr/local/lib/libclang.so.[0-9]*
}
libclang_found || add libclang-dev "libclang.so (bindgen, used by rsmpi's build)"
command -v cc >/dev/null 2>&1 || add build-essential "a C compiler (cc)"
command -v pkg-config >/dev/null 2>&1 || add pkg-config "pkg-config"
# ip and tc, for the multi-host test bed (ci/netns-bed.sh, tests/multihost.rs).
{ { command -v tc || [ -x /usr/sbin/tc ] || [ -x /sbin/tc ]; } && { command -v ip || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ]; }; } >/dev/null 2>&1 \
  || add iproute2 "ip and tc (iproute2)"

# python3 with pip and venv, for the tests against the real NCCL (ci/nccl-wheel.sh fetches the
# nvidia-nccl-cu12 wheel with pip into a virtualenv); without them those tests print SKIPPED.
{ command -v python3 && python3 -m pip --version; } >/dev/null 2>&1 || add python3-pip "python3 with pip (python3 -m pip)"
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || add python3-venv "python3's venv module"

if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "ci/setup.sh: not a Debian/Ubuntu machine; install these yourself, then run again: ${missing[*]}" \
         "(Debian names: ${need[*]})" >&2
    exit 2
  fi
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "ci/setup.sh: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  # Slurm's and munge's packages start their services on install; the bed runs its own daemons
  # with its own configuration, so keep the system's stopped (policy-rc.d: exit 101 = "not now"),
  # unless the machine already has a policy of its own.
  if [[ " ${need[*]} " == *" slurmd "* || " ${need[*]} " == *" munge "* || " ${need[*]} " == *" slurmctld "* ]] &&
     [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  if ! libclang_found; then
    echo "ci/setup.sh: libclang-dev is installed but no libclang.so was found; set LIBCLANG_PATH to its directory" >&2
    exit 2
  fi
fi

command -v cargo >/dev/null 2>&1 || { echo "ci/setup.sh: cargo not found; install Rust (https://rustup.rs) first" >&2; exit 2; }
exit 0
