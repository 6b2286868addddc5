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
use std::collections::HashMap;
use std::io::Write;

/// `coll-bench info`'s options (from `crate::cli`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InfoOptions {
    pub json: bool,
    pub strict: bool,
}

/// What one rank reported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankFacts {
    pub rank: usize,
    pub host: String,
    pub fields: Vec<(String, String)>,
}

/// Ranks of one host that reported the same.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    pub host: String,
    pub ranks: Vec<usize>,
    pub fields: Vec<(String, String)>,
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
            None => out.push(Entry { host: r.host.clone(), ranks: vec![r.rank], fields: r.fields.clone() }),
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

/// The text report: each entry's fields, then the entries that differ, last.
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
    for e in entries {
        s.push_str(&format!("\n## {}\n", e.label()));
        for n in &names {
            s.push_str(&format!("{n:<width$} : {}\n", e.value(n)));
        }
    }
    let differing: Vec<(&Entry, &Vec<Difference>)> = entries.iter().zip(diffs).filter(|(_, d)| !d.is_empty()).collect();
    s.push('\n');
    if differing.is_empty() {
        s.push_str("# Differ from the majority: none\n");
    } else {
        s.push_str(&format!("# Differ from the majority: {}\n", differing.len()));
        for (e, d) in differing {
            let items: Vec<String> =
                d.iter().map(|x| format!("{} = {} (majority: {})", x.field, x.value, x.majority)).collect();
            s.push_str(&format!("# {}: {}\n", e.label(), items.join("; ")));
        }
    }
    s
}

/// The JSON report.
pub fn json(entries: &[Entry], diffs: &[Vec<Difference>], ranks: usize) -> serde_json::Value {
    let hosts: Vec<serde_json::Value> = entries
        .iter()
        .zip(diffs)
        .map(|(e, d)| {
            let fields: serde_json::Map<String, serde_json::Value> = field_names(entries)
                .into_iter()
                .map(|n| {
                    let v = e.value(&n).to_string();
                    (n, v.into())
                })
                .collect();
            serde_json::json!({ "host": e.host, "ranks": e.ranks, "fields": fields, "differs": d })
        })
        .collect();
    let differing: Vec<String> =
        entries.iter().zip(diffs).filter(|(_, d)| !d.is_empty()).map(|(e, _)| e.label()).collect();
    serde_json::json!({ "ranks": ranks, "hosts": hosts, "differ_from_majority": differing })
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
    let keys = world.all_gather_bytes(&key);
    let leader = keys.iter().position(|k| *k == key).unwrap_or(world.rank);
    let found = if leader == world.rank { facts::libraries(env, world.host()).join("\0") } else { String::new() };
    let all_found = world.all_gather_bytes(found.as_bytes());
    let answer = String::from_utf8_lossy(&all_found[leader]).into_owned();
    let mut parts = answer.split('\0').map(str::to_string);
    let libs = [(); 3].map(|_| parts.next().unwrap_or_else(|| ABSENT.to_string()));
    let mine = RankFacts {
        rank: world.rank,
        host: world.host().to_string(),
        fields: facts::collect(&world.library_version, env, libs, world.size),
    };
    let bytes = serde_json::to_vec(&mine).expect("facts serialise");
    let all = world.all_gather_bytes(&bytes);
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
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
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
        RankFacts { rank, host: host.into(), fields }
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
        assert!(t.contains("\n## b (rank 2)\n"), "{t}");
        assert!(t.contains("env NCCL_DEBUG      : absent\n"), "{t}");
        let last: Vec<&str> = t.trim_end().lines().rev().take(2).collect();
        assert_eq!(last, ["# b (rank 3): env NCCL_DEBUG = INFO (majority: absent)", "# Differ from the majority: 1"]);
        let j = json(&e, &d, 4);
        assert_eq!(j["differ_from_majority"], serde_json::json!(["b (rank 3)"]));
        assert_eq!(j["hosts"][0]["fields"]["env NCCL_DEBUG"], "absent");
        assert_eq!(j["hosts"][2]["differs"][0]["value"], "INFO");
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
