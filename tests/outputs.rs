//! Output files never destroy a user's file, and every input that cannot be meant is refused
//! before the work starts: the real binary under the real launcher, each case asserting the exit
//! code, the one line, and that nothing planted changed (every file's type, target and bytes
//! compared before and after).
mod common;
use common::*;
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every entry under `dir` (not following links): its kind and, for a file, its bytes; for a
/// link, where it points.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        let t = m.file_type();
        let v = if t.is_symlink() {
            format!("link -> {}", std::fs::read_link(&p).unwrap().display())
        } else if t.is_dir() {
            out.extend(snapshot(&p));
            "dir".into()
        } else if t.is_fifo() {
            "fifo".into()
        } else if t.is_char_device() {
            "char device".into()
        } else {
            format!("file {:x?}", std::fs::read(&p).unwrap())
        };
        out.insert(p, v);
    }
    out
}

fn run(dir: &Path, n: usize, args: &[&str]) -> Output {
    mpirun_in(dir, n, args, 120)
}

/// Exit 2, one line naming `needle`, no table, no panic.
fn assert_refused(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{needle}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got:\n{err}");
    assert!(lines[0].starts_with("coll-bench: error: "), "{err}");
    assert!(lines[0].contains(needle), "{needle:?} not in {err}");
    assert!(!err.contains("panicked") && !err.contains("internal error"), "{err}");
    assert!(stdout(o).is_empty(), "table printed: {}", stdout(o));
}

/// Refused, and nothing in `dir` (the planted files included) changed.
fn refused_unchanged(n: usize, args: &[&str], needle: &str, dir: &Path) {
    let before = snapshot(dir);
    let o = run(dir, n, args);
    assert_refused(&o, needle);
    assert_eq!(snapshot(dir), before, "{args:?} changed files");
}

fn plant(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const SMALL: &[&str] = &["all-reduce", "-e", "64", "--budget", "1ms"];

fn with(extra: &[&str]) -> Vec<String> {
    SMALL.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_symlink_is_refused_and_its_target_untouched_unless_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = plant(dir.path(), "victim.txt", "precious\n");
    std::os::unix::fs::symlink("victim.txt", dir.path().join("run.csv")).unwrap();
    std::os::unix::fs::symlink("victim.txt", dir.path().join("run.json")).unwrap();
    for flag in ["--csv", "--json", "--markdown"] {
        let args = with(&["--no-csv", flag, "run.csv"]);
        let args = if flag == "--csv" { with(&["--csv", "run.csv"]) } else { args };
        refused_unchanged(
            2,
            &refs(&args),
            &format!("{flag}: 'run.csv' is a symbolic link (to 'victim.txt')"),
            dir.path(),
        );
    }
    let o = run(dir.path(), 2, &refs(&with(&["--csv", "run.csv"])));
    assert!(stderr(&o).contains("--follow-symlinks"), "{}", stderr(&o));
    // Followed (and forced, as the target exists): the target is written, the link stays.
    let o = run(dir.path(), 2, &refs(&with(&["--csv", "run.csv", "--follow-symlinks", "--force"])));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&victim).unwrap().starts_with("timestamp,"));
    assert_eq!(std::fs::read_link(dir.path().join("run.csv")).unwrap(), Path::new("victim.txt"));
}

