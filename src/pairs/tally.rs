//! What rank 0 keeps of the pairs as the rounds arrive, and the verdict it draws from them. Every
//! pair while there are at most [`KEPT`]: the table is printed and the slow pairs judged on them
//! exactly. Always, a summary bounded whatever the rank count: each bandwidth counted in a bin
//! of 2^(1/64) (1.1% wide), over all pairs and per host, and the slowest pairs. Beyond [`KEPT`]
//! pairs (more than 128 ranks) the median, the slow pairs and their hosts come from the summary:
//! the median to within a bin, and "below half the median" as "below half the lower edge of the
//! median's bin", which the bins count exactly, per host too.

use super::types::PairResult;
use std::collections::BTreeMap;

/// Pairs kept one by one (and printed as a table) at most: every pair of 128 ranks (8 128).
pub const KEPT: usize = 8192;
/// Slow pairs listed at most; the rest are counted (and are in the CSV).
pub const LISTED: usize = 100;
/// Hosts named at most in the slow pairs' line; the rest are counted.
pub const HOSTS_NAMED: usize = 10;
/// Bins per factor of two of bandwidth in the summary.
const BINS_PER_OCTAVE: f64 = 64.0;

/// Counts of pairs by bandwidth bin.
type Bins = BTreeMap<i64, u64>;

/// A bandwidth's bin: floor(log2(GB/s) × 64); zero or NaN below every bin, infinity above.
fn bin(gbps: f64) -> i64 {
    if gbps.is_nan() || gbps <= 0.0 {
        i64::MIN
    } else {
        (gbps.log2() * BINS_PER_OCTAVE).floor() as i64
    }
}

/// The pairs, as rank 0 keeps them.
pub struct Tally {
    /// Each rank's host, as an index into `host_names`.
    host_of: Vec<usize>,
    host_names: Vec<String>,
    keep: usize,
    /// How many slowest pairs to hold: the listed ones, or `--top` when none is slow.
    slowest_held: usize,
    count: usize,
    /// Every pair while `count` ≤ `keep`; emptied beyond.
    kept: Vec<PairResult>,
    all: Bins,
    per_host: Vec<Bins>,
    /// The slowest pairs so far, slowest first.
    slowest: Vec<PairResult>,
}

/// What the report says of the pairs.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub pairs: usize,
    /// Every pair in (a, b) order, when at most [`KEPT`].
    pub table: Option<Vec<PairResult>>,
    /// The median bandwidth (GB/s): exact with the table, the centre of its bin without.
    pub median_gbps: f64,
    /// How many pairs are below half the median.
    pub slow: usize,
    /// The slow pairs, slowest first (at most [`LISTED`]); when none is slow, the `--top`
    /// slowest for reference.
    pub listed: Vec<PairResult>,
    /// The hosts in the slow pairs (when none is slow, in the listed ones), most first, with
    /// how many of those pairs each is in.
    pub hosts: Vec<(String, usize)>,
}

impl Tally {
    /// For ranks on `hosts` (by rank), listing the `top` slowest when none is slow.
    pub fn new(hosts: &[String], top: usize) -> Tally {
        Tally::keeping(hosts, top, KEPT)
    }

    /// As [`Tally::new`], keeping at most `keep` pairs one by one.
    pub fn keeping(hosts: &[String], top: usize, keep: usize) -> Tally {
        let (names, host_of) = crate::layout::numbered_by_first_rank(hosts.iter().map(String::as_str));
        let host_names: Vec<String> = names.into_iter().map(str::to_string).collect();
        let per_host = vec![Bins::new(); host_names.len()];
        Tally {
            host_of,
            host_names,
            keep,
            slowest_held: top.max(LISTED),
            count: 0,
            kept: vec![],
            all: Bins::new(),
            per_host,
            slowest: vec![],
        }
    }

    /// Take one round's pairs.
    pub fn add(&mut self, pairs: &[PairResult]) {
        for p in pairs {
            let b = bin(p.bandwidth_gbps);
            *self.all.entry(b).or_default() += 1;
            let (ha, hb) = (self.host_of[p.a], self.host_of[p.b]);
            *self.per_host[ha].entry(b).or_default() += 1;
            if hb != ha {
                *self.per_host[hb].entry(b).or_default() += 1;
            }
        }
        self.count += pairs.len();
        if self.count <= self.keep {
            self.kept.extend_from_slice(pairs);
        } else {
            self.kept = vec![];
        }
        self.slowest.extend_from_slice(pairs);
        self.slowest.sort_by(|x, y| x.bandwidth_gbps.total_cmp(&y.bandwidth_gbps));
        self.slowest.truncate(self.slowest_held);
    }

    /// How many pairs it holds one by one (the kept and the slowest), and how many bins:
    /// bounded by [`KEPT`], `top` and the hosts, not by the pairs.
    pub fn held(&self) -> (usize, usize) {
        (self.kept.len() + self.slowest.len(), self.all.len() + self.per_host.iter().map(Bins::len).sum::<usize>())
    }

