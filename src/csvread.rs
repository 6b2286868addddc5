//! Reading our CSV back (the columns of [`crate::report::csv::COLUMNS`]), for the subcommands
//! that work on files without MPI: `plot` and `compare`. Columns are found by name, so files
//! with columns appended later still read; `batch_iters` (added after the first release) is
//! optional. A `coll-bench tune` CSV's `algorithm` column joins the backend (`mpi/ring`), so
//! each algorithm is a series of its own. `--per-rank` rows (a non-empty `rank` column) are one
//! rank's view of a point already in the file, and are skipped. Placements are read in either
//! spelling (`out-of-place`, or `out_of_place` from files of the first layout, see
//! docs/output.md) and given in the one. Also
//! the one-line rendering of their command-line errors.

use crate::error::{Error, Result};
use std::fmt;
use std::path::Path;

/// What identifies a point across runs: two rows with the same key measured the same thing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub collective: String,
    pub backend: String,
    pub dtype: String,
    pub op: String,
    pub placement: String,
    pub size_bytes: u64,
}

/// A key without its size (collective, backend, dtype, op, placement): one series of a sweep.
pub type Series = (String, String, String, String, String);

impl Key {
    /// The key without the size: one series of a sweep.
    pub fn series(&self) -> Series {
        (self.collective.clone(), self.backend.clone(), self.dtype.clone(), self.op.clone(), self.placement.clone())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {}",
            self.collective,
            self.backend,
            self.dtype,
            self.op,
            self.placement,
            crate::size::human(self.size_bytes)
        )
    }
}

/// One row of a coll-bench CSV: what plot and compare use of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: Key,
    /// Timed calls.
    pub iters: u64,
    /// Calls per timed sample (1 in files that predate the column).
    pub batch_iters: u64,
    /// Mean time per call.
    pub time_us: f64,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Standard deviation of the per-sample times; None where the file has none (one sample).
    pub stddev_us: Option<f64>,
    /// Distribution-free 95% interval of the median (`ci95_lo_us`, `ci95_hi_us`), where the file
    /// has it (a later column; empty with fewer than 6 samples).
    pub median_ci95_us: Option<(f64, f64)>,
    pub busbw_gbps: f64,
    /// busbw as a percentage of the run's ceiling, where the file has the column and a value.
    pub pct_of_ceiling: Option<f64>,
    /// Ranks and hosts of the run, where the file has them.
    pub ranks: Option<u64>,
    pub hosts: Option<u64>,
    /// Line of the file the row is on (the header is line 1).
    pub line: u64,
    /// Measured with `--order size` (every collective at one size, then the next size): the
    /// `order` column says `size`. Files without the column were measured in collective order.
    pub size_order: bool,
    /// The run's `--budget`, seconds, where the file has the column (`budget_s`).
    pub budget_s: Option<f64>,
    /// all-to-all-v's imbalance: the larger of `imbalance_sent` and `imbalance_received` (the
    /// busiest rank's bytes over the mean), where the file has them and the row a value.
    pub imbalance: Option<f64>,
}

impl Row {
    /// Timed samples behind the summary statistics: iters / batch_iters.
    pub fn samples(&self) -> u64 {
        self.iters / self.batch_iters.max(1)
    }
}

/// all-to-all-v's rows under another pattern than `uniform` measure other traffic: their
/// collective reads `all-to-all-v(PATTERN)`, so compare matches, and plot draws, a pattern with
/// itself only.
fn with_pattern(collective: String, pattern: &str) -> String {
    if pattern.is_empty() || pattern == "uniform" {
        collective
    } else {
        format!("{collective}({pattern})")
    }
}

/// [`read`], refusing a CSV that another subcommand than the sweep (or `check`, whose rows are
/// sweeps') wrote: `who` (e.g. `spec from-run`) learns from sweeps, and a tune CSV's rows are one
/// series per algorithm, not the run's one time per point.
pub fn read_sweep(path: &Path, who: &str) -> Result<Vec<Row>> {
    let rows = read(path)?;
    let header = csv::Reader::from_path(path).ok().and_then(|mut r| r.headers().ok().cloned());
    // `algorithm_id`: the first of tune's own columns (tune::EXTRA_COLUMNS), read by name as
    // `read` reads it.
    if header.is_some_and(|h| h.iter().any(|c| c.trim() == "algorithm_id")) {
        return Err(Error::usage(format!(
            "'{}' is a tune CSV (one row per algorithm and size: its column algorithm_id); {who} reads sweep CSVs (coll-bench's sweep, or check's)",
            crate::error::shown(path)
        )));
    }
    Ok(rows)
}

