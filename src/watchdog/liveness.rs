//! A rank that dies (`kill -9`, a crash) named at once, before the launcher tears the job down:
//! every rank holds one TCP connection to rank 0, opened with the side channel. The kernel
//! closes a process's sockets when it ends, however it ends, so the other end reads end-of-file
//! within microseconds; a stopped rank's socket stays open (that is the deadline's case).
//!
//! An end that is not a death says so first with one byte: `CLOSE` when a watchdog is dropped
//! (the sweep is over, the process goes on), `OWN` when the process ends the job with an outcome
//! of its own (its line, its table, its error: `crate::error::ending`), `BYE_SIGNALLED` from the
//! SIGINT/SIGTERM handler (`crate::report::interrupted`). End-of-file after none of them is a death. Rank 0 watches every
//! other rank; the others watch rank 0, and rank 1 names rank 0's death.
//!
//! Rank 0 holds one descriptor per rank: when the limit on open files is too low for that
//! (raised to its hard limit first), there are no links on any rank, and a death is left to
//! the launcher and the deadlines as before.

use super::channel::Channel;
use crate::world::World;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// The watchdog is dropped: the process goes on without it.
pub const CLOSE: u8 = b'C';
/// The process ends the job with an outcome of its own.
pub const OWN: u8 = crate::error::BYE_OWN;

/// How long rank 0 waits for every rank's connection at the start.
const ACCEPT_WAIT: Duration = Duration::from_secs(20);

/// What a peer's end turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// End-of-file (or a reset) without a word first: killed or crashed.
    Died,
    /// It ended the job with an outcome of its own (`OWN`).
    Own,
}

pub struct Links {
    /// (rank, stream) of each watched peer.
    peers: Vec<(usize, TcpStream)>,
    /// The last byte each peer sent (`CLOSE`, `OWN`, `BYE_SIGNALLED`), by index in `peers`.
    said: Vec<Option<u8>>,
    /// Wakes the thread's `poll` to stop: read end, write end.
    wake: [libc::c_int; 2],
}

impl Drop for Links {
    fn drop(&mut self) {
        for fd in self.wake.into_iter().filter(|&fd| fd >= 0) {
            // SAFETY: the pipe's descriptors, owned here, closed once.
            unsafe { libc::close(fd) };
        }
    }
}

impl Links {
    /// Collective: rank 0 listens, every other rank connects to it. `None` on every rank when
    /// any rank could not (its links are closed at once).
    pub fn open(world: &World, ch: &Channel) -> Option<Links> {
        let n = world.size;
        let listener = if world.rank == 0 && enough_files(n) { TcpListener::bind(("0.0.0.0", 0)).ok() } else { None };
        let port = listener.as_ref().and_then(|l| l.local_addr().ok()).map(|a| a.port()).unwrap_or(0);
        let port = world.broadcast_bytes(0, port.to_be_bytes().to_vec());
        let port = u16::from_be_bytes([port[0], port[1]]);
        let mut peers = vec![];
        if port != 0 {
            if world.rank == 0 {
                if let Some(l) = &listener {
                    peers = accept(l, n - 1);
                }
            } else if let Some(mut s) = connect(&ch.ips_of(0), port) {
                if s.write_all(&(world.rank as u32).to_be_bytes()).is_ok() {
                    peers.push((0, s));
                }
            }
        }
        let ok = port != 0 && peers.len() == if world.rank == 0 { n - 1 } else { 1 };
        let all = world.all_gather_same(&[ok as u8]);
        if all.contains(&0) {
            return None;
        }
        let mut wake = [-1; 2];
        // SAFETY: pipe(2) fills the two descriptors of a fresh pipe.
        if unsafe { libc::pipe(wake.as_mut_ptr()) } != 0 {
            // Every rank has its links: a rank without a thread only misses deaths.
            wake = [-1, -1];
        }
        for (_, s) in &peers {
            let _ = s.set_nonblocking(true);
        }
        crate::error::tell_on_ending(peers.iter().map(|(_, s)| s.as_raw_fd()).collect());
        Some(Links { said: vec![None; peers.len()], peers, wake })
    }

