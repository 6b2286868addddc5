//! The acceptance spec (TOML): settings, then rules per collective, backend and size range.
//! Every problem is reported as one line with the spec's line number and the reason.

use crate::collective::Kind;
use crate::dtype::{DType, Op};
use crate::options::BackendKind;
use crate::size::parse_size;
use serde::{Deserialize, Serialize};
use std::ops::Range;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    #[serde(default)]
    settings: Option<Spanned<RawSettings>>,
    #[serde(default, rename = "rule")]
    rules: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    repeats: Option<Spanned<i64>>,
    budget: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Spanned<String>,
    collective: Spanned<String>,
    backend: Option<Spanned<String>>,
    dtype: Option<Spanned<String>>,
    op: Option<Spanned<String>>,
    placement: Option<Spanned<String>>,
    sizes: Spanned<String>,
    plateau: Option<Spanned<String>>,
    min_busbw_gbps: Option<Spanned<f64>>,
    min_pct_of_ceiling: Option<Spanned<f64>>,
    max_time_us: Option<Spanned<f64>>,
    max_median_us: Option<Spanned<f64>>,
    max_knee_bytes: Option<Spanned<String>>,
    knee_plateau_gbps: Option<Spanned<f64>>,
    pattern: Option<Spanned<String>>,
    ranks_per_node: Option<Spanned<i64>>,
    fail_on_slow_rank: Option<bool>,
}

/// A validated spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// Each rule's sweep runs this many times; values are judged on the median over repeats.
    pub repeats: usize,
    /// Time budget per size and placement, seconds.
    pub budget_s: f64,
    pub rules: Vec<Rule>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub name: String,
    /// The spec's line where the rule starts.
    pub line: usize,
    pub collective: Kind,
    pub backend: BackendKind,
    pub dtype: DType,
    pub op: Option<Op>,
    pub in_place: bool,
    pub min_bytes: u64,
    pub max_bytes: u64,
    /// Bandwidth is judged over sizes in this range only (where it has levelled off).
    pub plateau: (u64, u64),
    pub min_busbw_gbps: Option<f64>,
    /// Bus bandwidth as a percentage of the ceiling (sendrecv around the ring, measured before
    /// the rule's sweeps), judged over the plateau like `min_busbw_gbps`: one spec for clusters
    /// whose links differ in speed.
    pub min_pct_of_ceiling: Option<f64>,
    pub max_time_us: Option<f64>,
    /// The median time per call (the CSV's `median_us`), judged like `max_time_us`; what `spec
    /// from-run` writes (a mean at small sizes is pulled far up by a few slow calls).
    pub max_median_us: Option<f64>,
    /// The knee of the curve at or below this size: the smallest size whose bus bandwidth (its
    /// median over repeats) reaches half of `knee_plateau_gbps`, or without it half the best of
    /// the plateau's sizes. Catches a curve that levels off later (latency or protocol switches
    /// at mid sizes) while both ends still pass.
    pub max_knee_bytes: Option<u64>,
    /// The baseline's plateau bandwidth, which the knee is judged against (`spec from-run`
    /// writes it): against the run's own plateau, a higher plateau (a quieter machine, a real
    /// improvement) moves the knee later although no size got slower.
    #[serde(default)]
    pub knee_plateau_gbps: Option<f64>,
    /// all-to-all-v's traffic (`pattern = "moe:…"`, the sweep's `--pattern`, one pattern); uniform
    /// where none is given.
    pub pattern: crate::collective::traffic::Pattern,
    /// Judge the rule only when every host runs this many ranks.
    pub ranks_per_node: Option<usize>,
    pub fail_on_slow_rank: bool,
}

/// The largest spec read, in bytes: far above any real one (a rule is a few lines), and small
/// enough that a mistaken file is refused at once instead of parsed for minutes.
pub const MAX_BYTES: usize = 1 << 20;
/// The most rules a spec may hold.
pub const MAX_RULES: usize = 1000;
/// The longest rule name, in characters (the name is copied into every CSV row of the rule).
pub const MAX_NAME_CHARS: usize = 200;
/// The longest value of any other text field (a collective, a size range, …).
pub const MAX_FIELD_CHARS: usize = 64;

/// The spec's text and name, to place an error: `SPEC line N: reason`.
struct Source<'t> {
    path: &'t str,
    /// Where each line after the first starts (one pass over the text, so placing every rule
    /// costs a binary search, not a count from the file's start).
    line_starts: Vec<usize>,
}

