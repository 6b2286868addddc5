//! The layers of `src/` point one way: no module names one above it. Every top-level module has a
//! declared layer (the list in docs/architecture.md, its one copy, read by [`layers`]); every `crate::` path in its files (`use` lines,
//! grouped `use crate::{a, b::c}`, inline `crate::x::f()`, `crate::macro!`) must name a module of a
//! lower layer (or itself). A module in no layer, a layer naming a module that does not exist, or
//! an upward (or sideways) path fails, naming the file, the line and both modules.
//!
//! Comments and doc comments are left out (a doc link is not an import); `super::` paths stay
//! inside their own top-level module and are not followed by the layer check.
//!
//! Inside a module the files point one way too ([`circles`]): a file's paths (`super::x`,
//! `self::x`, `crate::m::x`, a child's `x::` from its parent) name other files of its module, and
//! no chain of them comes back to where it started. A module's root (`mod.rs`) may use its
//! children; a child that needs a type of the root's makes a circle, so shared types live in a
//! file of their own below both (`collective/contract.rs`, `watchdog/transport.rs`). Test modules
//! (`#[cfg(test)] mod … { … }` at a file's end) are left out: tests sit above what they test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The page holding the layer list's one copy: its section `## Layers`, one numbered line per
/// layer, top to bottom.
const LAYERS_DOC: &str = "docs/architecture.md";

