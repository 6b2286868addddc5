//! `--order size`: points arrive round by round (every collective at one size, then the next
//! size), but the table and the Markdown print one block per collective × type × op. This
//! wrapper holds the points and hands them to its report at the end, each series' sizes in turn
//! (the order `--order collective` measures in). The CSV and JSON take rows as measured.

use super::Report;
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};

pub struct InSeriesOrder<R: Report> {
    inner: R,
    held: Vec<Point>,
}

impl<R: Report> InSeriesOrder<R> {
    pub fn new(inner: R) -> Self {
        InSeriesOrder { inner, held: vec![] }
    }
}

impl<R: Report> Report for InSeriesOrder<R> {
    fn begin(&mut self, info: &RunInfo) -> Result<()> {
        self.inner.begin(info)
    }

    fn ceiling(&mut self, info: &RunInfo) -> Result<()> {
        self.inner.ceiling(info)
    }

    fn point(&mut self, _info: &RunInfo, p: &Point) -> Result<()> {
        self.held.push(p.clone());
        Ok(())
    }

    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()> {
        let plan = info.options.plan();
        // all-to-all-v's pattern: the index of its series' pattern.
        let o = &info.options;
        let pattern = |p: &Point| {
            p.traffic.as_ref().and_then(|t| o.patterns.iter().position(|x| x.to_string() == t.pattern)).unwrap_or(0)
        };
        let series =
            |p: &Point| plan.iter().position(|s| *s == (p.collective, p.dtype, p.op, pattern(p))).unwrap_or(plan.len());
        // A stable sort: each series' sizes stay in the order they were measured (ascending).
        let mut held = std::mem::take(&mut self.held);
        held.sort_by_key(series);
        for p in &held {
            self.inner.point(info, p)?;
        }
        self.inner.end(info, totals)
    }
}
