//! A validator for the common JUnit schema, Jenkins xunit's `junit-10.xsd`, written from its
//! content (the schema itself is not vendored): which elements may appear where, which
//! attributes each takes (required and optional; no others), where text is allowed, and the
//! `SUREFIRE_TIME` form of `time` on `testsuites` and `testsuite`. Parsing by roxmltree (a
//! dev-dependency, pure Rust), so no tool outside cargo is needed. Shared by the JUnit unit test
//! (`src/acceptance/junit.rs`, by `#[path]`) and `tests/acceptance.rs`.
#![allow(dead_code)]

use roxmltree::{Document, Node};

struct Element {
    name: &'static str,
    required: &'static [&'static str],
    optional: &'static [&'static str],
    /// Child elements allowed (in any order and number, as the schema's unbounded choices).
    children: &'static [&'static str],
    /// Whether text other than whitespace may appear (mixed content, or xs:string).
    text: bool,
}

const RERUN: &[&str] = &["stackTrace", "system-out", "system-err"];

const SCHEMA: &[Element] = &[
    Element {
        name: "testsuites",
        required: &[],
        optional: &["name", "time", "tests", "failures", "errors"],
        children: &["testsuite"],
        text: false,
    },
    Element {
        name: "testsuite",
        required: &["name", "tests", "failures", "errors"],
        optional: &["group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"],
        children: &["testsuite", "properties", "testcase", "system-out", "system-err"],
        text: false,
    },
    Element { name: "properties", required: &[], optional: &[], children: &["property"], text: false },
    Element { name: "property", required: &["name", "value"], optional: &[], children: &[], text: false },
    Element {
        name: "testcase",
        required: &["name"],
        optional: &["time", "classname", "group"],
        children: &[
            "skipped",
            "error",
            "failure",
            "rerunFailure",
            "rerunError",
            "flakyFailure",
            "flakyError",
            "system-out",
            "system-err",
        ],
        text: false,
    },
    Element { name: "failure", required: &[], optional: &["type", "message"], children: &[], text: true },
    Element { name: "error", required: &[], optional: &["type", "message"], children: &[], text: true },
    Element { name: "skipped", required: &[], optional: &["type", "message"], children: &[], text: true },
    Element { name: "system-out", required: &[], optional: &[], children: &[], text: true },
    Element { name: "system-err", required: &[], optional: &[], children: &[], text: true },
    Element { name: "stackTrace", required: &[], optional: &[], children: &[], text: true },
    Element { name: "rerunFailure", required: &["type"], optional: &["message"], children: RERUN, text: true },
    Element { name: "rerunError", required: &["type"], optional: &["message"], children: RERUN, text: true },
    Element { name: "flakyFailure", required: &["type"], optional: &["message"], children: RERUN, text: true },
    Element { name: "flakyError", required: &["type"], optional: &["message"], children: RERUN, text: true },
];

/// `SUREFIRE_TIME`: `(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?`, anchored — digits
/// (commas only as thousands separators, each followed by three digits), then an optional
/// fraction. No sign, no exponent, no `NaN`.
pub fn surefire_time(v: &str) -> bool {
    let (int, frac) = match v.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (v, None),
    };
    if frac.is_some_and(|f| !f.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    let groups: Vec<&str> = int.split(',').collect();
    groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit())) && groups.iter().skip(1).all(|g| g.len() >= 3)
}

fn check(node: Node, path: &str) -> Result<(), String> {
    let name = node.tag_name().name();
    let here = format!("{path}/{name}");
    if node.tag_name().namespace().is_some() {
        return Err(format!("{here}: element in a namespace, which junit-10.xsd does not declare"));
    }
    let el = SCHEMA.iter().find(|e| e.name == name).ok_or_else(|| format!("{here}: unknown element"))?;
    for a in node.attributes() {
        if !el.required.contains(&a.name()) && !el.optional.contains(&a.name()) {
            return Err(format!("{here}: attribute '{}' is not allowed", a.name()));
        }
        if a.name() == "time" && matches!(name, "testsuites" | "testsuite") && !surefire_time(a.value()) {
            return Err(format!("{here}: time '{}' is not a SUREFIRE_TIME", a.value()));
        }
    }
    for r in el.required {
        if node.attribute(*r).is_none() {
            return Err(format!("{here}: required attribute '{r}' is missing"));
        }
    }
    for child in node.children() {
        if child.is_element() {
            let c = child.tag_name().name();
            if !el.children.contains(&c) {
                return Err(format!("{here}: <{c}> is not allowed here"));
            }
            check(child, &here)?;
        } else if child.is_text() && !el.text && !child.text().unwrap_or("").trim().is_empty() {
            return Err(format!("{here}: text is not allowed here"));
        }
    }
    // rerunType is a sequence: stackTrace?, system-out?, system-err?, in that order.
    if el.children == RERUN {
        let order: Vec<usize> = node
            .children()
            .filter(|c| c.is_element())
            .map(|c| RERUN.iter().position(|r| *r == c.tag_name().name()).unwrap_or(usize::MAX))
            .collect();
        if order.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("{here}: children out of order or repeated (stackTrace, system-out, system-err)"));
        }
    }
    Ok(())
}

/// Whether `xml` is well-formed and valid against junit-10.xsd with `testsuites` or `testsuite`
/// at the root; the error names the first problem and where it is.
pub fn validate(xml: &str) -> Result<(), String> {
    let doc = Document::parse(xml).map_err(|e| format!("not well-formed XML: {e}"))?;
    let root = doc.root_element();
    if !matches!(root.tag_name().name(), "testsuites" | "testsuite") {
        return Err(format!("root element <{}>, expected <testsuites> or <testsuite>", root.tag_name().name()));
    }
    check(root, "")
}