    /// Whether every pair is kept (and the verdict exact).
    pub fn exact(&self) -> bool {
        self.count <= self.keep
    }

    /// The verdict on every pair taken, listing the `top` slowest when none is slow.
    pub fn verdict(&self, top: usize) -> Verdict {
        if self.exact() {
            self.exact_verdict(top)
        } else {
            self.summary_verdict(top)
        }
    }

    fn exact_verdict(&self, top: usize) -> Verdict {
        let mut table = self.kept.clone();
        table.sort_by_key(|p| (p.a, p.b));
        let mut sorted = self.kept.clone();
        sorted.sort_by(|x, y| x.bandwidth_gbps.total_cmp(&y.bandwidth_gbps));
        let median_gbps = sorted.get(sorted.len() / 2).map_or(0.0, |p| p.bandwidth_gbps);
        let slow: Vec<PairResult> = sorted.iter().copied().filter(|p| p.bandwidth_gbps < 0.5 * median_gbps).collect();
        let hosts =
            if slow.is_empty() { self.hosts_in(&sorted[..top.min(sorted.len())]) } else { self.hosts_in(&slow) };
        let listed = if slow.is_empty() {
            sorted[..top.min(sorted.len())].to_vec()
        } else {
            slow[..slow.len().min(LISTED)].to_vec()
        };
        Verdict { pairs: self.count, table: Some(table), median_gbps, slow: slow.len(), listed, hosts }
    }

    fn summary_verdict(&self, top: usize) -> Verdict {
        let half = self.count as u64 / 2;
        let mut below = 0;
        let median_bin = self
            .all
            .iter()
            .find(|(_, n)| {
                below += **n;
                below > half
            })
            .map_or(0, |(b, _)| *b);
        let median_gbps = 2f64.powf((median_bin as f64 + 0.5) / BINS_PER_OCTAVE);
        // Below half the lower edge of the median's bin: whole bins, counted exactly.
        let cut = median_bin.saturating_sub(BINS_PER_OCTAVE as i64);
        let under = |bins: &Bins| bins.range(..cut).map(|(_, n)| *n).sum::<u64>() as usize;
        let slow = under(&self.all);
        let (listed, hosts) = if slow == 0 {
            let listed = self.slowest[..top.min(self.slowest.len())].to_vec();
            let hosts = self.hosts_in(&listed);
            (listed, hosts)
        } else {
            let listed: Vec<PairResult> =
                self.slowest.iter().copied().filter(|p| bin(p.bandwidth_gbps) < cut).take(LISTED).collect();
            let mut hosts: Vec<(String, usize)> = self
                .per_host
                .iter()
                .enumerate()
                .map(|(h, bins)| (self.host_names[h].clone(), under(bins)))
                .filter(|(_, n)| *n > 0)
                .collect();
            hosts.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            (listed, hosts)
        };
        Verdict { pairs: self.count, table: None, median_gbps, slow, listed, hosts }
    }

