//! Compiles the one C helper coll-bench needs beside rsmpi: the value of `MPI_IN_PLACE`, which is
//! a macro (`(void *) 1` in Open MPI, `(void *) -1` in MPICH) that bindgen cannot translate.
//! Also records which MPI family the build is linked against (`COLL_BENCH_MPI_FAMILY`: `openmpi`,
//! `mpich` for MPICH and its ABI derivatives, else `unknown`) and the compiler wrapper used, so
//! the binary can say what it was built against and the tests launch it with the matching
//! launcher. The MPI is chosen as rsmpi chooses it: `MPICC` (e.g. `mpicc.mpich`), else `mpicc`.
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=src/backend/mpi_shim.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-env-changed=MPI_PKG_CONFIG");
    let lib = match build_probe_mpi::probe() {
        Ok(lib) => lib,
        Err(errs) => {
            for e in errs {
                println!("cargo:warning={e}");
            }
            panic!(
                "no MPI library found: install Open MPI (Debian: libopenmpi-dev openmpi-bin) or MPICH \
                 (libmpich-dev mpich), or point MPICC at your MPI's compiler wrapper"
            );
        }
    };
    let family = family(&lib.include_paths);
    println!("cargo:rustc-env=COLL_BENCH_MPI_FAMILY={family}");
    println!("cargo:rustc-env=COLL_BENCH_MPICC={}", lib.mpicc.as_deref().unwrap_or("pkg-config"));
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

/// The MPI family, from the `mpi.h` the build compiles against: Open MPI defines `OPEN_MPI`;
/// MPICH and its ABI derivatives (Intel MPI, Cray MPICH, MVAPICH) define `MPICH_VERSION`.
fn family(include_paths: &[std::path::PathBuf]) -> &'static str {
    let mut dirs: Vec<&Path> = include_paths.iter().map(|p| p.as_path()).collect();
    dirs.push(Path::new("/usr/include"));
    for dir in dirs {
        if let Ok(text) = std::fs::read_to_string(dir.join("mpi.h")) {
            if text.contains("OPEN_MPI") {
                return "openmpi";
            }
            if text.contains("MPICH_VERSION") || text.contains("I_MPI_VERSION") {
                return "mpich";
            }
        }
    }
    "unknown"
}
