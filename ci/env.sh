# Sourced by the ci/ scripts (from the repository root). COLL_BENCH_MPI picks the MPI family to
# build against and launch with: openmpi (default) or mpich. Each family builds into a target
# directory of its own, so both builds can sit side by side:
#   openmpi: target/release/coll-bench,       launched with mpirun (-q: no banner on failure)
#   mpich:   target/mpich/release/coll-bench, launched with Hydra's mpiexec
# Sets MPICC (rsmpi and build.rs build against the MPI behind it), MPIRUN (the launcher, with its
# flags, as an array), CARGO_TARGET_DIR for mpich, and COLL_BENCH_BIN (the binary).
COLL_BENCH_MPI=${COLL_BENCH_MPI:-openmpi}
case "$COLL_BENCH_MPI" in
  openmpi)
    MPICC=$(command -v mpicc.openmpi || command -v mpicc || echo mpicc)
    MPIRUN=("$(command -v mpirun.openmpi || command -v mpirun || echo mpirun)" -q)
    unset CARGO_TARGET_DIR
    COLL_BENCH_BIN=target/release/coll-bench
    ;;
  mpich)
    MPICC=$(command -v mpicc.mpich || command -v mpicc || echo mpicc)
    MPIRUN=("$(command -v mpiexec.mpich || command -v mpiexec || echo mpiexec)")
    export CARGO_TARGET_DIR=target/mpich
    COLL_BENCH_BIN=target/mpich/release/coll-bench
    # A fallback mpicc that is not MPICH's (MPICH not installed: Open MPI's on the PATH) would
    # build and test Open MPI under MPICH's name; say so (ci/setup.sh mpich installs it).
    if ! "$MPICC" -show 2>/dev/null | grep -qi mpich; then
      echo "ci/env.sh: warning: COLL_BENCH_MPI=mpich, but $MPICC is not MPICH's compiler wrapper (bash ci/setup.sh mpich installs MPICH)" >&2
    fi
    ;;
  *)
    echo "ci/env.sh: COLL_BENCH_MPI=$COLL_BENCH_MPI is not a family this project builds (accepted: openmpi, mpich)" >&2
    exit 2
    ;;
esac
export COLL_BENCH_MPI MPICC COLL_BENCH_BIN
# Let Open MPI run as root (containers, CI) and more ranks than cores (harmless for MPICH).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Ranks > cores: do not bind each rank to a core, and let ranks share cores.
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
