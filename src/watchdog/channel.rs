//! The watchdog's side channel: UDP sockets outside MPI, so that ranks can still tell each other
//! where they are when MPI's own progress is stuck (a stopped or dead rank, a link down). Set up
//! once, collectively, before the sweep: every rank binds two sockets on all its IPv4 addresses,
//! and the ports and addresses are exchanged through MPI. Packets carry a random job nonce and the
//! rank they are meant for, so nothing else on the network is taken for a rank.
//!
//! Steady state costs one `sendto` per watched step on the main thread, outside the timed calls
//! (`tree::announce`: "I arrived at step N", to the rank's parent in the announcement tree,
//! `tree`: at most `tree::FAN_IN` announcements per step reach any rank); nobody reads
//! them until the watchdog thread's next tick. At thousands of steps a second they overflow the
//! receiver's socket buffer between ticks (tens of thousands of drops in seconds, by
//! /proc/net/udp) and a stopped rank's buffer stays full, so they have a socket of their own
//! (`arrive_sock`, lossy by design: only the latest step matters). The inquiry's packets
//! (`Query`, `State`, `Done`) go to the other socket, which nothing floods: a `Done` lost to a
//! full buffer let a stopped rank, resumed by the launcher's SIGCONT at the job's end, print a
//! second line contradicting the first.

use super::transport::{Kind, Packet, State, Transport};
use crate::world::World;
use std::hash::{BuildHasher, Hasher};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};

const MAGIC: &[u8; 4] = b"CBW1";
/// Bytes of one rank's record in the start-up exchange: port, count, up to 31 IPv4 addresses.
const RECORD: usize = 128;
/// (Two ports, a count, the addresses.)
const MAX_ADDRS: usize = (RECORD - 5) / 4;
/// The longest description a packet carries (a failed MPI call's line, with MPICH's error stack,
/// may take a few hundred bytes).
const MAX_DESC: usize = 1400;

pub struct Channel {
    /// The inquiry's packets (`Query`, `State`, `Done`); every packet is sent from it.
    sock: UdpSocket,
    /// Received `Arrive` announcements only.
    arrive_sock: UdpSocket,
    nonce: u64,
    pub rank: usize,
    /// Where each rank's inquiry socket can be reached from this one, by rank.
    peers: Vec<Vec<SocketAddr>>,
    /// The same addresses with each rank's `arrive_sock` port.
    arrive_peers: Vec<Vec<SocketAddr>>,
}

fn bind() -> Option<UdpSocket> {
    UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).and_then(|s| s.set_nonblocking(true).map(|_| s)).ok()
}

impl Channel {
    /// Collective: every rank opens its socket and learns everyone's. `None` on every rank when
    /// any rank could not open one (a rank without a channel would look stopped to the others).
    pub fn open(world: &World) -> Option<Channel> {
        let (sock, arrive_sock) = (bind(), bind());
        let port_of =
            |s: &Option<UdpSocket>| s.as_ref().and_then(|s| s.local_addr().ok()).map(|a| a.port()).unwrap_or(0);
        let mut rec = [0u8; RECORD];
        rec[..2].copy_from_slice(&port_of(&sock).to_be_bytes());
        rec[2..4].copy_from_slice(&port_of(&arrive_sock).to_be_bytes());
        let addrs = ipv4_addresses();
        let count = addrs.len().min(MAX_ADDRS);
        rec[4] = count as u8;
        for (i, a) in addrs.iter().take(count).enumerate() {
            rec[5 + 4 * i..9 + 4 * i].copy_from_slice(&a.octets());
        }
        let all = world.all_gather_same(&rec[..]);
        let nonce = std::collections::hash_map::RandomState::new().build_hasher().finish();
        let nonce = world.broadcast_bytes(0, nonce.to_be_bytes().to_vec());
        let nonce = u64::from_be_bytes(nonce[..8].try_into().ok()?);
        let me = world.rank;
        let (mut peers, mut arrive_peers) = (vec![], vec![]);
        for (r, rec) in all.chunks(RECORD).enumerate() {
            let (port, arrive_port) = (u16::from_be_bytes([rec[0], rec[1]]), u16::from_be_bytes([rec[2], rec[3]]));
            if port == 0 || arrive_port == 0 {
                return None;
            }
            let addrs = (0..rec[4] as usize)
                .map(|i| Ipv4Addr::new(rec[5 + 4 * i], rec[6 + 4 * i], rec[7 + 4 * i], rec[8 + 4 * i]));
            let same_host = world.hosts[r] == world.hosts[me];
            // The same host: loopback. Another host: every address but loopback.
            let addrs: Vec<Ipv4Addr> =
                if same_host { vec![Ipv4Addr::LOCALHOST] } else { addrs.filter(|a| !a.is_loopback()).collect() };
            let with = |port| addrs.iter().map(|&a| SocketAddr::V4(SocketAddrV4::new(a, port))).collect::<Vec<_>>();
            peers.push(with(port));
            arrive_peers.push(with(arrive_port));
        }
        Some(Channel { sock: sock?, arrive_sock: arrive_sock?, nonce, rank: me, peers, arrive_peers })
    }

