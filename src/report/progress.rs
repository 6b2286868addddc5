//! Progress on stderr, for a person at a terminal: points done of all, the current collective
//! and size, and an ETA. On by itself only when rank 0's stderr is a terminal (a singleton run,
//! `srun --pty`), so logs and pipes never see it; under `mpirun` a rank's stderr is a pipe that
//! mpirun copies to its own, so it takes `--progress`. Never on stdout, where the table goes.
//!
//! Two forms, because a row must never share a line with it:
//! - stderr a terminal: a bar redrawn in place (indicatif). stdout and stderr reach the screen
//!   from this process in the order written, so the table's lines go through
//!   [`BarAwareWriter`]: each whole line written with the bar cleared and redrawn after it
//!   (indicatif's `suspend`).
//! - stderr a pipe (`--progress` under mpirun): whole lines, after the first point and then at
//!   most one every [`LINE_INTERVAL_S`] (`coll-bench: progress 12/66 points, all-reduce 16K
//!   done, ETA 4s`), each one write. mpirun forwards a rank's stdout and stderr through two pipes in its own
//!   order, so a bar cleared before a row and redrawn after it reaches the terminal around the
//!   row, or in its middle (`>   2/66 points  all-reduce 16 done  ETA 4s        16   4   float
//!   sum …`): nothing drawn in place can be kept off the rows' lines. Whole lines on both
//!   streams interleave only between lines. (A test runs mpirun in a
//!   pseudo-terminal and reads the screen back through a terminal emulator (`tests/analysis.rs`).)

use super::Report;
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Under mpirun, the least time between two progress lines, seconds.
pub const LINE_INTERVAL_S: f64 = 2.0;

pub struct ProgressReport {
    form: Form,
}

enum Form {
    /// Drawn in place on a terminal.
    Bar(ProgressBar),
    /// Whole lines through a pipe (behind a lock: `advance` takes `&self`, as the bar's does).
    Lines(std::sync::Mutex<Lines>),
}

/// The line form's state.
struct Lines {
    total: u64,
    done: u64,
    start: Instant,
    /// When the last line was written; `None` before the first.
    last: Option<Instant>,
}

impl Lines {
    /// `coll-bench: progress 12/66 points, all-reduce 16K done, ETA 4s`: for the first point,
    /// then once [`LINE_INTERVAL_S`] has passed since the last line; never for the last point
    /// (the footer follows).
    fn line(&mut self, what: &str, now: Instant) -> Option<String> {
        self.done += 1;
        let soon = self.last.is_some_and(|t| now.duration_since(t) < Duration::from_secs_f64(LINE_INTERVAL_S));
        if self.done >= self.total || soon {
            return None;
        }
        self.last = Some(now);
        let per = now.duration_since(self.start).as_secs_f64() / self.done as f64;
        let eta = (per * (self.total - self.done) as f64).round() as u64;
        let eta = if eta >= 60 { format!("{}m{:02}s", eta / 60, eta % 60) } else { format!("{eta}s") };
        Some(format!("coll-bench: progress {}/{} points, {what} done, ETA {eta}\n", self.done, self.total))
    }
}

impl ProgressReport {
    /// The bar, for [`BarAwareWriter`]; `None` in the line form, whose lines need no care.
    pub fn bar(&self) -> Option<ProgressBar> {
        match &self.form {
            Form::Bar(b) => Some(b.clone()),
            Form::Lines(_) => None,
        }
    }

    /// One more point done.
    pub fn advance(&self, p: &Point) {
        let what = format!("{} {}", p.collective.name(), crate::size::human(p.size_bytes));
        match &self.form {
            Form::Bar(bar) => {
                bar.set_message(format!("{what} done"));
                bar.inc(1);
            }
            Form::Lines(l) => {
                let line = l.lock().unwrap_or_else(|e| e.into_inner()).line(&what, Instant::now());
                if let Some(line) = line {
                    // One write of the whole line: a pipe passes it on whole (under PIPE_BUF).
                    let _ = std::io::stderr().lock().write_all(line.as_bytes());
                }
            }
        }
    }

    /// Done: the bar is removed from the screen (the line form leaves its lines).
    pub fn finish(&self) {
        if let Form::Bar(bar) = &self.form {
            bar.finish_and_clear();
        }
    }