#[test]
fn directories_fifos_and_devices_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    refused_unchanged(2, &refs(&with(&["--csv", "adir"])), "--csv: 'adir' is a directory", dir.path());
    // A FIFO would block the run forever on open: refused at once (the launcher's limit is 120 s).
    let t = std::time::Instant::now();
    refused_unchanged(2, &refs(&with(&["--csv", "pipe"])), "--csv: 'pipe' is a FIFO", dir.path());
    refused_unchanged(2, &refs(&with(&["--no-csv", "--json", "pipe"])), "--json: 'pipe' is a FIFO", dir.path());
    assert!(t.elapsed().as_secs() < 60);
    // Even forced and following links, /dev/null stays a device.
    let o = run(dir.path(), 2, &refs(&with(&["--no-csv", "--json", "/dev/null", "--force", "--follow-symlinks"])));
    assert_refused(&o, "--json: '/dev/null' is a device");
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());

    // A device node of our own (root only).
    let node = dir.path().join("null-node");
    let c = std::ffi::CString::new(node.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path; makedev(1, 3) is /dev/null's number.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } != 0 {
        say_skipped("directories_fifos_and_devices", "its mknod part: mknod not permitted (not root?)");
        return;
    }
    for flag in ["--csv", "--markdown"] {
        refused_unchanged(
            2,
            &refs(&with(&[flag, "null-node", "--force"])),
            &format!("{flag}: 'null-node' is a device"),
            dir.path(),
        );
    }
    // --plot needs an image extension: a node named like one.
    std::fs::rename(&node, dir.path().join("node.svg")).unwrap();
    refused_unchanged(
        2,
        &refs(&with(&["--plot", "node.svg", "--force"])),
        "--plot: 'node.svg' is a device",
        dir.path(),
    );
}

#[test]
fn an_existing_file_is_kept_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    plant(dir.path(), "old.csv", "mine\n");
    plant(dir.path(), "old.md", "mine\n");
    refused_unchanged(2, &refs(&with(&["--csv", "old.csv"])), "--csv: 'old.csv' already exists", dir.path());
    let o = run(dir.path(), 2, &refs(&with(&["--csv", "new.csv", "--markdown", "old.md"])));
    assert_refused(&o, "--force (--overwrite)");
    assert!(!dir.path().join("new.csv").exists(), "nothing created by a refused run");
    for force in ["--force", "--overwrite"] {
        let o = run(dir.path(), 2, &refs(&with(&["--csv", "old.csv", force])));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(std::fs::read_to_string(dir.path().join("old.csv")).unwrap().starts_with("timestamp,"));
    }
    let names: Vec<String> =
        files(dir.path()).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "temporary file left: {names:?}");
}

#[test]
fn two_outputs_or_an_output_and_an_input_on_one_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    refused_unchanged(
        2,
        &refs(&with(&["--csv", "x", "--json", "x"])),
        "--json: 'x' is the same file as --csv",
        dir.path(),
    );
    refused_unchanged(
        2,
        &refs(&with(&["--csv", "S.svg", "--plot", "./sub/../S.svg"])),
        "--plot: './sub/../S.svg' is the same file as --csv ('S.svg')",
        dir.path(),
    );
    // By inode: a hard link to an existing file (forced).
    plant(dir.path(), "a.csv", "mine\n");
    std::fs::hard_link(dir.path().join("a.csv"), dir.path().join("b.md")).unwrap();
    refused_unchanged(
        2,
        &refs(&with(&["--csv", "a.csv", "--markdown", "b.md", "--force"])),
        "--markdown: 'b.md' is the same file as --csv",
        dir.path(),
    );
    // check: the JUnit file over the spec it reads.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/acceptance/single-node.toml"),
        dir.path().join("spec.toml"),
    )
    .unwrap();
    refused_unchanged(
        2,
        &["check", "spec.toml", "--junit", "spec.toml", "--force"],
        "--junit: 'spec.toml' is the same file as the spec",
        dir.path(),
    );
}

#[test]
fn a_later_bad_path_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    plant(dir.path(), "notadir", "x\n");
    refused_unchanged(
        2,
        &refs(&with(&["--csv", "out.csv", "--json", "notadir/x.json"])),
        "--json: cannot write 'notadir/x.json'",
        dir.path(),
    );
    refused_unchanged(
        2,
        &refs(&with(&["--csv", "out.csv", "--markdown", "new/dir/x.md", "--plot", "notadir/p.svg"])),
        "--plot: cannot write 'notadir/p.svg'",
        dir.path(),
    );
}