/// The columns [`read`] takes from a row, by the writer's names
/// ([`crate::report::csv::COLUMNS`]; tune's `algorithm_id` and `skipped`,
/// `crate::tune::EXTRA_COLUMNS`; a unit test holds the names to those lists). serde finds each
/// column by its header, so files with columns appended later read as before, and the columns
/// added after the first release are optional (empty when absent). Values are borrowed text,
/// typed in [`Line::row`], where an error names its column.
#[derive(serde::Deserialize)]
struct Line<'a> {
    backend: &'a str,
    collective: &'a str,
    dtype: &'a str,
    op: &'a str,
    placement: &'a str,
    size_bytes: &'a str,
    iters: &'a str,
    time_us: &'a str,
    busbw_gbps: &'a str,
    median_us: &'a str,
    min_us: &'a str,
    max_us: &'a str,
    stddev_us: &'a str,
    #[serde(default)]
    timestamp: &'a str,
    #[serde(default)]
    batch_iters: &'a str,
    #[serde(default)]
    ranks: &'a str,
    #[serde(default)]
    hosts: &'a str,
    #[serde(default)]
    pct_of_ceiling: &'a str,
    #[serde(default)]
    ci95_lo_us: &'a str,
    #[serde(default)]
    ci95_hi_us: &'a str,
    #[serde(default)]
    order: &'a str,
    #[serde(default)]
    budget_s: &'a str,
    #[serde(default)]
    pattern: &'a str,
    #[serde(default)]
    imbalance_sent: &'a str,
    #[serde(default)]
    imbalance_received: &'a str,
    /// A sweep's `algorithm` names what ran at each size (one series); in a tune CSV (one with
    /// `algorithm_id`) each algorithm is a series of its own, named `backend/algorithm`.
    #[serde(default)]
    algorithm: &'a str,
    #[serde(default)]
    algorithm_id: &'a str,
    /// Rows that are not the run's one time per point, and are left out: `--per-rank` (`rank`),
    /// `--per-group` (`group`), tune's cells it did not run (`skipped`).
    #[serde(default)]
    rank: &'a str,
    #[serde(default)]
    group: &'a str,
    #[serde(default)]
    skipped: &'a str,
}

impl Line<'_> {
    /// Whether the row is one of those left out.
    fn left_out(&self) -> bool {
        [self.rank, self.group, self.skipped].iter().any(|v| !v.trim().is_empty())
    }

    /// The row, each value checked: `bad(column, value, expected)` makes the error.
    fn row(&self, line: u64, bad: &dyn Fn(&str, &str, &str) -> Error) -> Result<Row> {
        let int = |v: &str, name: &str| v.trim().parse::<u64>().map_err(|_| bad(name, v.trim(), "a whole number"));
        let num = |v: &str, name: &str| match v.trim().parse::<f64>() {
            Ok(x) if !x.is_nan() => Ok(x),
            _ => Err(bad(name, v.trim(), "a number")),
        };
        // Times and spreads: a number of microseconds, zero or more.
        let time = |v: &str, name: &str| match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(bad(name, v.trim(), "a time in microseconds (a number, zero or more)")),
        };
        let name = |v: &str, n: &str| match v.trim() {
            "" => Err(bad(n, "", "a name")),
            s => Ok(s.to_string()),
        };
        // Columns a row may leave empty (or a file not have): read where they hold a number.
        let opt_int = |v: &str| v.trim().parse::<u64>().ok();
        let opt_num = |v: &str| v.trim().parse::<f64>().ok().filter(|x| x.is_finite());
        let backend = name(self.backend, "backend")?;
        Ok(Row {
            key: Key {
                collective: with_pattern(name(self.collective, "collective")?, self.pattern.trim()),
                backend: match (self.algorithm_id.trim(), self.algorithm.trim()) {
                    ("", _) | (_, "") => backend,
                    (_, alg) => format!("{backend}/{alg}"),
                },
                dtype: name(self.dtype, "dtype")?,
                op: name(self.op, "op")?,
                // The one spelling (out-of-place), whatever the file's age (out_of_place).
                placement: match crate::record::Placement::parse(self.placement.trim()) {
                    Some(p) => p.name().to_string(),
                    None => name(self.placement, "placement")?,
                },
                size_bytes: int(self.size_bytes, "size_bytes")?,
            },
            iters: int(self.iters, "iters")?,
            // Calls per timed sample: 1 in files that predate the column.
            batch_iters: match self.batch_iters.trim() {
                "" => 1,
                v => int(v, "batch_iters")?.max(1),
            },
            time_us: time(self.time_us, "time_us")?,
            median_us: time(self.median_us, "median_us")?,
            min_us: time(self.min_us, "min_us")?,
            max_us: time(self.max_us, "max_us")?,
            stddev_us: match self.stddev_us.trim() {
                "" => None,
                v => Some(time(v, "stddev_us")?),
            },
            busbw_gbps: num(self.busbw_gbps, "busbw_gbps")?,
            median_ci95_us: opt_num(self.ci95_lo_us).zip(opt_num(self.ci95_hi_us)),
            pct_of_ceiling: opt_num(self.pct_of_ceiling),
            budget_s: opt_num(self.budget_s).filter(|b| *b > 0.0),
            imbalance: [self.imbalance_sent, self.imbalance_received].into_iter().filter_map(opt_num).reduce(f64::max),
            ranks: opt_int(self.ranks),
            hosts: opt_int(self.hosts),
            line,
            size_order: match self.order.trim() {
                "" | "collective" => false,
                "size" => true,
                v => return Err(bad("order", v, "collective or size")),
            },
        })
    }
}

