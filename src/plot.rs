//! `coll-bench plot RUN.csv [MORE.csv…] -o FILE.svg|FILE.png`: bus bandwidth and time against
//! message size, one series per file × collective × backend (× type, op and placement where
//! those vary), drawn with plotters. `--x-axis imbalance` draws all-to-all-v's rows against
//! their traffic's imbalance instead: one series per pattern family (the pattern less its skew or
//! spread) and size, a point per skew, so a sweep of `--pattern moe:…,skew=0,0.5,1` shows what
//! an unbalanced router costs.
//!
//! Two panels, one above the other, sharing the legend on the right: bus bandwidth (GB/s,
//! linear) and mean time per call (µs, log10), both against size on a log2 axis. Both axes are
//! plotted as logarithms and labelled with the values, so the ticks fall on powers of two (sizes)
//! and on 1-2-5 steps (times). Text uses DejaVu Sans, embedded, so PNGs need no system fonts.
//! The image is drawn in memory and written at the end: an error leaves no file behind.

use crate::csvread::{self, Row};
use crate::error::{exit, Error, Result};
use crate::options::Policy;
use crate::record::Placement;
use crate::size::human;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::CoordTranslate;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The command line's form, for error lines.
pub const FORM: &str = "coll-bench plot RUN.csv [MORE.csv…] -o FILE.svg|FILE.png";

/// The image's smallest and largest side, pixels.
pub const MIN_SIDE: u32 = 300;
pub const MAX_SIDE: u32 = 8192;

/// `coll-bench plot`, as the command line gave it (`crate::cli`).
#[derive(Clone, Debug, PartialEq)]
pub struct PlotOptions {
    /// The CSVs, each file's series marked with its own shape.
    pub files: Vec<PathBuf>,
    /// The image; its extension chooses the format.
    pub output: PathBuf,
    pub style: Style,
    pub policy: Policy,
}

/// Which placements to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementChoice {
    In,
    Out,
    Both,
}

impl PlacementChoice {
    /// `placement` as csvread gives it: the one spelling, whatever the file had.
    fn keeps(self, placement: &str) -> bool {
        match self {
            PlacementChoice::In => placement == Placement::InPlace.name(),
            PlacementChoice::Out => placement == Placement::OutOfPlace.name(),
            PlacementChoice::Both => true,
        }
    }

    /// What the image shows, in the legend's heading and the line that says it was written:
    /// labels name a placement only with `--placement both`, so the heading says which one.
    fn shown(self) -> &'static str {
        match self {
            PlacementChoice::In => "in-place only",
            PlacementChoice::Out => "out-of-place only",
            PlacementChoice::Both => "both placements",
        }
    }
}

/// What the horizontal axis shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    /// The message size (log2 scale): every row with a size above 0.
    Size,
    /// all-to-all-v's imbalance (linear): the rows that have one.
    Imbalance,
}

/// Which time per call to draw, and to derive the bus bandwidth from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// time_us and busbw_gbps as measured
    Mean,
    /// median_us, and busbw scaled to it
    Median,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Svg,
    Png,
}

/// `coll-bench plot`: check the image's path and the CSVs, draw, write; the exit code.
pub fn main(o: &PlotOptions) -> i32 {
    match write_plot(&o.files, &o.output, &o.style, o.policy, "-o/--output", false) {
        Ok(what) => {
            let shown = crate::error::shown(crate::report::outfile::absolute(&o.output));
            crate::outln!("coll-bench plot: wrote {shown} ({what})");
            exit::OK
        }
        Err(e) => {
            eprintln!("coll-bench: error: plot: {e}");
            exit::ERROR
        }
    }
}

/// Plot one finished run's CSV to `output` with the default style: the sweep's `--plot FILE`
/// (its path checked and claimed before the run).
pub fn plot_run(csv: &Path, output: &Path, policy: Policy) -> Result<()> {
    write_plot(&[csv.to_path_buf()], output, &Style::default(), policy, "--plot", true).map(|_| ())
}

/// How the image looks: every flag of `plot` but the files, the output and the file policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Style {
    pub placement: PlacementChoice,
    pub stat: Stat,
    /// Pixels.
    pub width: u32,
    pub height: u32,
    /// Default: the files, ranks and hosts.
    pub title: Option<String>,
    pub x: XAxis,
}

impl Default for Style {
    /// The flags' defaults (a test checks that they agree).
    fn default() -> Style {
        Style {
            placement: PlacementChoice::Out,
            stat: Stat::Mean,
            width: 1200,
            height: 900,
            title: None,
            x: XAxis::Size,
        }
    }
}

/// Check, before a sweep starts, that `path` names an SVG or PNG file (`--plot FILE`).
pub fn check_output(path: &Path) -> Result<()> {
    format_of(path).map(|_| ()).map_err(|e| Error::usage(e.to_string().replace("-o/--output", "--plot")))
}

