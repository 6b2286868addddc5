//! `coll-bench compare`: placeholder until the subcommand lands.

/// Entry point; `args[0]` is "compare".
pub fn main(_args: &[String]) -> i32 {
    eprintln!("coll-bench: error: compare: not available in this build");
    crate::error::exit::ERROR
}