/// The layers of `doc` (the text of [`LAYERS_DOC`]), top to bottom: in its `## Layers` section,
/// each line `N. ` (N counting from 1, in order) gives one layer, the module names in backticks
/// before ` — `. A module may use modules of the layers below its own, never of its own layer or
/// above (so the import graph has no loop).
fn layers_from(doc: &str) -> Result<Vec<Vec<String>>, String> {
    let doc = format!("\n{doc}");
    let start = doc.find("\n## Layers\n").ok_or(format!("{LAYERS_DOC}: no section '## Layers'"))?;
    let section = &doc[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
    let mut layers: Vec<Vec<String>> = vec![];
    for line in section.lines() {
        let Some((num, rest)) = line.split_once(". ") else { continue };
        let Ok(n) = num.parse::<usize>() else { continue };
        if n != layers.len() + 1 {
            return Err(format!("{LAYERS_DOC}: layer {n} follows layer {}; number them 1, 2, …", layers.len()));
        }
        let names = rest.split(" — ").next().unwrap_or("");
        let modules: Vec<String> = names.split('`').skip(1).step_by(2).map(str::to_string).collect();
        if modules.is_empty() || modules.iter().any(|m| m.is_empty() || !m.chars().all(is_ident)) {
            return Err(format!("{LAYERS_DOC}: layer {n} names no module as `name` before ' — ': {line}"));
        }
        layers.push(modules);
    }
    if layers.is_empty() {
        return Err(format!("{LAYERS_DOC}: the section '## Layers' lists no layer ('1. `module` — …')"));
    }
    Ok(layers)
}

/// The layers, read from [`LAYERS_DOC`] in the repository.
fn layers() -> Vec<Vec<String>> {
    let path = root().join(LAYERS_DOC);
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    layers_from(&doc).unwrap_or_else(|e| panic!("{e}"))
}

/// The binary sits above everything: it may use `coll_bench::app` only.
const BIN_MAY_USE: &[&str] = &["app"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layer_of(layers: &[Vec<String>], module: &str) -> Option<usize> {
    layers.iter().position(|l| l.iter().any(|m| m == module))
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

/// Every way `src/` and `bin/` under `root` break `layers`, one line each.
fn violations(root: &Path, layers: &[Vec<String>]) -> Vec<String> {
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
    for layer in layers {
        for m in layer {
            if !modules.contains(&m) {
                bad.push(format!("{LAYERS_DOC}: layer module '{m}' has no file under src/"));
            }
        }
    }
    for (path, module, text) in &files {
        let shown = path.strip_prefix(root).unwrap().display();
        let Some(module) = module else { continue };
        let Some(mine) = layer_of(layers, module) else {
            bad.push(format!("{shown}: module '{module}' is in no layer; add it to the layer list in {LAYERS_DOC}"));
            continue;
        };
        for (line, name) in targets(text, "crate") {
            let target = macros.get(&name).cloned().unwrap_or(name);
            if target == *module {
                continue;
            }
            match layer_of(layers, &target) {
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

/// A file's module path: `src/a/b.rs` → `a::b`, `src/a/mod.rs` → `a`, `src/lib.rs` → ``.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut segs: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if segs.last().is_some_and(|s| s == "mod" || s == "lib") {
        segs.pop();
    }
    segs
}

/// `code` without its inline test modules: from a `#[cfg(test)]` line followed by `mod NAME {`
/// to the next line that is `}` alone (rustfmt's end of an item at the left margin).
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut lines = code.lines().peekable();
    while let Some(l) = lines.next() {
        let opens_test = l.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|n| n.starts_with("mod ") && n.trim_end().ends_with('{'));
        if opens_test {
            for l in lines.by_ref() {
                out.push('\n');
                if l == "}" {
                    break;
                }
            }
        } else {
            out.push_str(l);
        }
        out.push('\n');
    }
    out
}

/// Every path in `code` (comments stripped) that starts with `super::`, `self::`, `crate::` or
/// `first::` for a `first` in `children`, as its segments after the prefix's resolution against
/// `module` (`super` → the parent's path); a group `a::{b, c::d}` gives one path per item, each
/// with its line.
fn paths_in(code: &str, module: &[String], children: &[String]) -> Vec<(usize, Vec<String>)> {
    let b: Vec<char> = code.chars().collect();
    let word = |i: usize| -> (String, usize) {
        let mut j = i;
        while j < b.len() && is_ident(b[j]) {
            j += 1;
        }
        (b[i..j].iter().collect(), j)
    };
    let sep = |i: usize| i + 1 < b.len() && b[i] == ':' && b[i + 1] == ':';
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let starts = is_ident(b[i]) && (i == 0 || !(is_ident(b[i - 1]) || matches!(b[i - 1], ':' | '$' | '.' | '\'')));
        if !starts {
            i += 1;
            continue;
        }
        let line = b[..i].iter().filter(|c| **c == '\n').count() + 1;
        // The prefix.
        let (first, mut j) = word(i);
        let base: Vec<String> = match first.as_str() {
            "crate" => vec![],
            "self" => module.to_vec(),
            "super" => {
                let mut m = module.to_vec();
                m.pop();
                while sep(j) && word(j + 2).0 == "super" {
                    m.pop();
                    j = word(j + 2).1;
                }
                m
            }
            f if children.iter().any(|c| c == f) && sep(j) => {
                j = i; // the child's name is the path's first segment
                module.to_vec()
            }
            _ => {
                i = j;
                continue;
            }
        };
        if j > i && !sep(j) {
            i = j;
            continue;
        }
        if j > i {
            j += 2;
        }
        // The segments, then an item or a group.
        let before = out.len();
        let mut segs = vec![];
        loop {
            if j < b.len() && b[j] == '{' {
                let (mut depth, mut item, mut items) = (0usize, String::new(), vec![]);
                j += 1;
                while j < b.len() {
                    match b[j] {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            items.push(std::mem::take(&mut item));
                            j += 1;
                            continue;
                        }
                        _ => {}
                    }
                    item.push(b[j]);
                    j += 1;
                }
                items.push(item);
                for it in items {
                    let mut p = segs.clone();
                    p.extend(
                        it.trim()
                            .split("::")
                            .map(|s| s.trim().chars().take_while(|c| is_ident(*c)).collect::<String>()),
                    );
                    out.push((line, p));
                }
                break;
            }
            let (w, k) = word(j);
            if w.is_empty() {
                out.push((line, segs));
                break;
            }
            segs.push(w);
            j = k;
            if !sep(j) {
                out.push((line, segs));
                break;
            }
            j += 2;
        }
        for (_, p) in &mut out[before..] {
            let mut full = base.clone();
            full.append(p);
            *p = full;
        }
        i = j.max(i + 1);
    }
    out
}

/// The circles among the files of each top-level module of `src/` under `root`: one line per
/// circle, its files in order and the line of each file's path to the next.
fn circles(root: &Path) -> Vec<String> {
    let src = root.join("src");
    let files: Vec<(PathBuf, Vec<String>)> =
        rust_files(&src).into_iter().map(|p| (p.clone(), module_path(&src, &p))).collect();
    let known: std::collections::BTreeSet<Vec<String>> = files.iter().map(|(_, m)| m.clone()).collect();
    // Edges: file index → (file index, line).
    let index: BTreeMap<Vec<String>, usize> = files.iter().enumerate().map(|(i, (_, m))| (m.clone(), i)).collect();
    let mut edges: Vec<BTreeMap<usize, usize>> = vec![BTreeMap::new(); files.len()];
    for (i, (path, module)) in files.iter().enumerate() {
        if module.is_empty() {
            continue;
        }
        let children: Vec<String> = known
            .iter()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
            .map(|m| m.last().unwrap().clone())
            .collect();
        let code = without_tests(&strip_comments(&std::fs::read_to_string(path).unwrap()));
        for (line, p) in paths_in(&code, module, &children) {
            // The longest prefix of the path that is a file of the same top-level module.
            let mut target: Vec<String> = vec![];
            for s in &p {
                let mut next = target.clone();
                next.push(s.clone());
                if known.contains(&next) {
                    target = next;
                } else {
                    break;
                }
            }
            if target.is_empty() || target[0] != module[0] || target == *module {
                continue;
            }
            edges[i].entry(index[&target]).or_insert(line);
        }
    }
    // Each circle once: a depth-first search from every file, through files after it only.
    let shown = |i: usize| files[i].0.strip_prefix(root).unwrap().display().to_string();
    let mut out = vec![];
    for start in 0..files.len() {
        let mut stack = vec![(start, edges[start].keys().copied().collect::<Vec<_>>())];
        let mut trail = vec![start];
        let mut seen = std::collections::BTreeSet::new();
        while let Some((_, next)) = stack.last_mut() {
            let Some(n) = next.pop() else {
                stack.pop();
                trail.pop();
                continue;
            };
            if n == start {
                let mut hops: Vec<String> = vec![];
                for w in trail.windows(2).chain(std::iter::once(&[*trail.last().unwrap(), start][..])) {
                    hops.push(format!("{}:{}", shown(w[0]), edges[w[0]][&w[1]]));
                }
                out.push(format!("{} → back to {}", hops.join(" → "), shown(start)));
            } else if n > start && seen.insert(n) {
                trail.push(n);
                stack.push((n, edges[n].keys().copied().collect()));
            }
        }
    }
    out
}

#[test]
fn no_circle_among_the_files_of_a_module() {
    let bad = circles(&root());
    assert!(bad.is_empty(), "{} circle(s) among files (each file:line uses the next):\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn a_circle_inside_a_module_is_reported_with_its_files_and_lines() {
    // A copy of src/ where the transport (below the UDP channel) names the channel.
    let tmp = std::env::temp_dir().join(format!("coll-bench-circles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    for f in rust_files(&root().join("src")) {
        let to = tmp.join(f.strip_prefix(root()).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&f, &to).unwrap();
    }
    let transport = tmp.join("src/watchdog/transport.rs");
    let text = std::fs::read_to_string(&transport).unwrap();
    let line = text.lines().count() + 1;
    std::fs::write(&transport, format!("{text}fn circle() {{ let _ = super::channel::Channel::open; }}\n")).unwrap();
    let bad = circles(&tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    let want = format!("src/watchdog/transport.rs:{line} → ");
    assert!(bad.iter().any(|b| b.contains(&want) && b.contains("src/watchdog/channel.rs:")), "{bad:?}");
    // The scanner's forms: a group, a child's path from its root, nested `super`.
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let got = paths_in(
        "use super::{a, b::C};\nfn f() { child::g(); super::super::x::y(); self::z(); crate::q::R; other::no(); }",
        &m("top::mid"),
        &["child".to_string()],
    );
    let got: Vec<(usize, String)> = got.into_iter().map(|(l, p)| (l, p.join("::"))).collect();
    let want: Vec<(usize, String)> =
        [(1, "top::a"), (1, "top::b::C"), (2, "top::mid::child::g"), (2, "x::y"), (2, "top::mid::z"), (2, "q::R")]
            .iter()
            .map(|(l, p)| (*l, p.to_string()))
            .collect();
    assert_eq!(got, want);
}

#[test]
fn no_module_uses_one_above_it() {
    let bad = violations(&root(), &layers());
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
    let bad = violations(&tmp, &layers());
    let _ = std::fs::remove_dir_all(&tmp);
    let want = format!("src/options.rs:{}: options (layer", lines + 1);
    assert!(
        bad.iter().any(|b| b.starts_with(&want) && b.contains("uses crate::cli (layer 2), a module above it")),
        "{bad:?}"
    );
}

#[test]
fn the_layer_list_is_read_from_the_architecture_page() {
    let doc = "# X\n\n## Layers\n\nText.\n\n1. `app` — top.\n2. `cli`, `plot` — middle; `not_a_layer` after the dash.\n3. `error` — bottom.\n\n## Next\n\n4. `ignored` — another section.\n";
    let want: Vec<Vec<String>> = vec![vec!["app".into()], vec!["cli".into(), "plot".into()], vec!["error".into()]];
    assert_eq!(layers_from(doc), Ok(want));
    // The repository's page gives every layer the test knew when the list moved there.
    let real = layers();
    assert!(real.len() >= 14 && real[0] == ["app"] && real.last().unwrap() == &["error"], "{real:?}");
    // A list out of order, a line without a module, or no list at all is an error, not an empty list.
    assert!(layers_from("## Layers\n1. `a` — x\n3. `b` — y\n").unwrap_err().contains("layer 3 follows layer 1"));
    assert!(layers_from("## Layers\n1. a — x\n").unwrap_err().contains("names no module"));
    assert!(layers_from("## Layers\nnothing\n").unwrap_err().contains("lists no layer"));
    assert!(layers_from("# none\n").unwrap_err().contains("no section"));
}
