//! `coll-bench plot`: placeholder until the subcommand lands.

/// Entry point; `args[0]` is "plot".
pub fn main(_args: &[String]) -> i32 {
    eprintln!("coll-bench: error: plot: not available in this build");
    crate::error::exit::ERROR
}
