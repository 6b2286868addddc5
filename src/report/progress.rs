//! A progress bar on stderr (indicatif), for a person at a terminal: the current collective and
//! size, and an ETA. On by itself only when rank 0's stderr is a terminal (a singleton run,
//! `srun --pty`), so logs and pipes never see it; under `mpirun` a rank's stderr is a pipe that
//! mpirun copies to its own, so it takes `--progress`. Never on stdout, where the table goes;
//! and since on a terminal both end on one screen, the table's lines go through
//! [`BarAwareWriter`]: each whole line is written with the bar cleared and redrawn after it
//! (indicatif's `suspend`), so a row never shares a line with the bar.

use super::Report;
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::io::{IsTerminal, Write};

pub struct ProgressReport {
    bar: ProgressBar,
}

impl ProgressReport {
    /// A handle on the bar, for [`BarAwareWriter`].
    pub fn bar(&self) -> ProgressBar {
        self.bar.clone()
    }

    /// One more point done.
    pub fn advance(&self, p: &Point) {
        self.bar.set_message(format!("{} {} done", p.collective.name(), crate::size::human(p.size_bytes)));
        self.bar.inc(1);
    }

    /// Done: the bar is removed from the screen.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// A bar over `total` points when asked for (`forced`) or when stderr is a terminal.
    pub fn new(total: u64, forced: bool) -> Option<ProgressReport> {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else if forced {
            ProgressDrawTarget::term_like(Box::new(AnsiStderr))
        } else {
            return None;
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} points  {msg}  ETA {eta}")
                .expect("template is valid")
                .progress_chars("=> "),
        );
        Some(ProgressReport { bar })
    }
}

impl Report for ProgressReport {
    fn begin(&mut self, _info: &RunInfo) -> Result<()> {
        self.bar.set_message("starting");
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
}

/// stderr as a terminal that indicatif draws on even through a pipe (mpirun forwards it).
#[derive(Debug)]
struct AnsiStderr;

impl AnsiStderr {
    fn put(&self, s: &str) -> std::io::Result<()> {
        std::io::stderr().write_all(s.as_bytes())
    }
}

impl TermLike for AnsiStderr {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}A"))?;
        }
        Ok(())
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}B"))?;
        }
        Ok(())
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}C"))?;
        }
        Ok(())
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}D"))?;
        }
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.put(&format!("{s}\n"))
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.put(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.put("\r\x1b[2K")
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
