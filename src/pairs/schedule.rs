//! The round-robin tournament (circle method): n ranks meet every other rank exactly once in
//! n−1 rounds (n rounds when n is odd, one rank sitting out each round), each rank in at most
//! one pair per round, so a round measures many disjoint links at once.

/// Rounds of disjoint pairs `(a, b)` with `a < b`.
pub fn tournament(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return vec![];
    }
    let m = if n % 2 == 0 { n } else { n + 1 }; // m - 1 is the fixed seat; index n is "bye"
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

/// The ring's links in rank order (rank i with i+1, the last with 0) in rounds of disjoint pairs:
/// two for an even rank count, three for an odd one; one pair for 2 ranks, none for fewer.
pub fn ring(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return vec![];
    }
    if n == 2 {
        return vec![vec![(0, 1)]];
    }
    let mut even: Vec<(usize, usize)> = (0..n - 1).step_by(2).map(|i| (i, i + 1)).collect();
    let mut odd: Vec<(usize, usize)> = (1..n - 1).step_by(2).map(|i| (i, i + 1)).collect();
    if n % 2 == 0 {
        odd.push((0, n - 1));
        odd.sort();
        vec![even, odd]
    } else {
        even.sort();
        vec![even, odd, vec![(0, n - 1)]]
    }
}

/// Every pair on its own, one after the other: the slow way the tournament replaces.
pub fn sequential(n: usize) -> Vec<Vec<(usize, usize)>> {
    let mut rounds = vec![];
    for a in 0..n {
        for b in a + 1..n {
            rounds.push(vec![(a, b)]);
        }
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(n: usize) {
        let rounds = tournament(n);
        let expected_rounds = if n < 2 {
            0
        } else if n % 2 == 0 {
            n - 1
        } else {
            n
        };
        assert_eq!(rounds.len(), expected_rounds, "n={n}");
        let mut seen = HashSet::new();
        for round in &rounds {
            let mut busy = HashSet::new();
            for &(a, b) in round {
                assert!(a < b && b < n);
                assert!(busy.insert(a) && busy.insert(b), "n={n}: a rank twice in a round");
                assert!(seen.insert((a, b)), "n={n}: pair ({a},{b}) twice");
            }
            assert_eq!(round.len(), n / 2, "n={n}: a round leaves a pair idle");
        }
        assert_eq!(seen.len(), n * (n.saturating_sub(1)) / 2, "n={n}: not every pair");
    }

    #[test]
    fn the_ring_s_links_in_two_or_three_rounds() {
        assert!(ring(1).is_empty());
        assert_eq!(ring(2), [vec![(0, 1)]]);
        assert_eq!(ring(3), [vec![(0, 1)], vec![(1, 2)], vec![(0, 2)]]);
        for n in 3..=17 {
            let rounds = ring(n);
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
    }

    #[test]
    fn sequential_is_all_pairs_one_by_one() {
        let s = sequential(4);
        assert_eq!(s.len(), 6);
        assert!(s.iter().all(|r| r.len() == 1));
    }
}
