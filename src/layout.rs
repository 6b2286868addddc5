//! Process groups: which ranks run a collective together (`--groups LAYOUT`, and the layouts of
//! `step`). Pure arithmetic on rank numbers and a host map; no MPI.
//!
//! # Layouts
//!
//! - `world`: one group of every rank (the default; today's behaviour).
//! - `node`: one group per host.
//! - `rail`: the i-th rank of every host (the cross-host groups); refused when hosts have
//!   unequal rank counts.
//! - `split=mod:N`, `split=div:N`: nccl-tests' split arithmetic, colour = rank % N resp.
//!   rank / N, ranks with one colour form a group. nccl-tests (`src/common.cu`) splits
//!   `MPI_COMM_WORLD` by `color = proc & mask` (`NCCL_TESTS_SPLIT_MASK`, hex); newer releases
//!   take `NCCL_TESTS_SPLIT="MOD 8"`, which its README calls equivalent to `AND 0x7`
//!   (`rank % 8`), and `DIV N` (`rank / N`). `mod` is that `MOD`, `div` that `DIV`.
//! - Named: `tp=T,pp=P,dp=D` (also `cp`, `ep`; a dimension left out has size 1; one `*`
//!   is filled from the world size), optional `order=tp-cp-ep-dp-pp` (fastest-varying
//!   first) and optional `:DIM` (which dimension's groups run).
//!
//! # Rank order of named layouts
//!
//! Megatron-LM's: `RankGenerator`/`initialize_model_parallel(order="tp-cp-ep-dp-pp")`, tensor
//! parallel fastest-varying, so the ranks of a TP group are consecutive and sit on one host:
//! `rank = tp + T·(cp + C·(ep + E·(dp + D·pp)))`. For `tp=2,pp=2,dp=2` on 8 ranks:
//!
//! ```text
//! rank   0 1 2 3 4 5 6 7
//! tp     0 1 0 1 0 1 0 1     tp groups {0,1} {2,3} {4,5} {6,7}
//! dp     0 0 1 1 0 0 1 1     dp groups {0,2} {1,3} {4,6} {5,7}
//! pp     0 0 0 0 1 1 1 1     pp groups {0,4} {1,5} {2,6} {3,7}
//! ```
//!
//! Differences from the first sketch of this API: `ep` is a plain dimension of the grid (all
//! five sizes multiply to the world), not Megatron's expert split of the data-parallel ranks;
//! a grid before [`Grid::resolve`] holds its `*` as `None`; without `:DIM` a named layout runs
//! its fastest-varying dimension of size > 1 ([`Layout::dim`]); `groups` refuses groups of
//! unequal size (a sweep row needs one group size).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One dimension of a parallel layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dim {
    /// Tensor parallel.
    Tp,
    /// Context parallel.
    Cp,
    /// Expert parallel (a plain dimension here).
    Ep,
    /// Data parallel.
    Dp,
    /// Pipeline parallel.
    Pp,
}

impl Dim {
    /// Megatron-LM's default order, fastest-varying first.
    pub const DEFAULT_ORDER: [Dim; 5] = [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Dp, Dim::Pp];