    pub fn size(&self) -> usize {
        self.peers.len()
    }

    /// The addresses rank `rank` can be reached at from this one (`liveness`).
    pub fn ips_of(&self, rank: usize) -> Vec<std::net::IpAddr> {
        self.peers[rank].iter().map(|a| a.ip()).collect()
    }

    /// Send to every address of rank `to` (`Arrive` to its announcement socket); errors are
    /// ignored (the packet is lost, as on a wire).
    pub fn send(&self, to: usize, kind: Kind, state: &State) {
        let bytes = self.encode(kind, to, state);
        let peers = if kind == Kind::Arrive { &self.arrive_peers } else { &self.peers };
        for a in &peers[to] {
            let _ = self.sock.send_to(&bytes, a);
        }
    }

    /// The next valid packet for this rank, if one is waiting. Never blocks.
    pub fn recv(&self) -> Option<Packet> {
        Self::recv_on(&self.sock, |b| self.decode(b).filter(|p| p.kind != Kind::Arrive))
            .or_else(|| Self::recv_on(&self.arrive_sock, |b| self.decode(b).filter(|p| p.kind == Kind::Arrive)))
    }

    /// The next packet on `sock` that `decode` accepts; strangers are skipped.
    fn recv_on(sock: &UdpSocket, decode: impl Fn(&[u8]) -> Option<Packet>) -> Option<Packet> {
        let mut buf = [0u8; 2048];
        loop {
            let (n, _) = sock.recv_from(&mut buf).ok()?;
            if let Some(p) = decode(&buf[..n]) {
                return Some(p);
            }
        }
    }

    fn encode(&self, kind: Kind, to: usize, s: &State) -> Vec<u8> {
        let mut b = Vec::with_capacity(40 + s.desc.len());
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&self.nonce.to_be_bytes());
        b.push(kind as u8);
        b.extend_from_slice(&(self.rank as u32).to_be_bytes());
        b.extend_from_slice(&(to as u32).to_be_bytes());
        b.extend_from_slice(&s.step.to_be_bytes());
        b.push(s.armed as u8);
        b.extend_from_slice(&((s.elapsed_s * 1e3).clamp(0.0, u32::MAX as f64) as u32).to_be_bytes());
        let mut end = s.desc.len().min(MAX_DESC);
        while !s.desc.is_char_boundary(end) {
            end -= 1;
        }
        b.extend_from_slice(&s.desc.as_bytes()[..end]);
        b
    }

    fn decode(&self, b: &[u8]) -> Option<Packet> {
        if b.len() < 34 || &b[..4] != MAGIC || u64::from_be_bytes(b[4..12].try_into().ok()?) != self.nonce {
            return None;
        }
        let kind = match b[12] {
            1 => Kind::Arrive,
            2 => Kind::Query,
            3 => Kind::State,
            4 => Kind::Done,
            5 => Kind::Failed,
            6 => Kind::End,
            7 => Kind::Bye,
            8 => Kind::Finish,
            9 => Kind::Heard,
            _ => return None,
        };
        let from = u32::from_be_bytes(b[13..17].try_into().ok()?) as usize;
        let to = u32::from_be_bytes(b[17..21].try_into().ok()?) as usize;
        if to != self.rank || from >= self.size() {
            return None;
        }
        let state = State {
            step: u64::from_be_bytes(b[21..29].try_into().ok()?),
            armed: b[29] != 0,
            elapsed_s: u32::from_be_bytes(b[30..34].try_into().ok()?) as f64 / 1e3,
            desc: String::from_utf8_lossy(&b[34..]).into_owned(),
        };
        Some(Packet { kind, from, to, state })
    }
}

