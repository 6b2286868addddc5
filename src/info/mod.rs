//! `coll-bench info`: what every host really has, before anyone blames the network. Each rank
//! reads its host ([`facts`]); rank 0 gathers them, groups ranks that report the same on the
//! same host into one entry (ranks of one host stay apart where they differ, e.g. a variable set
//! for one rank only), prints each entry's fields (`absent` where missing), and names last the
//! entries that differ from the majority (by rank count; a tie goes to the entry of the lowest
//! rank). `--json` prints the same as one JSON document. Exit 0; with `--strict`, 1 when an
//! entry differs.

pub mod facts;

use crate::error::Result;
use crate::world::{rank_list, World};
use facts::ABSENT;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// `coll-bench info`'s options (from `crate::cli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InfoOptions {
    pub json: bool,
    pub strict: bool,
}

/// What one rank reported: each field's text, and the JSON of the fixed fields by field
/// (both written from the same typed fact, `facts::Fact`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankFacts {
    pub rank: usize,
    pub host: String,
    pub fields: Vec<(String, String)>,
    pub json: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
}

impl RankFacts {
    pub fn new(rank: usize, host: &str, facts: Vec<facts::Fact>) -> RankFacts {
        let mut r = RankFacts { rank, host: host.to_string(), fields: vec![], json: BTreeMap::new() };
        for f in facts {
            if !f.json.is_empty() {
                r.json.insert(f.field.clone(), f.json);
            }
            r.fields.push((f.field, f.text));
        }
        r
    }
}

/// Ranks of one host that reported the same.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    pub host: String,
    pub ranks: Vec<usize>,
    pub fields: Vec<(String, String)>,
    /// The fixed fields' JSON, by field (its first rank's).
    pub json: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
}

impl Entry {
    /// "node1 (ranks 0-3)".
    pub fn label(&self) -> String {
        let s = if self.ranks.len() == 1 { "" } else { "s" };
        format!("{} (rank{s} {})", self.host, rank_list(&self.ranks))
    }

    pub fn value(&self, field: &str) -> &str {
        self.fields.iter().find(|(k, _)| k == field).map(|(_, v)| v.as_str()).unwrap_or(ABSENT)
    }
}

/// One field on which an entry differs from the majority.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub field: String,
    pub value: String,
    pub majority: String,
}

/// Ranks grouped by host and identical reports, in order of their lowest rank.
pub fn entries(all: &[RankFacts]) -> Vec<Entry> {
    let mut out: Vec<Entry> = vec![];
    for r in all {
        match out.iter_mut().find(|e| e.host == r.host && e.fields == r.fields) {
            Some(e) => e.ranks.push(r.rank),
            None => out.push(Entry {
                host: r.host.clone(),
                ranks: vec![r.rank],
                fields: r.fields.clone(),
                json: r.json.clone(),
            }),
        }
    }
    out
}

/// Every field any entry reported: the fixed ones in order, then the variables by name.
pub fn field_names(entries: &[Entry]) -> Vec<String> {
    let mut names: Vec<String> = facts::FIELDS.iter().map(|s| s.to_string()).collect();
    let mut vars: Vec<String> = entries
        .iter()
        .flat_map(|e| e.fields.iter().map(|(k, _)| k.clone()))
        .filter(|k| !facts::FIELDS.contains(&k.as_str()))
        .collect();
    vars.sort();
    vars.dedup();
    names.extend(vars);
    names
}

/// The value most ranks hold for `field` (a tie: the entry with the lowest rank).
pub fn majority<'a>(entries: &'a [Entry], field: &str) -> &'a str {
    let mut counts: Vec<(&str, usize)> = vec![];
    for e in entries {
        let v = e.value(field);
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += e.ranks.len(),
            None => counts.push((v, e.ranks.len())),
        }
    }
    // max_by_key returns the last maximum: search from the back to keep the first.
    counts.iter().rev().max_by_key(|(_, n)| *n).map(|(v, _)| *v).unwrap_or(ABSENT)
}

