//! The sweep as a subcommand, on every rank, after the plan is agreed: set up
//! ([`crate::setup`]: outputs, backend, memory), rank 0's files and header first, the ceiling
//! pass, the sweep, every point to every report, the points only later ones show to be above
//! the trend, the end (and `--plot`), the files written named. What `check`, `tune` and
//! `doctor` run of the sweep they wire themselves.

use crate::error::{exit, Result};
use crate::memory;
use crate::options::Options;
use crate::report::outputs;
use crate::report::table::TableReport;
use crate::report::Report;
use crate::setup;
use crate::sweep::Sweep;
use crate::world::World;
use std::path::PathBuf;

/// The sweep's run; its exit code (1: a wrong result). Collective.
pub fn run(world: &World, mut opts: Options) -> Result<i32> {
    world.agree(opts.validate_for_world(world.size))?;
    // --groups: a layout that does not fit this world is refused before anything is made.
    let groups = world.agree(setup::groups(world, &opts.groups))?;
    let member = world.agree(setup::member(world, &opts, &groups))?;
    // Outputs first: a run that would fail on one fails before anything is allocated.
    setup::check_outputs(world, &setup::sweep_outputs(&opts), &setup::sweep_inputs(&opts), opts.files)?;
    setup::claim_outputs(world, &outputs::whole(&opts), opts.files)?;
    if let Some(path) = &opts.write_matrix {
        let text = crate::collective::traffic::matrix_text(opts.pattern(0), opts.max_bytes as usize, member.size);
        let written = if world.rank == 0 {
            crate::report::outfile::replace("--write-matrix", path, text.as_bytes(), opts.files)
        } else {
            Ok(())
        };
        world.agree(written)?;
    }

    let (mut backend, note) = setup::ready_backend(world, &mut opts)?;

    let now = chrono::Utc::now();
    let mut info = setup::run_info(world, backend.as_ref(), &opts, &now, note.into_iter().collect());

    crate::report::interrupted::arm(world.rank, Some(&[]));
    // The files and the header first: a run whose ceiling pass or first point takes long (a
    // large -n, a slow link) shows what it does and has its files from the start.
    let opened = if world.rank == 0 { open_reports(&opts, &now).map(Some) } else { Ok(None) };
    let (mut reports, csv_file, mut files) = world.agree(opened)?.unwrap_or_default();
    crate::report::interrupted::arm(world.rank, Some(&files));
    let begun: Result<()> = reports.iter_mut().try_for_each(|r| r.begin(&info));
    world.agree(begun)?;

    let mut sweep = Sweep::new(world, backend.as_mut(), &opts).in_group(member);
    // Then the ceiling: every point is read against it.
    let links = info.ring_links();
    info.ceiling = sweep.ceiling(links, &mut info.notes)?;
    let more = std::time::Instant::now();
    crate::nic::beside(world, &mut info.ceiling);
    // Between hosts, each host pair the ring crosses on its own (every rank alike: the ceiling is).
    if let Some(c) = info.ceiling.as_mut().filter(|c| c.links == crate::record::RunInfo::BETWEEN_HOSTS) {
        c.host_pairs = crate::pairs::links::ring_host_links(world, c.size_bytes, opts.budget_s / 2.0, opts.files);
    }
    if let Some(c) = info.ceiling.as_mut() {
        c.seconds += more.elapsed().as_secs_f64();
    }
    let told: Result<()> = reports.iter_mut().try_for_each(|r| r.ceiling(&info));
    world.agree(told)?;

    let mut totals = sweep.run(&mut |p| reports.iter_mut().try_for_each(|r| r.point(&info, p)))?;
    totals.peak_rss_bytes = world.max_u64(memory::peak_rss_bytes());
    // Points only the later ones show to be above the trend (rank 0's medians), and what to
    // suspect of them.
    let crowded = crate::info::facts::crowded(world);
    let flags = sweep.above_trend(crowded.as_ref());
    let amended: Result<()> = reports.iter_mut().try_for_each(|r| r.amend(&info, &flags));
    world.agree(amended)?;
    let mut ended: Result<()> = reports.iter_mut().try_for_each(|r| r.end(&info, &totals));
    drop(reports); // closes the CSV
    if let (Some(plot), Some(csv), 0, Ok(())) = (&opts.plot, &csv_file, world.rank, &ended) {
        ended = crate::plot::plot_run(csv, plot, opts.files);
        files.push((plot.clone(), outputs::format("--plot").what));
    }
    if ended.is_ok() {
        print_files(&files);
    }
    world.agree(ended)?;
    Ok(if totals.failed() { exit::WRONG } else { exit::OK })
}

/// Rank 0's reports, the CSV's path, and every file they write with what it is.
type Opened = (Vec<Box<dyn Report>>, Option<PathBuf>, Vec<(PathBuf, &'static str)>);

/// The reports of rank 0: the table on standard output, every file of
/// [`crate::report::outputs::FORMATS`] the options name (all created, or none), the progress
/// bar. Also the CSV's path (chosen here for the default name), for `--plot`, and the files
/// (where the data goes: a followed link's target), for the footer.
fn open_reports(opts: &Options, now: &chrono::DateTime<chrono::Utc>) -> Result<Opened> {
    let opened = outputs::open(opts, now)?;
    let csv_path = opened.iter().find(|o| o.format.flag == "--csv").map(|o| o.path.clone());
    let files = opened.iter().map(|o| (o.path.clone(), o.format.what)).collect();
    let total = opts.point_count(u64::MAX - 1);
    let progress = crate::report::progress::ProgressReport::new(total, opts.progress);
    // The table's rows go through the bar (cleared, written, redrawn): never on the bar's line.
    let stdout = crate::report::progress::BarAwareWriter::new(
        crate::report::stdout::out(),
        progress.as_ref().and_then(|p| p.bar()),
    );
    let mut reports: Vec<Box<dyn Report>> = vec![outputs::in_series_order(TableReport::new(stdout), opts.order)];
    reports.extend(opened.into_iter().map(|o| o.report));
    // Last: its `end` clears the bar after the footer is out.
    if let Some(bar) = progress {
        reports.push(Box::new(bar));
    }
    Ok((reports, csv_path, files))
}

/// The footer's last lines: every file the run wrote, absolute (a relative path is no help
/// when the run went through `srun` on another node).
fn print_files(files: &[(PathBuf, &str)]) {
    use std::io::Write;
    let mut out = crate::report::stdout::out();
    for (path, what) in files {
        let _ = writeln!(out, "{}", crate::report::written_line(path, what));
    }
    let _ = out.flush();
}
