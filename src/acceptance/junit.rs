//! JUnit XML for CI systems, valid against the common JUnit schema (Jenkins xunit's
//! junit-10.xsd): one testsuite per spec with the run's context as `<properties>`, one testcase
//! per check. Every testcase, passing ones too, carries the measured value and the requirement
//! in its `<system-out>` (the schema allows no properties on a testcase), with the number also
//! as a `<measurement>` line that Jenkins' measurement-plots plugin charts; `failure` and
//! `skipped` elements as the schema has them.

use super::verdict::{CheckResult, Outcome};
use crate::error::Result;
use std::fmt::Write;
use std::path::Path;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// `context`: (name, value) pairs for the testsuite's `<properties>` (spec, CSV, ranks, …).
pub fn render(spec: &str, verdicts: &[CheckResult], context: &[(&str, String)]) -> String {
    let failures = verdicts.iter().filter(|v| v.outcome == Outcome::Fail).count();
    // NOISY is written as skipped (it was not judged), with its reason in the message.
    let skipped = verdicts.iter().filter(|v| matches!(v.outcome, Outcome::Skip | Outcome::Noisy)).count();
    let time: f64 = verdicts.iter().map(|v| v.seconds).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    // junit-10.xsd: <testsuites> takes name, time, tests, failures, errors (no skipped).
    let _ = writeln!(
        x,
        "<testsuites name=\"coll-bench\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{time:.3}\">",
        verdicts.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"coll-bench check {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">",
        esc(spec),
        verdicts.len()
    );
    if !context.is_empty() {
        x.push_str("    <properties>\n");
        for (name, value) in context {
            let _ = writeln!(x, "      <property name=\"{}\" value=\"{}\"/>", esc(name), esc(value));
        }
        x.push_str("    </properties>\n");
    }
    for v in verdicts {
        let _ = writeln!(
            x,
            "    <testcase classname=\"coll-bench.{}\" name=\"{} (line {}): {}\" time=\"{:.3}\">",
            esc(&v.collective),
            esc(&v.rule),
            v.line,
            v.check,
            v.seconds
        );
        let what = format!("measured {}, required {}", v.measured, v.required);
        match v.outcome {
            Outcome::Pass => {}
            Outcome::Fail => {
                let _ = writeln!(x, "      <failure message=\"{}\" type=\"{}\"/>", esc(&what), v.check);
            }
            Outcome::Skip => {
                let _ = writeln!(x, "      <skipped message=\"{}\"/>", esc(&what));
            }
            Outcome::Noisy => {
                let _ = writeln!(x, "      <skipped message=\"{}\"/>", esc(&format!("NOISY: {what}")));
            }
        }
        let mut out = format!("measured: {}\nrequired: {}\n", v.measured, v.required);
        if let Some((name, value)) = v.value {
            let _ = writeln!(out, "<measurement><name>{name}</name><value>{value}</value></measurement>");
        }
        let _ = writeln!(x, "      <system-out>{}</system-out>", esc(&out));
        x.push_str("    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Written in one step at the end (its path was checked before the run).
pub fn write(
    path: &Path,
    spec: &str,
    verdicts: &[CheckResult],
    context: &[(&str, String)],
    policy: crate::report::Policy,
) -> Result<()> {
    crate::report::outfile::replace("--junit", path, render(spec, verdicts, context).as_bytes(), policy)
}

#[cfg(test)]
#[path = "../../tests/common/junit10.rs"]
mod junit10;

#[cfg(test)]
mod tests {
    use super::*;

    fn v(check: &'static str, outcome: Outcome) -> CheckResult {
        CheckResult {
            rule: "a<b & \"c\"".into(),
            line: 3,
            collective: "all-reduce".into(),
            check,
            measured: "1 GB/s".into(),
            required: ">= 2 GB/s".into(),
            outcome,
            value: (outcome != Outcome::Skip).then_some(("busbw_gbps", 1.0)),
            slow_ranks: vec![],
            seconds: 0.5,
        }
    }

    #[test]
    fn valid_junit_10_with_the_evidence_in_every_testcase() {
        let ctx = [("csv", "/r/a&b.csv".to_string())];
        let x =
            render("s.toml", &[v("wrong", Outcome::Pass), v("busbw", Outcome::Fail), v("time", Outcome::Skip)], &ctx);
        super::junit10::validate(&x).unwrap_or_else(|e| panic!("{e}\n{x}"));
        assert!(x.starts_with("<?xml"));
        assert!(x.contains("<testsuites name=\"coll-bench\" tests=\"3\" failures=\"1\" errors=\"0\" time=\"1.500\">"));
        assert!(x.contains(
            "<testsuite name=\"coll-bench check s.toml\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""
        ));
        assert!(x.contains("<property name=\"csv\" value=\"/r/a&amp;b.csv\"/>"), "{x}");
        assert_eq!(x.matches("<testcase classname=\"coll-bench.all-reduce\" name=\"").count(), 3);
        assert!(x.contains("a&lt;b &amp; &quot;c&quot; (line 3): busbw"));
        assert!(x.contains("<failure message=\"measured 1 GB/s, required &gt;= 2 GB/s\" type=\"busbw\"/>"));
        assert!(x.contains("<skipped message="));
        // The passing testcase carries what was measured and what was required.
        let pass = x.split("</testcase>").next().unwrap();
        assert!(pass.contains("(line 3): wrong\""), "{pass}");
        assert!(
            pass.contains("<system-out>measured: 1 GB/s\nrequired: &gt;= 2 GB/s\n&lt;measurement&gt;&lt;name&gt;busbw_gbps&lt;/name&gt;&lt;value&gt;1&lt;/value&gt;&lt;/measurement&gt;\n</system-out>"),
            "{pass}"
        );
        assert_eq!(x.matches("<system-out>").count(), 3);
    }

    /// NOISY is a `skipped` testcase (the schema has no other word for "not judged"), its
    /// message saying NOISY and why, counted with the skipped.
    #[test]
    fn a_noisy_check_is_skipped_with_its_reason() {
        let x = render("s.toml", &[v("ceiling", Outcome::Noisy), v("time", Outcome::Skip)], &[]);
        super::junit10::validate(&x).unwrap_or_else(|e| panic!("{e}\n{x}"));
        assert!(x.contains("failures=\"0\" errors=\"0\" skipped=\"2\""), "{x}");
        assert!(x.contains("<skipped message=\"NOISY: measured 1 GB/s, required &gt;= 2 GB/s\"/>"), "{x}");
    }

    /// The validator itself fails on what junit-10.xsd refuses (a check that cannot fail proves
    /// nothing): the old `skipped` on <testsuites>, properties inside a testcase, a missing
    /// required attribute, an unknown element, a time that is not a SUREFIRE_TIME.
    #[test]
    fn the_validator_refuses_what_the_schema_refuses() {
        let ok = "<testsuites><testsuite name=\"s\" tests=\"1\" failures=\"0\" errors=\"0\" time=\"1,234.5\"><testcase name=\"c\"><system-out>x</system-out></testcase></testsuite></testsuites>";
        super::junit10::validate(ok).unwrap();
        for (bad, why) in [
            (ok.replace("<testsuites>", "<testsuites skipped=\"1\">"), "attribute 'skipped' is not allowed"),
            (ok.replace("<system-out>x</system-out>", "<properties/>"), "<properties> is not allowed here"),
            (ok.replace(" errors=\"0\"", ""), "required attribute 'errors' is missing"),
            (ok.replace("<testcase name=\"c\">", "<testcase name=\"c\"><measured/>"), "<measured> is not allowed"),
            (ok.replace("1,234.5", "NaN"), "not a SUREFIRE_TIME"),
            (ok.replace("1,234.5", "1,2"), "not a SUREFIRE_TIME"),
            (ok.replace("<testcase name=\"c\">", "<testcase name=\"c\">text"), "text is not allowed"),
            (ok.replace("</testsuites>", ""), "not well-formed"),
        ] {
            let e = super::junit10::validate(&bad).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
        assert!(super::junit10::surefire_time("12.345") && super::junit10::surefire_time("0"));
        assert!(!super::junit10::surefire_time("-1") && !super::junit10::surefire_time("1e3"));
    }
}
