//! Leaving MPICH's process manager in order without `MPI_Finalize`.
//!
//! Under Hydra (MPICH's `mpiexec`) each rank talks to its host's proxy over a socket whose number
//! is in `PMI_FD`, in the PMI-1 wire protocol (`cmd=init pmi_version=1 …`, as `strace` of any
//! MPICH program shows). When that socket closes before the rank has said `cmd=finalize`, the
//! proxy takes the rank for crashed and SIGKILLs every other rank of its host; the server prints
//! its `BAD TERMINATION` banner for any rank that a signal ended, and returns that signal's
//! number. A rank that says `cmd=finalize` first and gets `cmd=finalize_ack` is off the proxy's
//! books: its exit code is its own, and nobody is killed for it. That is what `MPI_Finalize`
//! sends last; `finalize` sends it alone, without the collective part of `MPI_Finalize`, which
//! could block on a broken collective.
//!
//! Only when every rank is known to end by itself (the side channel's orderly end): a rank that
//! has left the books cannot be ended by the launcher any more, so a stuck one must not leave.
//! Slurm's `srun --mpi=pmi2` hands its tasks a `PMI_FD` too: its slurmstepd answers the same
//! PMI-1 lines (MPICH starts there with `cmd=init pmi_version=1`), the acknowledgement with an
//! attribute (`cmd=finalize_ack rc=0`), and a task that has said `cmd=finalize` ends with its own
//! code there as well.
//! Elsewhere (Open MPI's PMIx, no launcher) there is no `PMI_FD` and nothing to do.

use std::os::raw::c_int;
use std::time::{Duration, Instant};

/// How long to wait for the proxy's acknowledgement.
const ACK_WAIT: Duration = Duration::from_secs(2);

/// The PMI-1 socket to this rank's Hydra proxy.
#[derive(Clone, Copy, Debug)]
pub struct Pmi {
    fd: c_int,
}

impl Pmi {
    /// The socket `PMI_FD` names, read once while the process is single-threaded (getenv).
    pub fn from_env() -> Option<Pmi> {
        std::env::var("PMI_FD").ok()?.trim().parse::<c_int>().ok().filter(|&fd| fd >= 0).map(|fd| Pmi { fd })
    }

    /// Say `cmd=finalize` and wait (at most `ACK_WAIT`) for `cmd=finalize_ack`; true when it came.
    /// Makes no MPI call and takes no lock: safe from the watchdog thread while the main thread
    /// is blocked inside MPI (which does not use this socket between start-up and finalize).
    pub fn finalize(self) -> bool {
        const ASK: &[u8] = b"cmd=finalize\n";
        // SAFETY: writing a live buffer to a descriptor; a closed or wrong one gives an error.
        let sent = unsafe { libc::write(self.fd, ASK.as_ptr().cast(), ASK.len()) };
        if sent != ASK.len() as isize {
            return false;
        }
        let deadline = Instant::now() + ACK_WAIT;
        let mut got = Vec::new();
        while Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now()).as_millis().max(1) as c_int;
            let mut pfd = libc::pollfd { fd: self.fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one live pollfd.
            if unsafe { libc::poll(&mut pfd, 1, left) } <= 0 {
                return false;
            }
            let mut buf = [0u8; 256];
            // SAFETY: reading into a live buffer of its length.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return false;
            }
            got.extend_from_slice(&buf[..n as usize]);
            if is_ack(&got) {
                return true;
            }
        }
        false
    }
}

/// Whether the proxy's answer so far holds the finalize acknowledgement: a line whose command is
/// `cmd=finalize_ack`, alone (Hydra) or followed by attributes (Slurm's `mpi_pmi2` plugin, which
/// answers the PMI-1 wire protocol too: `cmd=finalize_ack rc=0`).
fn is_ack(answer: &[u8]) -> bool {
    String::from_utf8_lossy(answer).lines().any(|l| l.split_whitespace().next() == Some("cmd=finalize_ack"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_acknowledgement_is_one_whole_line() {
        assert!(is_ack(b"cmd=finalize_ack\n"));
        // Slurm's srun --mpi=pmi2 (slurmstepd), as strace of a rank there shows.
        assert!(is_ack(b"cmd=finalize_ack rc=0\n"));
        assert!(!is_ack(b"cmd=finalize_a"));
        assert!(!is_ack(b"cmd=finalize_acknowledged rc=0\n"));
        assert!(!is_ack(b"cmd=barrier_out\n"));
    }

    /// The exchange with a stand-in proxy: the other end of a socket pair answers as Hydra does.
    #[test]
    fn finalize_says_it_and_waits_for_the_ack() {
        let (ours, proxy) = std::os::unix::net::UnixStream::pair().unwrap();
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let answer = std::thread::spawn(move || {
            let mut proxy = proxy;
            let mut buf = [0u8; 64];
            let n = proxy.read(&mut buf).unwrap();
            proxy.write_all(b"cmd=finalize_ack\n").unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        assert!(Pmi { fd: ours.as_raw_fd() }.finalize());
        assert_eq!(answer.join().unwrap(), "cmd=finalize\n");
    }

    #[test]
    fn no_answer_is_no_ack() {
        let (ours, proxy) = std::os::unix::net::UnixStream::pair().unwrap();
        use std::os::fd::AsRawFd;
        drop(proxy);
        assert!(!Pmi { fd: ours.as_raw_fd() }.finalize());
    }
}