/// The column a header lacks, from serde's "missing field `NAME`".
fn missing_column(e: &csv::Error) -> Option<String> {
    let csv::ErrorKind::Deserialize { err, .. } = e.kind() else { return None };
    let text = err.to_string();
    let rest = &text[text.find("missing field `")? + "missing field `".len()..];
    Some(rest[..rest.find('`')?].to_string())
}

/// Read a whole coll-bench CSV. Errors name the file and what is wrong with it, in one line.
pub fn read(path: &Path) -> Result<Vec<Row>> {
    let shown = crate::error::shown(path);
    let file =
        std::fs::File::open(path).map_err(|e| Error::usage(format!("cannot read '{shown}': {}", io_reason(&e))))?;
    let mut rd = csv::ReaderBuilder::new().has_headers(true).from_reader(std::io::BufReader::new(file));
    let not_ours = |why: String| Error::usage(format!("'{shown}' is not a coll-bench CSV ({why})"));
    // Names as written, spaces around them forgiven.
    let header: csv::StringRecord = rd.headers().map_err(|e| not_ours(csv_reason(&e)))?.iter().map(str::trim).collect();
    // The header read as a row of itself: a column the file lacks is named before any row is.
    if let Err(e) = header.deserialize::<Line>(Some(&header)) {
        return Err(not_ours(match missing_column(&e) {
            Some(column) => format!("no column '{column}'"),
            None => csv_reason(&e),
        }));
    }
    let mut rows: Vec<Row> = vec![];
    // Each series' latest row (index into `rows`) and its run's timestamp: where a twin is found.
    let mut latest: std::collections::HashMap<Series, (usize, String)> = std::collections::HashMap::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| Error::usage(format!("'{shown}': {}", csv_reason(&e))))?;
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        let fields: Line = rec
            .deserialize(Some(&header))
            .map_err(|e| Error::usage(format!("'{shown}' line {line}: {}", csv_reason(&e))))?;
        if fields.left_out() {
            continue;
        }
        let bad = |name: &str, v: &str, want: &str| {
            Error::usage(format!("'{shown}' line {line}: column {name} is '{v}', expected {want}"))
        };
        let row = fields.row(line, &bad)?;
        // Per-rank counts rounded down to whole 16 bytes (as nccl-tests) can make two requested
        // sizes one call (all-gather of 8 B and 16 B of float on 2 ranks: 0 B each); the sweep
        // writes both rows, as nccl-tests prints both. A repeat of its series' latest row, from
        // the same run (same timestamp), is that twin: the first is read, the repeat left out
        // (right after it, or a round later with `--order size`). A point repeated after other
        // sizes of its series, or from another run, is a second run in the file (compare says so).
        let stamp = fields.timestamp.trim().to_string();
        let series = row.key.series();
        if latest.get(&series).is_some_and(|(i, t)| rows[*i].key == row.key && *t == stamp) {
            continue;
        }
        latest.insert(series, (rows.len(), stamp));
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(Error::usage(format!("'{shown}' has a header but no measurements")));
    }
    Ok(rows)
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

fn csv_reason(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".into(),
        csv::ErrorKind::Io(io) => io_reason(io),
        _ => e.to_string(),
    }
}

