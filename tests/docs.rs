//! The documents hold together: every relative link in README.md and docs/*.md names a file or
//! folder of the repository, and every `#anchor` a heading of the page it points at (GitHub's
//! anchors: lower case, punctuation dropped, spaces as `-`, `-1`, `-2`, … for repeated
//! headings). The README stays a five-minute read and keeps the two commands CI runs. No MPI.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page of docs/, sorted.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|d| d.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "md")).collect())
        .unwrap_or_default();
    docs.sort();
    out.extend(docs);
    out
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers, inline code
/// spans blanked (a `[x](y)` inside backticks is text, not a link).
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut fence = false;
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let mut kept = String::new();
        for (k, part) in line.split('`').enumerate() {
            kept.push_str(if k % 2 == 0 { part } else { " " });
        }
        out.push((i + 1, kept));
    }
    out
}

/// GitHub's anchor of a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a Markdown page: one per heading outside code blocks, repeated ones numbered.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if fence || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..].replace('`', ""));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// Every `[text](target)` link of the prose of `text`, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    for (n, line) in prose(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or("").to_string();
            out.push((n, target));
            rest = &after[end..];
        }
    }
    out
}

/// Every link of the documents under `root` that does not resolve, one line each.
fn broken(root: &Path) -> Vec<String> {
    let mut bad = vec![];
    for doc in documents(root) {
        let shown = doc.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{shown}: {e}"));
        for (line, target) in links(&text) {
            if target.is_empty() {
                bad.push(format!("{shown}:{line}: a link with no target"));
                continue;
            }
            if ["http://", "https://", "mailto:"].iter().any(|s| target.starts_with(s)) {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() { doc.clone() } else { doc.parent().unwrap().join(path) };
            if !file.exists() {
                bad.push(format!(
                    "{shown}:{line}: '{target}': no file {}",
                    file.strip_prefix(root).unwrap_or(&file).display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                let page = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&page).contains(anchor) {
                    bad.push(format!("{shown}:{line}: '{target}': no heading with the anchor #{anchor}"));
                }
            }
        }
    }
    bad
}

#[test]
fn every_relative_link_of_the_readme_and_docs_resolves() {
    let docs = documents(&root());
    assert!(docs.len() > 10, "README.md and docs/*.md: {docs:?}");
    let bad = broken(&root());
    assert!(bad.is_empty(), "{} broken link(s):\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn a_missing_file_or_heading_is_reported() {
    let tmp = std::env::temp_dir().join(format!("coll-bench-docs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("docs")).unwrap();
    std::fs::write(
        tmp.join("README.md"),
        "# T\n\n[ok](docs/a.md#one-two) [ok](#t) [gone](docs/b.md) [no anchor](docs/a.md#three)\n\
         `[code](not/a/link)`\n```\n[fenced](not/a/link)\n```\n[web](https://example.com/x)\n",
    )
    .unwrap();
    std::fs::write(
        tmp.join("docs/a.md"),
        "# A\n\n## One: `two`\n\n## One: two\n\n[up](../README.md#t) [rep](#one-two-1)\n",
    )
    .unwrap();
    let bad = broken(&tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    assert_eq!(
        bad,
        vec![
            "README.md:3: 'docs/b.md': no file docs/b.md".to_string(),
            "README.md:3: 'docs/a.md#three': no heading with the anchor #three".to_string(),
        ]
    );
}

#[test]
fn anchors_are_githubs() {
    let a = anchors("# coll-bench\n## Process groups: `--groups LAYOUT`\n## A hang always ends, and says who is stuck\n### Several hosts on one machine: `ci/netns-bed.sh`\n```\n# not a heading\n```\n## CSV\n## CSV\n");
    let want: BTreeSet<String> = [
        "coll-bench",
        "process-groups---groups-layout",
        "a-hang-always-ends-and-says-who-is-stuck",
        "several-hosts-on-one-machine-cinetns-bedsh",
        "csv",
        "csv-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(a, want);
}

#[test]
fn the_readme_is_short_and_keeps_the_two_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 250, "README.md has {lines} lines; the rest belongs in docs/ (at most 250)");
    // CI runs `.ci/run`, which runs the README's test command word for word.
    for command in ["bash ci/run-local.sh", "bash ci/test.sh"] {
        assert!(readme.lines().any(|l| l.starts_with(command)), "README.md lost the command '{command}'");
    }
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains("bash ci/test.sh"), ".ci/run no longer runs the README's test command");
}
