//! Finding libcuda and libnccl at run time, so one binary serves machines with and without GPUs.
//!
//! NCCL is usually installed only as `libnccl.so.2` (the runtime package) or inside the
//! `nvidia-nccl-cu12`/`-cu13` Python wheels (`site-packages/nvidia/nccl/lib/libnccl.so.2`), which
//! the dynamic linker does not search. The order, first hit wins:
//!
//! 1. the file named by `COLL_BENCH_NCCL_LIBRARY` — when set, nothing else is tried;
//! 2. `libnccl.so.2`, then `libnccl.so`, through the dynamic linker (its cache, `LD_LIBRARY_PATH`);
//! 3. `nvidia/nccl/lib/libnccl.so.2` under each Python package directory: those `python3` reports
//!    (`site.getsitepackages()` and the user site), then `lib/python3*/{site,dist}-packages` under
//!    `$VIRTUAL_ENV`, `$CONDA_PREFIX`, `~/.local`, `/usr/local`, `/usr`, `/usr/lib64` and `/opt/conda`.
//!
//! libcuda: `COLL_BENCH_CUDA_LIBRARY` alone when set, else `libcuda.so.1`, then `libcuda.so`.
//!
//! The functions here take their roots and openers as parameters, so the order and the messages
//! are unit-tested on a fake directory tree.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

pub const NCCL_VAR: &str = "COLL_BENCH_NCCL_LIBRARY";
pub const CUDA_VAR: &str = "COLL_BENCH_CUDA_LIBRARY";
pub const NCCL_NAMES: &[&str] = &["libnccl.so.2", "libnccl.so"];
pub const CUDA_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
/// Where the `nvidia-nccl-cu*` wheels put the library, under a package directory.
pub const NCCL_IN_WHEEL: &str = "nvidia/nccl/lib/libnccl.so.2";

