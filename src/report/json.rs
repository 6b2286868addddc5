//! `--json PATH`: the run's context (options, hosts, versions — never the environment) and
//! every point, rewritten after each point so a killed run leaves a complete, valid file.

use super::Report;
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub struct JsonReport {
    path: PathBuf,
    points: Vec<Point>,
    totals: Option<Totals>,
}

#[derive(Serialize)]
struct Document<'a> {
    tool: &'static str,
    /// `false` until the run has ended.
    complete: bool,
    run: &'a RunInfo,
    points: &'a [Point],
    totals: Option<&'a Totals>,
}

impl JsonReport {
    pub fn create(path: &Path) -> Result<JsonReport> {
        super::create_file("--json", path)?;
        Ok(JsonReport { path: path.to_path_buf(), points: vec![], totals: None })
    }

    fn write(&self, info: &RunInfo) -> Result<()> {
        let doc = Document {
            tool: "coll-bench",
            complete: self.totals.is_some(),
            run: info,
            points: &self.points,
            totals: self.totals.as_ref(),
        };
        let bytes = serde_json::to_vec_pretty(&doc).expect("records serialise");
        super::replace_file("--json", &self.path, &bytes)
    }
}

impl Report for JsonReport {
    fn begin(&mut self, info: &RunInfo) -> Result<()> {
        self.write(info)
    }

    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()> {
        let mut p = p.clone();
        if !info.options.per_rank {
            for m in [&mut p.out_of_place, &mut p.in_place] {
                m.per_rank_us.clear();
            }
        }
        self.points.push(p);
        self.write(info)
    }

    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()> {
        self.totals = Some(*totals);
        self.write(info)
    }
}
