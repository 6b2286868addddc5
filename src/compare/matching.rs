//! Matching: the points both sides measured in every run, and what only one side has.

use crate::csvread::{Key, Row};
use std::collections::{HashMap, HashSet};

/// One CSV: one run of a sweep.
#[derive(Debug)]
pub struct Run {
    pub name: String,
    pub rows: Vec<Row>,
}

/// One point measured in every run of both sides: its rows, run by run.
#[derive(Debug)]
pub struct Point<'a> {
    pub key: &'a Key,
    pub base: Vec<&'a Row>,
    pub new: Vec<&'a Row>,
}

/// Points of the two sides, matched by key.
#[derive(Debug)]
pub struct Matched<'a> {
    /// Shared points, in the first BASE run's order.
    pub points: Vec<Point<'a>>,
    pub only_base: Vec<&'a Key>,
    pub only_new: Vec<&'a Key>,
    /// Points left out because some run of their side lacks them.
    pub not_in_every_run: usize,
}

/// Match on the key. A file that has the same point twice is an error naming the file.
pub fn match_runs<'a>(base: &'a [Run], new: &'a [Run]) -> std::result::Result<Matched<'a>, String> {
    fn index(run: &Run) -> std::result::Result<HashMap<&Key, &Row>, String> {
        let mut map = HashMap::with_capacity(run.rows.len());
        for r in &run.rows {
            if let Some(prev) = map.insert(&r.key, r) {
                return Err(format!(
                    "'{}': line {} measures the same point as line {} ({}); give each run its own file (compare A.csv B.csv -- C.csv D.csv)",
                    run.name, r.line, prev.line, r.key
                ));
            }
        }
        Ok(map)
    }
    // A side's points: those in every one of its runs, in its first run's order.
    /// A side's points in order, each run's index, and how many points only some runs have.
    type Side<'a> = (Vec<&'a Key>, Vec<HashMap<&'a Key, &'a Row>>, usize);
    fn side<'a>(runs: &'a [Run]) -> std::result::Result<Side<'a>, String> {
        let maps = runs.iter().map(index).collect::<std::result::Result<Vec<_>, _>>()?;
        let keys: Vec<&Key> =
            runs[0].rows.iter().map(|r| &r.key).filter(|k| maps.iter().all(|m| m.contains_key(k))).collect();
        let all: HashSet<&Key> = maps.iter().flat_map(|m| m.keys().copied()).collect();
        Ok((keys.clone(), maps, all.len() - keys.len()))
    }
    let (bk, bm, bpart) = side(base)?;
    let (nk, nm, npart) = side(new)?;
    let nset: HashSet<&Key> = nk.iter().copied().collect();
    let bset: HashSet<&Key> = bk.iter().copied().collect();
    let points = bk
        .iter()
        .filter(|k| nset.contains(*k))
        .map(|k| Point { key: k, base: bm.iter().map(|m| m[k]).collect(), new: nm.iter().map(|m| m[k]).collect() })
        .collect();
    Ok(Matched {
        points,
        only_base: bk.iter().filter(|k| !nset.contains(*k)).copied().collect(),
        only_new: nk.iter().filter(|k| !bset.contains(*k)).copied().collect(),
        not_in_every_run: bpart + npart,
    })
}