impl<'t> Source<'t> {
    fn new(path: &'t str, text: &str) -> Self {
        Source { path, line_starts: text.match_indices('\n').map(|(i, _)| i + 1).collect() }
    }
    /// The line (from 1) that byte `at` is on.
    fn line(&self, at: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= at) + 1
    }
    fn at(&self, span: Range<usize>, why: String) -> String {
        format!("{} line {}: {why}", self.path, self.line(span.start))
    }
}

/// Parse and validate; the error is one line: `SPEC line N: reason`.
pub fn parse(path: &str, text: &str) -> Result<Spec, String> {
    if text.len() > MAX_BYTES {
        return Err(format!(
            "{path}: {} bytes; expected a spec of at most {} MiB ({MAX_RULES} rules)",
            text.len(),
            MAX_BYTES >> 20
        ));
    }
    let src = Source::new(path, text);
    let raw: RawSpec = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
        match e.span() {
            Some(span) => src.at(span, msg),
            None => format!("{path}: {msg}"),
        }
    })?;
    let (repeats, budget_s) = settings(&src, raw.settings.as_ref())?;
    if raw.rules.is_empty() {
        return Err(format!("{path}: no [[rule]]; expected at least one rule"));
    }
    if raw.rules.len() > MAX_RULES {
        return Err(format!("{path}: {} rules; expected at most {MAX_RULES}", raw.rules.len()));
    }
    let rules = raw.rules.iter().map(|r| rule(&src, r)).collect::<Result<Vec<Rule>, String>>()?;
    Ok(Spec { repeats, budget_s, rules })
}

/// `[settings]`: (repeats, budget in seconds), each defaulted where absent.
fn settings(src: &Source, raw: Option<&Spanned<RawSettings>>) -> Result<(usize, f64), String> {
    let (mut repeats, mut budget_s) = (3usize, 0.05f64);
    if let Some(s) = raw {
        let s = s.get_ref();
        if let Some(r) = &s.repeats {
            if !(1..=100).contains(r.get_ref()) {
                return Err(src.at(r.span(), format!("repeats = {} is impossible; expected 1 to 100", r.get_ref())));
            }
            repeats = *r.get_ref() as usize;
        }
        if let Some(b) = s.budget.as_ref().filter(|b| b.get_ref().chars().count() > MAX_FIELD_CHARS) {
            return Err(src.at(
                b.span(),
                format!("budget of {} characters; expected at most {MAX_FIELD_CHARS}", b.get_ref().chars().count()),
            ));
        }
        if let Some(b) = &s.budget {
            budget_s = crate::duration::parse("--budget", b.get_ref(), crate::duration::POSITIVE)
                .map_err(|e| src.at(b.span(), e.to_string()))?;
        }
    }
    Ok((repeats, budget_s))
}

/// `LOW..HIGH` (sizes as the flags take them), LOW <= HIGH.
fn size_range(src: &Source, s: &Spanned<String>) -> Result<(u64, u64), String> {
    let text = s.get_ref();
    let (lo, hi) = text.split_once("..").ok_or_else(|| {
        src.at(s.span(), format!("'{text}' is not a size range; expected LOW..HIGH with K/M/G suffixes, e.g. 1M..64M"))
    })?;
    let lo = parse_size(lo).map_err(|e| src.at(s.span(), format!("{e} in '{text}'; expected e.g. 1M..64M")))?;
    let hi = parse_size(hi).map_err(|e| src.at(s.span(), format!("{e} in '{text}'; expected e.g. 1M..64M")))?;
    if lo > hi {
        return Err(src.at(s.span(), format!("'{text}' is an impossible range: {lo} > {hi}")));
    }
    Ok((lo, hi))
}

/// A requirement that must be a positive number, if given.
fn positive(src: &Source, v: &Option<Spanned<f64>>, key: &str) -> Result<Option<f64>, String> {
    match v {
        Some(x) if !(x.get_ref().is_finite() && *x.get_ref() > 0.0) => {
            Err(src.at(x.span(), format!("{key} = {} is impossible; expected a positive number", x.get_ref())))
        }
        Some(x) => Ok(Some(*x.get_ref())),
        None => Ok(None),
    }
}

