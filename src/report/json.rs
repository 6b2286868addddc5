//! `--json PATH`: the run's context (options, hosts, versions — never the environment) and
//! every point. While the run goes on the file is JSON Lines — a first line with the run
//! (`"complete": false`), then one line per point, each appended whole and never rewritten — so
//! a killed run leaves every point it measured; at the end the file is replaced, in one step,
//! by one JSON document (`"complete": true`, `points`, `totals`).

use super::{AppendFile, Report};
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use serde::Serialize;
use std::path::Path;

pub struct JsonReport {
    file: Option<AppendFile>,
    points: Vec<Point>,
}

#[derive(Serialize)]
struct Document<'a> {
    tool: &'static str,
    /// `false` in the JSON Lines form of a run still going (or killed).
    complete: bool,
    run: &'a RunInfo,
    points: &'a [Point],
    totals: Option<&'a Totals>,
}

/// The first line of the JSON Lines form.
#[derive(Serialize)]
struct Head<'a> {
    tool: &'static str,
    complete: bool,
    run: &'a RunInfo,
}

impl JsonReport {
    /// Write to a file created before the run (see [`super::outfile`]).
    pub fn new(file: AppendFile) -> JsonReport {
        JsonReport { file: Some(file), points: vec![] }
    }

    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path())
    }

    /// Remove the file: the run never started.
    pub fn remove(mut self) {
        if let Some(f) = self.file.take() {
            f.remove()
        }
    }

    fn line(&mut self, value: &impl Serialize) -> Result<()> {
        let mut bytes = serde_json::to_vec(value).expect("records serialise");
        bytes.push(b'\n');
        match &mut self.file {
            Some(f) => f.append(&bytes),
            None => Ok(()),
        }
    }
}

impl Report for JsonReport {
    fn begin(&mut self, info: &RunInfo) -> Result<()> {
        self.line(&Head { tool: "coll-bench", complete: false, run: info })
    }

    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()> {
        let mut p = p.clone();
        if !info.options.per_rank {
            for m in [&mut p.out_of_place, &mut p.in_place] {
                m.per_rank_us.clear();
            }
        }
        self.line(&p)?;
        self.points.push(p);
        Ok(())
    }

    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()> {
        let doc =
            Document { tool: "coll-bench", complete: true, run: info, points: &self.points, totals: Some(totals) };
        let bytes = serde_json::to_vec_pretty(&doc).expect("records serialise");
        match self.file.take() {
            Some(f) => f.replace_with(&bytes),
            None => Ok(()),
        }
    }
}