    /// The hosts in `pairs`, most first, with how many of them each is in.
    fn hosts_in(&self, pairs: &[PairResult]) -> Vec<(String, usize)> {
        let mut counts = vec![0usize; self.host_names.len()];
        for p in pairs {
            let (ha, hb) = (self.host_of[p.a], self.host_of[p.b]);
            counts[ha] += 1;
            if hb != ha {
                counts[hb] += 1;
            }
        }
        let mut out: Vec<(String, usize)> = counts
            .into_iter()
            .enumerate()
            .filter(|(_, n)| *n > 0)
            .map(|(h, n)| (self.host_names[h].clone(), n))
            .collect();
        out.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::schedule::Schedule;
    use super::*;

    fn pr(a: usize, b: usize, bw: f64) -> PairResult {
        PairResult { a, b, round: 0, latency_us: 1.0, bandwidth_gbps: bw }
    }

    fn hosts(n: usize, per_host: usize) -> Vec<String> {
        (0..n).map(|r| format!("n{:04}", r / per_host)).collect()
    }

    /// A pseudo-random spread of ±`width` around 1, the same for the same pair.
    fn jitter(a: usize, b: usize, width: f64) -> f64 {
        let x = (a as u64).wrapping_mul(6_364_136_223_846_793_005).wrapping_add(b as u64 * 1_442_695_040_888_963_407);
        1.0 + width * (((x >> 33) % 2001) as f64 / 1000.0 - 1.0)
    }

    /// Every pair of `n` ranks, a round at a time as rank 0 receives them: pairs crossing host
    /// `slow` at 0.1 GB/s, the rest at 5 GB/s, each ±10%.
    fn tally(n: usize, per_host: usize, slow: Option<usize>, keep: usize) -> Tally {
        let hosts = hosts(n, per_host);
        let mut t = Tally::keeping(&hosts, 5, keep);
        let s = Schedule::Tournament(n);
        for r in 0..s.rounds() {
            let round: Vec<PairResult> = s
                .round(r)
                .into_iter()
                .map(|(a, b)| {
                    let crossing = slow.is_some_and(|h| (a / per_host == h) != (b / per_host == h));
                    pr(a, b, if crossing { 0.1 } else { 5.0 } * jitter(a, b, 0.1))
                })
                .collect();
            t.add(&round);
        }
        t
    }

    #[test]
    fn a_slow_host_is_the_one_in_most_slow_pairs() {
        let mut t = Tally::new(&hosts(8, 2), 5);
        let mut pairs = vec![];
        for a in 0..8 {
            for b in a + 1..8 {
                let slow = a / 2 == 1 || b / 2 == 1;
                let cross = a / 2 != b / 2;
                pairs.push(pr(a, b, if slow && cross { 0.1 } else { 5.0 }));
            }
        }
        t.add(&pairs);
        let v = t.verdict(5);
        // n0001's two ranks with the 6 ranks elsewhere: 12 of 28 pairs, all listed.
        assert_eq!((v.pairs, v.slow, v.listed.len(), v.median_gbps), (28, 12, 12, 5.0));
        assert_eq!(v.hosts[0], ("n0001".to_string(), 12));
        assert_eq!(v.table.map(|t| t.len()), Some(28));
    }

    #[test]
    fn without_outliers_the_top_k_are_listed() {
        let mut t = Tally::new(&hosts(3, 1), 2);
        t.add(&[pr(0, 1, 5.0), pr(0, 2, 4.0), pr(1, 2, 4.5)]);
        let v = t.verdict(2);
        assert_eq!((v.slow, v.median_gbps), (0, 4.5));
        assert_eq!(v.listed.iter().map(|p| (p.a, p.b)).collect::<Vec<_>>(), vec![(0, 2), (1, 2)]);
        assert_eq!(v.hosts, [("n0002".to_string(), 2), ("n0000".to_string(), 1), ("n0001".to_string(), 1)]);
    }

    /// The summary's verdict is the exact one where the slow pairs stand clear of the rest: the
    /// same count, the same host, the same slowest listed; the median to within a bin (1.1%).
    #[test]
    fn the_summary_judges_as_the_pairs_do() {
        let exact = tally(64, 4, Some(5), KEPT).verdict(5);
        let summary = tally(64, 4, Some(5), 100).verdict(5);
        assert!(exact.table.is_some() && summary.table.is_none());
        // Host 5's 4 ranks with the 60 elsewhere.
        assert_eq!((exact.pairs, exact.slow, summary.slow), (2016, 240, 240));
        assert_eq!((exact.hosts[0].clone(), summary.hosts[0].clone()), (("n0005".into(), 240), ("n0005".into(), 240)));
        assert_eq!(summary.hosts.len(), 16, "every host has a rank pair with host 5");
        let gbps = |v: &[PairResult]| v.iter().map(|p| p.bandwidth_gbps).collect::<Vec<f64>>();
        assert_eq!(gbps(&exact.listed[..LISTED]), gbps(&summary.listed));
        assert!((summary.median_gbps / exact.median_gbps - 1.0).abs() < 0.011, "{summary:?}");
        // And when none is slow, both list the same top slowest.
        let (exact, summary) = (tally(64, 4, None, KEPT).verdict(5), tally(64, 4, None, 100).verdict(5));
        assert_eq!((exact.slow, summary.slow), (0, 0));
        assert_eq!(gbps(&exact.listed), gbps(&summary.listed));
    }

    /// 4 096 simulated ranks on 512 hosts, every one of the 8 386 560 pairs through the tally a
    /// round at a time: what it holds stays bounded (no pair kept one by one beyond the slowest,
    /// bins per host), and the slow host is named with every one of its slow pairs.
    #[test]
    fn at_4096_ranks_rank_0_holds_a_bounded_summary_and_names_the_slow_host() {
        let t = tally(4096, 8, Some(300), KEPT);
        let (pairs, bins) = t.held();
        assert_eq!(pairs, LISTED, "only the slowest are held one by one");
        assert!(bins < 512 * 40, "{bins} bins: the ±10% spread covers about 18 per host");
        let v = t.verdict(5);
        assert_eq!((v.pairs, v.slow), (4096 * 4095 / 2, 8 * 4088));
        assert_eq!(v.hosts[0], ("n0300".to_string(), 8 * 4088));
        assert_eq!(v.hosts.len(), 512);
        assert!(v.listed.len() == LISTED && v.listed.iter().all(|p| p.bandwidth_gbps < 0.11), "{:?}", v.listed);
        assert!((v.median_gbps / 5.0 - 1.0).abs() < 0.05, "{}", v.median_gbps);
    }
}