/// Parse a file subcommand's flags; on `--help`, `--version` or a usage error, print what
/// [`clap_outcome`] says and return its exit code.
pub fn parse_or_exit<T: clap::Parser>(name: &str, form: &str, args: &[String]) -> std::result::Result<T, i32> {
    T::try_parse_from(args).map_err(|e| {
        let (text, code, to_stdout) = clap_outcome(name, form, &e);
        if to_stdout {
            print!("{text}");
        } else {
            eprint!("{text}");
        }
        code
    })
}

/// A subcommand's clap error as one line (`coll-bench: error: SUB: …; expected FORM`), or its
/// `--help` text. Returns (text, exit code, to stdout?).
pub fn clap_outcome(sub: &str, form: &str, e: &clap::Error) -> (String, i32, bool) {
    use crate::error::exit;
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => (e.render().to_string(), exit::OK, true),
        _ => {
            let msg = crate::error::clap_message(e);
            (format!("coll-bench: error: {sub}: {msg}; expected {form}\n"), exit::ERROR, false)
        }
    }
}

/// The columns [`read`] looks for, by name (its [`Line`]'s fields): held to the writers' lists
/// by a test in `crate::tune` (the module that sees both the sweep's and tune's columns).
#[cfg(test)]
pub(crate) fn columns_read() -> &'static [&'static str] {
    field_names::<Line>()
}