/// One `[[rule]]`: what it measures (collective, backend, type, op, placement, sizes), then what
/// it requires.
fn rule(src: &Source, raw: &Spanned<RawRule>) -> Result<Rule, String> {
    let at = |span: Range<usize>, why: String| src.at(span, why);
    let line = src.line(raw.span().start);
    let r = raw.get_ref();
    // Bounded text: the name goes into every CSV row and message of the rule.
    let name = r.name.get_ref();
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(at(
            r.name.span(),
            format!(
                "name of {} characters{}; expected a name of at most {MAX_NAME_CHARS} characters on one line",
                name.chars().count(),
                if name.chars().any(char::is_control) { ", with control characters" } else { "" }
            ),
        ));
    }
    let fields = [("collective", Some(&r.collective)), ("sizes", Some(&r.sizes))].into_iter().chain(
        [
            ("backend", &r.backend),
            ("dtype", &r.dtype),
            ("op", &r.op),
            ("placement", &r.placement),
            ("plateau", &r.plateau),
            ("max_knee_bytes", &r.max_knee_bytes),
        ]
        .map(|(k, v)| (k, v.as_ref())),
    );
    for (key, v) in fields {
        if let Some(v) = v.filter(|v| v.get_ref().chars().count() > MAX_FIELD_CHARS) {
            return Err(at(
                v.span(),
                format!("{key} of {} characters; expected at most {MAX_FIELD_CHARS}", v.get_ref().chars().count()),
            ));
        }
    }
    let collective = Kind::parse(r.collective.get_ref()).ok_or_else(|| {
        at(r.collective.span(), format!("unknown collective '{}'; expected {}", r.collective.get_ref(), Kind::ACCEPTED))
    })?;
    let spec = collective.spec();
    let backend = match r.backend.as_ref().map(|b| (b.get_ref().as_str(), b.span())) {
        None | Some(("mpi", _)) => BackendKind::Mpi,
        Some(("nccl", _)) => BackendKind::Nccl,
        Some((other, span)) => return Err(at(span, format!("unknown backend '{other}'; expected mpi or nccl"))),
    };
    let dtype = match &r.dtype {
        None => DType::Float32,
        Some(d) => DType::parse(d.get_ref())
            .ok_or_else(|| at(d.span(), format!("unknown dtype '{}'; expected {}", d.get_ref(), DType::ACCEPTED)))?,
    };
    let op = match (&r.op, spec.reduces()) {
        (None, true) => Some(Op::Sum),
        (None, false) => None,
        (Some(o), true) => Some(
            Op::parse(o.get_ref())
                .ok_or_else(|| at(o.span(), format!("unknown op '{}'; expected {}", o.get_ref(), Op::ACCEPTED)))?,
        ),
        (Some(o), false) => return Err(at(o.span(), format!("{} does not reduce; remove op", spec.name()))),
    };
    // One spelling (out-of-place, in-place); the CSV's old out_of_place/in_place also read.
    let in_place = match r.placement.as_ref().map(|p| (crate::record::Placement::parse(p.get_ref()), p)) {
        None | Some((Some(crate::record::Placement::OutOfPlace), _)) => false,
        Some((Some(crate::record::Placement::InPlace), _)) => true,
        Some((None, p)) => {
            return Err(at(
                p.span(),
                format!("unknown placement '{}'; expected {}", p.get_ref(), crate::record::Placement::ACCEPTED),
            ))
        }
    };
    let (min_bytes, max_bytes) = size_range(src, &r.sizes)?;
    let plateau = match &r.plateau {
        None => (max_bytes, max_bytes),
        Some(p) => {
            let (lo, hi) = size_range(src, p)?;
            if lo < min_bytes || hi > max_bytes {
                return Err(at(
                    p.span(),
                    format!(
                        "plateau '{}' is outside sizes '{}'; expected a range inside it",
                        p.get_ref(),
                        r.sizes.get_ref()
                    ),
                ));
            }
            (lo, hi)
        }
    };
    let min_busbw_gbps = positive(src, &r.min_busbw_gbps, "min_busbw_gbps")?;
    if min_busbw_gbps.is_some() && !spec.sized() {
        return Err(at(r.collective.span(), "barrier moves no data; use max_time_us, not min_busbw_gbps".into()));
    }
    let min_pct_of_ceiling = positive(src, &r.min_pct_of_ceiling, "min_pct_of_ceiling")?;
    // A percentage, as doctor's --min-pct-of-ceiling: a collective above the ceiling moved its
    // data another way (docs/output.md, "The ceiling"), which no rule can require.
    if let (Some(p), Some(x)) = (min_pct_of_ceiling, &r.min_pct_of_ceiling) {
        if p > 100.0 {
            return Err(at(x.span(), format!("min_pct_of_ceiling = {p} is not a percentage of the ceiling; expected a number above 0 and at most 100")));
        }
    }
    if min_pct_of_ceiling.is_some() && !spec.sized() {
        return Err(at(r.collective.span(), "barrier moves no data; use max_time_us, not min_pct_of_ceiling".into()));
    }
    let max_time_us = positive(src, &r.max_time_us, "max_time_us")?;
    let max_median_us = positive(src, &r.max_median_us, "max_median_us")?;
    let max_knee_bytes = match &r.max_knee_bytes {
        None => None,
        Some(k) => {
            let size = parse_size(k.get_ref())
                .map_err(|e| at(k.span(), format!("max_knee_bytes: {e}; expected a size such as \"256K\"")))?;
            if !spec.sized() {
                return Err(at(
                    r.collective.span(),
                    "barrier moves no data; use max_time_us, not max_knee_bytes".into(),
                ));
            }
            if size < min_bytes || size > max_bytes {
                return Err(at(
                    k.span(),
                    format!(
                        "max_knee_bytes '{}' is outside sizes '{}'; expected a size inside it",
                        k.get_ref(),
                        r.sizes.get_ref()
                    ),
                ));
            }
            Some(size)
        }
    };
    let knee_plateau_gbps = positive(src, &r.knee_plateau_gbps, "knee_plateau_gbps")?;
    if let (Some(k), None) = (&r.knee_plateau_gbps, max_knee_bytes) {
        // It only says what the knee is judged against: without a knee bound it would judge nothing.
        return Err(at(
            k.span(),
            format!(
                "knee_plateau_gbps = {} is set but max_knee_bytes is not; expected max_knee_bytes with it (knee_plateau_gbps only says what the knee is judged against), or no knee_plateau_gbps",
                k.get_ref()
            ),
        ));
    }
    if let (Some(p), None, None, None) = (&r.plateau, min_busbw_gbps, min_pct_of_ceiling, max_knee_bytes) {
        // A plateau only says where bandwidth is judged: without a bandwidth requirement it
        // would be accepted and then judge nothing.
        return Err(at(
            p.span(),
            format!(
                "plateau '{}' is set but min_busbw_gbps is not; expected min_busbw_gbps, min_pct_of_ceiling or max_knee_bytes with it (plateau only says where bandwidth is judged), or no plateau",
                p.get_ref()
            ),
        ));
    }
    let pattern = match &r.pattern {
        None => crate::collective::traffic::Pattern::Uniform,
        Some(p) if collective != Kind::AllToAllV => {
            return Err(at(p.span(), format!("pattern shapes all-to-all-v only, not {}; remove pattern", spec.name())))
        }
        Some(p) => {
            let mut list = crate::collective::traffic::Pattern::parse_list(p.get_ref())
                .map_err(|e| at(p.span(), e.to_string().trim_start_matches("--").to_string()))?;
            if list.len() != 1 {
                return Err(at(
                    p.span(),
                    format!(
                        "pattern '{}' lists {} skews; expected one pattern a rule (a rule per skew)",
                        p.get_ref(),
                        list.len()
                    ),
                ));
            }
            list.remove(0)
        }
    };
    let ranks_per_node = match &r.ranks_per_node {
        Some(n) if *n.get_ref() < 1 => {
            return Err(at(n.span(), format!("ranks_per_node = {} is impossible; expected 1 or more", n.get_ref())))
        }
        Some(n) => Some(*n.get_ref() as usize),
        None => None,
    };
    Ok(Rule {
        name: name.clone(),
        line,
        collective,
        backend,
        dtype,
        op,
        in_place,
        min_bytes,
        max_bytes,
        plateau,
        min_busbw_gbps,
        min_pct_of_ceiling,
        max_time_us,
        max_median_us,
        max_knee_bytes,
        knee_plateau_gbps,
        pattern,
        ranks_per_node,
        fail_on_slow_rank: r.fail_on_slow_rank.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[settings]
repeats = 3
budget = "20ms"

[[rule]]
name = "all-reduce bandwidth"
collective = "all-reduce"
sizes = "1M..64M"
plateau = "16M..64M"
min_busbw_gbps = 1.5

[[rule]]
name = "barrier latency"
collective = "barrier"
sizes = "8..8"
max_time_us = 100.0
ranks_per_node = 2
"#;

    #[test]
    fn a_good_spec() {
        let s = parse("s.toml", GOOD).unwrap();
        assert_eq!((s.repeats, s.budget_s), (3, 0.02));
        assert_eq!(s.rules.len(), 2);
        let r = &s.rules[0];
        assert_eq!((r.collective, r.dtype, r.op, r.in_place), (Kind::AllReduce, DType::Float32, Some(Op::Sum), false));
        assert_eq!((r.min_bytes, r.max_bytes, r.plateau), (1 << 20, 64 << 20, (16 << 20, 64 << 20)));
        assert_eq!(r.min_busbw_gbps, Some(1.5));
        assert_eq!(r.line, 6);
        assert_eq!(s.rules[1].ranks_per_node, Some(2));
        assert_eq!(s.rules[1].op, None);
    }

    #[test]
    fn placement_has_one_spelling_and_reads_the_old_one() {
        let rule = "[[rule]]\nname = \"x\"\ncollective = \"all-reduce\"\nsizes = \"1M..2M\"\n";
        for (p, in_place) in [("in-place", true), ("out-of-place", false), ("in_place", true), ("out_of_place", false)]
        {
            let s = parse("s.toml", &format!("{rule}placement = \"{p}\"\n")).unwrap();
            assert_eq!(s.rules[0].in_place, in_place, "{p}");
        }
        let e = err(&format!("{rule}placement = \"sideways\"\n"));
        assert!(e.contains("line 5: unknown placement 'sideways'; expected out-of-place or in-place"), "{e}");
    }

    fn err(text: &str) -> String {
        parse("s.toml", text).unwrap_err()
    }

    #[test]
    fn bad_specs_name_the_line_and_the_reason() {
        let rule = "[[rule]]\nname = \"x\"\ncollective = \"all-reduce\"\nsizes = \"1M..2M\"\n";
        let cases: &[(String, &str)] = &[
            (format!("{rule}colour = \"red\"\n"), "line 5: unknown field `colour`"),
            (format!("{rule}min_busbw_gbps = \"10 GB/s\"\n"), "line 5: invalid type"),
            (rule.replace("1M..2M", "2M..1M"), "line 4: '2M..1M' is an impossible range"),
            (rule.replace("1M..2M", "1Mbit..2M"), "line 4: '1Mbit' is not a size"),
            (rule.replace("1M..2M", "1M"), "line 4: '1M' is not a size range"),
            (format!("{rule}plateau = \"4M..8M\"\n"), "line 5: plateau '4M..8M' is outside sizes"),
            (format!("{rule}min_busbw_gbps = -1.0\n"), "line 5: min_busbw_gbps = -1 is impossible"),
            (format!("{rule}min_pct_of_ceiling = 150\n"), "line 5: min_pct_of_ceiling = 150 is not a percentage"),
            (rule.replace("all-reduce", "all-smush"), "line 3: unknown collective 'all-smush'"),
            (format!("{rule}op = \"xor\"\n"), "line 5: unknown op 'xor'"),
            (rule.replace("all-reduce", "all-gather") + "op = \"sum\"\n", "line 5: all-gather does not reduce"),
            (format!("[settings]\nrepeats = 0\n{rule}"), "line 2: repeats = 0 is impossible"),
            (format!("[settings]\nbudget = \"soon\"\n{rule}"), "line 2: --budget"),
            ("[settings]\nrepeats = 2\n".to_string(), "no [[rule]]"),
            (format!("{rule}ranks_per_node = 0\n"), "line 5: ranks_per_node = 0 is impossible"),
            (format!("{rule}pattern = \"spread=1\"\n"), "line 5: pattern shapes all-to-all-v only, not all-reduce"),
            (
                rule.replace("all-reduce", "all-to-all-v") + "pattern = \"moe:experts=8,topk=9\"\n",
                "line 5: pattern: 'moe:experts=8,topk=9' routes each token to topk=9 of only 8 experts",
            ),
            (
                rule.replace("all-reduce", "all-to-all-v") + "pattern = \"moe:experts=8,topk=2,skew=0,1\"\n",
                "line 5: pattern 'moe:experts=8,topk=2,skew=0,1' lists 2 skews; expected one pattern a rule",
            ),
            (format!("{rule}max_knee_bytes = \"4M\"\n"), "line 5: max_knee_bytes '4M' is outside sizes '1M..2M'"),
            (format!("{rule}max_knee_bytes = \"lots\"\n"), "line 5: max_knee_bytes: "),
            (
                format!("{rule}max_knee_bytes = \"1M\"\nknee_plateau_gbps = 0.0\n"),
                "line 6: knee_plateau_gbps = 0 is impossible; expected a positive number",
            ),
            (
                format!("{rule}max_knee_bytes = \"1M\"\nknee_plateau_gbps = -2.5\n"),
                "line 6: knee_plateau_gbps = -2.5 is impossible",
            ),
            (format!("{rule}max_knee_bytes = \"1M\"\nknee_plateau_gbps = \"fast\"\n"), "line 6: invalid type"),
            (
                format!("{rule}knee_plateau_gbps = 7.4\n"),
                "line 5: knee_plateau_gbps = 7.4 is set but max_knee_bytes is not",
            ),
            (
                rule.replace("all-reduce", "barrier") + "max_knee_bytes = \"1M\"\n",
                "line 3: barrier moves no data; use max_time_us, not max_knee_bytes",
            ),
            (format!("{rule}plateau = \"1M..2M\"\n"), "line 5: plateau '1M..2M' is set but min_busbw_gbps is not"),
            (
                rule.replace("name = \"x\"", &format!("name = \"{}\"", "n".repeat(201))),
                "line 2: name of 201 characters; expected a name of at most 200 characters",
            ),
            (rule.replace("name = \"x\"", "name = \"a\\nb\""), "line 2: name of 3 characters, with control characters"),
            (rule.replace("all-reduce", &"a".repeat(65)), "line 3: collective of 65 characters; expected at most 64"),
            (format!("{rule}dtype = \"{}\"\n", "f".repeat(100)), "line 5: dtype of 100 characters"),
            (format!("[settings]\nbudget = \"{}\"\n{rule}", "1".repeat(65)), "line 2: budget of 65 characters"),
            (rule.repeat(1001), "1001 rules; expected at most 1000"),
            (format!("{rule}# {}\n", "x".repeat(1 << 20)), "bytes; expected a spec of at most 1 MiB"),
        ];
        for (text, needle) in cases {
            let e = err(text);
            assert!(e.contains(needle), "{needle:?} not in {e:?}");
            assert!(e.starts_with("s.toml"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    /// A thousand rules parse at once: each rule's line is found by a binary search over the line
    /// starts, not by counting from the file's start (quadratic: minutes for 10^4 rules).
    #[test]
    fn every_rule_is_placed_on_its_line() {
        let rule = "[[rule]]\nname = \"x\"\ncollective = \"all-reduce\"\nsizes = \"1M..2M\"\n";
        let s = parse("s.toml", &rule.repeat(MAX_RULES)).unwrap();
        assert_eq!(s.rules.len(), MAX_RULES);
        assert!(s.rules.iter().enumerate().all(|(i, r)| r.line == 4 * i + 1));
        let src = Source::new("s", "ab\ncd\n\ne");
        assert_eq!([0, 2, 3, 5, 6, 7, 99].map(|b| src.line(b)), [1, 1, 2, 2, 3, 4, 4]);
    }

    #[test]
    fn size_ranges_and_settings_on_their_own() {
        // Line 1 holds a good range, line 2 a bad one; each error names its own line.
        let text = "a = \"64K..1M\"\nb = \"8M..1M\"\n";
        let src = Source::new("s.toml", text);
        let value = |line: usize, v: &str| {
            let start = if line == 1 { 0 } else { text.find('\n').unwrap() + 1 };
            Spanned::new(start..start + 1, v.to_string())
        };
        assert_eq!(size_range(&src, &value(1, "64K..1M")), Ok((64 << 10, 1 << 20)));
        assert_eq!(size_range(&src, &value(1, "8..8")), Ok((8, 8)));
        let e = size_range(&src, &value(2, "8M..1M")).unwrap_err();
        assert_eq!(e, "s.toml line 2: '8M..1M' is an impossible range: 8388608 > 1048576");
        assert!(size_range(&src, &value(1, "64K-1M")).unwrap_err().contains("line 1: '64K-1M' is not a size range"));
        // No [settings]: 3 repeats of 50 ms each.
        assert_eq!(settings(&src, None), Ok((3, 0.05)));
        let set =
            |repeats: i64| Spanned::new(0..1, RawSettings { repeats: Some(Spanned::new(0..1, repeats)), budget: None });
        assert_eq!(settings(&src, Some(&set(7))), Ok((7, 0.05)));
        assert!(settings(&src, Some(&set(101))).unwrap_err().contains("repeats = 101 is impossible"));
    }
}