/// For each entry, the fields on which it differs from the majority.
pub fn differences(entries: &[Entry]) -> Vec<Vec<Difference>> {
    let names = field_names(entries);
    let majorities: Vec<(String, String)> =
        names.iter().map(|f| (f.clone(), majority(entries, f).to_string())).collect();
    entries
        .iter()
        .map(|e| {
            majorities
                .iter()
                .filter(|(f, m)| e.value(f) != m)
                .map(|(f, m)| Difference { field: f.clone(), value: e.value(f).to_string(), majority: m.clone() })
                .collect()
        })
        .collect()
}

/// Entries that reported the same fields (on different hosts), as indices into the entries:
/// the largest first (by ranks; a tie goes to the lowest rank), then in order of their lowest
/// rank. Identical hosts collapse into one, so the report stays as long at 1 000 hosts as at 2.
pub fn alike(entries: &[Entry]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![];
    for (i, e) in entries.iter().enumerate() {
        match out.iter_mut().find(|g| entries[g[0]].fields == e.fields) {
            Some(g) => g.push(i),
            None => out.push(vec![i]),
        }
    }
    let ranks = |g: &Vec<usize>| g.iter().map(|i| entries[*i].ranks.len()).sum::<usize>();
    if let Some(big) = (0..out.len()).rev().max_by_key(|k| ranks(&out[*k])) {
        let first = out.remove(big);
        out.insert(0, first);
    }
    out
}

/// The ranks of some entries, sorted.
fn ranks_of(entries: &[Entry], group: &[usize]) -> Vec<usize> {
    let mut r: Vec<usize> = group.iter().flat_map(|i| entries[*i].ranks.iter().copied()).collect();
    r.sort_unstable();
    r
}

/// Hosts shown in a label before the rest are counted: the majority's list is cut there, the odd
/// ones are always named in full.
const HOSTS_SHOWN: usize = 8;

/// "node1 (ranks 0-3)" for one entry; "3 hosts: a, b, c (ranks 0-11)" for several, the hosts cut
/// after [`HOSTS_SHOWN`] with `short` ("…, and 60 more").
pub fn group_label(entries: &[Entry], group: &[usize], short: bool) -> String {
    if let [one] = group {
        return entries[*one].label();
    }
    let names: Vec<&str> = group.iter().map(|i| entries[*i].host.as_str()).collect();
    let shown = if short && names.len() > HOSTS_SHOWN {
        format!("{}, … and {} more", names[..HOSTS_SHOWN - 1].join(", "), names.len() - (HOSTS_SHOWN - 1))
    } else {
        names.join(", ")
    };
    let ranks = ranks_of(entries, group);
    let s = if ranks.len() == 1 { "" } else { "s" };
    format!("{} hosts: {shown} (rank{s} {})", names.len(), rank_list(&ranks))
}

/// The text report: the largest set of alike hosts with every field; each other set with the
/// fields where it differs from the majority; then the sets that differ, named, last.
pub fn text(entries: &[Entry], diffs: &[Vec<Difference>], ranks: usize) -> String {
    let hosts = {
        let mut h: Vec<&str> = entries.iter().map(|e| e.host.as_str()).collect();
        h.sort();
        h.dedup();
        h.len()
    };
    let names = field_names(entries);
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut s = format!(
        "# coll-bench info: {ranks} rank{} on {hosts} host{}\n",
        if ranks == 1 { "" } else { "s" },
        if hosts == 1 { "" } else { "s" }
    );
    let groups = alike(entries);
    for (k, g) in groups.iter().enumerate() {
        let e = &entries[g[0]];
        s.push_str(&format!("\n## {}\n", group_label(entries, g, k == 0)));
        if k == 0 {
            for n in &names {
                s.push_str(&format!("{n:<width$} : {}\n", e.value(n)));
            }
        } else {
            for d in &diffs[g[0]] {
                s.push_str(&format!("{:<width$} : {} (majority: {})\n", d.field, d.value, d.majority));
            }
            if diffs[g[0]].is_empty() {
                s.push_str("# every field as the majority's; the first set above differs from it\n");
            }
        }
    }
    let differing: Vec<&Vec<usize>> = groups.iter().filter(|g| !diffs[g[0]].is_empty()).collect();
    s.push('\n');
    if differing.is_empty() {
        s.push_str("# Differ from the majority: none\n");
    } else {
        s.push_str(&format!("# Differ from the majority: {}\n", differing.len()));
        for g in differing {
            let items: Vec<String> =
                diffs[g[0]].iter().map(|x| format!("{} = {} (majority: {})", x.field, x.value, x.majority)).collect();
            s.push_str(&format!("# {}: {}\n", group_label(entries, g, false), items.join("; ")));
        }
    }
    s
}

