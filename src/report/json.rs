//! `--json PATH`: the run's context (options, hosts, versions — never the environment) and
//! every point. While the run goes on the file is JSON Lines — a first line with the run
//! (`"complete": false`), then one line per point, each appended whole and never rewritten — so
//! a killed run leaves every point it measured; at the end the file is replaced, in one step,
//! by one JSON document (`"complete": true`, `points`, `totals`), made from the JSON Lines one
//! line at a time: the writer keeps nothing per point (with `--per-rank` at thousands of ranks a
//! point holds every rank's time). Every field is documented in docs/output.md (a test keeps the
//! two in step); `"schema": "coll-bench/2"` names this layout.

use super::{AppendFile, Report};
use crate::error::Result;
use crate::record::{Point, RunInfo, Totals};
use serde::Serialize;
use std::path::Path;

/// The layout's name and version, in every file: a change that renames or removes a field
/// bumps it.
pub const SCHEMA: &str = "coll-bench/2";

pub struct JsonReport {
    file: Option<AppendFile>,
    /// Warnings found after the points were written ([`Report::amend`]): by point, each
    /// placement's key (`out_of_place`, `in_place`) and the warning as JSON.
    amended: Amended,
}

type Amended = std::collections::BTreeMap<usize, Vec<(&'static str, serde_json::Value)>>;

/// The finished document as `serde_json::to_vec_pretty` writes it (the form the tests compare
/// with); the writer streams the same bytes ([`write_document`]).
#[cfg(test)]
#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    tool: &'static str,
    /// `false` in the JSON Lines form of a run still going (or killed).
    complete: bool,
    run: serde_json::Value,
    points: &'a [serde_json::Value],
    totals: Option<&'a Totals>,
}

/// The first line of the JSON Lines form.
#[derive(Serialize)]
struct Head {
    schema: &'static str,
    tool: &'static str,
    complete: bool,
    run: serde_json::Value,
}

/// The run as JSON: the options a user set, without the hidden testing ones (`debug_*`).
fn run_value(info: &RunInfo) -> serde_json::Value {
    let mut v = serde_json::to_value(info).expect("the run serialises");
    if let Some(o) = v.get_mut("options").and_then(|o| o.as_object_mut()) {
        o.retain(|k, _| !k.starts_with("debug_"));
    }
    v
}

/// A point as JSON: each rank's times only with `--per-rank`, each group's (`per_group_us`)
/// only with `--per-group`.
fn point_value(info: &RunInfo, p: &Point) -> serde_json::Value {
    let mut v = serde_json::to_value(p).expect("records serialise");
    for (m, key) in [(&p.out_of_place, "out_of_place"), (&p.in_place, "in_place")] {
        let per_group = if info.options.per_group { info.group_times_us(m) } else { vec![] };
        if let Some(o) = v.get_mut(key).and_then(|o| o.as_object_mut()) {
            o.insert("per_group_us".into(), serde_json::json!(per_group));
            o.insert("pct_of_ceiling".into(), serde_json::json!(info.pct_of_ceiling(p, m.busbw_gbps)));
            if !info.options.per_rank {
                o.insert("per_rank_us".into(), serde_json::json!([]));
            }
        }
    }
    // A collective measured out of place only (all-to-all-v) has no in-place measurement.
    if !p.collective.spec().has_in_place() {
        v["in_place"] = serde_json::Value::Null;
    }
    v
}

impl JsonReport {
    /// Write to a file created before the run (see [`super::outfile`]).
    pub fn new(file: AppendFile) -> JsonReport {
        JsonReport { file: Some(file), amended: Amended::new() }
    }

    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path())
    }

    fn line(&mut self, value: &impl Serialize) -> Result<()> {
        let mut bytes = serde_json::to_vec(value).expect("records serialise");
        bytes.push(b'\n');
        match &mut self.file {
            Some(f) => f.append(&bytes),
            None => Ok(()),
        }
    }
}

impl Report for JsonReport {
    fn begin(&mut self, info: &RunInfo) -> Result<()> {
        self.line(&Head { schema: SCHEMA, tool: "coll-bench", complete: false, run: run_value(info) })
    }

    fn point(&mut self, info: &RunInfo, p: &Point) -> Result<()> {
        self.line(&point_value(info, p))
    }