/// The default name is per second: a link planted at each of the next names is never written
/// through, and two runs started together get two files.
#[test]
fn default_names_never_collide_or_follow_links() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let victim = plant(dir.path(), "victim.txt", "precious\n");
    let now = chrono::Utc::now();
    for s in 0..120 {
        let t = now + chrono::Duration::seconds(s);
        let name = format!("coll-bench-{}.csv", t.format("%Y%m%dT%H%M%SZ"));
        std::os::unix::fs::symlink(&victim, results.join(name)).unwrap();
    }
    let a = std::thread::scope(|s| {
        let h = s.spawn(|| run(dir.path(), 2, SMALL));
        let b = run(dir.path(), 2, SMALL);
        (h.join().unwrap(), b)
    });
    for o in [&a.0, &a.1] {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let made: Vec<PathBuf> = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !std::fs::symlink_metadata(p).unwrap().file_type().is_symlink())
        .collect();
    assert_eq!(made.len(), 2, "{made:?}");
    for p in &made {
        let text = std::fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("timestamp,") && lines.len() == 1 + 4 * 2, "{}: {text}", p.display());
        let cols = lines[0].split(',').count();
        assert!(lines.iter().all(|l| csv_fields(l) == cols), "{text}");
    }
}

fn csv_fields(line: &str) -> usize {
    csv::ReaderBuilder::new().has_headers(false).from_reader(line.as_bytes()).records().next().unwrap().unwrap().len()
}

/// A full disk: the CSV ends at its last whole row, the JSON Lines at their last whole line, no
/// temporary file is left, and the message names the file and the error.
#[test]
fn a_full_disk_leaves_whole_rows_and_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    let Some(_disk) = small_disk("a_full_disk_leaves_whole_rows_and_no_temporary_files", &mnt, "64k") else { return };
    let o = run(
        dir.path(),
        2,
        &[
            "all-reduce",
            "reduce",
            "-d",
            "all",
            "-o",
            "all",
            "-e",
            "1K",
            "-n",
            "1",
            "-w",
            "0",
            "--per-rank",
            "--csv",
            "small/run.csv",
            "--json",
            "small/run.json",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("coll-bench: ")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("writing 'small/run.") && lines[0].contains("No space left on device"), "{err}");
    let csv = std::fs::read_to_string(mnt.join("run.csv")).unwrap();
    assert!(csv.ends_with('\n'), "cut-off row: {:?}", &csv[csv.len().saturating_sub(200)..]);
    let cols = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| csv_fields(l) == cols), "a row is not whole");
    let json = std::fs::read_to_string(mnt.join("run.json")).unwrap();
    assert!(json.is_empty() || json.ends_with('\n'));
    for l in json.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("not a whole JSON line ({e}): {l}"));
    }
    let left: Vec<String> =
        std::fs::read_dir(&mnt).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    let mut sorted = left.clone();
    sorted.sort();
    assert_eq!(sorted, ["run.csv", "run.json"], "{left:?}");
}

/// A plot on a full disk: one line naming the user's path (not the temporary file it was
/// written through), exit 2, nothing left behind.
#[test]
fn a_plot_on_a_full_disk_names_its_path_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), 2, &["all-reduce", "-e", "1K", "-n", "1", "-w", "0", "--csv", "r.csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mnt = dir.path().join("small");
    let Some(_disk) = small_disk("a_plot_on_a_full_disk_names_its_path_and_leaves_nothing", &mnt, "64k") else {
        return;
    };
    // Fill it, but for less than the plot needs.
    std::fs::write(mnt.join("fill"), vec![0u8; 60 * 1024]).unwrap();
    let o = Command::new(BIN).current_dir(dir.path()).args(["plot", "r.csv", "-o", "small/p.svg"]).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("'small/p.svg'") && lines[0].contains("No space left on device"), "{err}");
    assert!(!lines[0].contains(".tmp"), "names the temporary file: {err}");
    let mut left: Vec<String> =
        std::fs::read_dir(&mnt).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["fill"], "{left:?}");
}

