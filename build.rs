//! Compiles the one C helper coll-bench needs beside rsmpi: the value of `MPI_IN_PLACE`, which is
//! a macro (`(void *) 1` in Open MPI, `(void *) -1` in MPICH) that bindgen cannot translate.
fn main() {
    println!("cargo:rerun-if-changed=src/backend/mpi_shim.c");
    let lib = match build_probe_mpi::probe() {
        Ok(lib) => lib,
        Err(errs) => {
            for e in errs {
                println!("cargo:warning={e}");
            }
            panic!("no MPI library found: install Open MPI (Debian: libopenmpi-dev openmpi-bin)");
        }
    };
    let mut build = cc::Build::new();
    build.file("src/backend/mpi_shim.c");
    if let Some(mpicc) = lib.mpicc {
        build.compiler(mpicc);
    } else {
        for inc in &lib.include_paths {
            build.include(inc);
        }
    }
    build.compile("collbench_mpi_shim");
}
