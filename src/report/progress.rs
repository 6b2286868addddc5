//! A progress bar on stderr (indicatif), for a person at a terminal: the current collective and
//! size, and an ETA. On by itself only when rank 0's stderr is a terminal (a singleton run,
//! `srun --pty`), so logs and pipes never see it; under `mpirun` a rank's stderr is a pipe that
//! mpirun copies to its own, so it takes `--progress`. Never on stdout, where the table goes.

use super::Report;
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::io::{IsTerminal, Write};

pub struct ProgressReport {
    bar: ProgressBar,
}

impl ProgressReport {
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
        self.bar.set_message(format!("{} {} done", p.collective.name(), crate::size::human(p.size_bytes)));
        self.bar.inc(1);
        Ok(())
    }

    fn end(&mut self, _info: &RunInfo, _totals: &Totals) -> Result<()> {
        self.bar.finish_and_clear();
        Ok(())
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