#[test]
fn json_is_json_lines_while_running_and_one_document_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    // The old writer wrote `PATH.tmp`, through whatever link was planted there.
    let victim = plant(dir.path(), "victim.txt", "precious\n");
    std::os::unix::fs::symlink(&victim, dir.path().join("r.json.tmp")).unwrap();
    let o = run(dir.path(), 2, &refs(&with(&["--no-csv", "--json", "r.json"])));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    std::fs::remove_file(dir.path().join("r.json.tmp")).unwrap();
    std::fs::remove_file(&victim).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["points"].as_array().unwrap().len(), 4);
    assert_eq!(files(dir.path()).len(), 1, "{:?}", files(dir.path()));
}

#[test]
fn a_non_utf8_argument_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = std::ffi::OsStr::from_bytes(b"run-\xff.csv");
    let o = mpirun_cmd(2, 60).args(["-e", "64", "--csv"]).arg(bad).current_dir(dir.path()).output().unwrap();
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    if FAMILY != "mpich" {
        assert_eq!(o.status.code(), Some(2), "{err}");
    }
    let ours: Vec<&str> = err.lines().filter(|l| l.contains("coll-bench")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(ours[0].starts_with("coll-bench: error: argument 4") && ours[0].contains("is not valid UTF-8"), "{err}");
    assert!(!err.contains("panicked") && !err.contains("internal error"), "{err}");
    assert!(files(dir.path()).is_empty());
}

#[test]
fn what_cannot_be_meant_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    refused_unchanged(
        2,
        &["-b", "1", "-e", "3", "-d", "int64"],
        "-b/--minbytes: 1 B is less than one int64 element (8 B)",
        dir.path(),
    );
    refused_unchanged(
        2,
        &["-i", "1", "-b", "8", "-e", "1M"],
        "the plan has 3145707 points (collective × type × op × size), estimated 96.1 h, over --max-points 10000",
        dir.path(),
    );
    let o = run(dir.path(), 2, &["-i", "1", "-b", "8", "-e", "1M"]);
    assert!(stderr(&o).contains("--max-points N to allow it") && stderr(&o).contains("estimated"), "{}", stderr(&o));
    refused_unchanged(2, &["--budget", "1000h"], "over --max-time 60.0 min", dir.path());
    refused_unchanged(2, &["--max-time", "soon"], "--max-time: 'soon' is not a duration", dir.path());
    assert!(files(dir.path()).is_empty());
}

#[test]
fn pairs_names_its_own_flags_and_needs_two_ranks() {
    let dir = tempfile::tempdir().unwrap();
    refused_unchanged(1, &["pairs", "--no-csv"], "pairs: a world of 1 rank has no pairs", dir.path());
    refused_unchanged(2, &["pairs", "-n", "3"], "(see coll-bench pairs --help)", dir.path());
    refused_unchanged(2, &["pairs", "-e", "1T"], "pairs -e/--bandwidth-bytes: the buffers need", dir.path());
    refused_unchanged(2, &["pairs", "--budget", "x"], "pairs --budget", dir.path());
    plant(dir.path(), "p.csv", "mine\n");
    refused_unchanged(2, &["pairs", "--csv", "p.csv"], "pairs --csv: 'p.csv' already exists", dir.path());
}

#[test]
fn every_type_the_backend_supports_with_all() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), 2, &["all", "-d", "all", "-o", "all", "-e", "16", "-n", "2", "-w", "0", "--no-csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        out.matches("# note: -d/--datatype: dropped half, bfloat16 (not supported by the mpi backend)").count(),
        1,
        "{out}"
    );
    assert!(out.contains("# plan: ") && out.contains("points, duration set by -n"), "{out}");
    // A list of unsupported types alone is still refused.
    refused_unchanged(
        2,
        &["-d", "half,bfloat16"],
        "-d/--datatype: half is not supported by the mpi backend",
        dir.path(),
    );
}

