//! coll-bench: see the crate documentation and README. Exit codes: 0 ok, 1 wrong data, 2 error.
fn main() {
    std::process::exit(coll_bench::app::main());
}
