//! The layers of `src/` point one way: no module names one above it. Every top-level module has a
//! declared layer ([`LAYERS`], top to bottom); every `crate::` path in its files (`use` lines,
//! grouped `use crate::{a, b::c}`, inline `crate::x::f()`, `crate::macro!`) must name a module of a
//! lower layer (or itself). A module in no layer, a layer naming a module that does not exist, or
//! an upward (or sideways) path fails, naming the file, the line and both modules.
//!
//! Comments and doc comments are left out (a doc link is not an import); `super::` paths stay
//! inside their own top-level module and are not followed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top to bottom. A module may use modules of the layers below its own, never of its own layer
/// or above (so the import graph has no loop).
const LAYERS: &[&[&str]] = &[
    // argv → world → the agreed plan → a subcommand; wires the reports.
    &["app"],
    // Every flag of every subcommand → typed options.
    &["cli"],
    // Subcommands that run on the MPI world.
    &["acceptance", "info", "pairs", "step", "tune"],
    // Subcommands over files (no MPI); `--plot` of the sweep and of tune draws through plot.
    &["compare", "plot"],
    // One sweep's set-up on every rank: backend, types, memory fit, output paths.
    &["setup"],
    // The driver: sizes, warm-up, timed batches, the check pass → records.
    &["sweep"],
    // A call that outlives -T ends the job.
    &["watchdog"],
    // Where collectives run, and where records go.
    &["backend", "report"],
    // Reading CSVs back into records; host memory.
    &["csvread", "memory"],
    // The MPI world; the records every report is fed.
    &["record", "world"],
    // The launcher's view; the typed options every rank agrees on.
    &["launch", "options"],
    // Exact input patterns and the verification of outputs.
    &["verify"],
    // The vocabulary: collectives, data types, durations, MPI return codes, sizes, statistics.
    &["collective", "dtype", "duration", "layout", "mpi_error", "size", "stats"],
    // The one error type and the exit codes.
    &["error"],
];