    /// Block until a watched peer dies or says `OWN` (returns it and how; call again to go on
    /// watching the others), or `Stopper::stop` is called (`None`). A peer that said `CLOSE`,
    /// `BYE_SIGNALLED` or `OWN` is not taken for dead when it ends.
    pub fn wait(&mut self) -> Option<(usize, Ended)> {
        loop {
            let mut fds: Vec<libc::pollfd> = self
                .peers
                .iter()
                .zip(&self.said)
                .map(|((_, s), w)| libc::pollfd {
                    fd: if w.is_some() { -1 } else { s.as_raw_fd() },
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            fds.push(libc::pollfd { fd: self.wake[0], events: libc::POLLIN, revents: 0 });
            // SAFETY: `fds` is a live array of that many pollfd.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if rc < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return None;
            }
            if fds.last().is_some_and(|f| f.revents != 0) || self.wake[0] < 0 {
                return None;
            }
            for (i, f) in fds.iter().enumerate().take(self.peers.len()) {
                if f.revents == 0 {
                    continue;
                }
                let mut buf = [0u8; 16];
                match (&self.peers[i].1).read(&mut buf) {
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                    Ok(k) if k > 0 => {
                        self.said[i] = Some(buf[k - 1]);
                        if buf[k - 1] == OWN {
                            return Some((self.peers[i].0, Ended::Own));
                        }
                    }
                    // End-of-file or a reset without a word first (a peer that said one is not
                    // polled any more).
                    _ => {
                        self.said[i] = Some(CLOSE);
                        return Some((self.peers[i].0, Ended::Died));
                    }
                }
            }
        }
    }

    /// A handle that ends `wait` from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.wake[1])
    }
}

/// Ends a `Links::wait` in another thread.
#[derive(Clone, Copy)]
pub struct Stopper(libc::c_int);

impl Stopper {
    /// Say `CLOSE` to the peers is the caller's (`close`); this only wakes the thread.
    pub fn stop(self) {
        if self.0 >= 0 {
            // SAFETY: one byte to the pipe's write end, which stays open (leaked) for the process.
            unsafe {
                libc::write(self.0, [1u8].as_ptr().cast(), 1);
            }
        }
    }
}

/// The watchdog is dropped: tell the peers this is not a death, and stop telling them at the
/// process's end (`crate::error::ending`).
pub fn close() {
    crate::error::tell_on_ending_byte(CLOSE);
    crate::error::tell_on_ending(vec![]);
}

/// Whether this process may hold a descriptor per rank (rank 0): the soft limit on open files
/// raised to the hard one if needed, with 256 to spare for MPI and the reports.
fn enough_files(n: usize) -> bool {
    let need = n as u64 + 256;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit on a live rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return false;
        }
        if lim.rlim_cur >= need {
            return true;
        }
        if lim.rlim_max < need {
            return false;
        }
        lim.rlim_cur = need.max(lim.rlim_cur);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0
    }
}

/// Rank 0: `n` connections, each introduced by its rank, within `ACCEPT_WAIT`.
fn accept(l: &TcpListener, n: usize) -> Vec<(usize, TcpStream)> {
    let deadline = Instant::now() + ACCEPT_WAIT;
    let _ = l.set_nonblocking(true);
    let mut out = vec![];
    while out.len() < n && Instant::now() < deadline {
        match l.accept() {
            Ok((mut s, _)) => {
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut r = [0u8; 4];
                if s.read_exact(&mut r).is_ok() {
                    let _ = s.set_read_timeout(None);
                    out.push((u32::from_be_bytes(r) as usize, s));
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    out
}

/// Connect to the first of `ips` that answers on `port`.
fn connect(ips: &[IpAddr], port: u16) -> Option<TcpStream> {
    ips.iter().find_map(|&ip| TcpStream::connect_timeout(&SocketAddr::new(ip, port), Duration::from_secs(5)).ok())
}