    pub fn name(self) -> &'static str {
        match self {
            Dim::Tp => "tp",
            Dim::Cp => "cp",
            Dim::Ep => "ep",
            Dim::Dp => "dp",
            Dim::Pp => "pp",
        }
    }

    pub fn parse(s: &str) -> Option<Dim> {
        Self::DEFAULT_ORDER.into_iter().find(|d| d.name().eq_ignore_ascii_case(s.trim()))
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The sizes of a named layout and its rank order. Serialised as its text form (`tp=2,dp=*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Grid {
    /// Size per dimension, indexed by `Dim as usize`; `None`: the one `*`, filled by
    /// [`Grid::resolve`]. A dimension not written has size 1.
    sizes: [Option<usize>; 5],
    /// Which dimensions were written (`tp=1` counts), for `:DIM` and for display.
    given: [bool; 5],
    /// Fastest-varying first; always all five dimensions.
    order: Vec<Dim>,
}

impl Grid {
    /// A resolved grid of the given sizes in the default order (`(Dim, size)` pairs; others 1).
    pub fn new(sizes: &[(Dim, usize)]) -> Grid {
        let mut g = Grid { sizes: [Some(1); 5], given: [false; 5], order: Dim::DEFAULT_ORDER.to_vec() };
        for &(d, n) in sizes {
            g.sizes[d.index()] = Some(n);
            g.given[d.index()] = true;
        }
        g
    }

    /// The size of `dim`: 1 when not written, `None` for an unresolved `*`.
    pub fn size_of(&self, dim: Dim) -> Option<usize> {
        self.sizes[dim.index()]
    }

    /// The size of `dim` in a resolved grid (an unresolved `*` reads as 0).
    pub fn size(&self, dim: Dim) -> usize {
        self.size_of(dim).unwrap_or(0)
    }

    /// Whether the layout wrote `dim`.
    pub fn has(&self, dim: Dim) -> bool {
        self.given[dim.index()]
    }

    /// Fastest-varying first (all five dimensions).
    pub fn order(&self) -> &[Dim] {
        &self.order
    }

    /// Ranks in all (product of the sizes); `None` while a `*` is open.
    pub fn world(&self) -> Option<usize> {
        self.sizes.iter().try_fold(1usize, |p, s| s.map(|s| p * s))
    }

    /// The grid with its `*` filled from `world_size`; refused (one line, naming `--groups`)
    /// when the sizes do not multiply to the world or `*` would not be a whole number.
    pub fn resolve(&self, world_size: usize) -> Result<Grid> {
        self.resolve_for("--groups", world_size)
    }

    /// [`Grid::resolve`], naming `flag` in the error.
    pub fn resolve_for(&self, flag: &str, world_size: usize) -> Result<Grid> {
        let fixed: usize = self.sizes.iter().flatten().product();
        let mut g = self.clone();
        match self.sizes.iter().position(|s| s.is_none()) {
            Some(i) => {
                if fixed == 0 || world_size % fixed != 0 {
                    return Err(Error::usage(format!(
                        "{flag} {self}: the other sizes multiply to {fixed}, which does not divide the {world_size} ranks"
                    )));
                }
                g.sizes[i] = Some(world_size / fixed);
            }
            None if fixed != world_size => {
                return Err(Error::usage(format!(
                    "{flag} {self}: the sizes multiply to {fixed}, not to the {world_size} ranks (use * for one size to fill)"
                )));
            }
            None => {}
        }
        Ok(g)
    }

    /// The coordinate of `rank` in every dimension (indexed like [`Dim::DEFAULT_ORDER`], i.e.
    /// `Dim as usize`), in a resolved grid.
    pub fn coords(&self, rank: usize) -> [usize; 5] {
        let mut c = [0; 5];
        let mut r = rank;
        for d in &self.order {
            let n = self.size(*d).max(1);
            c[d.index()] = r % n;
            r /= n;
        }
        c
    }

    /// The coordinate of `rank` in `dim`.
    pub fn coord(&self, rank: usize, dim: Dim) -> usize {
        self.coords(rank)[dim.index()]
    }

    /// The rank at coordinates `c` (inverse of [`Grid::coords`]).
    pub fn rank_at(&self, c: &[usize; 5]) -> usize {
        self.order.iter().rev().fold(0, |r, d| r * self.size(*d).max(1) + c[d.index()])
    }

    /// The groups of `dim` in a resolved grid: ranks that differ only in that coordinate,
    /// ranks ascending, groups ordered by their lowest rank, ids 0, 1, ….
    pub fn groups_of(&self, dim: Dim) -> Vec<Group> {
        let world = self.world().unwrap_or(0);
        let mut groups: Vec<Vec<usize>> = vec![];
        for rank in 0..world {
            let c = self.coords(rank);
            if c[dim.index()] != 0 {
                continue;
            }
            let ranks = (0..self.size(dim))
                .map(|k| {
                    let mut ck = c;
                    ck[dim.index()] = k;
                    self.rank_at(&ck)
                })
                .collect::<Vec<_>>();
            groups.push(ranks);
        }
        numbered(groups)
    }

    /// The layout's text form with this grid's sizes (`tp=2,pp=1,dp=*`).
    fn sizes_text(&self) -> String {
        let mut parts = vec![];
        for d in Dim::DEFAULT_ORDER {
            if self.has(d) || self.size_of(d).is_none() {
                parts.push(match self.size_of(d) {
                    Some(n) => format!("{d}={n}"),
                    None => format!("{d}=*"),
                });
            }
        }
        if parts.is_empty() {
            parts.push("tp=1".into());
        }
        if self.order != Dim::DEFAULT_ORDER {
            let o: Vec<&str> = self.order.iter().map(|d| d.name()).collect();
            parts.push(format!("order={}", o.join("-")));
        }
        parts.join(",")
    }
}

impl From<Grid> for String {
    fn from(g: Grid) -> String {
        g.to_string()
    }
}

impl TryFrom<String> for Grid {
    type Error = Error;
    fn try_from(s: String) -> Result<Grid> {
        match s.parse()? {
            Layout::Named(g, None) => Ok(g),
            _ => Err(Error::usage(format!("{s:?} is not a grid (tp=T,pp=P,dp=D, no :DIM)"))),
        }
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sizes_text())
    }
}

/// One group: its number and its world ranks (ascending).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub id: usize,
    pub ranks: Vec<usize>,
}

impl Group {
    pub fn size(&self) -> usize {
        self.ranks.len()
    }
    /// `rank`'s place in this group, if it is in it.
    pub fn index_of(&self, rank: usize) -> Option<usize> {
        self.ranks.iter().position(|r| *r == rank)
    }
}

/// Groups from lists of ranks: each sorted, the lists ordered by lowest rank, numbered.
fn numbered(mut lists: Vec<Vec<usize>>) -> Vec<Group> {
    lists.iter_mut().for_each(|l| l.sort_unstable());
    lists.retain(|l| !l.is_empty());
    lists.sort_by_key(|l| l[0]);
    lists.into_iter().enumerate().map(|(id, ranks)| Group { id, ranks }).collect()
}

/// `split=` arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitKind {
    /// colour = rank % N.
    Mod,
    /// colour = rank / N.
    Div,
}

/// Which ranks run a collective together. Serialised as its text form (`tp=2,dp=*:dp`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Layout {
    #[default]
    World,
    Node,
    Rail,
    Split {
        kind: SplitKind,
        n: usize,
    },
    /// A named layout and the dimension whose groups run (`None`: [`Layout::dim`] picks).
    Named(Grid, Option<Dim>),
}

/// The accepted forms, for error messages.
pub const ACCEPTED: &str =
    "world, node, rail, split=mod:N, split=div:N, or tp=T,pp=P,dp=D (also cp, ep; one * allowed; optional order=tp-cp-ep-dp-pp and :DIM)";

impl Layout {
    /// Parse `text`, naming `flag` in the one-line error.
    pub fn parse_for(flag: &str, text: &str) -> Result<Layout> {
        Self::parse_accepting(flag, text, ACCEPTED)
    }

    /// [`Layout::parse_for`] for a flag that takes a subset of the forms: `accepted` is what
    /// its error line says is accepted.
    pub fn parse_accepting(flag: &str, text: &str, accepted: &str) -> Result<Layout> {
        parse(text).map_err(|why| Error::usage(format!("{flag} {text:?}: {why}; accepted: {accepted}")))
    }

    /// The dimension whose groups run: the `:DIM` given, else the fastest-varying dimension
    /// of size > 1 (of a resolved grid), else the first one written.
    pub fn dim(&self) -> Option<Dim> {
        match self {
            Layout::Named(_, Some(d)) => Some(*d),
            Layout::Named(g, None) => g
                .order()
                .iter()
                .copied()
                .find(|d| g.size_of(*d).is_none_or(|n| n > 1))
                .or_else(|| g.order().iter().copied().find(|d| g.has(*d))),
            _ => None,
        }
    }

    pub fn is_world(&self) -> bool {
        *self == Layout::World
    }
}

fn parse(text: &str) -> std::result::Result<Layout, String> {
    let t = text.trim();
    match t.to_ascii_lowercase().as_str() {
        "world" => return Ok(Layout::World),
        "node" => return Ok(Layout::Node),
        "rail" => return Ok(Layout::Rail),
        "" => return Err("empty layout".into()),
        _ => {}
    }
    if let Some(rest) = t.strip_prefix("split=") {
        let (kind, n) = rest.split_once(':').ok_or("split needs mod:N or div:N")?;
        let kind = match kind.trim().to_ascii_lowercase().as_str() {
            "mod" => SplitKind::Mod,
            "div" => SplitKind::Div,
            other => return Err(format!("split kind {other:?} is not mod or div")),
        };
        let n: usize = n.trim().parse().map_err(|_| format!("split N {:?} is not a whole number", n.trim()))?;
        if n == 0 {
            return Err("split N must be at least 1".into());
        }
        return Ok(Layout::Split { kind, n });
    }
    let (body, dim) = match t.rsplit_once(':') {
        Some((b, d)) => {
            (b, Some(Dim::parse(d).ok_or_else(|| format!("no dimension {:?} (tp, cp, ep, dp, pp)", d.trim()))?))
        }
        None => (t, None),
    };
    let mut sizes = [Some(1); 5];
    let mut given = [false; 5];
    let mut order: Option<Vec<Dim>> = None;
    for part in body.split(',') {
        let (k, v) = part.split_once('=').ok_or_else(|| format!("{:?} is not KEY=VALUE", part.trim()))?;
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("order") {
            if order.is_some() {
                return Err("order given twice".into());
            }
            let mut o = vec![];
            for name in v.split('-') {
                let d = Dim::parse(name)
                    .ok_or_else(|| format!("order: no dimension {:?} (tp, cp, ep, dp, pp)", name.trim()))?;
                if o.contains(&d) {
                    return Err(format!("order: {d} given twice"));
                }
                o.push(d);
            }
            order = Some(o);
            continue;
        }
        let d = Dim::parse(k).ok_or_else(|| format!("no dimension {k:?} (tp, cp, ep, dp, pp)"))?;
        if given[d.index()] {
            return Err(format!("{d} given twice"));
        }
        given[d.index()] = true;
        sizes[d.index()] = if v == "*" {
            if sizes.iter().any(|s| s.is_none()) {
                return Err("only one * is allowed".into());
            }
            None
        } else {
            match v.parse::<usize>() {
                Ok(n) if n >= 1 => Some(n),
                _ => return Err(format!("{d}={v}: the size must be a whole number ≥ 1 or *")),
            }
        };
    }
    if !given.iter().any(|g| *g) {
        return Err("a named layout needs at least one of tp, cp, ep, dp, pp".into());
    }
    // Checked here, once: every later product of the sizes (the world, a resolve) stays in range.
    if sizes.iter().flatten().try_fold(1usize, |p, &s| p.checked_mul(s)).is_none() {
        return Err("the sizes multiply to more ranks than a job can have: too large".into());
    }
    // The order: the one given, then every dimension it leaves out in the default order; a
    // dimension of size ≠ 1 must be in a given order.
    let order = match order {
        None => Dim::DEFAULT_ORDER.to_vec(),
        Some(mut o) => {
            for d in Dim::DEFAULT_ORDER {
                if !o.contains(&d) {
                    if given[d.index()] && sizes[d.index()] != Some(1) {
                        return Err(format!("order leaves out {d}"));
                    }
                    o.push(d);
                }
            }
            o
        }
    };
    if let Some(d) = dim {
        if !given[d.index()] {
            return Err(format!(":{d} names a dimension the layout does not give"));
        }
    }
    Ok(Layout::Named(Grid { sizes, given, order }, dim))
}

impl FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Layout> {
        Layout::parse_for("--groups", s)
    }
}

impl From<Layout> for String {
    fn from(l: Layout) -> String {
        l.to_string()
    }
}

impl TryFrom<String> for Layout {
    type Error = Error;
    fn try_from(s: String) -> Result<Layout> {
        s.parse()
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layout::World => f.write_str("world"),
            Layout::Node => f.write_str("node"),
            Layout::Rail => f.write_str("rail"),
            Layout::Split { kind: SplitKind::Mod, n } => write!(f, "split=mod:{n}"),
            Layout::Split { kind: SplitKind::Div, n } => write!(f, "split=div:{n}"),
            Layout::Named(g, None) => write!(f, "{g}"),
            Layout::Named(g, Some(d)) => write!(f, "{g}:{d}"),
        }
    }
}

/// The distinct values of `key_of_rank` (rank r has the r-th) in order of their first rank, and
/// each rank's value as an index into them: hosts by host name or number, split colours. A map
/// to each value's place: O(ranks), not O(ranks · values) (16 384 ranks on 2 048 hosts would be
/// 33 M comparisons).
pub fn numbered_by_first_rank<K: std::hash::Hash + Eq + Clone>(
    key_of_rank: impl IntoIterator<Item = K>,
) -> (Vec<K>, Vec<usize>) {
    let mut values: Vec<K> = vec![];
    let mut at: std::collections::HashMap<K, usize> = std::collections::HashMap::new();
    let index = key_of_rank
        .into_iter()
        .map(|k| {
            *at.entry(k.clone()).or_insert_with(|| {
                values.push(k);
                values.len() - 1
            })
        })
        .collect();
    (values, index)
}

/// The ranks of each value of `key_of_rank`, values in order of their first rank
/// ([`numbered_by_first_rank`]).
pub fn by_first_rank<K: std::hash::Hash + Eq + Clone>(
    key_of_rank: impl IntoIterator<Item = K>,
) -> Vec<(K, Vec<usize>)> {
    let (values, index) = numbered_by_first_rank(key_of_rank);
    let mut out: Vec<(K, Vec<usize>)> = values.into_iter().map(|k| (k, vec![])).collect();
    for (r, i) in index.into_iter().enumerate() {
        out[i].1.push(r);
    }
    out
}

/// The groups of `layout` on a world whose rank `r` runs on host number `host_of_rank[r]`;
/// refused (one line naming `--groups`) when the layout does not fit the world or its groups
/// would not all have the same size.
pub fn groups(layout: &Layout, host_of_rank: &[usize]) -> Result<Vec<Group>> {
    groups_for("--groups", layout, host_of_rank)
}

/// [`groups`], naming `flag` in the error.
pub fn groups_for(flag: &str, layout: &Layout, host_of_rank: &[usize]) -> Result<Vec<Group>> {
    let world = host_of_rank.len();
    let by_host = || by_first_rank(host_of_rank).into_iter().map(|(_, ranks)| ranks).collect::<Vec<_>>();
    let groups = match layout {
        Layout::World => numbered(vec![(0..world).collect()]),
        Layout::Node => numbered(by_host()),
        Layout::Rail => {
            let hosts = by_host();
            let per = hosts.first().map_or(0, |h| h.len());
            if let Some(h) = hosts.iter().find(|h| h.len() != per) {
                return Err(Error::usage(format!(
                    "{flag} rail: hosts have unequal rank counts ({per} and {}); rail needs the same number of ranks on every host",
                    h.len()
                )));
            }
            numbered((0..per).map(|i| hosts.iter().map(|h| h[i]).collect()).collect())
        }
        Layout::Split { kind, n } => {
            let colour = |r: usize| match kind {
                SplitKind::Mod => r % n,
                SplitKind::Div => r / n,
            };
            numbered(by_first_rank((0..world).map(colour)).into_iter().map(|(_, v)| v).collect())
        }
        Layout::Named(grid, _) => {
            let g = grid.resolve_for(flag, world)?;
            let dim = layout.dim().unwrap_or(Dim::Tp);
            g.groups_of(dim)
        }
    };
    if let Some(g) = groups.iter().find(|g| g.size() != groups[0].size()) {
        return Err(Error::usage(format!(
            "{flag} {layout}: its groups would have unequal sizes ({} and {} ranks) on this world; every group must have the same size",
            groups[0].size(),
            g.size()
        )));
    }
    Ok(groups)
}

/// Every `tp × pp × dp = world` grid (default order) with `tp ≤ ranks_per_host` and `tp`
/// dividing `ranks_per_host`, unless `tp_across_hosts`; ordered by tp, then pp.
pub fn factorizations(world: usize, ranks_per_host: usize, tp_across_hosts: bool) -> Vec<Grid> {
    let mut out = vec![];
    for tp in (1..=world).filter(|t| world % t == 0) {
        if !tp_across_hosts && (tp > ranks_per_host || ranks_per_host % tp != 0) {
            continue;
        }
        for pp in (1..=world / tp).filter(|p| (world / tp) % p == 0) {
            let dp = world / tp / pp;
            out.push(Grid::new(&[(Dim::Tp, tp), (Dim::Pp, pp), (Dim::Dp, dp)]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lay(s: &str) -> Layout {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn values_in_order_of_their_first_rank() {
        // Hosts interleaved (round-robin placement): each keeps its ranks in order.
        let hosts = ["b", "a", "b", "c", "a", "b"];
        assert_eq!(by_first_rank(hosts), vec![("b", vec![0, 2, 5]), ("a", vec![1, 4]), ("c", vec![3])]);
        assert_eq!(by_first_rank(Vec::<usize>::new()), vec![]);
        assert_eq!(numbered_by_first_rank(hosts), (vec!["b", "a", "c"], vec![0, 1, 0, 2, 1, 0]));
    }

    fn ranks(gs: &[Group]) -> Vec<Vec<usize>> {
        gs.iter().map(|g| g.ranks.clone()).collect()
    }
    fn err(s: &str, hosts: &[usize]) -> String {
        match s.parse::<Layout>() {
            Err(e) => e.to_string(),
            Ok(l) => groups(&l, hosts).expect_err(s).to_string(),
        }
    }
    /// 2 hosts × 2 ranks, block placement (the test bed).
    const BED: [usize; 4] = [0, 0, 1, 1];

    #[test]
    fn world_node_rail() {
        assert_eq!(ranks(&groups(&lay("world"), &BED).unwrap()), vec![vec![0, 1, 2, 3]]);
        assert_eq!(ranks(&groups(&lay("node"), &BED).unwrap()), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(ranks(&groups(&lay("rail"), &BED).unwrap()), vec![vec![0, 2], vec![1, 3]]);
        // Round-robin placement: hosts 0,1,0,1.
        let rr = [0, 1, 0, 1];
        assert_eq!(ranks(&groups(&lay("node"), &rr).unwrap()), vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(ranks(&groups(&lay("rail"), &rr).unwrap()), vec![vec![0, 1], vec![2, 3]]);
        // 3 hosts × 4 ranks, host numbers not in rank order.
        let h = [2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1];
        let rail = groups(&lay("rail"), &h).unwrap();
        assert_eq!(ranks(&rail), vec![vec![0, 4, 8], vec![1, 5, 9], vec![2, 6, 10], vec![3, 7, 11]]);
        assert_eq!(rail.iter().map(|g| g.id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(groups(&lay("node"), &h).unwrap().len(), 3);
    }

    #[test]
    fn rail_and_node_refuse_unequal_hosts() {
        let e = err("rail", &[0, 0, 0, 1]);
        assert!(e.contains("--groups rail") && e.contains("unequal rank counts"), "{e}");
        let e = err("node", &[0, 0, 0, 1]);
        assert!(e.contains("unequal sizes"), "{e}");
    }

    #[test]
    fn split_is_nccl_tests_arithmetic() {
        let h = [0; 8];
        assert_eq!(
            ranks(&groups(&lay("split=mod:4"), &h).unwrap()),
            vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
        );
        assert_eq!(ranks(&groups(&lay("split=div:4"), &h).unwrap()), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(ranks(&groups(&lay("split=mod:1"), &h).unwrap()), vec![(0..8).collect::<Vec<_>>()]);
        assert_eq!(groups(&lay("split=div:1"), &h).unwrap().len(), 8);
        assert!(err("split=div:3", &h).contains("unequal sizes"));
        for bad in ["split=mod:0", "split=mod", "split=xor:2", "split=div:x"] {
            let e = err(bad, &h);
            assert!(e.starts_with("--groups ") && e.contains("accepted:") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn named_order_is_megatron() {
        let h = [0, 0, 0, 0, 1, 1, 1, 1];
        let l = lay("tp=2,pp=2,dp=2");
        let Layout::Named(g, None) = &l else { panic!() };
        let g = g.resolve(8).unwrap();
        assert_eq!(ranks(&g.groups_of(Dim::Tp)), vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
        assert_eq!(ranks(&g.groups_of(Dim::Dp)), vec![vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]]);
        assert_eq!(ranks(&g.groups_of(Dim::Pp)), vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(g.coords(5)[Dim::Tp as usize], 1);
        assert_eq!(g.coord(5, Dim::Dp), 0);
        assert_eq!(g.coord(5, Dim::Pp), 1);
        for r in 0..8 {
            assert_eq!(g.rank_at(&g.coords(r)), r);
        }
        // Without :DIM the tp groups run; with it, the dimension named.
        assert_eq!(ranks(&groups(&l, &h).unwrap()), vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
        assert_eq!(ranks(&groups(&lay("tp=2,pp=2,dp=2:pp"), &h).unwrap())[0], vec![0, 4]);
        // tp=1: the first dimension of size > 1 runs.
        assert_eq!(ranks(&groups(&lay("tp=1,dp=4"), &h[..4]).unwrap()), vec![vec![0, 1, 2, 3]]);
    }

    #[test]
    fn named_order_can_be_chosen() {
        let l = lay("tp=2,dp=2,order=dp-tp");
        // dp fastest-varying: without :DIM the dp groups run (consecutive ranks).
        assert_eq!(ranks(&groups(&l, &BED).unwrap()), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(ranks(&groups(&lay("tp=2,dp=2,order=dp-tp:tp"), &BED).unwrap()), vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(l.to_string(), "tp=2,dp=2,order=dp-tp-cp-ep-pp");
        assert_eq!(l.to_string().parse::<Layout>().unwrap(), l);
    }

    #[test]
    fn named_star_fills_the_world() {
        let l = lay("tp=4,dp=*:dp");
        let Layout::Named(g, Some(Dim::Dp)) = &l else { panic!() };
        assert_eq!(g.size_of(Dim::Dp), None);
        let g = g.resolve(16).unwrap();
        assert_eq!(g.size(Dim::Dp), 4);
        assert_eq!(g.size(Dim::Pp), 1);
        let gs = groups(&l, &[0; 16]).unwrap();
        assert_eq!(gs.len(), 4);
        assert_eq!(gs[1].ranks, vec![1, 5, 9, 13]);
        assert_eq!(l.to_string(), "tp=4,dp=*:dp");
        assert_eq!(lay("tp=2,pp=*").to_string(), "tp=2,pp=*");
    }

    #[test]
    fn bad_named_layouts_are_one_line() {
        let cases = [
            ("tp=3,dp=*", "does not divide"),
            ("tp=2,dp=3", "multiply to 6, not to the 4"),
            ("tp=2,xp=2", "no dimension \"xp\""),
            ("tp=2,dp=2:xp", "no dimension \"xp\""),
            ("tp=2,dp=2:pp", ":pp names a dimension"),
            ("tp=*,dp=*", "only one *"),
            ("tp=0,dp=*", "whole number"),
            ("tp=9223372036854775809,pp=2", "too large"),
            ("tp=4294967296,pp=4294967296,dp=*", "too large"),
            ("tp=2,tp=2", "tp given twice"),
            ("tp=2,dp=2,order=dp", "order leaves out tp"),
            ("tp=2,dp=2,order=dp-tp-dp", "dp given twice"),
            ("tp", "not KEY=VALUE"),
            ("planet", "not KEY=VALUE"),
            ("", "empty"),
        ];
        for (s, want) in cases {
            let e = err(s, &BED);
            assert!(e.starts_with("--groups "), "{s}: {e}");
            assert!(e.contains(want), "{s}: {e}");
            assert!(!e.contains('\n'), "{s}: {e}");
        }
        let e = Layout::parse_for("--layout", "tp=x").unwrap_err().to_string();
        assert!(e.starts_with("--layout \"tp=x\""), "{e}");
    }

    #[test]
    fn display_round_trips() {
        for s in
            ["world", "node", "rail", "split=mod:8", "split=div:2", "tp=2,dp=2", "tp=2,dp=*,pp=2:pp", "cp=2,ep=2,dp=*"]
        {
            let l = lay(s);
            assert_eq!(l.to_string(), s);
            assert_eq!(lay(&l.to_string()), l);
        }
        assert_eq!(lay(" NODE ").to_string(), "node");
    }

    fn triples(gs: &[Grid]) -> Vec<(usize, usize, usize)> {
        gs.iter().map(|g| (g.size(Dim::Tp), g.size(Dim::Pp), g.size(Dim::Dp))).collect()
    }

    #[test]
    fn factorizations_of_4_8_16() {
        // 4 ranks.
        assert_eq!(triples(&factorizations(4, 1, false)), vec![(1, 1, 4), (1, 2, 2), (1, 4, 1)]);
        assert_eq!(triples(&factorizations(4, 2, false)), vec![(1, 1, 4), (1, 2, 2), (1, 4, 1), (2, 1, 2), (2, 2, 1)]);
        assert_eq!(factorizations(4, 8, false).len(), 6);
        assert_eq!(factorizations(4, 1, true).len(), 6);
        // 8 ranks: the divisor triples of 8 number 10.
        assert_eq!(factorizations(8, 8, false).len(), 10);
        assert_eq!(factorizations(8, 1, false).len(), 4);
        assert_eq!(factorizations(8, 2, false).len(), 4 + 3);
        // 16 ranks: 15 triples in all; tp ∈ {1, 2} with 2 per host: 5 + 4.
        assert_eq!(factorizations(16, 2, false).len(), 9);
        assert_eq!(factorizations(16, 1, false).len(), 5);
        let all = factorizations(16, 8, false);
        assert_eq!(all.len(), 5 + 4 + 3 + 2);
        assert!(all.iter().all(|g| g.size(Dim::Tp) <= 8));
        assert_eq!(factorizations(16, 8, true).len(), 15);
        for g in factorizations(16, 8, true) {
            assert_eq!(g.world(), Some(16));
            assert_eq!(g.resolve(16).unwrap(), g);
        }
    }
}
