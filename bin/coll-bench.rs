//! coll-bench: see the crate documentation and README. Exit codes: 0 ok, 1 wrong data, 2 error.

/// coll-bench's own large blocks are mappings of their own, so they never move the C library's
/// malloc thresholds under the MPI library (`memory::OwnHeap` says why).
#[global_allocator]
static OWN_HEAP: coll_bench::memory::OwnHeap = coll_bench::memory::OwnHeap;

fn main() {
    std::process::exit(coll_bench::app::main());
}