impl Transport for Channel {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        Channel::size(self)
    }

    fn send(&self, to: usize, kind: Kind, state: &State) {
        Channel::send(self, to, kind, state)
    }

    fn recv(&self) -> Option<Packet> {
        Channel::recv(self)
    }
}

/// The IPv4 addresses of this host's interfaces that are up, loopback included.
fn ipv4_addresses() -> Vec<Ipv4Addr> {
    let mut out = vec![];
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs stores a list it allocates in `head` (only on success); it is freed below
    // with freeifaddrs, and nothing from it outlives this function.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, valid until freeifaddrs.
        let ifa = unsafe { &*p };
        let up = ifa.ifa_flags & libc::IFF_UP as u32 != 0;
        // SAFETY: a non-null ifa_addr points to a sockaddr whose sa_family names its real type;
        // AF_INET means a sockaddr_in.
        unsafe {
            if up && !ifa.ifa_addr.is_null() && (*ifa.ifa_addr).sa_family as i32 == libc::AF_INET {
                let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                out.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        p = ifa.ifa_next;
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(rank: usize, n: usize, nonce: u64) -> Channel {
        let bind = || {
            let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            sock.set_nonblocking(true).unwrap();
            sock
        };
        Channel {
            sock: bind(),
            arrive_sock: bind(),
            nonce,
            rank,
            peers: vec![vec![]; n],
            arrive_peers: vec![vec![]; n],
        }
    }

    /// Point `from`'s packets for rank `to.rank` at `to`'s two sockets.
    fn connect(from: &mut Channel, to: &Channel) {
        from.peers[to.rank] = vec![to.sock.local_addr().unwrap()];
        from.arrive_peers[to.rank] = vec![to.arrive_sock.local_addr().unwrap()];
    }

    /// A flood of announcements that overflows the receiver's buffer (as thousands of steps a
    /// second do between two watchdog ticks, or while the receiver is stopped) does not cost the
    /// inquiry's packets sent after it.
    #[test]
    fn a_flood_of_announcements_does_not_drown_done() {
        let mut a = channel(1, 2, 9);
        let b = channel(0, 2, 9);
        connect(&mut a, &b);
        for step in 0..20_000 {
            super::super::tree::announce(&a, step);
        }
        a.send(0, Kind::Done, &State::default());
        let mut kinds = vec![];
        while let Some(p) = b.recv() {
            kinds.push(p.kind);
        }
        assert!(kinds.contains(&Kind::Done), "Done lost among {} packets", kinds.len());
        // The flood really overflowed the announcement socket (else this test proves nothing).
        assert!(kinds.len() < 20_000, "no announcement was dropped: {}", kinds.len());
        assert_eq!(kinds[0], Kind::Done, "the inquiry's packets come first");
    }

    #[test]
    fn packets_round_trip_and_strangers_are_ignored() {
        let a = channel(0, 4, 7);
        let b = channel(2, 4, 7);
        let s = State { step: 17, armed: true, elapsed_s: 5.25, desc: "all-reduce of 8 B (float, in-place)".into() };
        let bytes = a.encode(Kind::State, 2, &s);
        assert_eq!(b.decode(&bytes), Some(Packet { kind: Kind::State, from: 0, to: 2, state: s.clone() }));
        // Another job (nonce), another rank, garbage.
        assert_eq!(channel(2, 4, 8).decode(&bytes), None);
        assert_eq!(channel(1, 4, 7).decode(&bytes), None);
        assert_eq!(b.decode(&bytes[..20]), None);
        // Over the wire, through loopback.
        let mut b = b;
        connect(&mut b, &a);
        let mut a = a;
        connect(&mut a, &b);
        a.send(2, Kind::Query, &s);
        let got = (0..200).find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            b.recv()
        });
        assert_eq!(got.map(|p| (p.kind, p.from, p.state.step)), Some((Kind::Query, 0, 17)));
    }

    #[test]
    fn this_host_has_an_ipv4_address() {
        assert!(ipv4_addresses().iter().any(|a| a.is_loopback()), "{:?}", ipv4_addresses());
    }
}