#[test]
fn compare_refuses_negative_nan_and_empty_times_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), 2, &refs(&with(&["--csv", "base.csv"])));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let base = std::fs::read_to_string(dir.path().join("base.csv")).unwrap();
    let head: Vec<&str> = base.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|c| *c == "time_us").unwrap();
    for (bad, shown) in [("-3.5", "'-3.5'"), ("NaN", "'NaN'"), ("", "''")] {
        let mut lines: Vec<String> = base.lines().map(String::from).collect();
        let mut rec: Vec<String> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(lines[2].as_bytes())
            .records()
            .next()
            .unwrap()
            .unwrap()
            .iter()
            .map(String::from)
            .collect();
        rec[col] = bad.to_string();
        let mut w = csv::Writer::from_writer(vec![]);
        w.write_record(&rec).unwrap();
        lines[2] = String::from_utf8(w.into_inner().unwrap()).unwrap().trim_end().to_string();
        std::fs::write(dir.path().join("new.csv"), lines.join("\n") + "\n").unwrap();
        let before = snapshot(dir.path());
        let o = std::process::Command::new(BIN)
            .args(["compare", "base.csv", "new.csv"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_refused(&o, &format!("'new.csv' line 3: column time_us is {shown}, expected a time in microseconds"));
        assert_eq!(snapshot(dir.path()), before);
    }
}

/// The footer names every file the run wrote, absolute (the default CSV included: under `srun`
/// "results/…" would be relative to a compute node's directory), and with `--follow-symlinks`
/// the file the data went to. Nothing else is claimed: `--no-csv` names no CSV.
#[test]
fn the_footer_names_every_file_written_with_its_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    let abs = dir.path().canonicalize().unwrap();
    let o = run(dir.path(), 2, &refs(&with(&["--json", "r.json", "--markdown", "sub/r.md", "--plot", "r.svg"])));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let wrote: Vec<String> = stdout(&o).lines().filter(|l| l.starts_with("# Wrote ")).map(str::to_string).collect();
    let csv = files(dir.path()).into_iter().find(|p| p.extension().is_some_and(|e| e == "csv")).unwrap();
    assert_eq!(
        wrote,
        [
            format!("# Wrote {} (CSV)", abs.join(csv.strip_prefix(dir.path()).unwrap()).display()),
            format!("# Wrote {} (JSON)", abs.join("r.json").display()),
            format!("# Wrote {} (Markdown)", abs.join("sub/r.md").display()),
            format!("# Wrote {} (plot)", abs.join("r.svg").display()),
        ],
        "{}",
        stdout(&o)
    );
    assert!(csv.starts_with(dir.path().join("results")));
    plant(dir.path(), "target.csv", "");
    std::os::unix::fs::symlink("target.csv", dir.path().join("link.csv")).unwrap();
    let o = run(dir.path(), 2, &refs(&with(&["--csv", "link.csv", "--follow-symlinks", "--force"])));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let wrote: Vec<&str> = out.lines().filter(|l| l.starts_with("# Wrote ")).collect();
    assert_eq!(wrote, [format!("# Wrote {} (CSV)", abs.join("target.csv").display())]);
    let o = run(dir.path(), 2, &refs(&with(&["--no-csv"])));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("# Wrote "), "{}", stdout(&o));
}

/// Every output makes its missing directories (here `--write-matrix`, written whole before the
/// run, beside the streamed `--markdown`), and no error names a temporary file.
#[test]
fn every_output_makes_its_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(
        dir.path(),
        2,
        &[
            "all-to-all-v",
            "-e",
            "1K",
            "-n",
            "1",
            "-w",
            "0",
            "--no-csv",
            "--write-matrix",
            "m/x.txt",
            "--markdown",
            "md/r.md",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains(".tmp"), "{}", stderr(&o));
    assert!(dir.path().join("m/x.txt").is_file() && dir.path().join("md/r.md").is_file());
}
