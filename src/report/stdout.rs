//! Standard output as one more output: every line rank 0 prints for a subcommand that runs on
//! the MPI world (the table, headers, footers, verdicts, doctor's page), and what `plot`,
//! `compare`, `spec from-run` and `--help` print, goes through [`out`] or
//! [`outln!`](crate::outln). A write that fails does not stop the measurement (the files are
//! still written whole); the first failure is kept, and the run ends with one line naming it
//! and exit 2 (`app`), as any output that cannot be written. A closed pipe (`| head`) is the
//! reader's choice, not a failure: nothing is said of it.
//!
//! Under `mpirun` a rank's stdout is a pipe to the launcher, which writes it on: a full disk
//! behind the launcher's own stdout is the launcher's to report (Open MPI's and Hydra's drop
//! it); coll-bench sees only its pipe.

use std::io::{self, Write};
use std::sync::Mutex;

/// The first failed write's error, as text.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Standard output, whose failures are kept ([`failed`]).
pub struct Stdout;

/// Standard output through the door.
pub fn out() -> Stdout {
    Stdout
}

/// Why writing to standard output failed, if it did (a closed pipe is not a failure).
pub fn failed() -> Option<String> {
    FAILED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn note(e: &io::Error) {
    if e.kind() != io::ErrorKind::BrokenPipe {
        let mut f = FAILED.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some(e.to_string());
        }
    }
}

impl Write for Stdout {
    /// Every byte is taken: a failure is kept, not returned, so a caller's `?` never stops a
    /// measurement for it.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Err(e) = io::stdout().lock().write_all(buf) {
            note(&e);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Err(e) = io::stdout().lock().flush() {
            note(&e);
        }
        Ok(())
    }
}

/// `println!` through [`out`]: a failure is kept for the run's end, never a panic.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::report::stdout::out(), $($arg)*);
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_not_a_failure_and_the_first_failure_is_kept() {
        note(&io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(failed(), None);
        note(&io::Error::from_raw_os_error(28));
        note(&io::Error::from_raw_os_error(5));
        assert!(failed().is_some_and(|f| f.contains("No space left")), "{:?}", failed());
    }
}
