//! `--markdown PATH`: one Markdown table per collective × type × op, appended row by row (each
//! row whole), so the file is valid Markdown at every moment.

use super::{AppendFile, Report};
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use std::fmt::Write;

pub struct MarkdownReport {
    file: AppendFile,
    label: String,
}

fn label(p: &Point) -> String {
    let op = p.op.map(|o| format!(" {o}")).unwrap_or_default();
    format!("{} ({}{op})", p.collective.name(), p.dtype.name())
}

impl MarkdownReport {
    /// Write to a file created before the run (see [`super::outfile`]).
    pub fn new(file: AppendFile) -> MarkdownReport {
        MarkdownReport { file, label: String::new() }
    }
}

impl Report for MarkdownReport {
    fn begin(&mut self, info: &RunInfo) -> Result<()> {
        let hosts: Vec<String> = info.hosts.iter().map(|(h, r)| format!("{h} ({} ranks)", r.len())).collect();
        let head = format!(
            "# coll-bench {} — {}\n\nBackend {} ({}); {} ranks on {}; time combined across ranks by {}.\n",
            info.version,
            info.timestamp,
            info.backend,
            info.backend_details.join("; "),
            info.ranks,
            hosts.join(", "),
            info.options.aggregation.name()
        );
        self.file.append(head.as_bytes())
    }

    fn ceiling(&mut self, info: &RunInfo) -> Result<()> {
        match &info.ceiling {
            Some(c) => self.file.append(
                format!(
                    "Ceiling {} GB/s busbw ({}: sendrecv of {} B around the ring, {}, median of {} repeat(s), spread {:.0}%{}).\n",
                    c.shown_gbps(),
                    c.source,
                    c.size_bytes,
                    c.links,
                    c.repeats,
                    c.spread_pct,
                    if c.uncertain() { "; uncertain: the repeats disagree" } else { "" }
                )
                .as_bytes(),
            ),
            None => Ok(()),
        }
    }

    fn point(&mut self, _info: &RunInfo, p: &Point) -> Result<()> {
        let mut text = String::new();
        let l = label(p);
        if l != self.label {
            let _ = write!(
                text,
                "\n## {l}\n\n| size (B) | count | out-of-place time (µs) | algbw (GB/s) | busbw (GB/s) | #wrong | in-place time (µs) | algbw (GB/s) | busbw (GB/s) | #wrong |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            );
            self.label = l;
        }
        let _ = write!(text, "| {} | {} ", p.size_bytes, p.count);
        for m in p.measurements() {
            let wrong = m.wrong.map(|w| w.to_string()).unwrap_or_else(|| "N/A".into());
            let _ = write!(text, "| {:.2} | {:.2} | {:.2} | {wrong} ", m.time_us, m.algbw_gbps, m.busbw_gbps);
        }
        text.push_str("|\n");
        self.file.append(text.as_bytes())
    }

    fn end(&mut self, _info: &RunInfo, totals: &Totals) -> Result<()> {
        let tail = format!("\nWrong elements: {}; out-of-bounds bytes: {}.\n", totals.wrong, totals.out_of_bounds);
        self.file.append(tail.as_bytes())
    }
}
