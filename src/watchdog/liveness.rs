//! A rank that dies (`kill -9`, a crash) named at once, before the launcher tears the job down:
//! every rank but 0 holds one TCP connection to its parent in the announcement tree (`tree`:
//! rank r's parent is (r − 1) / 31), opened with the side channel. The kernel closes a
//! process's sockets when it ends, however it ends, so the other end reads end-of-file within
//! microseconds; a stopped rank's socket stays open (that is the deadline's case).
//!
//! Each rank watches its links: its parent and its children, at most `tree::CHILDREN` + 1
//! descriptors whatever the number of ranks (up to 32 ranks every rank's parent is rank 0, the
//! star it was before the tree; at 16 384 ranks rank 0 would otherwise hold 16 383). A death is
//! named by the dead rank's parent ([`namer`]), rank 0's by rank 1; the dead rank's children
//! wait for that word (`watchdog::died`).
//!
//! An end that is not a death says so first with one byte: `CLOSE` when a watchdog is dropped
//! (the sweep is over, the process goes on), `OWN` when the process ends the job with an outcome
//! of its own (its line, its table, its error: `crate::error::ending`), `BYE_SIGNALLED` from the
//! SIGINT/SIGTERM handler (`crate::report::interrupted`). End-of-file after none of them is a
//! death. A rank that hears `OWN` says it on to its other links (`crate::error::ending`), so the
//! word that the job is ending reaches every rank through the tree (in the star, rank 0 heard
//! it from every rank directly): a rank the launcher then kills is not taken for dead by its
//! links, and rank 0 does not report the launcher's SIGTERM as an interruption.
//!
//! When a rank cannot hold its links (the limit on open files, raised to its hard limit first,
//! below `tree::CHILDREN` + 1 spare descriptors) or a link cannot be made, there are no links on
//! any rank, and a death is left to the launcher and the deadlines as before.

use super::channel::Channel;
use super::tree;
use crate::world::World;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// The watchdog is dropped: the process goes on without it.
pub const CLOSE: u8 = b'C';
/// The process ends the job with an outcome of its own.
pub const OWN: u8 = crate::error::BYE_OWN;

/// How long a parent waits for its children's connections at the start.
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
    /// Collective: every rank with children listens, every rank but 0 connects to its parent.
    /// `None` on every rank when any rank could not (its links are closed at once).
    pub fn open(world: &World, ch: &Channel) -> Option<Links> {
        let (n, me) = (world.size, world.rank);
        let children = tree::children(me, n);
        let listener = if !children.is_empty() && enough_files(children.len() + 1) {
            TcpListener::bind(("0.0.0.0", 0)).ok()
        } else {
            None
        };
        let port = listener.as_ref().and_then(|l| l.local_addr().ok()).map(|a| a.port()).unwrap_or(0);
        // Every rank's port (0: none, or it could not listen): 2 bytes a rank.
        let ports = world.all_gather_same(&port.to_be_bytes());
        let port_of = |r: usize| u16::from_be_bytes([ports[2 * r], ports[2 * r + 1]]);
        let mut peers = vec![];
        let mut ok = children.is_empty() || port != 0;
        if let Some(p) = tree::parent(me) {
            let linked = (port_of(p) != 0)
                .then(|| connect(&ch.ips_of(p), port_of(p)))
                .flatten()
                .and_then(|mut s| s.write_all(&(me as u32).to_be_bytes()).is_ok().then_some(s));
            match linked {
                Some(s) => peers.push((p, s)),
                None => ok = false,
            }
        }
        if let (Some(l), true) = (&listener, port != 0) {
            let got = accept(l, children.len());
            ok &= got.len() == children.len() && got.iter().all(|(r, _)| children.contains(r));
            peers.extend(got);
        }
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

/// The rank that names `dead`'s death: its parent, which watches it; rank 0's, rank 1 (its first
/// child). Every other rank that sees the death (the dead rank's children) waits for its word.
pub fn namer(dead: usize) -> usize {
    tree::parent(dead).unwrap_or(1)
}

/// Whether this process may hold `links` more descriptors: the soft limit on open files raised
/// to the hard one if needed, with 256 to spare for MPI and the reports.
fn enough_files(links: usize) -> bool {
    let need = links as u64 + 256;
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

/// A parent: `n` connections (its children), each introduced by its rank, within `ACCEPT_WAIT`.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank's death is seen by its namer (a link of the dead rank), and no rank holds more
    /// than `CHILDREN` + 1 links, at any n: the bound the star (n − 1 at rank 0) lacked.
    #[test]
    fn each_death_has_one_namer_who_watches_it_and_links_stay_bounded() {
        let links = |r: usize, n: usize| tree::parent(r).into_iter().chain(tree::children(r, n)).collect::<Vec<_>>();
        for n in [2, 3, 32, 33, 64, 128, 1000, 4096, 16_384] {
            for r in 0..n {
                let mine = links(r, n);
                assert!(mine.len() <= tree::CHILDREN + 1, "rank {r} of {n}: {} links", mine.len());
                assert!(mine.iter().all(|&p| links(p, n).contains(&r)), "rank {r} of {n}: a one-way link");
                let namer = namer(r);
                assert!(namer < n && namer != r && mine.contains(&namer), "rank {r} of {n}: namer {namer}");
            }
        }
        // Up to 32 ranks, the star: rank 0 names every death but its own, which rank 1 names.
        assert!((1..32).all(|r| namer(r) == 0) && namer(0) == 1);
        assert_eq!((namer(40), namer(32), namer(1)), (1, 1, 0));
    }
}