fn format_of(path: &Path) -> Result<Format> {
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        Some(other) => Err(Error::usage(format!(
            "-o/--output: unknown image type '.{other}' in '{}'; expected {FORM}",
            crate::error::shown(path)
        ))),
        None => {
            Err(Error::usage(format!("-o/--output: '{}' has no extension; expected {FORM}", crate::error::shown(path))))
        }
    }
}

/// Read `files`, draw them in `style` and write the image to `output` (named `flag` in errors);
/// what it shows, for the line that says it was written (`3 series, out-of-place, mean time per
/// call`). `checked`: the sweep's `--plot`, whose path was checked and claimed before the run;
/// the standalone subcommand checks and claims the image here, before drawing.
fn write_plot(
    files: &[PathBuf],
    output: &Path,
    style: &Style,
    policy: Policy,
    flag: &str,
    checked: bool,
) -> Result<String> {
    let format = format_of(output)?;
    if !checked {
        let inputs: Vec<(&str, &Path)> = files.iter().map(|f| ("an input", f.as_path())).collect();
        crate::report::outfile::check(&[(flag, output)], &inputs, policy)?;
        crate::report::outfile::claim(flag, output, policy)?;
    }
    let mut runs = vec![];
    for f in files {
        runs.push(csvread::read(f).map_err(|e| Error::usage(format!("{e}; expected {FORM}")))?);
    }
    let names = file_labels(files);
    let plot = Plot::build(&names, &runs, style.placement, style.stat, style.x)?;
    let title = style.title.clone().unwrap_or_else(|| default_title(&names, &runs));
    let size = (style.width, style.height);
    let bytes = match format {
        Format::Svg => {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
                draw(&root, &plot, &title).map_err(draw_error)?;
                root.present().map_err(draw_error)?;
            }
            text.into_bytes()
        }
        Format::Png => {
            let mut pixels = vec![0u8; style.width as usize * style.height as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
                draw(&root, &plot, &title).map_err(draw_error)?;
                root.present().map_err(draw_error)?;
            }
            encode_png(&pixels, size)?
        }
    };
    crate::report::outfile::replace(flag, output, &bytes, policy)?;
    let n = plot.series.len();
    Ok(format!(
        "{n} series, {}, {} time per call{}",
        style.placement.shown(),
        match style.stat {
            Stat::Mean => "mean",
            Stat::Median => "median",
        },
        match style.x {
            XAxis::Size => "",
            XAxis::Imbalance => ", against imbalance",
        }
    ))
}

fn draw_error(e: impl std::fmt::Display) -> Error {
    Error::setup(format!("drawing failed: {e}"))
}

fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>> {
    let mut out = vec![];
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(draw_error)?;
        writer.write_image_data(rgb).map_err(draw_error)?;
        writer.finish().map_err(draw_error)?;
    }
    Ok(out)
}

/// How each file is named in legends: its file name, or the path as given where two files share
/// a name.
fn file_labels(files: &[PathBuf]) -> Vec<String> {
    let short: Vec<String> = files
        .iter()
        .map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string()))
        .collect();
    short
        .iter()
        .zip(files)
        .map(|(s, p)| if short.iter().filter(|o| *o == s).count() > 1 { p.display().to_string() } else { s.clone() })
        .collect()
}

fn default_title(names: &[String], runs: &[Vec<Row>]) -> String {
    let mut ctx = vec![];
    for rows in runs {
        let r = &rows[0];
        if let (Some(n), Some(h)) = (r.ranks, r.hosts) {
            ctx.push(format!("{n} rank{} on {h} host{}", plural(n), plural(h)));
        }
    }
    ctx.dedup();
    let files = if names.len() <= 3 { names.join(", ") } else { format!("{} files", names.len()) };
    match ctx.len() {
        1 => format!("coll-bench: {files} ({})", ctx[0]),
        _ => format!("coll-bench: {files}"),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// (x: log2 of the size in bytes, or the imbalance; bus bandwidth in GB/s; time in µs).
type PlotPoint = (f64, f64, f64);

/// One line on each panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    /// Which file it came from (its marker shape).
    pub file: usize,
    /// By x.
    pub points: Vec<PlotPoint>,
}

/// What gets drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub series: Vec<Series>,
    pub stat: Stat,
    pub placement: PlacementChoice,
    pub x: XAxis,
}

