//! Ctrl-C and `kill`: SIGINT or SIGTERM ends the process with 130 or 143, as shells expect (never
//! 1, the code for wrong data), and rank 0 first writes one line on stderr naming the files the
//! run wrote so far. Every file is appended one whole record per write call
//! ([`super::AppendFile::append`]), so what is on disk is whole rows, whatever the moment.
//!
//! The handler does only what is safe in a signal handler: it writes a line prepared in advance
//! ([`arm`]) and calls `_exit`; a rank other than 0 first waits 0.3 s, so that rank 0's line is
//! out before a launcher that kills the rest at the first rank's end (Hydra) can stop it. Launchers differ in what reaches the ranks (Hydra forwards SIGINT
//! and SIGTERM as they are and returns the ranks' status; Open MPI's `mpirun` sends SIGTERM to
//! every rank and returns 1 whatever they return): docs/output.md says what the user sees.

use crate::error::shown;
use std::path::PathBuf;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The lines for SIGINT and SIGTERM (empty on ranks other than 0), leaked once per [`arm`].
struct Lines {
    int: Vec<u8>,
    term: Vec<u8>,
}

static ARMED: AtomicPtr<Lines> = AtomicPtr::new(std::ptr::null_mut());

/// How long a rank other than 0 waits after the signal before it ends (ns): rank 0 writes its
/// line within microseconds of its own signal; this covers it being scheduled late on a busy
/// host. A job ends at most this much later.
const LET_RANK_0_SPEAK_NS: libc::c_long = 300_000_000;

/// The one line for `signal` after `files` (path, what) were written; `None`: not known (a
/// subcommand whose files are not tracked).
pub fn line(signal: &str, files: Option<&[(PathBuf, &str)]>) -> String {
    let what = match files {
        None => String::new(),
        Some([]) => "; no file written".to_string(),
        Some(files) => {
            let list: Vec<String> =
                files.iter().map(|(p, what)| format!("{} ({what})", shown(super::outfile::absolute(p)))).collect();
            format!("; wrote {}, whole rows up to the interruption", list.join(", "))
        }
    };
    format!("coll-bench: interrupted by {signal}{what}\n")
}

/// Install the handlers (every rank; `rank` 0 alone prints) with what to say: the files written
/// so far (`Some(&[])`: none yet). Called again once the files exist.
pub fn arm(rank: usize, files: Option<&[(PathBuf, &str)]>) {
    let say = |sig: &str| if rank == 0 { line(sig, files).into_bytes() } else { vec![] };
    let lines = Box::into_raw(Box::new(Lines { int: say("SIGINT"), term: say("SIGTERM") }));
    // The previous lines are leaked on purpose: a handler running now may still read them.
    let before = ARMED.swap(lines, Ordering::SeqCst);
    if before.is_null() {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: installs a handler that only reads ARMED's leaked lines, write(2)s and
            // _exit(2)s, all async-signal-safe.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(sig, &act, std::ptr::null_mut());
            }
        }
    }
}

/// The run's outcome is out (its table and verdict, or its error line): a signal from here on
/// (a launcher ending the job because another rank has already exited with its code) ends the
/// process without a line claiming an interruption.
pub fn ended() {
    crate::error::ending();
}

extern "C" fn on_signal(sig: libc::c_int) {
    super::outfile::remove_placeholders();
    let lines = ARMED.load(Ordering::SeqCst);
    // SAFETY: ARMED holds a leaked, never freed `Lines`; write(2), nanosleep(2) and _exit(2) are
    // async-signal-safe.
    unsafe {
        if !crate::error::ENDING.load(Ordering::SeqCst) {
            // Not a death: the ranks watching this one stay silent (watchdog::liveness).
            crate::error::tell_on_ending_byte(crate::error::BYE_SIGNALLED);
        }
        if !lines.is_null() && !crate::error::ENDING.load(Ordering::SeqCst) {
            let text = if sig == libc::SIGINT { &(*lines).int } else { &(*lines).term };
            if !text.is_empty() {
                libc::write(2, text.as_ptr().cast(), text.len());
            } else {
                // Not rank 0: let rank 0's line out first. A signal forwarded to every rank
                // (Hydra, a Ctrl-C to the process group) reaches them in no set order, and
                // Hydra's proxy SIGKILLs a host's other ranks as soon as one ends: a rank 0
                // scheduled a moment late was killed before it spoke (seen once in a
                // fresh-machine run: no line at all).
                let pause = libc::timespec { tv_sec: 0, tv_nsec: LET_RANK_0_SPEAK_NS };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
        }
        libc::_exit(128 + sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_naming_the_files_or_none() {
        assert_eq!(line("SIGINT", Some(&[])), "coll-bench: interrupted by SIGINT; no file written\n");
        assert_eq!(line("SIGTERM", None), "coll-bench: interrupted by SIGTERM\n");
        let l = line("SIGINT", Some(&[(PathBuf::from("/r/a\nb.csv"), "CSV"), (PathBuf::from("/r/x.json"), "JSON")]));
        assert_eq!(l, "coll-bench: interrupted by SIGINT; wrote /r/a\\nb.csv (CSV), /r/x.json (JSON), whole rows up to the interruption\n");
    }
}