    fn amend(&mut self, _info: &RunInfo, flags: &[crate::record::Flag]) -> Result<()> {
        for f in flags {
            let key = match f.seen.placement {
                crate::record::Placement::OutOfPlace => "out_of_place",
                crate::record::Placement::InPlace => "in_place",
            };
            let w = serde_json::to_value(&f.warning).expect("a warning serialises");
            self.amended.entry(f.seen.point).or_default().push((key, w));
        }
        Ok(())
    }

    fn end(&mut self, info: &RunInfo, totals: &Totals) -> Result<()> {
        let run = serde_json::to_vec(&run_value(info)).expect("the run serialises");
        let totals = serde_json::to_vec(totals).expect("records serialise");
        match self.file.take() {
            Some(f) => {
                let amended = std::mem::take(&mut self.amended);
                f.replace_from_records(|lines, out| write_document(&run, lines, &totals, &amended, out))
            }
            None => Ok(()),
        }
    }
}

/// The finished document, pretty-printed as `serde_json::to_vec_pretty` prints [`Document`]
/// (`run` and `totals` compact JSON; `lines`: the JSON Lines form, its head line then one
/// compact point a line), reading and writing one point at a time.
fn write_document(
    run: &[u8],
    lines: &mut dyn std::io::BufRead,
    totals: &[u8],
    amended: &Amended,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut pretty = Pretty::new(out);
    let schema = serde_json::to_string(SCHEMA).expect("a string serialises");
    pretty.feed(format!(r#"{{"schema":{schema},"tool":"coll-bench","complete":true,"run":"#).as_bytes())?;
    pretty.feed(run)?;
    pretty.feed(br#","points":["#)?;
    let mut line = Vec::new();
    let mut first = true;
    // The head line, then the points.
    lines.read_until(b'\n', &mut line)?;
    for point in 0.. {
        line.clear();
        if lines.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if !first {
            pretty.feed(b",")?;
        }
        first = false;
        let compact = line.strip_suffix(b"\n").unwrap_or(&line);
        match amended.get(&point) {
            // A point with a warning found after it was written: its line parsed, the warning
            // added to its placement's list, written compact again (serde_json writes each
            // number as it read it).
            Some(add) => {
                let mut v: serde_json::Value = serde_json::from_slice(compact)?;
                for (key, w) in add {
                    if let Some(list) =
                        v.get_mut(*key).and_then(|m| m.get_mut("warnings")).and_then(|l| l.as_array_mut())
                    {
                        list.push(w.clone());
                    }
                }
                pretty.feed(&serde_json::to_vec(&v)?)?;
            }
            None => pretty.feed(compact)?,
        }
    }
    pretty.feed(br#"],"totals":"#)?;
    pretty.feed(totals)?;
    pretty.feed(b"}")
}

/// Compact JSON (serde_json's, no whitespace outside strings) re-indented as serde_json's
/// `PrettyFormatter` writes it: two spaces a level, `": "` after a key, an empty object or
/// array kept as `{}` / `[]`. Fed in pieces; no value is parsed, so every number is written as
/// it was.
struct Pretty<'a> {
    out: &'a mut dyn std::io::Write,
    level: usize,
    in_string: bool,
    escaped: bool,
    /// After `{` or `[`: whether it is empty is known from the next byte.
    opened: bool,
    buf: Vec<u8>,
}

impl<'a> Pretty<'a> {
    fn new(out: &'a mut dyn std::io::Write) -> Self {
        Pretty { out, level: 0, in_string: false, escaped: false, opened: false, buf: Vec::with_capacity(8192) }
    }

    fn newline(&mut self) {
        self.buf.push(b'\n');
        self.buf.extend(std::iter::repeat_n(b' ', 2 * self.level));
    }

    fn feed(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        for &b in bytes {
            if self.in_string {
                self.buf.push(b);
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            if std::mem::take(&mut self.opened) {
                if b == b'}' || b == b']' {
                    self.buf.push(b);
                    continue;
                }
                self.level += 1;
                self.newline();
            }
            match b {
                b'{' | b'[' => {
                    self.buf.push(b);
                    self.opened = true;
                }
                b'}' | b']' => {
                    self.level -= 1;
                    self.newline();
                    self.buf.push(b);
                }
                b',' => {
                    self.buf.push(b);
                    self.newline();
                }
                b':' => self.buf.extend_from_slice(b": "),
                b'"' => {
                    self.buf.push(b);
                    self.in_string = true;
                }
                _ => self.buf.push(b),
            }
        }
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Kind;
    use crate::dtype::{DType, Op};
    use crate::options::Options;
    use crate::record::{Measurement, Placement};
    use crate::report::Policy;

    fn m(placement: Placement) -> Measurement {
        Measurement::sample(placement)
    }

    fn point(size: u64) -> Point {
        Point {
            collective: Kind::AllReduce,
            dtype: DType::Float32,
            op: Some(Op::Sum),
            root: None,
            size_bytes: size,
            count: size / 4,
            bus_factor: 1.0,
            out_of_place: m(Placement::OutOfPlace),
            in_place: m(Placement::InPlace),
            algorithm: "unknown".into(),
            algorithm_source: "not reported".into(),
            traffic: None,
        }
    }

    fn info() -> RunInfo {
        RunInfo {
            version: "0".into(),
            timestamp: "t".into(),
            backend: "mpi".into(),
            backend_details: vec![],
            mpi_library: "MPI".into(),
            ranks: 2,
            hosts: vec![("h".into(), vec![0, 1])],
            options: Options::default(),
            pids: vec![1, 2],
            notes: vec![],
            groups: vec![crate::record::GroupInfo { id: 0, ranks: vec![0, 1], hosts: vec!["a".into()] }],
            ceiling: None,
        }
    }

    /// Each point is written once (the file grows by one line per point, never rewritten), and
    /// the end leaves one document with every point.
    #[test]
    fn points_are_appended_once_then_one_document_at_the_end() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r.json");
        let mut r = JsonReport::new(AppendFile::create("--json", &path, Policy::default()).unwrap());
        let info = info();
        r.begin(&info).unwrap();
        let head = std::fs::metadata(&path).unwrap().len();
        let n = 5000u64;
        let t = std::time::Instant::now();
        for i in 0..n {
            r.point(&info, &point(8 * (i + 1))).unwrap();
        }
        let streamed = t.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count() as u64, 1 + n);
        for l in text.lines() {
            serde_json::from_str::<serde_json::Value>(l).unwrap();
        }
        let per_point = (text.len() as u64 - head) / n;
        assert!(per_point < 2000, "one compact line per point: {per_point} B");
        let t = std::time::Instant::now();
        r.end(&info, &Totals::default()).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!((doc["complete"].as_bool(), doc["points"].as_array().unwrap().len()), (Some(true), n as usize));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "no temporary file left");
        // Printed past the harness (`--nocapture` not needed): the writer's own cost.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "json writer: {n} points streamed in {streamed:.3} s, final document in {secs:.3} s"
        );
    }

    /// The document at the end is the one `serde_json::to_vec_pretty` would print, byte for
    /// byte, though it is made from the JSON Lines one line at a time: with no point, with
    /// several, and with strings that hold what the re-indenting must leave alone.
    #[test]
    fn the_streamed_document_is_serde_jsons_pretty_document() {
        let d = tempfile::tempdir().unwrap();
        let mut tricky = info();
        tricky.notes = vec![r#"a "quoted" {x}, [y]: z \ \" end"#.into(), "tab\t{}[]".into(), String::new()];
        tricky.backend_details = vec![];
        for (i, info) in [info(), tricky].iter().enumerate() {
            for n in [0usize, 1, 3] {
                let path = d.path().join(format!("r{i}-{n}.json"));
                let mut r = JsonReport::new(AppendFile::create("--json", &path, Policy::default()).unwrap());
                r.begin(info).unwrap();
                let points: Vec<Point> = (0..n).map(|k| point(8 << k)).collect();
                for p in &points {
                    r.point(info, p).unwrap();
                }
                let totals = Totals { points: n as u64, ..Totals::default() };
                r.end(info, &totals).unwrap();
                let values: Vec<serde_json::Value> = points.iter().map(|p| point_value(info, p)).collect();
                let want = serde_json::to_vec_pretty(&Document {
                    schema: SCHEMA,
                    tool: "coll-bench",
                    complete: true,
                    run: run_value(info),
                    points: &values,
                    totals: Some(&totals),
                })
                .unwrap();
                let got = std::fs::read(&path).unwrap();
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "{i} {n}");
            }
        }
    }

    /// Every field path of a value: object keys joined by '.', array elements as '[]'.
    fn paths(v: &serde_json::Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    // Both placements hold the same fields: documented once, as `<placement>`.
                    let k = if prefix == "points[]" && (k == "out_of_place" || k == "in_place") {
                        "<placement>"
                    } else {
                        k
                    };
                    let p = if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
                    out.insert(p.clone());
                    paths(x, &p, out);
                }
            }
            serde_json::Value::Array(a) => {
                for x in a {
                    paths(x, &format!("{prefix}[]"), out);
                }
            }
            _ => {}
        }
    }

    /// Documents as the writer makes them, covering every variant: each warning kind, a slow
    /// rank, a root, and both forms of the options that have two (step, timeout, csv).
    fn sample_documents() -> Vec<serde_json::Value> {
        use crate::options::{CsvTarget, Step, Timeout};
        use crate::stats::{RankOutlier, Warning};
        let mut p = point(1024);
        p.root = Some(0);
        p.out_of_place.first_call_us = Some(9.0);
        p.out_of_place.slow_ranks = vec![RankOutlier { rank: 1, time_us: 3.0, median_us: 1.5 }];
        p.out_of_place.warnings = vec![
            Warning::Noisy { relative_ci: 0.2 },
            Warning::MeanOffMedian { time_us: 2.0, median_us: 1.5, outliers: 3, samples: 100 },
            Warning::PageFaults { faults_per_call: 256.0, fault_cost_us: 0.5, share: 0.2 },
            Warning::AboveTrend {
                median_us: 4000.0,
                larger_bytes: 65536,
                larger_median_us: 250.0,
                cause: "more_ranks_than_cores",
                suspect: "the scheduler's tick".into(),
            },
            Warning::SchedulerTick {
                median_us: 8000.0,
                tick_us: 4000.0,
                cause: "more_ranks_than_cores",
                suspect: "the scheduler's tick".into(),
            },
        ];
        p.out_of_place.minor_faults_per_call = Some(256.0);
        p.in_place = p.out_of_place.clone();
        p.in_place.placement = Placement::InPlace;
        let mut other = info();
        other.options.step = Step::Bytes(1024);
        other.options.timeout = Timeout::Fixed(5.0);
        other.options.csv = CsvTarget::Path("r.csv".into());
        other.options.iters = Some(10);
        other.options.warmup = Some(1);
        other.options.debug_corrupt_rank = Some(1);
        other.options.per_group = true;
        other.options.groups = "tp=2,dp=*".parse().unwrap();
        other.ceiling = Some(crate::record::Ceiling {
            gbps: 4.0,
            source: "measured",
            size_bytes: 1 << 20,
            time_us: 262.0,
            links: "between hosts",
            nominal: vec![crate::record::Nominal { host: "h".into(), interface: "eth0".into(), gbps: 1.25 }],
            host_pairs: vec![crate::record::Link { a: "h".into(), b: "i".into(), gbps: 1.1, rank_pairs: 1 }],
            seconds: 0.5,
            repeats: 3,
            spread_pct: 0.0,
        });
        // All-to-all-v: its traffic, and no in-place measurement.
        let mut v = point(1024);
        v.collective = crate::collective::Kind::AllToAllV;
        v.traffic = Some(crate::record::Traffic {
            pattern: "moe:experts=8,topk=2,skew=1.5,seed=1".into(),
            imbalance_sent: 1.0,
            imbalance_received: 2.85,
            dropped_pct: 0.0,
        });
        let mut docs = vec![];
        for info in [info(), other] {
            let doc = Document {
                schema: SCHEMA,
                tool: "coll-bench",
                complete: true,
                run: run_value(&info),
                points: &[point_value(&info, &p), point_value(&info, &v)],
                totals: Some(&Totals::default()),
            };
            docs.push(serde_json::to_value(&doc).unwrap());
            // The JSON Lines head: its fields are the document's.
            let head = Head { schema: SCHEMA, tool: "coll-bench", complete: false, run: run_value(&info) };
            docs.push(serde_json::to_value(&head).unwrap());
        }
        docs
    }

    /// The names listed in one section of docs/output.md, in its order: table rows starting
    /// "| `name` |" (tests/common's `documented` reads the same for the integration tests).
    fn documented(section: &str) -> Vec<String> {
        let doc = include_str!("../../docs/output.md");
        let start = doc.find(section).unwrap_or_else(|| panic!("docs/output.md has no section {section:?}"));
        let rest = &doc[start + section.len()..];
        let end = rest.find("\n## ").unwrap_or(rest.len());
        rest[..end]
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` |").map(|(name, _)| name.to_string()))
            .collect()
    }

    #[test]
    fn docs_list_every_json_field_and_no_other() {
        let mut written = std::collections::BTreeSet::new();
        for d in sample_documents() {
            paths(&d, "", &mut written);
        }
        let docs: std::collections::BTreeSet<String> = documented("## JSON fields").into_iter().collect();
        let undocumented: Vec<&String> = written.difference(&docs).collect();
        let stale: Vec<&String> = docs.difference(&written).collect();
        assert!(
            undocumented.is_empty() && stale.is_empty(),
            "docs/output.md: undocumented {undocumented:?}; documented but never written {stale:?}"
        );
    }

    #[test]
    fn docs_list_every_csv_column_in_order() {
        let listed = documented("## CSV columns");
        assert_eq!(listed, crate::report::csv::COLUMNS, "docs/output.md lists the CSV columns in the writer's order");
    }

    #[test]
    fn json_speaks_the_one_vocabulary() {
        let docs = sample_documents();
        let d = &docs[0];
        assert_eq!(d["schema"], "coll-bench/2");
        assert_eq!(d["run"]["hosts"][0]["name"], "h");
        assert_eq!(d["run"]["hosts"][0]["ranks"], serde_json::json!([0, 1]));
        assert_eq!(d["run"]["options"]["step"], serde_json::json!({"factor": 2.0}));
        assert_eq!(d["run"]["options"]["aggregation"], "mean");
        assert_eq!(d["run"]["options"]["backend"], "mpi");
        assert_eq!(d["run"]["options"]["collectives"][0], "all-reduce");
        assert_eq!(d["run"]["options"]["dtypes"][0], "float");
        let p = &d["points"][0];
        assert_eq!(
            (p["collective"].as_str(), p["dtype"].as_str(), p["op"].as_str()),
            (Some("all-reduce"), Some("float"), Some("sum"))
        );
        assert_eq!(p["out_of_place"]["placement"], "out-of-place");
        // The CSV's names and values (issue 26): no `count`, `batch`, `outliers`,
        // `out_of_bounds`; `none` and -1 where the CSV has them, never `null`.
        for key in ["count_elements", "size_bytes", "bus_factor"] {
            assert!(p[key].is_number(), "{key}: {p}");
        }
        for key in ["batch_iters", "out_of_bounds_bytes", "warmup_iters", "iters", "time_us"] {
            assert!(p["out_of_place"][key].is_number(), "{key}: {p}");
        }
        assert!(p["out_of_place"]["summary"]["outlier_samples"].is_number(), "{p}");
        assert!(d["totals"]["out_of_bounds_bytes"].is_number(), "{d}");
        let mut none = point(8);
        none.collective = Kind::AllGather;
        none.op = None;
        let v = point_value(&info(), &none);
        assert_eq!((v["op"].as_str(), v["root"].as_i64()), (Some("none"), Some(-1)), "{v}");
        let w = &p["out_of_place"]["warnings"][1];
        assert_eq!((w["kind"].as_str(), w["outlier_samples"].as_u64()), (Some("mean_off_median"), Some(3)), "{w}");
        assert_eq!(p["in_place"]["placement"], "in-place");
        assert_eq!(docs[2]["run"]["options"]["timeout"], serde_json::json!({"fixed": 5.0}));
        let text = docs.iter().map(|d| d.to_string()).collect::<String>();
        assert!(!text.contains("debug_"), "hidden testing options never reach the JSON");
        // The options still round-trip (rank 0 broadcasts them as JSON).
        let o = info().options;
        let back: Options = serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
        assert_eq!(back, o);
    }
}
