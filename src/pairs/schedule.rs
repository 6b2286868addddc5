//! Which ranks meet in which round, computed per round and rank, so no rank holds the whole
//! schedule (n²/2 pairs: 2 GiB at 16 384 ranks). The round-robin tournament (circle method): n
//! ranks meet every other rank exactly once in n−1 rounds (n rounds when n is odd, one rank
//! sitting out each round), each rank in at most one pair per round, so a round measures many
//! disjoint links at once. Also the ring's links (two or three rounds) and every pair on its own.

/// A schedule of rounds of disjoint pairs `(a, b)`, `a < b`, over `n` ranks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Schedule {
    /// Every pair once, in n−1 rounds (n for odd n).
    Tournament(usize),
    /// The ring's links in rank order (rank i with i+1, the last with 0): two rounds for an even
    /// rank count, three for an odd one; one pair for 2 ranks, none for fewer.
    Ring(usize),
    /// Every pair on its own, one after the other: the slow way the tournament replaces.
    Sequential(usize),
}

impl Schedule {
    /// How many rounds.
    pub fn rounds(self) -> usize {
        match self {
            _ if self.ranks() < 2 => 0,
            Schedule::Tournament(n) => n - 1 + n % 2,
            Schedule::Ring(2) => 1,
            Schedule::Ring(n) => 2 + n % 2,
            Schedule::Sequential(n) => n * (n - 1) / 2,
        }
    }

    fn ranks(self) -> usize {
        match self {
            Schedule::Tournament(n) | Schedule::Ring(n) | Schedule::Sequential(n) => n,
        }
    }

    /// The pair `rank` is in at `round`, if any: O(1) for the tournament and the ring.
    pub fn pair_of(self, round: usize, rank: usize) -> Option<(usize, usize)> {
        let n = self.ranks();
        if round >= self.rounds() || rank >= n {
            return None;
        }
        let ordered = |x: usize, y: usize| Some((x.min(y), x.max(y)));
        match self {
            Schedule::Tournament(n) => {
                // Seats 0..m−1 turn around the fixed seat m−1 (seat n is the bye for odd n):
                // in round r the fixed seat meets r, and every other seat x meets the seat y
                // with x + y ≡ 2r (mod m−1).
                let m = n + n % 2;
                let seat = m - 1;
                let y = if rank == seat {
                    round
                } else if rank == round {
                    seat
                } else {
                    (2 * round + 2 * seat - rank) % seat
                };
                if y < n {
                    ordered(rank, y)
                } else {
                    None
                }
            }
            Schedule::Ring(2) => ordered(0, 1),
            Schedule::Ring(n) => {
                // Rounds 0 and 1: (i, i+1) for even and odd i below n−1; the closing link
                // (0, n−1) in round 1 for even n, in round 2 for odd n.
                let closing = round == 1 + n % 2 && (rank == 0 || rank == n - 1);
                if closing {
                    ordered(0, n - 1)
                } else if round < 2 && rank + 1 < n && rank % 2 == round {
                    ordered(rank, rank + 1)
                } else if round < 2 && rank >= 1 && (rank - 1) % 2 == round {
                    ordered(rank - 1, rank)
                } else {
                    None
                }
            }
            Schedule::Sequential(n) => {
                // Pair number `round` in (a, b) order.
                let (mut a, mut left) = (0, round);
                while left >= n - 1 - a {
                    left -= n - 1 - a;
                    a += 1;
                }
                let pair = (a, a + 1 + left);
                (rank == pair.0 || rank == pair.1).then_some(pair)
            }
        }
    }

    /// The pairs of `round`, in (a, b) order: O(n).
    pub fn round(self, round: usize) -> Vec<(usize, usize)> {
        (0..self.ranks()).filter_map(|x| self.pair_of(round, x).filter(|p| p.0 == x)).collect()
    }

    /// What its rounds are called in the report.
    pub fn rounds_name(self) -> &'static str {
        match self {
            Schedule::Sequential(_) => "sequential runs",
            _ => "tournament rounds",
        }
    }
}