/// The binary sits above everything: it may use `coll_bench::app` only.
const BIN_MAY_USE: &[&str] = &["app"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// `code` without comments: `//` to the end of the line and `/* … */`, outside string and char
/// literals; line breaks are kept so offsets map to the same lines.
fn strip_comments(code: &str) -> String {
    let b: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < b.len() && !(b[i] == '*' && b.get(i + 1) == Some(&'/')) {
                if b[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            // A string literal: kept (a `crate::` path in a string is text, but rare enough
            // to be flagged rather than missed), its `//` not taken for a comment.
            out.push(c);
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' && i + 1 < b.len() {
                    out.push(b[i]);
                    i += 1;
                }
                out.push(b[i]);
                i += 1;
            }
            if i < b.len() {
                out.push('"');
            }
            i += 1;
        } else if c == '\'' && next.is_some() && b.get(i + 2) == Some(&'\'') {
            // A char literal such as '"' or '/'.
            out.extend(&b[i..i + 3]);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first segment of every path after `prefix::` (`crate::a::b` → `a`; `crate::{a, b::c}` →
/// `a`, `b`), with its 1-based line. `$crate::` (inside a macro) is the macro's own crate and
/// is skipped.
fn targets(code: &str, prefix: &str) -> Vec<(usize, String)> {
    let code = strip_comments(code);
    let needle = format!("{prefix}::");
    let mut out = vec![];
    let mut from = 0;
    while let Some(at) = code[from..].find(&needle) {
        let start = from + at;
        from = start + needle.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == '$' || c == ':') {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level items of the group: split at commas outside nested braces.
            let (mut depth, mut item) = (0usize, String::new());
            let mut items = vec![];
            for c in group.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        item.push(c);
                    }
                    '}' if depth == 0 => break,
                    '}' => {
                        depth -= 1;
                        item.push(c);
                    }
                    ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                    _ => item.push(c),
                }
            }
            items.push(item);
            for it in items {
                let name: String = it.trim().chars().take_while(|c| is_ident(*c)).collect();
                if !name.is_empty() && name != "self" {
                    out.push((line, name));
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                out.push((line, name));
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file of `src/` belongs to (`None`: lib.rs, the crate root).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(m) => Some(m.to_string()),
        None => Some(first),
    }
}

/// `#[macro_export]` macros live at the crate root: `crate::with_element!` means dtype.
fn exported_macros(files: &[(PathBuf, Option<String>, String)]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (_, module, text) in files {
        let Some(module) = module else { continue };
        let mut lines = text.lines();
        while let Some(l) = lines.next() {
            if l.trim() == "#[macro_export]" {
                if let Some(name) = lines
                    .next()
                    .and_then(|n| n.trim().strip_prefix("macro_rules!"))
                    .map(|n| n.trim().trim_end_matches('{'))
                {
                    out.insert(name.trim().to_string(), module.clone());
                }
            }
        }
    }
    out
}

/// Every way `src/` and `bin/` break the layers, one line each.
fn violations(root: &Path) -> Vec<String> {
    let src = root.join("src");
    let files: Vec<(PathBuf, Option<String>, String)> = rust_files(&src)
        .into_iter()
        .map(|p| {
            let m = module_of(&src, &p);
            let text = std::fs::read_to_string(&p).unwrap();
            (p, m, text)
        })
        .collect();
    let macros = exported_macros(&files);
    let mut bad = vec![];
    let modules: Vec<&String> = files.iter().filter_map(|(_, m, _)| m.as_ref()).collect();
    for layer in LAYERS {
        for m in *layer {
            if !modules.iter().any(|x| x == m) {
                bad.push(format!("tests/layers.rs: layer module '{m}' has no file under src/"));
            }
        }
    }
    for (path, module, text) in &files {
        let shown = path.strip_prefix(root).unwrap().display();
        let Some(module) = module else { continue };
        let Some(mine) = layer_of(module) else {
            bad.push(format!("{shown}: module '{module}' is in no layer; add it to LAYERS in tests/layers.rs"));
            continue;
        };
        for (line, name) in targets(text, "crate") {
            let target = macros.get(&name).cloned().unwrap_or(name);
            if target == *module {
                continue;
            }
            match layer_of(&target) {
                Some(theirs) if theirs > mine => {}
                Some(theirs) => bad.push(format!(
                    "{shown}:{line}: {module} (layer {}) uses crate::{target} (layer {}), {}; expected only modules below it",
                    mine + 1,
                    theirs + 1,
                    if theirs == mine { "a module of its own layer" } else { "a module above it" }
                )),
                None => bad.push(format!("{shown}:{line}: {module} uses crate::{target}, which is in no layer")),
            }
        }
    }
    for path in rust_files(&root.join("bin")) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, name) in targets(&text, "coll_bench") {
            if !BIN_MAY_USE.contains(&name.as_str()) {
                bad.push(format!(
                    "{}:{line}: the binary uses coll_bench::{name}; expected only {}",
                    path.strip_prefix(root).unwrap().display(),
                    BIN_MAY_USE.join(", ")
                ));
            }
        }
    }
    bad
}

#[test]
fn no_module_uses_one_above_it() {
    let bad = violations(&root());
    assert!(bad.is_empty(), "{} layer violation(s):\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn the_scanner_finds_every_form_of_path() {
    let code = "use crate::a::B;\nuse crate::{b, c::{D, E}, self};\n// crate::commented\n/// [`crate::doc`]\n\
                fn f() { crate::d::g(); $crate::own::h(); let s = \"http://x\"; crate::e!(x) }\n\
                /* crate::block\n */ let c = '\"'; crate::f::g();";
    let got: Vec<(usize, String)> = targets(code, "crate");
    let want: Vec<(usize, String)> =
        [(1, "a"), (2, "b"), (2, "c"), (5, "d"), (5, "e"), (7, "f")].iter().map(|(l, n)| (*l, n.to_string())).collect();
    assert_eq!(got, want);
}

#[test]
fn an_upward_path_is_reported_with_file_line_and_both_modules() {
    // A copy of src/ with one upward path added: options (low) using cli (high).
    let tmp = std::env::temp_dir().join(format!("coll-bench-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    for f in rust_files(&root().join("src")).into_iter().chain(rust_files(&root().join("bin"))) {
        let rel = f.strip_prefix(root()).unwrap();
        let to = tmp.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&f, &to).unwrap();
    }
    let options = tmp.join("src/options.rs");
    let text = std::fs::read_to_string(&options).unwrap();
    let lines = text.lines().count();
    std::fs::write(&options, format!("{text}fn upward() {{ let _ = crate::cli::parse; }}\n")).unwrap();
    let bad = violations(&tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    let want = format!("src/options.rs:{}: options (layer", lines + 1);
    assert!(
        bad.iter().any(|b| b.starts_with(&want) && b.contains("uses crate::cli (layer 2), a module above it")),
        "{bad:?}"
    );
}
