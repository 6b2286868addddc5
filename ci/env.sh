# Sourced by the ci/ scripts: let Open MPI run as root (containers, CI) and more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Ranks > cores: do not bind each rank to a core, and let ranks share cores.
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