impl Plot {
    /// Group rows into series. Sizes of 0 (barrier) have no place on a log axis and are left out;
    /// against imbalance, only rows with an imbalance (all-to-all-v's) are drawn.
    fn build(names: &[String], runs: &[Vec<Row>], placement: PlacementChoice, stat: Stat, x: XAxis) -> Result<Plot> {
        let kept: Vec<(usize, &Row)> = runs
            .iter()
            .enumerate()
            .flat_map(|(i, rows)| rows.iter().map(move |r| (i, r)))
            .filter(|(_, r)| placement.keeps(&r.key.placement) && r.key.size_bytes > 0)
            .filter(|(_, r)| x == XAxis::Size || r.imbalance.is_some())
            .collect();
        if kept.is_empty() && x == XAxis::Imbalance {
            return Err(Error::usage(format!(
                "--x-axis imbalance: no all-to-all-v measurement with an imbalance in {} (a sweep of all-to-all-v writes imbalance_sent and imbalance_received; --pattern moe:experts=8,topk=2,skew=0,0.5,1 gives a point per skew)",
                names.join(", ")
            )));
        }
        if kept.is_empty() {
            let which = match placement {
                PlacementChoice::In => "in-place ",
                PlacementChoice::Out => "out-of-place ",
                PlacementChoice::Both => "",
            };
            return Err(Error::usage(format!(
                "nothing to plot: no {which}measurement with a size above 0 in {} (barrier has no size; --placement both draws every placement)",
                names.join(", ")
            )));
        }
        let mut series: Vec<(usize, SeriesId, Vec<PlotPoint>)> = vec![];
        for (file, r) in kept {
            let mut id = r.key.series();
            let at = match x {
                XAxis::Size => (r.key.size_bytes as f64).log2(),
                XAxis::Imbalance => {
                    id.0 = format!("{} at {}", pattern_family(&id.0), human(r.key.size_bytes));
                    r.imbalance.unwrap_or(f64::NAN)
                }
            };
            let pos = match series.iter().position(|(f, s, _)| *f == file && *s == id) {
                Some(p) => p,
                None => {
                    series.push((file, id, vec![]));
                    series.len() - 1
                }
            };
            let point = match stat {
                Stat::Mean => (at, r.busbw_gbps, r.time_us),
                // busbw = bytes × factor / time: the same factor over the median.
                Stat::Median if r.median_us > 0.0 => (at, r.busbw_gbps * r.time_us / r.median_us, r.median_us),
                Stat::Median => (at, f64::NAN, r.median_us),
            };
            series[pos].2.push(point);
        }
        let ids: Vec<(usize, SeriesId)> = series.iter().map(|(f, id, _)| (*f, id.clone())).collect();
        let labels = labels(&ids, names, placement == PlacementChoice::Both);
        let out = series
            .into_iter()
            .zip(labels)
            .map(|((file, _, mut points), label)| {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series { label, file, points }
            })
            .collect();
        Ok(Plot { series: out, stat, placement, x })
    }
}

/// An all-to-all-v series' pattern less what a sweep of skews varies, so the skews of one
/// router are one line: `all-to-all-v(moe:experts=8,topk=2,skew=0.5,seed=1)` →
/// `all-to-all-v(moe:experts=8,topk=2,seed=1)`, `all-to-all-v(spread=0.5)` →
/// `all-to-all-v(spread)`; anything else as it is.
fn pattern_family(collective: &str) -> String {
    let Some((base, rest)) = collective.split_once('(') else { return collective.to_string() };
    let pattern = rest.strip_suffix(')').unwrap_or(rest);
    if pattern.starts_with("spread=") {
        return format!("{base}(spread)");
    }
    match pattern.strip_prefix("moe:") {
        Some(keys) => {
            let kept: Vec<&str> = keys.split(',').filter(|k| !k.starts_with("skew=")).collect();
            format!("{base}(moe:{})", kept.join(","))
        }
        None => collective.to_string(),
    }
}

/// collective, backend, dtype, op, placement.
type SeriesId = (String, String, String, String, String);

/// Legend labels: the file (if there are several), collective and backend; then the type, op
/// and placement, each only where it tells apart series that the parts before it do not (so an
/// all-reduce swept over two ops names them, and an all-gather beside it does not say "none").
/// With `--placement both` every label names its placement.
fn labels(ids: &[(usize, SeriesId)], names: &[String], every_placement: bool) -> Vec<String> {
    let mut parts: Vec<Vec<String>> = ids
        .iter()
        .map(|(f, id)| {
            let mut p = vec![];
            if names.len() > 1 {
                p.push(names[*f].clone());
            }
            p.extend([id.0.clone(), id.1.clone()]);
            p
        })
        .collect();
    type Dim = fn(&SeriesId) -> String;
    let dims: [Dim; 3] = [|id| id.2.clone(), |id| id.3.clone(), |id| id.4.replace('_', "-")];
    for (d, dim) in dims.into_iter().enumerate() {
        let mut groups: HashMap<(usize, Vec<String>), Vec<String>> = HashMap::new();
        for ((f, id), p) in ids.iter().zip(&parts) {
            let values = groups.entry((*f, p.clone())).or_default();
            if !values.contains(&dim(id)) {
                values.push(dim(id));
            }
        }
        let split: Vec<bool> = ids.iter().zip(&parts).map(|((f, _), p)| groups[&(*f, p.clone())].len() > 1).collect();
        for (((_, id), p), split) in ids.iter().zip(parts.iter_mut()).zip(split) {
            if split || (d == 2 && every_placement) {
                p.push(dim(id));
            }
        }
    }
    parts.into_iter().map(|p| p.join(" · ")).collect()
}