#[cfg(test)]
/// The names a `Deserialize` struct reads (serde hands them to `deserialize_struct`).
fn field_names<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
    struct Fields(&'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for &mut Fields {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> std::result::Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(serde::de::Error::custom("names taken"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut f = Fields(&[]);
    let _ = T::deserialize(&mut f);
    f.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    const HEAD: &str = "timestamp,backend,collective,dtype,op,placement,size_bytes,iters,time_us,busbw_gbps,median_us,min_us,max_us,stddev_us,ranks,extra_new_column,rank";

    #[test]
    fn reads_by_column_name_and_tolerates_appended_columns() {
        let f = write(&format!(
            "{HEAD}\nt,mpi,all-reduce,float,sum,out_of_place,1024,100,5.5,0.2,5.0,4.0,9.0,0.5,2,x,\n\
             t,mpi,all-reduce,float,sum,out_of_place,1024,100,5.7,0.2,,,,,2,x,1\n\
             t,mpi,barrier,none,none,out_of_place,0,1,3,0,3,3,3,,2,y,\n"
        ));
        let rows = read(f.path()).unwrap();
        assert_eq!(rows.len(), 2, "the per-rank row is skipped");
        assert_eq!(rows[0].key.collective, "all-reduce");
        assert_eq!(rows[0].key.size_bytes, 1024);
        assert_eq!(rows[0].batch_iters, 1, "no batch_iters column: one call per sample");
        assert_eq!(rows[0].samples(), 100);
        assert_eq!(rows[0].stddev_us, Some(0.5));
        assert_eq!(rows[0].ranks, Some(2));
        assert_eq!(rows[0].median_ci95_us, None, "no CI columns");
        assert_eq!(rows[0].line, 2);
        assert_eq!(rows[1].stddev_us, None);
        assert_eq!(rows[1].line, 4);
        assert_eq!(rows[0].key.to_string(), "all-reduce mpi float sum out-of-place 1K");
    }

    #[test]
    fn a_rounded_twin_is_read_once_in_either_order_and_a_second_run_is_kept() {
        let r =
            |t: &str, c: &str, size: u64| format!("{t},mpi,{c},float,sum,out_of_place,{size},10,1,0,1,1,1,0,2,x,\n");
        let twin_rows = |rows: &str| read(write(&format!("{HEAD}\n{rows}")).path()).unwrap();
        // --order collective: all-gather's 8 B and 16 B both measure 0 B, one after the other.
        let a = twin_rows(&[r("t", "all-gather", 0), r("t", "all-gather", 0), r("t", "all-gather", 32)].concat());
        assert_eq!(a.iter().map(|x| x.key.size_bytes).collect::<Vec<_>>(), [0, 32]);
        // --order size: the twin comes a round later, after the other collectives' rows.
        let b = twin_rows(
            &[r("t", "all-reduce", 8), r("t", "all-gather", 0), r("t", "all-reduce", 16), r("t", "all-gather", 0)]
                .concat(),
        );
        assert_eq!(b.len(), 3, "{b:?}");
        // The same point after another size of its series, or from another run (timestamp): kept,
        // so compare names the file that holds two runs.
        let c = twin_rows(&[r("t", "all-gather", 0), r("t", "all-gather", 32), r("t", "all-gather", 0)].concat());
        assert_eq!(c.len(), 3);
        let d = twin_rows(&[r("t1", "all-reduce", 1024), r("t2", "all-reduce", 1024)].concat());
        assert_eq!(d.len(), 2);
    }

    /// all-to-all-v's pattern is part of what a row measured: compare matches, and plot draws, a
    /// pattern with itself only; uniform (and a file without the column) reads as the collective.
    #[test]
    fn a_pattern_other_than_uniform_names_its_series() {
        let f = write(
            "backend,collective,dtype,op,placement,size_bytes,iters,time_us,busbw_gbps,median_us,min_us,max_us,stddev_us,pattern\n\
             mpi,all-to-all-v,float,none,out-of-place,1024,10,5,0.2,5,4,9,0.5,uniform\n\
             mpi,all-to-all-v,float,none,out-of-place,1024,10,9,0.2,9,8,9,0.5,\"moe:experts=8,topk=2,skew=1.5,seed=1\"\n\
             mpi,all-reduce,float,sum,out-of-place,1024,10,5,0.2,5,4,9,0.5,\n",
        );
        let names: Vec<String> = read(f.path()).unwrap().into_iter().map(|r| r.key.collective).collect();
        assert_eq!(names, ["all-to-all-v", "all-to-all-v(moe:experts=8,topk=2,skew=1.5,seed=1)", "all-reduce"]);
    }

    #[test]
    fn reads_the_median_interval_where_there_is_one() {
        let f = write(
            "backend,collective,dtype,op,placement,size_bytes,iters,time_us,busbw_gbps,median_us,min_us,max_us,stddev_us,ci95_lo_us,ci95_hi_us\n\
             mpi,all-reduce,float,sum,out_of_place,8,100,5.5,0.2,5.0,4.0,9.0,0.5,4.9,5.1\n\
             mpi,all-reduce,float,sum,out_of_place,16,5,5.5,0.2,5.0,4.0,9.0,0.5,,\n",
        );
        let rows = read(f.path()).unwrap();
        assert_eq!(rows[0].median_ci95_us, Some((4.9, 5.1)));
        assert_eq!(rows[1].median_ci95_us, None);
    }

    #[test]
    fn refuses_what_is_not_ours() {
        let e = read(Path::new("/nonexistent/run.csv")).unwrap_err().to_string();
        assert!(e.contains("cannot read '/nonexistent/run.csv': no such file"), "{e}");
        let f = write("a,b,c\n1,2,3\n");
        let e = read(f.path()).unwrap_err().to_string();
        assert!(e.contains("is not a coll-bench CSV (no column 'backend')"), "{e}");
        let f = write(&format!("{HEAD}\n"));
        assert!(read(f.path()).unwrap_err().to_string().contains("no measurements"));
        let f =
            write(&format!("{HEAD}\nt,mpi,all-reduce,float,sum,out_of_place,1K,100,5.5,0.2,5.0,4.0,9.0,0.5,2,x,\n"));
        let e = read(f.path()).unwrap_err().to_string();
        assert!(e.contains("line 2: column size_bytes is '1K', expected a whole number"), "{e}");
        for (bad, col) in [
            ("-5.5,0.2,5.0", "time_us is '-5.5'"),
            ("NaN,0.2,5.0", "time_us is 'NaN'"),
            ("5.5,0.2,", "median_us is ''"),
        ] {
            let f = write(&format!("{HEAD}\nt,mpi,all-reduce,float,sum,out_of_place,8,100,{bad},4.0,9.0,0.5,2,x,\n"));
            let e = read(f.path()).unwrap_err().to_string();
            assert!(e.contains(&format!("line 2: column {col}, expected a time in microseconds")), "{e}");
        }
        let f = write("\u{0}\u{1}\u{ff}binary");
        assert!(read(f.path()).is_err());
    }

    #[test]
    fn the_order_column_says_whether_a_run_was_measured_in_size_order() {
        let row = "t,mpi,all-reduce,float,sum,out-of-place,8,100,5.5,0.2,5.0,4.0,9.0,0.5,2,x,";
        assert!(!read(write(&format!("{HEAD}\n{row}\n")).path()).unwrap()[0].size_order, "no column: collective order");
        for (value, size_order) in [("size", true), ("collective", false), ("", false)] {
            let f = write(&format!("{HEAD},order\n{row},{value}\n"));
            assert_eq!(read(f.path()).unwrap()[0].size_order, size_order, "{value:?}");
        }
        let e = read(write(&format!("{HEAD},order\n{row},sizes\n")).path()).unwrap_err().to_string();
        assert!(e.contains("line 2: column order is 'sizes', expected collective or size"), "{e}");
    }
}