/// One place to try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// The file named by an override variable.
    Override { var: &'static str, path: PathBuf },
    /// A library name for the dynamic linker's own search.
    Name(&'static str),
    /// A file found under a Python package directory.
    File(PathBuf),
}

impl Candidate {
    /// What `dlopen` is given.
    pub fn target(&self) -> &OsStr {
        match self {
            Candidate::Override { path, .. } | Candidate::File(path) => path.as_os_str(),
            Candidate::Name(n) => OsStr::new(n),
        }
    }
}

/// The places to try, in order: the override alone when it is set (and not empty), else the
/// names, then the files.
pub fn candidates(
    var: &'static str,
    override_value: Option<&OsStr>,
    names: &[&'static str],
    files: &[PathBuf],
) -> Vec<Candidate> {
    if let Some(v) = override_value.filter(|v| !v.is_empty()) {
        return vec![Candidate::Override { var, path: PathBuf::from(v) }];
    }
    names.iter().map(|n| Candidate::Name(n)).chain(files.iter().cloned().map(Candidate::File)).collect()
}

/// Try each candidate with `open`; the first that opens wins. On failure, every attempt and its
/// error, in order.
pub fn open_first<L>(
    cands: &[Candidate],
    mut open: impl FnMut(&Candidate) -> Result<L, String>,
) -> Result<(L, Candidate), Vec<(Candidate, String)>> {
    let mut tried = vec![];
    for c in cands {
        match open(c) {
            Ok(l) => return Ok((l, c.clone())),
            Err(e) => tried.push((c.clone(), e)),
        }
    }
    Err(tried)
}

/// `lib/` directories that may hold `python3*/{site,dist}-packages`, most specific first.
pub fn default_lib_roots(
    virtual_env: Option<&OsStr>,
    conda_prefix: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Vec<PathBuf> {
    let mut out = vec![];
    for prefix in [virtual_env, conda_prefix].into_iter().flatten().filter(|p| !p.is_empty()) {
        out.push(Path::new(prefix).join("lib"));
    }
    if let Some(h) = home.filter(|h| !h.is_empty()) {
        out.push(Path::new(h).join(".local/lib"));
    }
    for fixed in ["/usr/local/lib", "/usr/lib", "/usr/lib64", "/opt/conda/lib"] {
        out.push(PathBuf::from(fixed));
    }
    out
}

/// `ROOT/python3*/site-packages` and `ROOT/python3*/dist-packages` that exist, for each root in
/// order; within a root, newer Pythons first (`python3.12` before `python3.9`, bare `python3`
/// last).
pub fn site_packages_under(lib_roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = vec![];
    for root in lib_roots {
        let Ok(rd) = std::fs::read_dir(root) else { continue };
        let mut pythons: Vec<(i64, PathBuf)> = rd
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let rest = name.strip_prefix("python3")?;
                let minor = match rest.strip_prefix('.') {
                    Some(m) => m.parse::<i64>().ok()?,
                    None if rest.is_empty() => -1,
                    None => return None,
                };
                Some((minor, e.path()))
            })
            .collect();
        pythons.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (_, dir) in pythons {
            for sub in ["site-packages", "dist-packages"] {
                let d = dir.join(sub);
                if d.is_dir() {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// `python3`'s own package directories (site and user site); empty when there is no python3.
pub fn python_site_packages() -> Vec<PathBuf> {
    let script = "import site\ntry:\n    d = site.getsitepackages()\nexcept Exception:\n    d = []\ntry:\n    d.append(site.getusersitepackages())\nexcept Exception:\n    pass\nprint('\\n'.join(d))";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .collect(),
        _ => vec![],
    }
}

/// Package directories without repeats (the same directory reached two ways counts once),
/// in first-seen order.
pub fn dedup_dirs(dirs: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut seen: Vec<PathBuf> = vec![];
    let mut out = vec![];
    for d in dirs {
        let key = std::fs::canonicalize(&d).unwrap_or_else(|_| d.clone());
        if !seen.contains(&key) {
            seen.push(key);
            out.push(d);
        }
    }
    out
}

/// The wheel's library under each package directory, where it exists.
pub fn wheel_files(site_dirs: &[PathBuf], rel: &str) -> Vec<PathBuf> {
    site_dirs.iter().map(|d| d.join(rel)).filter(|f| f.is_file()).collect()
}

/// Every Python package directory to look in on this machine, in order.
pub fn all_site_dirs(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let roots =
        default_lib_roots(env("VIRTUAL_ENV").as_deref(), env("CONDA_PREFIX").as_deref(), env("HOME").as_deref());
    dedup_dirs(python_site_packages().into_iter().chain(site_packages_under(&roots)))
}

/// The one-line message for an override that did not load.
pub fn override_failed(var: &str, path: &Path, err: &str, wanted: &str) -> String {
    format!(
        "{var}={} did not load: {}; point it at {wanted}, or unset it to search the usual places",
        crate::error::shown(path),
        one_line(err)
    )
}

/// The first failure that says more than "not there" (a file that exists but would not load:
/// wrong architecture, a missing dependency), for the message.
pub fn notable_failure(tried: &[(Candidate, String)]) -> Option<String> {
    tried
        .iter()
        .find(|(_, e)| !e.contains("No such file or directory"))
        .map(|(c, e)| format!("{} did not load: {}", c.target().to_string_lossy(), one_line(e)))
}

/// The one-line message when no NCCL was found (`site_dirs`: how many package directories were
/// searched).
pub fn nccl_not_found(tried: &[(Candidate, String)], site_dirs: usize) -> String {
    let extra = notable_failure(tried).map(|s| format!(" ({s})")).unwrap_or_default();
    format!(
        "no NCCL: tried {} through the dynamic linker (its cache and LD_LIBRARY_PATH) and {NCCL_IN_WHEEL} under {site_dirs} Python package director{}{extra}; install NCCL (the libnccl2 package, or pip install nvidia-nccl-cu12) or set {NCCL_VAR} to the path of libnccl.so.2",
        NCCL_NAMES.join(" and "),
        if site_dirs == 1 { "y" } else { "ies" },
    )
}

/// The one-line message when no libcuda was found.
pub fn cuda_not_found(tried: &[(Candidate, String)]) -> String {
    let extra = notable_failure(tried).map(|s| format!(" ({s})")).unwrap_or_default();
    format!(
        "no CUDA driver: {} not found by the dynamic linker{extra}; the nccl backend needs an NVIDIA GPU with its driver installed (or {CUDA_VAR} set to the path of libcuda.so.1)",
        CUDA_NAMES.join(" or "),
    )
}

/// Error text from C libraries can span lines; ours are one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn touch(p: &Path) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, b"not really a library").unwrap();
    }

    #[test]
    fn the_override_alone_when_set() {
        let files = vec![PathBuf::from("/x/libnccl.so.2")];
        let c = candidates(NCCL_VAR, Some(OsStr::new("/opt/nccl/libnccl.so.2")), NCCL_NAMES, &files);
        assert_eq!(c, vec![Candidate::Override { var: NCCL_VAR, path: "/opt/nccl/libnccl.so.2".into() }]);
        // Empty counts as unset.
        let c = candidates(NCCL_VAR, Some(OsStr::new("")), NCCL_NAMES, &files);
        assert_eq!(
            c,
            vec![
                Candidate::Name("libnccl.so.2"),
                Candidate::Name("libnccl.so"),
                Candidate::File("/x/libnccl.so.2".into())
            ]
        );
    }

    #[test]
    fn python_directories_are_found_newest_first_under_each_root() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("venv/lib");
        let usr_local = t.path().join("usr/local/lib");
        let usr = t.path().join("usr/lib");
        for d in [
            venv.join("python3.12/site-packages"),
            usr_local.join("python3.9/dist-packages"),
            usr_local.join("python3.11/dist-packages"),
            usr_local.join("python3.11/site-packages"),
            usr.join("python3/dist-packages"),
            usr.join("python3.11/nothing-here"),
            usr.join("python2.7/dist-packages"),
        ] {
            fs::create_dir_all(d).unwrap();
        }
        fs::create_dir_all(usr.join("python3x/site-packages")).unwrap();
        let roots = vec![venv.clone(), t.path().join("missing"), usr_local.clone(), usr.clone()];
        assert_eq!(
            site_packages_under(&roots),
            vec![
                venv.join("python3.12/site-packages"),
                usr_local.join("python3.11/site-packages"),
                usr_local.join("python3.11/dist-packages"),
                usr_local.join("python3.9/dist-packages"),
                usr.join("python3/dist-packages"),
            ]
        );
    }

    #[test]
    fn wheel_libraries_are_found_in_search_order() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("home/.local/lib/python3.11/site-packages");
        let b = t.path().join("usr/local/lib/python3.11/dist-packages");
        let c = t.path().join("usr/lib/python3/dist-packages");
        touch(&b.join(NCCL_IN_WHEEL));
        touch(&c.join(NCCL_IN_WHEEL));
        fs::create_dir_all(&a).unwrap();
        // A directory reached twice (python3's report and the scan) counts once.
        let dirs = dedup_dirs([b.clone(), a.clone(), b.clone(), c.clone()]);
        assert_eq!(dirs, vec![b.clone(), a.clone(), c.clone()]);
        let files = wheel_files(&dirs, NCCL_IN_WHEEL);
        assert_eq!(files, vec![b.join(NCCL_IN_WHEEL), c.join(NCCL_IN_WHEEL)]);
        let cands = candidates(NCCL_VAR, None, NCCL_NAMES, &files);
        assert_eq!(cands[0], Candidate::Name("libnccl.so.2"));
        assert_eq!(cands[1], Candidate::Name("libnccl.so"));
        assert_eq!(cands[2], Candidate::File(b.join(NCCL_IN_WHEEL)));
        assert_eq!(cands[3], Candidate::File(c.join(NCCL_IN_WHEEL)));

        // The first that opens wins; those before it were tried in order.
        let winner = c.join(NCCL_IN_WHEEL);
        let mut seen = vec![];
        let (got, which) = open_first(&cands, |cand| {
            seen.push(cand.clone());
            match cand {
                Candidate::File(p) if *p == winner => Ok(7),
                _ => Err("cannot open shared object file: No such file or directory".to_string()),
            }
        })
        .unwrap();
        assert_eq!((got, which), (7, Candidate::File(winner.clone())));
        assert_eq!(seen, cands);

        // The real loader on the fake files: they exist but are not libraries.
        // SAFETY: the fake files are not libraries: dlopen refuses them without running anything.
        let tried = open_first(&cands[2..], |c| unsafe {
            libloading::Library::new(c.target()).map(|_| ()).map_err(|e| e.to_string())
        })
        .unwrap_err();
        assert_eq!(tried.len(), 2);
        let msg = nccl_not_found(&tried, dirs.len());
        assert!(msg.starts_with("no NCCL: tried libnccl.so.2 and libnccl.so through the dynamic linker"), "{msg}");
        assert!(msg.contains("under 3 Python package directories"), "{msg}");
        assert!(msg.contains(&format!("{} did not load:", b.join(NCCL_IN_WHEEL).display())), "{msg}");
        assert!(msg.ends_with("or set COLL_BENCH_NCCL_LIBRARY to the path of libnccl.so.2"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn default_roots_put_the_active_environment_first() {
        let r = default_lib_roots(Some(OsStr::new("/venv")), None, Some(OsStr::new("/home/u")));
        assert_eq!(r[0], PathBuf::from("/venv/lib"));
        assert_eq!(r[1], PathBuf::from("/home/u/.local/lib"));
        assert_eq!(r[2], PathBuf::from("/usr/local/lib"));
        assert!(r.contains(&PathBuf::from("/usr/lib")));
        let r = default_lib_roots(Some(OsStr::new("")), Some(OsStr::new("/conda")), None);
        assert_eq!(r[0], PathBuf::from("/conda/lib"));
        assert_eq!(r[1], PathBuf::from("/usr/local/lib"));
    }

    #[test]
    fn messages_are_one_line_and_name_what_was_looked_for() {
        let tried = vec![(
            Candidate::Name("libcuda.so.1"),
            "libcuda.so.1: cannot open shared object file: No such file or directory".to_string(),
        )];
        let m = cuda_not_found(&tried);
        assert_eq!(
            m,
            "no CUDA driver: libcuda.so.1 or libcuda.so not found by the dynamic linker; the nccl backend needs an NVIDIA GPU with its driver installed (or COLL_BENCH_CUDA_LIBRARY set to the path of libcuda.so.1)"
        );
        let m = override_failed(
            NCCL_VAR,
            Path::new("/nonexistent"),
            "/nonexistent: cannot open\nshared object file",
            "libnccl.so.2",
        );
        assert_eq!(
            m,
            "COLL_BENCH_NCCL_LIBRARY=/nonexistent did not load: /nonexistent: cannot open shared object file; point it at libnccl.so.2, or unset it to search the usual places"
        );
        let m = nccl_not_found(&[], 1);
        assert!(m.contains("under 1 Python package directory;"), "{m}");
    }
}
