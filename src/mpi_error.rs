//! MPI errors are ours to report. Every communicator coll-bench uses has `MPI_ERRORS_RETURN`
//! (`return_errors`), every return code is checked (`check`), and a failed call becomes one line
//! naming the call, what it was doing and the library's own message (`MPI_Error_string`), after
//! which the whole job ends with exit code 2 (`fail`): not MPI's default "errors are fatal", whose
//! Open MPI banner or MPICH error stack would take the place of our line.
//!
//! A failed MPI call cannot be agreed on across ranks (the others may be blocked inside the same
//! collective), so it is not an [`crate::error::Error`]: `fail` never returns. While a sweep runs
//! (with `-T 0` too), the watchdog registers how to end every rank (`set_ender`): the line goes
//! to rank 0, which prints it for the job, and every rank then exits by itself over the
//! watchdog's side channel (`crate::watchdog`). Without it (one rank, outside a sweep) this rank
//! prints its line and ends, and the launcher tears down the rest.

use mpi::ffi;
use std::os::raw::{c_char, c_int};
use std::sync::{Arc, Mutex};

/// Ends the job with a line; never returns (see `set_ender`).
pub type Ender = Arc<dyn Fn(&str) + Send + Sync>;

static ENDER: Mutex<Option<Ender>> = Mutex::new(None);

/// Route `fail` through `ender` (which must end the process) from now on; `None`: back to
/// printing here and exiting.
pub fn set_ender(ender: Option<Ender>) {
    *ENDER.lock().unwrap_or_else(|e| e.into_inner()) = ender;
}

/// Errors on `comm` return their code to the caller from now on; the code of
/// `MPI_Comm_set_errhandler` (check it with `check`).
pub fn return_errors(comm: ffi::MPI_Comm) -> c_int {
    // SAFETY: `comm` is a live communicator; MPI_ERRORS_RETURN is a link-time constant.
    unsafe { ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN) }
}

/// The MPI library's text for an error code, on one line (MPICH's error stack has one line per
/// frame: they are joined with "; ").
pub fn error_string(rc: c_int) -> String {
    // MPI_MAX_ERROR_STRING is 256 in Open MPI and 1024 in MPICH; both fit.
    let mut buf = vec![0 as c_char; 4096];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds more than MPI_MAX_ERROR_STRING of either family; `len` is ours.
    let ok = unsafe { ffi::MPI_Error_string(rc, buf.as_mut_ptr(), &mut len) } == 0;
    if !ok {
        return format!("error code {rc} (the MPI library has no text for it)");
    }
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    one_line(&String::from_utf8_lossy(&bytes))
}

/// Lines joined with "; ", runs of blanks squeezed.
fn one_line(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(&l);
    }
    out
}

/// `rc` of the MPI call `call`; a failure ends the job with one line: `call` failed `during`
/// (on rank `rank`, host `host`).
pub fn check(rc: c_int, call: &str, rank: usize, host: &str, during: impl FnOnce() -> String) {
    if rc != 0 {
        fail(&line(call, &during(), rank, host, &error_string(rc)));
    }
}

/// The job's line for a failed call (without the `coll-bench: error: ` prefix).
pub fn line(call: &str, during: &str, rank: usize, host: &str, message: &str) -> String {
    format!("rank {rank} ({host}): {call} failed in {during}: {message}; aborting the job")
}

/// End the job because an MPI call failed (or an NCCL call once the sweep has begun: the NCCL
/// backend's `fatal` ends the job the same way): through the registered ender if there is one, else
/// print `line` here and end this process with exit code 2 (`_exit`: no MPI call, no unwinding;
/// the launcher ends the other ranks).
pub fn fail(line: &str) -> ! {
    crate::error::ending();
    let ender = ENDER.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(end) = ender {
        end(line);
    }
    let text = format!("coll-bench: error: {line}\n");
    // SAFETY: writing a live buffer to stderr, then _exit, which runs nothing else.
    unsafe {
        libc::write(2, text.as_ptr().cast(), text.len());
        libc::_exit(crate::error::exit::ERROR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_stack_becomes_one_line() {
        let mpich = "Invalid count, error stack:\nPMPI_Allreduce(416): MPI_Allreduce(sbuf=0x1, count=-1) failed\n\
                     PMPI_Allreduce(357): Negative count, value is -1\n";
        assert_eq!(
            one_line(mpich),
            "Invalid count, error stack: PMPI_Allreduce(416): MPI_Allreduce(sbuf=0x1, count=-1) failed; \
             PMPI_Allreduce(357): Negative count, value is -1"
        );
        assert_eq!(one_line("MPI_ERR_COUNT: invalid count argument"), "MPI_ERR_COUNT: invalid count argument");
    }

    #[test]
    fn the_line_names_rank_host_call_and_message() {
        let l = line("MPI_Allreduce", "all-reduce of 8 B (float, sum, out-of-place)", 1, "n1", "MPI_ERR_COUNT: x");
        assert_eq!(
            l,
            "rank 1 (n1): MPI_Allreduce failed in all-reduce of 8 B (float, sum, out-of-place): MPI_ERR_COUNT: x; \
             aborting the job"
        );
    }
}
