//! `--markdown PATH`: one Markdown table per collective × type × op, rewritten after each point.

use super::Report;
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub struct MarkdownReport {
    path: PathBuf,
    head: String,
    body: String,
    label: String,
}

fn label(p: &Point) -> String {
    let op = p.op.map(|o| format!(" {o}")).unwrap_or_default();
    format!("{} ({}{op})", p.collective.name(), p.dtype.name())
}

impl MarkdownReport {
    pub fn create(path: &Path) -> Result<MarkdownReport> {
        super::create_file("--markdown", path)?;
        Ok(MarkdownReport { path: path.to_path_buf(), head: String::new(), body: String::new(), label: String::new() })
    }

    fn write(&self, tail: &str) -> Result<()> {
        super::replace_file("--markdown", &self.path, format!("{}{}{tail}", self.head, self.body).as_bytes())
    }
}

impl Report for MarkdownReport {
    fn begin(&mut self, info: &RunInfo) -> Result<()> {
        let hosts: Vec<String> = info.hosts.iter().map(|(h, r)| format!("{h} ({} ranks)", r.len())).collect();
        self.head = format!(
            "# coll-bench {} — {}\n\nBackend {} ({}); {} ranks on {}; time combined across ranks by {}.\n",
            info.version,
            info.timestamp,
            info.backend,
            info.backend_details.join("; "),
            info.ranks,
            hosts.join(", "),
            info.options.aggregation.name()
        );
        self.write("")
    }

    fn point(&mut self, _info: &RunInfo, p: &Point) -> Result<()> {
        let l = label(p);
        if l != self.label {
            let _ = write!(
                self.body,
                "\n## {l}\n\n| size (B) | count | out-of-place time (µs) | algbw (GB/s) | busbw (GB/s) | #wrong | in-place time (µs) | algbw (GB/s) | busbw (GB/s) | #wrong |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            );
            self.label = l;
        }
        let _ = write!(self.body, "| {} | {} ", p.size_bytes, p.count);
        for m in p.measurements() {
            let wrong = m.wrong.map(|w| w.to_string()).unwrap_or_else(|| "N/A".into());
            let _ = write!(self.body, "| {:.2} | {:.2} | {:.2} | {wrong} ", m.time_us, m.algbw_gbps, m.busbw_gbps);
        }
        self.body.push_str("|\n");
        self.write("")
    }

    fn end(&mut self, _info: &RunInfo, totals: &Totals) -> Result<()> {
        self.write(&format!("\nWrong elements: {}; out-of-bounds bytes: {}.\n", totals.wrong, totals.out_of_bounds))
    }
}
