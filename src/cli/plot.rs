//! `coll-bench plot RUN.csv [MORE.csv…] -o FILE.svg|FILE.png [OPTIONS]` → [`PlotOptions`].

use super::common::Clap;
use crate::error::Result;
use crate::plot::{PlacementChoice, PlotOptions, Stat, Style, XAxis, FORM, MAX_SIDE, MIN_SIDE};
use clap::ValueEnum;
use std::path::PathBuf;

#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench plot",
    bin_name = "coll-bench plot",
    about = "Plot bus bandwidth and time against message size from coll-bench CSVs, to SVG or PNG",
    after_help = "Runs without MPI (no mpirun needed).\nExample: coll-bench plot base.csv new.csv -o busbw.svg"
)]
pub struct PlotArgs {
    /// CSV files written by coll-bench (--csv); each file's series are marked with its own shape.
    #[arg(value_name = "RUN.csv", required = true)]
    files: Vec<PathBuf>,
    /// The image to write; its extension chooses the format.
    #[arg(short = 'o', long = "output", value_name = "FILE.svg|FILE.png", required = true)]
    output: PathBuf,
    /// Which placements to draw.
    #[arg(long, value_enum, default_value = "out-of-place")]
    placement: PlacementArg,
    /// Which time per call to draw, and to derive the bus bandwidth from: the mean (as the
    /// table and the CSV's busbw_gbps) or the median (steadier on a noisy machine).
    #[arg(long, value_enum, default_value = "mean")]
    stat: StatArg,
    /// Image width in pixels.
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(MIN_SIDE as i64..=MAX_SIDE as i64))]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u32).range(MIN_SIDE as i64..=MAX_SIDE as i64))]
    height: u32,
    /// Title (default: the files, ranks and hosts).
    #[arg(long)]
    title: Option<String>,
    /// The horizontal axis: the message size, or all-to-all-v's imbalance (the busiest rank's
    /// bytes over the mean: a line per pattern and size, a point per skew).
    #[arg(long = "x-axis", value_enum, default_value = "size")]
    x_axis: XAxisArg,
    #[command(flatten)]
    outputs: super::common::FileFlags,
}

/// `--placement`'s spellings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PlacementArg {
    /// in-place only (also: in, in_place)
    #[value(name = "in-place", aliases = ["in", "in_place"])]
    In,
    /// out-of-place only (also: out, out_of_place)
    #[value(name = "out-of-place", aliases = ["out", "out_of_place"])]
    Out,
    /// both
    Both,
}

/// `--x-axis`'s spellings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum XAxisArg {
    /// message size (log2 scale)
    Size,
    /// all-to-all-v's imbalance (its rows only)
    Imbalance,
}

/// `--stat`'s spellings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StatArg {
    /// time_us and busbw_gbps as measured
    Mean,
    /// median_us, and busbw scaled to it
    Median,
}

impl PlotArgs {
    fn options(self) -> PlotOptions {
        let style = Style {
            placement: match self.placement {
                PlacementArg::In => PlacementChoice::In,
                PlacementArg::Out => PlacementChoice::Out,
                PlacementArg::Both => PlacementChoice::Both,
            },
            stat: match self.stat {
                StatArg::Mean => Stat::Mean,
                StatArg::Median => Stat::Median,
            },
            width: self.width,
            height: self.height,
            title: self.title,
            x: match self.x_axis {
                XAxisArg::Size => XAxis::Size,
                XAxisArg::Imbalance => XAxis::Imbalance,
            },
        };
        let files = self.outputs.policy();
        PlotOptions { files: self.files, output: self.output, style, policy: files }
    }
}

/// Parse `plot …` (`argv[0]` is "plot"). A bad flag is one line, `plot: …; expected FORM`.
pub fn parse(argv: &[String]) -> Result<Clap<PlotOptions>> {
    super::common::clap_parse_files::<PlotArgs>("plot", FORM, argv).map(|c| match c {
        Clap::Args(a) => Clap::Args(a.options()),
        Clap::Info(t) => Clap::Info(t),
    })
}

/// For the tests: `argv` parsed, or clap's error.
#[cfg(test)]
fn try_parse(argv: &[&str]) -> std::result::Result<PlotOptions, crate::error::Error> {
    use clap::Parser;
    PlotArgs::try_parse_from(argv).map(PlotArgs::options).map_err(|e| crate::error::Error::usage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Policy;

    #[test]
    fn placement_has_one_spelling_and_reads_the_old_ones() {
        let parse = |p: &str| try_parse(&["plot", "r.csv", "-o", "x.svg", "--placement", p]).map(|o| o.style.placement);
        for (p, want) in [
            ("out-of-place", PlacementChoice::Out),
            ("out", PlacementChoice::Out),
            ("out_of_place", PlacementChoice::Out),
            ("in-place", PlacementChoice::In),
            ("in", PlacementChoice::In),
            ("in_place", PlacementChoice::In),
            ("both", PlacementChoice::Both),
        ] {
            assert_eq!(parse(p).unwrap(), want, "{p}");
        }
        assert!(parse("sideways").is_err());
    }

    #[test]
    fn the_flags_defaults_are_the_default_style() {
        // `--plot` draws with Style::default(), `plot` with its flags: without flags, the same.
        let parse = |extra: &[&str]| {
            let mut argv = vec!["plot", "r.csv", "-o", "r.svg"];
            argv.extend_from_slice(extra);
            try_parse(&argv).unwrap().style
        };
        assert_eq!(parse(&[]), Style::default());
        assert_ne!(parse(&["--stat", "median"]), Style::default());
        assert_ne!(parse(&["--width", "640"]), Style::default());
        assert_eq!(parse(&["--stat", "median"]).stat, Stat::Median);
        assert_eq!(parse(&["--x-axis", "imbalance"]).x, XAxis::Imbalance);
    }

    #[test]
    fn files_output_and_policy_are_handed_down() {
        let o = try_parse(&["plot", "a.csv", "b.csv", "-o", "x.png", "--force"]).unwrap();
        assert_eq!(o.files, vec![PathBuf::from("a.csv"), PathBuf::from("b.csv")]);
        assert_eq!(o.output, PathBuf::from("x.png"));
        assert_eq!(o.policy, Policy { force: true, follow_symlinks: false });
    }

    #[test]
    fn a_bad_flag_is_one_line_naming_plot_and_the_form() {
        let argv: Vec<String> = ["plot", "r.csv", "-o", "x.svg", "--width", "10"].map(String::from).to_vec();
        let e = parse(&argv).unwrap_err().to_string();
        assert!(e.starts_with("plot: ") && e.ends_with(&format!("; expected {FORM}")) && !e.contains('\n'), "{e}");
    }
}