/// The layout of `info --json`; a change that renames or removes a field changes it.
pub const SCHEMA: &str = "coll-bench-info/2";

/// A field's JSON key (its first, for the fields that give several: `cores_online` for
/// `cores`), as the entries' typed facts wrote it; `env.NAME` for a variable.
fn json_key(entries: &[Entry], field: &str) -> String {
    match field.strip_prefix("env ") {
        Some(var) => format!("env.{var}"),
        None => entries.iter().find_map(|e| e.json.get(field)?.keys().next().cloned()).unwrap_or(field.to_string()),
    }
}

/// The JSON under `field`'s key of the entry whose text for it is `text` (a variable: its text,
/// `null` where absent).
fn json_value(entries: &[Entry], field: &str, text: &str) -> serde_json::Value {
    if field.starts_with("env ") {
        return if text == ABSENT { serde_json::Value::Null } else { text.into() };
    }
    entries
        .iter()
        .filter(|e| e.value(field) == text)
        .find_map(|e| e.json.get(field)?.values().next().cloned())
        .unwrap_or_else(|| text.into())
}

/// Each host once, with all its ranks, in order of its first rank: `{"name", "ranks"}`.
fn by_host(entries: &[Entry]) -> Vec<serde_json::Value> {
    let mut hosts: Vec<(&str, Vec<usize>)> = vec![];
    for e in entries {
        match hosts.iter_mut().find(|(h, _)| *h == e.host) {
            Some((_, r)) => r.extend(&e.ranks),
            None => hosts.push((&e.host, e.ranks.clone())),
        }
    }
    hosts.sort_by_key(|(_, r)| r.iter().min().copied());
    hosts
        .into_iter()
        .map(|(name, mut ranks)| {
            ranks.sort_unstable();
            serde_json::json!({ "name": name, "ranks": ranks })
        })
        .collect()
}

/// The JSON report: the hosts as the sweep's (`{"name", "ranks"}`), each set of alike hosts
/// (`reports`, the largest first) with its fields under snake_case keys and typed values, its
/// variables (`env`, absent ones left out) and where it differs, and the hosts that differ.
pub fn json(entries: &[Entry], diffs: &[Vec<Difference>], ranks: usize) -> serde_json::Value {
    let host = |e: &Entry| serde_json::json!({ "name": e.host, "ranks": e.ranks });
    let names = field_names(entries);
    let reports: Vec<serde_json::Value> = alike(entries)
        .iter()
        .map(|g| {
            let e = &entries[g[0]];
            let mut fields = serde_json::Map::new();
            let mut env = serde_json::Map::new();
            for n in &names {
                match n.strip_prefix("env ") {
                    Some(var) if e.value(n) != ABSENT => {
                        env.insert(var.to_string(), e.value(n).into());
                    }
                    Some(_) => {}
                    None => fields.extend(e.json.get(n).into_iter().flatten().map(|(k, v)| (k.clone(), v.clone()))),
                }
            }
            let differs: Vec<serde_json::Value> = diffs[g[0]]
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "field": json_key(entries, &d.field),
                        "value": json_value(entries, &d.field, &d.value),
                        "majority": json_value(entries, &d.field, &d.majority),
                    })
                })
                .collect();
            let hosts: Vec<serde_json::Value> = g.iter().map(|i| host(&entries[*i])).collect();
            serde_json::json!({ "hosts": hosts, "fields": fields, "env": env, "differs": differs })
        })
        .collect();
    let differing: Vec<serde_json::Value> =
        entries.iter().zip(diffs).filter(|(_, d)| !d.is_empty()).map(|(e, _)| host(e)).collect();
    serde_json::json!({
        "schema": SCHEMA,
        "tool": "coll-bench",
        "ranks": ranks,
        "hosts": by_host(entries),
        "reports": reports,
        "differ_from_majority": differing,
    })
}