/// Colours that stay apart on white (Tableau 10).
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn register_fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ok = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold()).is_ok();
        assert!(ok, "the embedded DejaVu Sans font loads");
    });
}

/// A linear axis over logarithms (log2 of sizes, log10 of times) whose ticks we choose: bold on
/// the labelled values, light on the ones between.
#[derive(Clone, Debug)]
struct LogAxis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for LogAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, (a, b): (i32, i32)) -> i32 {
        if self.hi <= self.lo {
            return (a + b) / 2;
        }
        let f = ((v - self.lo) / (self.hi - self.lo)).clamp(-1.0, 2.0);
        a + ((b - a) as f64 * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Integer exponents from `lo` to `hi`, every `step`-th, for `max` labels at most.
fn ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let (a, b) = (lo.ceil() as i64, hi.floor() as i64);
    let span = (b - a).max(0) as usize;
    let step = [1usize, 2, 3, 4, 5, 10, 20].into_iter().find(|s| span / s < max.max(1)).unwrap_or(50) as i64;
    (a..=b).filter(|e| e.rem_euclid(step) == 0).map(|e| e as f64).collect()
}

/// Round values from `lo` to `hi` on a linear axis (steps of 1, 2, 2.5 or 5 times a power of
/// ten), for `max` labels at most.
fn linear_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let step = (-3..=6)
        .flat_map(|e| [1.0, 2.0, 2.5, 5.0].map(|m| m * 10f64.powi(e)))
        .find(|s| span / s < max.max(1) as f64)
        .unwrap_or(span);
    let (a, b) = ((lo / step).ceil() as i64, (hi / step).floor() as i64);
    (a..=b).map(|k| k as f64 * step).collect()
}

/// log10 tick positions: decades, plus 2 and 5 within each when the range is narrow.
fn log10_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let decades = ticks(lo, hi, max);
    if decades.len() * 3 > max {
        return decades;
    }
    let mut out = vec![];
    for d in (lo.floor() as i64)..=(hi.ceil() as i64) {
        for m in [1.0f64, 2.0, 5.0] {
            let v = d as f64 + m.log10();
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
    }
    out
}

fn size_label(log2: &f64) -> String {
    let b = 2f64.powf(*log2).round() as u64;
    human(b)
}

