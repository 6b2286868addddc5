//! The NCCL backend's stand-in in a build without the `nccl` cargo feature (the default build has
//! it, and loads CUDA and NCCL at run time): `--backend nccl` is a one-line error.

/// As the real backend's `open`: where a run gets its NCCL backend.
pub mod open {
    use crate::backend::Backend;
    use crate::error::{Error, Result};
    use crate::options::Options;
    use crate::world::World;

    pub fn create(_world: &World, _opts: &Options) -> Result<Box<dyn Backend>> {
        Err(Error::usage(
        "--backend: nccl is not built into this coll-bench (built without the cargo feature `nccl`; rebuild with default features); expected mpi",
    ))
    }

    pub fn create_in_group(world: &World, opts: &Options, _color: u32, _sizes: &[usize]) -> Result<Box<dyn Backend>> {
        create(world, opts)
    }

    pub fn create_parent(world: &World, opts: &Options) -> Result<Box<dyn Backend>> {
        create(world, opts)
    }
}