/// Every rank reads its host; rank 0 prints. Collective.
pub fn run(world: &World, opts: &InfoOptions, env: &HashMap<String, String>) -> Result<i32> {
    // One rank per host and library-steering environment looks the libraries up (slow: the NCCL
    // search runs python3); the others take its answer.
    let key: Vec<u8> = std::iter::once(world.host())
        .chain(facts::LIBRARY_VARS.iter().map(|k| env.get(*k).map(String::as_str).unwrap_or("\u{1}")))
        .collect::<Vec<_>>()
        .join("\0")
        .into_bytes();
    // Rank 0 alone holds every rank's key, findings and facts (gathers and scatters: O(n) at
    // rank 0, O(1) elsewhere; every rank holding every rank's would be O(n²) over the job,
    // ~16 MiB per rank at 16 384 ranks).
    let keys = world.gather_bytes(&key);
    // Each rank's leader: the first rank with its key.
    let mut first: HashMap<&[u8], usize> = HashMap::new();
    let leader_of: Vec<usize> = keys.iter().enumerate().map(|(r, k)| *first.entry(k).or_insert(r)).collect();
    let leaders: Vec<Vec<u8>> = leader_of.iter().map(|&l| (l as u64).to_be_bytes().to_vec()).collect();
    let leader = world.scatter_bytes(&leaders);
    let leader = leader.try_into().map(|b: [u8; 8]| u64::from_be_bytes(b) as usize).unwrap_or(world.rank);
    let found = if leader == world.rank {
        serde_json::to_vec(&facts::libraries(env, world.host())).expect("libraries serialise")
    } else {
        vec![]
    };
    let all_found = world.gather_bytes(&found);
    let answers: Vec<Vec<u8>> = leader_of.iter().map(|&l| all_found[l].clone()).collect();
    // Never an error here: every rank goes on to the gather below.
    let libs: facts::Libraries = serde_json::from_slice(&world.scatter_bytes(&answers)).unwrap_or_else(|e| {
        let why = facts::Found::Absent(format!("the report did not parse: {e}"));
        facts::Libraries { nccl: why.clone(), cuda_driver: why, gpus: vec![] }
    });
    let mine = RankFacts::new(world.rank, world.host(), facts::collect(&world.library_version, env, &libs, world.size));
    let bytes = serde_json::to_vec(&mine).expect("facts serialise");
    let all = world.gather_bytes(&bytes);
    if world.rank != 0 {
        return Ok(crate::error::exit::OK);
    }
    let all: Vec<RankFacts> = all
        .iter()
        .map(|b| serde_json::from_slice(b))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| crate::error::Error::setup(format!("info: a rank's report did not parse: {e}")))?;
    let entries = entries(&all);
    let diffs = differences(&entries);
    let out = if opts.json {
        let mut s = serde_json::to_string_pretty(&json(&entries, &diffs, world.size)).expect("json");
        s.push('\n');
        s
    } else {
        text(&entries, &diffs, world.size)
    };
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush());
    // The report is the whole output: lost on a full disk, it is an error (a closed pipe, as
    // `| head`, is the reader's choice).
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(crate::error::Error::setup(format!("info: writing the report to standard output failed: {e}")));
        }
        _ => {}
    }
    let differ = diffs.iter().any(|d| !d.is_empty());
    Ok(if opts.strict && differ { crate::error::exit::WRONG } else { crate::error::exit::OK })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: usize, host: &str, extra: &[(&str, &str)]) -> RankFacts {
        let mut fields: Vec<(String, String)> =
            facts::FIELDS.iter().map(|f| (f.to_string(), format!("{f} value"))).collect();
        fields.extend(extra.iter().map(|(k, v)| (format!("env {k}"), v.to_string())));
        RankFacts { rank, host: host.into(), fields, json: BTreeMap::new() }
    }

    #[test]
    fn ranks_group_by_host_and_the_odd_one_is_named() {
        let all =
            vec![rank(0, "a", &[]), rank(1, "a", &[]), rank(2, "b", &[]), rank(3, "b", &[("NCCL_DEBUG", "INFO")])];
        let e = entries(&all);
        assert_eq!(e.iter().map(Entry::label).collect::<Vec<_>>(), ["a (ranks 0-1)", "b (rank 2)", "b (rank 3)"]);
        let d = differences(&e);
        assert!(d[0].is_empty() && d[1].is_empty());
        assert_eq!(
            d[2],
            vec![Difference { field: "env NCCL_DEBUG".into(), value: "INFO".into(), majority: ABSENT.into() }]
        );
        let t = text(&e, &d, 4);
        assert!(t.starts_with("# coll-bench info: 4 ranks on 2 hosts\n"), "{t}");
        // a and b's rank 2 report the same: one block, every field; rank 3 only what differs.
        assert!(t.contains("\n## 2 hosts: a, b (ranks 0-2)\n"), "{t}");
        assert!(t.contains("\n## b (rank 3)\nenv NCCL_DEBUG      : INFO (majority: absent)\n\n"), "{t}");
        assert!(t.contains("env NCCL_DEBUG      : absent\n"), "{t}");
        let last: Vec<&str> = t.trim_end().lines().rev().take(2).collect();
        assert_eq!(last, ["# b (rank 3): env NCCL_DEBUG = INFO (majority: absent)", "# Differ from the majority: 1"]);
        let j = json(&e, &d, 4);
        assert_eq!(j["schema"], SCHEMA);
        assert_eq!(j["differ_from_majority"], serde_json::json!([{"name": "b", "ranks": [3]}]));
        // a (ranks 0-1) and b (rank 2) report the same: one set of alike hosts, then the odd one.
        assert_eq!(
            j["reports"][0]["hosts"],
            serde_json::json!([{"name": "a", "ranks": [0, 1]}, {"name": "b", "ranks": [2]}])
        );
        assert_eq!(j["reports"][0]["env"], serde_json::json!({}));
        assert_eq!(j["reports"][1]["env"]["NCCL_DEBUG"], "INFO");
        assert_eq!(j["reports"][1]["differs"][0]["field"], "env.NCCL_DEBUG");
        assert_eq!(j["reports"][1]["differs"][0]["majority"], serde_json::Value::Null);
        assert_eq!(j["hosts"], serde_json::json!([{"name": "a", "ranks": [0, 1]}, {"name": "b", "ranks": [2, 3]}]));
    }

    /// Hundreds of hosts: one block for the alike ones (their list cut), each odd set named
    /// with only what differs; the report's length does not grow with the hosts.
    #[test]
    fn hundreds_of_alike_hosts_are_one_block_and_the_odd_ones_are_named() {
        let mut all = vec![];
        for h in 0..500 {
            for r in 0..4 {
                let odd: &[(&str, &str)] = if h == 17 || h == 300 { &[("NCCL_IB_HCA", "mlx5_1")] } else { &[] };
                all.push(rank(4 * h + r, &format!("node{h:03}"), odd));
            }
        }
        let e = entries(&all);
        let d = differences(&e);
        let t = text(&e, &d, 2000);
        let blocks: Vec<&str> = t.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(blocks.len(), 2, "{t}");
        assert!(
            blocks[0].starts_with("## 498 hosts: node000, node001,") && blocks[0].contains("… and 491 more"),
            "{t}"
        );
        assert_eq!(blocks[1], "## 2 hosts: node017, node300 (ranks 68-71,1200-1203)");
        assert!(t.lines().count() < 40, "{t}");
        assert!(t.contains("\nenv NCCL_IB_HCA     : mlx5_1 (majority: absent)\n"), "{t}");
        assert!(t.trim_end().ends_with(
            "# Differ from the majority: 1\n# 2 hosts: node017, node300 (ranks 68-71,1200-1203): env NCCL_IB_HCA = mlx5_1 (majority: absent)"
        ), "{t}");
        let j = json(&e, &d, 2000);
        assert_eq!(j["reports"].as_array().unwrap().len(), 2);
        assert_eq!(j["reports"][0]["hosts"].as_array().unwrap().len(), 498);
        assert_eq!(j["differ_from_majority"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn majority_counts_ranks_and_a_tie_goes_to_the_lowest_rank() {
        let mut b = rank(2, "b", &[]);
        b.fields[0].1 = "other".into();
        let e = entries(&[rank(0, "a", &[]), b.clone()]);
        assert_eq!(majority(&e, "coll-bench"), "coll-bench value");
        let e = entries(&[b.clone(), rank(0, "a", &[]), rank(1, "a", &[])]);
        assert_eq!(majority(&e, "coll-bench"), "coll-bench value");
        let t = text(&entries(&[rank(0, "a", &[])]), &[vec![]], 1);
        assert!(t.ends_with("# Differ from the majority: none\n"), "{t}");
    }
}