fn number_label(v: f64) -> String {
    // Ticks are round numbers: print them with at most 4 decimals and no trailing zeros.
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" || s.is_empty() {
        "0".into()
    } else {
        s.into()
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, plot: &Plot, title: &str) -> std::result::Result<(), String>
where
    DB::ErrorType: 'static,
{
    register_fonts();
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let (w, h) = root.dim_in_pixel();
    let font = (w.min(h) as f64 / 55.0).clamp(11.0, 22.0);
    root.fill(&WHITE).map_err(e)?;
    let body = root.titled(title, ("sans-serif", font * 1.35).into_font().style(FontStyle::Bold)).map_err(e)?;

    // Legend on the right, as wide as its longest label (at most 40% of the image).
    let longest = plot.series.iter().map(|s| s.label.chars().count()).max().unwrap_or(0);
    let legend_w = ((longest as f64 * font * 0.62) + font * 4.0).min(w as f64 * 0.4) as u32;
    let (charts, legend) = body.split_horizontally(w - legend_w);
    let panels = charts.split_evenly((2, 1));

    let all = || plot.series.iter().flat_map(|s| s.points.iter());
    let xs: Vec<f64> = all().map(|p| p.0).filter(|v| v.is_finite()).collect();
    let (xmin, xmax) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    let xmax_labels = (((w - legend_w) as f64 / (font * 4.5)) as usize).max(2);
    let frame = match plot.x {
        XAxis::Size => {
            let (x0, x1) = (xmin - 0.3, xmax + 0.3);
            let x = LogAxis { lo: x0, hi: x1, bold: ticks(x0, x1, xmax_labels), light: ticks(x0, x1, 1000) };
            Frame { x, font, x_desc: "message size (bytes, log2 scale)", x_label: size_label }
        }
        XAxis::Imbalance => {
            let pad = ((xmax - xmin) * 0.06).max(0.05);
            let (x0, x1) = (xmin - pad, xmax + pad);
            let x = LogAxis { lo: x0, hi: x1, bold: linear_ticks(x0, x1, xmax_labels), light: vec![] };
            let x_desc = "imbalance: bytes of the busiest rank over the mean (the larger of sent and received)";
            Frame { x, font, x_desc, x_label: bandwidth_label }
        }
    };

    // Panel 1: bus bandwidth, linear from 0.
    let bw_max = all().map(|p| p.1).filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    let bw_top = if bw_max > 0.0 { bw_max * 1.08 } else { 1.0 };
    let bandwidth = Panel {
        y: RangedCoordf64::from(0f64..bw_top),
        y_desc: match plot.stat {
            Stat::Mean => "bus bandwidth (GB/s)",
            Stat::Median => "bus bandwidth at the median time (GB/s)",
        },
        y_label: bandwidth_label,
        y_labels: Some(8),
        max_light_lines: Some(1),
        value: bandwidth_of,
    };
    draw_panel(&panels[0], plot, &frame, &bandwidth).map_err(e)?;

    // Panel 2: time per call, log10.
    let times: Vec<f64> = all().map(|p| p.2).filter(|v| v.is_finite() && *v > 0.0).collect();
    let tmin = times.iter().copied().fold(f64::INFINITY, f64::min);
    let tmax = times.iter().copied().fold(0.0f64, f64::max);
    let (y0, y1) = if times.is_empty() { (0.0, 1.0) } else { (tmin.log10() - 0.15, tmax.log10() + 0.15) };
    let ymax_labels = (panels[1].dim_in_pixel().1 as f64 / (font * 2.5)) as usize;
    let time = Panel {
        y: LogAxis { lo: y0, hi: y1, bold: log10_ticks(y0, y1, ymax_labels.max(2)), light: vec![] },
        y_desc: match plot.stat {
            Stat::Mean => "time per call, mean (µs, log scale)",
            Stat::Median => "time per call, median (µs, log scale)",
        },
        y_label: time_label,
        y_labels: None,
        max_light_lines: None,
        value: time_of,
    };
    draw_panel(&panels[1], plot, &frame, &time).map_err(e)?;

    // The legend: a line with the series' marker, then its label.
    let row_h = (font * 1.6) as i32;
    let top = (font * 1.5) as i32;
    let x = (font * 0.5) as i32;
    let sample_w = (font * 2.2) as i32;
    legend
        .draw(&Text::new(
            format!("series, {}", plot.placement.shown()),
            (x, top - row_h),
            ("sans-serif", font).into_font().style(FontStyle::Bold),
        ))
        .map_err(e)?;
    for (i, s) in plot.series.iter().enumerate() {
        let y = top + i as i32 * row_h;
        let color = COLORS[i % COLORS.len()];
        let style = ShapeStyle::from(&color).stroke_width(2);
        legend.draw(&PathElement::new(vec![(x, y), (x + sample_w, y)], style)).map_err(e)?;
        draw_marker(&legend, (x + sample_w / 2, y), s.file, color, font).map_err(e)?;
        legend
            .draw(&Text::new(
                s.label.clone(),
                (x + sample_w + (font * 0.5) as i32, y),
                TextStyle::from(("sans-serif", font).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(e)?;
    }
    Ok(())
}

/// What both panels share: the x axis (its ticks, description and labels) and the font size.
struct Frame {
    x: LogAxis,
    font: f64,
    x_desc: &'static str,
    x_label: fn(&f64) -> String,
}

/// One panel: its y axis, how that axis is described and labelled, and which value of a point
/// it draws.
struct Panel<Y> {
    y: Y,
    y_desc: &'static str,
    y_label: fn(&f64) -> String,
    /// How many y labels to ask plotters for (None: its default).
    y_labels: Option<usize>,
    /// Light mesh lines between two bold ones (None: plotters' default).
    max_light_lines: Option<usize>,
    /// A point's y on this panel, None where it has none there.
    value: fn(&PlotPoint) -> Option<f64>,
}

impl<Y> Panel<Y> {
    /// A series' points on this panel: (x, y), those without a y left out.
    fn points(&self, s: &Series) -> Vec<(f64, f64)> {
        s.points.iter().filter(|p| p.0.is_finite()).filter_map(|p| (self.value)(p).map(|y| (p.0, y))).collect()
    }
}

/// The bandwidth panel's y: the bus bandwidth, where it is a number.
fn bandwidth_of(p: &PlotPoint) -> Option<f64> {
    p.1.is_finite().then_some(p.1)
}

/// The time panel's y: log10 of the time per call, where it is a positive time.
fn time_of(p: &PlotPoint) -> Option<f64> {
    (p.2.is_finite() && p.2 > 0.0).then(|| p.2.log10())
}

fn bandwidth_label(v: &f64) -> String {
    number_label(*v)
}

fn time_label(log10: &f64) -> String {
    number_label(10f64.powf(*log10))
}

/// Draw one panel on `area`: its mesh and axes, then every series as a line with markers.
fn draw_panel<DB: DrawingBackend, Y>(
    area: &DrawingArea<DB, Shift>,
    plot: &Plot,
    frame: &Frame,
    panel: &Panel<Y>,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64> + Clone,
{
    let font = frame.font;
    let mut chart = ChartBuilder::on(area)
        .margin(font * 0.8)
        .x_label_area_size(font * 3.2)
        .y_label_area_size(font * 4.8)
        .build_cartesian_2d(frame.x.clone(), panel.y.clone())?;
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&frame.x_label)
        .y_label_formatter(&panel.y_label)
        .x_desc(frame.x_desc)
        .y_desc(panel.y_desc)
        .label_style(("sans-serif", font).into_font())
        .axis_desc_style(("sans-serif", font * 1.1).into_font())
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(200, 200, 200));
    if let Some(n) = panel.y_labels {
        mesh.y_labels(n);
    }
    if let Some(n) = panel.max_light_lines {
        mesh.max_light_lines(n);
    }
    mesh.draw()?;
    for (i, s) in plot.series.iter().enumerate() {
        line_with_markers(&mut chart, &panel.points(s), i, s.file, font)?;
    }
    Ok(())
}

type Chart<'a, DB, Y> = ChartContext<'a, DB, Cartesian2d<LogAxis, Y>>;

fn line_with_markers<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, DB, Y>,
    pts: &[(f64, f64)],
    index: usize,
    file: usize,
    font: f64,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let color = COLORS[index % COLORS.len()];
    chart.draw_series(LineSeries::new(pts.iter().copied(), ShapeStyle::from(&color).stroke_width(2)))?;
    for p in pts {
        draw_marker(chart.plotting_area(), *p, file, color, font)?;
    }
    Ok(())
}

/// Markers tell files apart: circle, triangle, square, cross, diamond.
fn draw_marker<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    file: usize,
    color: RGBColor,
    font: f64,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    CT::From: Clone,
{
    let r = (font * 0.28).max(3.0) as i32;
    let fill = ShapeStyle::from(&color).filled();
    let line = ShapeStyle::from(&color).stroke_width(2);
    let at = EmptyElement::at(at);
    match file % 5 {
        0 => area.draw(&(at + Circle::new((0, 0), r, fill))),
        1 => area.draw(&(at + Polygon::new(vec![(0, -r - 1), (-r - 1, r), (r + 1, r)], fill))),
        2 => area.draw(&(at + Rectangle::new([(-r, -r), (r, r)], fill))),
        3 => area.draw(
            &(at + PathElement::new(vec![(-r, -r), (r, r)], line) + PathElement::new(vec![(-r, r), (r, -r)], line)),
        ),
        _ => area.draw(&(at + Polygon::new(vec![(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)], fill))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_keep_their_rows() {
        assert!(PlacementChoice::Out.keeps("out-of-place") && !PlacementChoice::Out.keeps("in-place"));
        assert!(PlacementChoice::In.keeps("in-place") && !PlacementChoice::In.keeps("out-of-place"));
        assert!(PlacementChoice::Both.keeps("in-place") && PlacementChoice::Both.keeps("out-of-place"));
    }

    use crate::csvread::Key;

    fn row(coll: &str, dtype: &str, placement: &str, size: u64) -> Row {
        Row {
            key: Key {
                collective: coll.into(),
                backend: "mpi".into(),
                dtype: dtype.into(),
                op: "sum".into(),
                placement: placement.into(),
                size_bytes: size,
            },
            iters: 10,
            batch_iters: 1,
            time_us: size as f64 / 100.0 + 1.0,
            median_us: 1.0,
            min_us: 1.0,
            max_us: 1.0,
            stddev_us: None,
            median_ci95_us: None,
            pct_of_ceiling: None,
            busbw_gbps: size as f64 / 1e3,
            ranks: Some(2),
            hosts: Some(1),
            line: 2,
            size_order: false,
            budget_s: None,
            imbalance: None,
        }
    }

    #[test]
    fn series_per_file_collective_backend_and_what_varies() {
        let a = vec![
            row("all-reduce", "float", "out-of-place", 16),
            row("all-reduce", "float", "in-place", 16),
            row("all-reduce", "float", "out-of-place", 8),
            row("barrier", "float", "out-of-place", 0),
            row("all-gather", "float", "out-of-place", 8),
        ];
        let b = vec![row("all-reduce", "double", "out-of-place", 8)];
        let names = vec!["a.csv".to_string(), "b.csv".to_string()];
        let p = Plot::build(&names, &[a.clone(), b], PlacementChoice::Out, Stat::Mean, XAxis::Size).unwrap();
        let labels: Vec<&str> = p.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            vec!["a.csv · all-reduce · mpi", "a.csv · all-gather · mpi", "b.csv · all-reduce · mpi"],
            "the files tell the types apart"
        );
        assert_eq!(p.series[0].points.iter().map(|p| p.0).collect::<Vec<_>>(), vec![3.0, 4.0], "sorted by size");
        assert_eq!(p.series[2].file, 1);
        assert_eq!(p.series[0].points[0], (3.0, 0.008, 1.08), "mean time and the CSV's busbw");
        // One file, both placements: the placement is named, the file and type are not.
        let p = Plot::build(&names[..1], &[a], PlacementChoice::Both, Stat::Mean, XAxis::Size).unwrap();
        let labels: Vec<&str> = p.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            vec!["all-reduce · mpi · out-of-place", "all-reduce · mpi · in-place", "all-gather · mpi · out-of-place"]
        );
    }

    #[test]
    fn types_and_ops_are_named_only_where_they_differ() {
        let mut max = row("all-reduce", "float", "out-of-place", 8);
        max.key.op = "max".into();
        let mut gather = row("all-gather", "float", "out-of-place", 8);
        gather.key.op = "none".into();
        let rows = vec![
            row("all-reduce", "float", "out-of-place", 8),
            max,
            row("all-reduce", "double", "out-of-place", 8),
            gather,
        ];
        let p = Plot::build(&["a.csv".into()], &[rows], PlacementChoice::Out, Stat::Mean, XAxis::Size).unwrap();
        let labels: Vec<&str> = p.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            vec![
                "all-reduce · mpi · float · sum",
                "all-reduce · mpi · float · max",
                "all-reduce · mpi · double",
                "all-gather · mpi"
            ]
        );
    }

    #[test]
    fn median_time_scales_the_bus_bandwidth() {
        let mut r = row("all-reduce", "float", "out-of-place", 1000);
        (r.time_us, r.median_us, r.busbw_gbps) = (20.0, 10.0, 3.0);
        let p = Plot::build(&["a.csv".into()], &[vec![r]], PlacementChoice::Out, Stat::Median, XAxis::Size).unwrap();
        assert_eq!(p.series[0].points, vec![(1000f64.log2(), 6.0, 10.0)]);
    }

    #[test]
    fn nothing_to_plot_is_an_error() {
        let a = vec![row("barrier", "float", "out-of-place", 0), row("all-reduce", "float", "in-place", 8)];
        let e = Plot::build(&["a.csv".into()], &[a], PlacementChoice::Out, Stat::Mean, XAxis::Size)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nothing to plot: no out-of-place measurement"), "{e}");
    }

    #[test]
    fn output_format_from_the_extension() {
        assert_eq!(format_of(Path::new("x.svg")).unwrap(), Format::Svg);
        assert_eq!(format_of(Path::new("dir/x.PNG")).unwrap(), Format::Png);
        assert!(format_of(Path::new("x.jpg")).unwrap_err().to_string().contains("unknown image type '.jpg'"));
        assert!(format_of(Path::new("x")).unwrap_err().to_string().contains("has no extension"));
    }

    #[test]
    fn ticks_fall_on_whole_exponents() {
        assert_eq!(ticks(2.7, 6.3, 10), vec![3.0, 4.0, 5.0, 6.0]);
        // 8 B .. 64 MiB with room for 8 labels: every third power of two.
        assert_eq!(ticks(2.7, 26.3, 8), vec![3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0]);
        assert_eq!(size_label(&10.0), "1K");
        assert_eq!(size_label(&20.0), "1M");
        assert_eq!(size_label(&3.0), "8");
        let t = log10_ticks(-0.2, 1.2, 10);
        let shown: Vec<String> = t.iter().map(|v| number_label(10f64.powf(*v))).collect();
        assert_eq!(shown, vec!["1", "2", "5", "10"]);
        assert_eq!(number_label(0.5), "0.5");
        assert_eq!(number_label(0.02), "0.02");
        assert_eq!(number_label(1000.0), "1000");
        assert_eq!(number_label(0.0), "0");
        assert_eq!(number_label(0.25), "0.25");
        assert_eq!(number_label(2.5), "2.5");
        assert_eq!(number_label(10f64.powf(2f64.log10())), "2");
    }

    #[test]
    fn files_are_named_by_file_name_unless_two_share_it() {
        let l = file_labels(&[PathBuf::from("x/run.csv"), PathBuf::from("y/run.csv"), PathBuf::from("z/other.csv")]);
        assert_eq!(l, vec!["x/run.csv", "y/run.csv", "other.csv"]);
    }

    fn series(file: usize, points: Vec<PlotPoint>) -> Series {
        Series { label: format!("series of file {file}"), file, points }
    }

    #[test]
    fn each_panel_draws_the_points_it_has_a_value_for() {
        let s = series(0, vec![(3.0, 1.0, 2.0), (4.0, f64::NAN, 10.0), (5.0, 3.0, 0.0)]);
        let panel = |value: fn(&PlotPoint) -> Option<f64>| Panel {
            y: RangedCoordf64::from(0f64..1.0),
            y_desc: "",
            y_label: bandwidth_label,
            y_labels: None,
            max_light_lines: None,
            value,
        };
        // x as given (log2 of the size); bandwidth where it is a number, log10 time where it is positive.
        assert_eq!(panel(bandwidth_of).points(&s), vec![(3.0, 1.0), (5.0, 3.0)]);
        assert_eq!(panel(time_of).points(&s), vec![(3.0, 2f64.log10()), (4.0, 1.0)]);
        assert_eq!(time_label(&2.0), "100");
        assert_eq!(bandwidth_label(&1.5), "1.5");
    }

    #[test]
    fn both_panels_are_drawn_into_the_image() {
        // File 0's markers are circles, file 1's triangles (polygons): count them in the SVG.
        let plot = Plot {
            series: vec![
                series(0, vec![(3.0, 1.0, 2.0), (4.0, f64::NAN, 10.0), (5.0, 3.0, 5.0)]),
                series(1, vec![(3.0, 2.0, 4.0), (4.0, 4.0, 8.0)]),
            ],
            stat: Stat::Mean,
            placement: PlacementChoice::Out,
            x: XAxis::Size,
        };
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (900, 700)).into_drawing_area();
            draw(&root, &plot, "two panels").unwrap();
            root.present().unwrap();
        }
        let count = |needle: &str| svg.matches(needle).count();
        assert_eq!(count("bus bandwidth (GB/s)"), 1, "the bandwidth panel's axis");
        assert_eq!(count("time per call, mean (µs, log scale)"), 1, "the time panel's axis");
        assert_eq!(count("series, out-of-place only"), 1, "the legend says which placement");
        assert_eq!(count("message size (bytes, log2 scale)"), 2, "a size axis on each panel");
        // Circles: 2 on the bandwidth panel (one point has none), 3 on the time panel, 1 in
        // the legend. Triangles: 2 + 2 + 1.
        assert_eq!(count("<circle"), 6, "{svg}");
        assert_eq!(count("<polygon"), 5, "{svg}");
    }

    #[test]
    fn against_imbalance_a_line_per_pattern_family_and_size_a_point_per_skew() {
        let v = |skew: &str, size: u64, imbalance: f64| {
            let mut r =
                row(&format!("all-to-all-v(moe:experts=8,topk=2,skew={skew},seed=1)"), "float", "out-of-place", size);
            r.imbalance = Some(imbalance);
            r
        };
        let rows = vec![
            v("0", 1 << 20, 1.02),
            v("1.5", 1 << 20, 2.85),
            v("0.5", 1 << 20, 1.52),
            v("0", 1 << 16, 1.02),
            row("all-reduce", "float", "out-of-place", 8),
        ];
        let p = Plot::build(
            &["a.csv".into()],
            std::slice::from_ref(&rows),
            PlacementChoice::Out,
            Stat::Mean,
            XAxis::Imbalance,
        )
        .unwrap();
        let labels: Vec<&str> = p.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            vec![
                "all-to-all-v(moe:experts=8,topk=2,seed=1) at 1M · mpi",
                "all-to-all-v(moe:experts=8,topk=2,seed=1) at 64K · mpi"
            ]
        );
        assert_eq!(
            p.series[0].points.iter().map(|p| p.0).collect::<Vec<_>>(),
            vec![1.02, 1.52, 2.85],
            "sorted by imbalance"
        );
        assert_eq!(pattern_family("all-to-all-v(spread=0.5)"), "all-to-all-v(spread)");
        assert_eq!(pattern_family("all-to-all-v"), "all-to-all-v");
        // Nothing with an imbalance: one line naming the flag.
        let e =
            Plot::build(&["a.csv".into()], &[rows[4..].to_vec()], PlacementChoice::Out, Stat::Mean, XAxis::Imbalance)
                .unwrap_err()
                .to_string();
        assert!(e.starts_with("--x-axis imbalance: no all-to-all-v measurement with an imbalance in a.csv"), "{e}");
        assert_eq!(linear_ticks(0.9, 2.95, 8), vec![1.0, 1.5, 2.0, 2.5]);
        let shown: Vec<String> = linear_ticks(0.95, 1.1, 4).iter().map(bandwidth_label).collect();
        assert_eq!(shown, vec!["0.95", "1", "1.05", "1.1"]);
    }
}