/// Rounds of disjoint pairs, as [`crate::pairs::measure::rounds`] runs them.
pub trait Pairing {
    /// How many rounds.
    fn rounds(&self) -> usize;
    /// The pair `rank` is in at `round`, if any, `(a, b)` with `a < b`.
    fn pair_of(&self, round: usize, rank: usize) -> Option<(usize, usize)>;
}

impl Pairing for Schedule {
    fn rounds(&self) -> usize {
        Schedule::rounds(*self)
    }
    fn pair_of(&self, round: usize, rank: usize) -> Option<(usize, usize)> {
        Schedule::pair_of(*self, round, rank)
    }
}

/// Every rank pair once, a host pair at a time: the hosts meet in tournament rounds, and a host
/// round is `width` rounds (the most ranks on a host) in which the smaller host's k-th rank
/// meets the other's (k + s)-th, s = 0, 1, …, so all of a host pair's rank pairs are measured
/// in one host round, while each host talks to that one host only; then the pairs within each
/// host, a tournament per host, all hosts at once. As many rounds as the rank tournament, about
/// (n + the ranks per host); what rank 0 holds to take a host pair's median is one host round
/// (n × width / 2 values), not every pair (`links`). Needs each rank's host: O(n) per rank.
#[derive(Clone, Debug)]
pub struct ByHost {
    /// Each rank's host (in order of first appearance) and its place among that host's ranks.
    at: Vec<(usize, usize)>,
    /// Each host's ranks, in rank order.
    members: Vec<Vec<usize>>,
    /// Rounds per host round: the most ranks on a host.
    width: usize,
}

impl ByHost {
    /// From each rank's host name.
    pub fn new(hosts: &[String]) -> ByHost {
        let mut index: std::collections::HashMap<&str, usize> = Default::default();
        let mut members: Vec<Vec<usize>> = vec![];
        let mut at = Vec::with_capacity(hosts.len());
        for (rank, h) in hosts.iter().enumerate() {
            let x = *index.entry(h.as_str()).or_insert_with(|| {
                members.push(vec![]);
                members.len() - 1
            });
            at.push((x, members[x].len()));
            members[x].push(rank);
        }
        let width = members.iter().map(Vec::len).max().unwrap_or(0);
        ByHost { at, members, width }
    }

    /// Rounds between hosts (the within-host rounds come after them).
    fn between(&self) -> usize {
        Schedule::Tournament(self.members.len()).rounds() * self.width
    }

    /// Which host round `round` belongs to: every pair of one host pair comes in one host round;
    /// the pairs within hosts, in the last.
    pub fn host_round(&self, round: usize) -> usize {
        if round < self.between() {
            round / self.width
        } else {
            Schedule::Tournament(self.members.len()).rounds()
        }
    }
}

impl Pairing for ByHost {
    fn rounds(&self) -> usize {
        self.between() + Schedule::Tournament(self.width).rounds()
    }

