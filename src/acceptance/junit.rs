//! JUnit XML for CI systems: one testsuite per spec, one testcase per check, with `failure`
//! and `skipped` elements as the schema has them.

use super::{Outcome, Verdict};
use crate::error::Result;
use std::fmt::Write;
use std::path::Path;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

pub fn render(spec: &str, verdicts: &[Verdict]) -> String {
    let failures = verdicts.iter().filter(|v| v.outcome == Outcome::Fail).count();
    let skipped = verdicts.iter().filter(|v| v.outcome == Outcome::Skip).count();
    let time: f64 = verdicts.iter().map(|v| v.seconds).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"coll-bench\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">",
        verdicts.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"coll-bench check {}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{time:.3}\">",
        esc(spec),
        verdicts.len()
    );
    for v in verdicts {
        let _ = write!(
            x,
            "    <testcase classname=\"coll-bench.{}\" name=\"{} (line {}): {}\" time=\"{:.3}\"",
            esc(&v.collective),
            esc(&v.rule),
            v.line,
            v.check,
            v.seconds
        );
        let what = format!("measured {}, required {}", v.measured, v.required);
        match v.outcome {
            Outcome::Pass => x.push_str("/>\n"),
            Outcome::Fail => {
                let _ =
                    writeln!(x, ">\n      <failure message=\"{}\" type=\"{}\"/>\n    </testcase>", esc(&what), v.check);
            }
            Outcome::Skip => {
                let _ = writeln!(x, ">\n      <skipped message=\"{}\"/>\n    </testcase>", esc(&what));
            }
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Written in one step at the end (its path was checked before the run).
pub fn write(path: &Path, spec: &str, verdicts: &[Verdict], policy: crate::report::Policy) -> Result<()> {
    crate::report::outfile::replace("--junit", path, render(spec, verdicts).as_bytes(), policy, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(check: &'static str, outcome: Outcome) -> Verdict {
        Verdict {
            rule: "a<b & \"c\"".into(),
            line: 3,
            collective: "all-reduce".into(),
            check,
            measured: "1 GB/s".into(),
            required: ">= 2 GB/s".into(),
            outcome,
            slow_ranks: vec![],
            seconds: 0.5,
        }
    }

    #[test]
    fn has_the_schema_s_required_elements_and_escapes() {
        let x = render("s.toml", &[v("wrong", Outcome::Pass), v("busbw", Outcome::Fail), v("time", Outcome::Skip)]);
        assert!(x.starts_with("<?xml"));
        assert!(x.contains("<testsuites name=\"coll-bench\" tests=\"3\" failures=\"1\""));
        assert!(x.contains(
            "<testsuite name=\"coll-bench check s.toml\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""
        ));
        assert_eq!(x.matches("<testcase classname=\"coll-bench.all-reduce\" name=\"").count(), 3);
        assert!(x.contains("a&lt;b &amp; &quot;c&quot; (line 3): busbw"));
        assert!(x.contains("<failure message=\"measured 1 GB/s, required &gt;= 2 GB/s\" type=\"busbw\"/>"));
        assert!(x.contains("<skipped message="));
        // Well-formed enough: every testcase opened is closed.
        let open = x.matches("<testcase").count();
        let closed = x.matches("</testcase>").count() + x.matches("\"/>\n").count()
            - x.matches("<failure").count()
            - x.matches("<skipped").count();
        assert_eq!(open, closed);
        assert!(x.trim_end().ends_with("</testsuites>"));
    }
}