    /// Progress over `total` points when asked for (`forced`) or when stderr is a terminal.
    pub fn new(total: u64, forced: bool) -> Option<ProgressReport> {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} points  {msg}  ETA {eta}")
                    .expect("template is valid")
                    .progress_chars("=> "),
            );
            Some(ProgressReport { form: Form::Bar(bar) })
        } else if forced {
            let now = Instant::now();
            Some(ProgressReport { form: Form::Lines(Lines { total, done: 0, start: now, last: None }.into()) })
        } else {
            None
        }
    }
}

impl Report for ProgressReport {
    fn begin(&mut self, _info: &RunInfo) -> Result<()> {
        if let Form::Bar(bar) = &self.form {
            bar.set_message("starting");
        }
        Ok(())
    }

    fn point(&mut self, _info: &RunInfo, p: &Point) -> Result<()> {
        self.advance(p);
        Ok(())
    }

    fn end(&mut self, _info: &RunInfo, _totals: &Totals) -> Result<()> {
        self.finish();
        Ok(())
    }
}

/// Lines to `out` that never tear a progress bar: whole lines only, each written while the
/// bar is cleared (`ProgressBar::suspend`) and flushed before it is redrawn. Without a bar, a
/// plain writer that flushes every line.
pub struct BarAwareWriter<W: Write> {
    out: W,
    bar: Option<ProgressBar>,
    pending: Vec<u8>,
}

impl<W: Write> BarAwareWriter<W> {
    pub fn new(out: W, bar: Option<ProgressBar>) -> Self {
        BarAwareWriter { out, bar, pending: vec![] }
    }

    fn emit(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        let BarAwareWriter { out, bar, .. } = self;
        let mut write = || out.write_all(chunk).and_then(|_| out.flush());
        match bar {
            Some(b) if !b.is_finished() => b.suspend(write),
            _ => write(),
        }
    }
}

impl<W: Write> Write for BarAwareWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(end) = self.pending.iter().rposition(|b| *b == b'\n') {
            let lines: Vec<u8> = self.pending.drain(..=end).collect();
            self.emit(&lines)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.emit(&rest)?;
        }
        self.out.flush()
    }
}

impl<W: Write> Drop for BarAwareWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer that records each write call: every call must be whole lines.
    #[derive(Clone, Default)]
    struct Calls(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Calls {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn only_whole_lines_reach_the_screen() {
        let calls = Calls::default();
        let bar = ProgressBar::with_draw_target(Some(10), ProgressDrawTarget::hidden());
        let mut w = BarAwareWriter::new(calls.clone(), Some(bar));
        write!(w, "     1024").unwrap();
        write!(w, "  256  float").unwrap();
        assert!(calls.0.lock().unwrap().is_empty(), "half a row is held back");
        writeln!(w, "  sum").unwrap();
        writeln!(w, "second\nthird").unwrap();
        write!(w, "tail").unwrap();
        drop(w);
        let got: Vec<String> =
            calls.0.lock().unwrap().iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect();
        assert_eq!(got, ["     1024  256  float  sum\n", "second\nthird\n", "tail"]);
    }

    #[test]
    fn lines_are_whole_spaced_and_none_for_the_last_point() {
        let t0 = Instant::now();
        let mut l = Lines { total: 10, done: 0, start: t0, last: None };
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        assert_eq!(
            l.line("all-reduce 8", at(0.5)).as_deref(),
            Some("coll-bench: progress 1/10 points, all-reduce 8 done, ETA 5s\n"),
            "the first point is said at once"
        );
        assert_eq!(l.line("all-reduce 16", at(2.0)), None, "too soon after the last line");
        l.done -= 1;
        assert_eq!(
            l.line("all-reduce 16", at(2.5)).as_deref(),
            Some("coll-bench: progress 2/10 points, all-reduce 16 done, ETA 10s\n")
        );
        assert_eq!(l.line("all-reduce 32", at(4.0)), None, "too soon after the last line");
        l.total = 100;
        assert_eq!(
            l.line("all-reduce 64", at(4.6)).as_deref(),
            Some("coll-bench: progress 4/100 points, all-reduce 64 done, ETA 1m50s\n")
        );
        l.total = 5;
        assert_eq!(l.line("all-reduce 128", at(60.0)), None, "the last point: the footer follows");
    }
}