    fn pair_of(&self, round: usize, rank: usize) -> Option<(usize, usize)> {
        let &(x, k) = self.at.get(rank)?;
        let ordered = |p: usize| Some((rank.min(p), rank.max(p)));
        if round < self.between() {
            let (hr, s) = (round / self.width, round % self.width);
            let (a, b) = Schedule::Tournament(self.members.len()).pair_of(hr, x)?;
            let y = if a == x { b } else { a };
            let (rx, ry) = (self.members[x].len(), self.members[y].len());
            // The smaller host (the lower one on a tie) is the base: its k-th rank meets the
            // other's (k + s)-th, s < the other's rank count, so no rank is met twice in a round.
            let x_is_base = (rx, x) < (ry, y);
            if x_is_base {
                (s < ry).then(|| self.members[y][(k + s) % ry]).and_then(ordered)
            } else {
                let base = (k + rx - s % rx) % rx;
                (s < rx && base < ry).then(|| self.members[y][base]).and_then(ordered)
            }
        } else {
            let w = round - self.between();
            let mine = &self.members[x];
            let (a, b) = Schedule::Tournament(mine.len()).pair_of(w, k)?;
            ordered(mine[if a == k { b } else { a }])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn all(s: Schedule) -> Vec<Vec<(usize, usize)>> {
        (0..s.rounds()).map(|r| s.round(r)).collect()
    }

    /// The circle method as it was written before the schedule was computed per rank: the
    /// per-rank formula must give the same rounds.
    fn circle(n: usize) -> Vec<Vec<(usize, usize)>> {
        if n < 2 {
            return vec![];
        }
        let m = if n % 2 == 0 { n } else { n + 1 };
        let mut rounds = vec![];
        for r in 0..m - 1 {
            let mut pairs = vec![];
            for i in 0..m / 2 {
                let (a, b) = if i == 0 { (r, m - 1) } else { ((r + i) % (m - 1), (r + m - 1 - i) % (m - 1)) };
                if a < n && b < n {
                    pairs.push((a.min(b), a.max(b)));
                }
            }
            pairs.sort();
            rounds.push(pairs);
        }
        rounds
    }

    fn check(n: usize) {
        let s = Schedule::Tournament(n);
        let rounds = all(s);
        assert_eq!(rounds, circle(n), "n={n}");
        let expected_rounds = if n < 2 {
            0
        } else if n % 2 == 0 {
            n - 1
        } else {
            n
        };
        assert_eq!(rounds.len(), expected_rounds, "n={n}");
        let mut seen = HashSet::new();
        for (r, round) in rounds.iter().enumerate() {
            let mut busy = HashSet::new();
            for &(a, b) in round {
                assert!(a < b && b < n);
                assert!(busy.insert(a) && busy.insert(b), "n={n}: a rank twice in a round");
                assert!(seen.insert((a, b)), "n={n}: pair ({a},{b}) twice");
                assert_eq!((s.pair_of(r, a), s.pair_of(r, b)), (Some((a, b)), Some((a, b))), "n={n}");
            }
            assert_eq!(round.len(), n / 2, "n={n}: a round leaves a pair idle");
        }
        assert_eq!(seen.len(), n * (n.saturating_sub(1)) / 2, "n={n}: not every pair");
    }

    #[test]
    fn the_ring_s_links_in_two_or_three_rounds() {
        assert!(all(Schedule::Ring(1)).is_empty());
        assert_eq!(all(Schedule::Ring(2)), [vec![(0, 1)]]);
        assert_eq!(all(Schedule::Ring(3)), [vec![(0, 1)], vec![(1, 2)], vec![(0, 2)]]);
        for n in 3..=17 {
            let rounds = all(Schedule::Ring(n));
            assert_eq!(rounds.len(), if n % 2 == 0 { 2 } else { 3 }, "n={n}");
            let mut links: Vec<(usize, usize)> = rounds.concat();
            for round in &rounds {
                let mut busy = HashSet::new();
                assert!(round.iter().all(|&(a, b)| busy.insert(a) && busy.insert(b)), "n={n}: a rank twice in a round");
            }
            links.sort();
            let mut want: Vec<(usize, usize)> = (0..n).map(|i| (i.min((i + 1) % n), i.max((i + 1) % n))).collect();
            want.sort();
            assert_eq!(links, want, "n={n}: every ring link once");
        }
    }

    #[test]
    fn every_pair_exactly_once_no_rank_twice_in_a_round() {
        for n in 0..=17 {
            check(n);
        }
        check(64);
        check(101);
        // At 16 384 ranks a rank's partner in any round is one formula away.
        let s = Schedule::Tournament(16_384);
        assert_eq!(s.rounds(), 16_383);
        assert_eq!(
            (s.pair_of(0, 16_383), s.pair_of(5, 16_383), s.pair_of(5, 5)),
            (Some((0, 16_383)), Some((5, 16_383)), Some((5, 16_383)))
        );
        assert_eq!((s.pair_of(5, 4), s.pair_of(5, 6)), (Some((4, 6)), Some((4, 6))));
    }

    #[test]
    fn sequential_is_all_pairs_one_by_one() {
        let s = all(Schedule::Sequential(4));
        assert_eq!(s, [[(0, 1)], [(0, 2)], [(0, 3)], [(1, 2)], [(1, 3)], [(2, 3)]]);
        assert_eq!(all(Schedule::Sequential(1)), Vec::<Vec<(usize, usize)>>::new());
    }
    /// Every rank pair once, no rank twice in a round, both ends agree; in a host round each
    /// host meets one host only and each host pair is whole; within-host pairs come last.
    fn check_by_host(hosts: &[String]) {
        let n = hosts.len();
        let s = ByHost::new(hosts);
        let mut seen = HashSet::new();
        let mut round_of_host_pair: std::collections::HashMap<(&str, &str), usize> = Default::default();
        for r in 0..s.rounds() {
            let mut busy = HashSet::new();
            let mut met: std::collections::HashMap<&str, &str> = Default::default();
            for x in 0..n {
                let Some((a, b)) = s.pair_of(r, x) else { continue };
                assert!(a < b && (x == a || x == b), "{hosts:?}");
                assert_eq!(s.pair_of(r, if x == a { b } else { a }), Some((a, b)), "{hosts:?} round {r}");
                if x != a {
                    continue;
                }
                assert!(busy.insert(a) && busy.insert(b), "{hosts:?}: a rank twice in round {r}");
                assert!(seen.insert((a, b)), "{hosts:?}: ({a},{b}) twice");
                let (ha, hb) = (hosts[a].as_str(), hosts[b].as_str());
                for (h, other) in [(ha, hb), (hb, ha)] {
                    assert_eq!(*met.entry(h).or_insert(other), other, "{hosts:?}: {h} meets two hosts in round {r}");
                }
                let key = (ha.min(hb), ha.max(hb));
                let hr = *round_of_host_pair.entry(key).or_insert(s.host_round(r));
                assert_eq!(hr, s.host_round(r), "{hosts:?}: {key:?} split over host rounds");
                if ha == hb {
                    assert_eq!(hr, s.host_round(s.rounds() - 1), "{hosts:?}: within a host before the end");
                }
            }
        }
        assert_eq!(seen.len(), n * n.saturating_sub(1) / 2, "{hosts:?}: not every pair");
        // About as many rounds as the rank tournament: the host tournament's times the most ranks
        // on a host, plus that host's own tournament.
        let h = round_of_host_pair.keys().flat_map(|(a, b)| [*a, *b]).collect::<HashSet<_>>().len();
        let w = s.width;
        assert_eq!(s.rounds(), Schedule::Tournament(h).rounds() * w + Schedule::Tournament(w).rounds(), "{hosts:?}");
    }

    #[test]
    fn by_host_every_pair_once_a_host_pair_at_a_time() {
        let named = |v: &[usize]| v.iter().map(|h| format!("h{h}")).collect::<Vec<_>>();
        for (hosts, per) in [(1, 1), (1, 4), (2, 1), (2, 2), (3, 2), (4, 2), (5, 3), (4, 8), (7, 1), (3, 5)] {
            // Blocks (mpirun's default) and round robin (--map-by node).
            check_by_host(&named(&(0..hosts * per).map(|r| r / per).collect::<Vec<_>>()));
            check_by_host(&named(&(0..hosts * per).map(|r| r % hosts).collect::<Vec<_>>()));
        }
        // Hosts of unequal rank counts.
        check_by_host(&named(&[0, 0, 0, 1, 2, 2, 3, 3, 3, 3, 3]));
        check_by_host(&named(&[2, 0, 1, 0, 0, 2, 1, 0]));
        // 16 384 ranks on 2 048 hosts: as many rounds as the rank tournament plus the 8 on a host.
        let big = ByHost::new(&named(&(0..16_384).map(|r| r / 8).collect::<Vec<_>>()));
        assert_eq!(big.rounds(), 2_047 * 8 + 7);
        // Round 3: host 1 meets host 2 046 (the circle method), its first rank that host's fourth.
        assert_eq!(big.pair_of(3, 8), Some((8, 8 * 2_046 + 3)));
    }
}
