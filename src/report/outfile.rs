//! The one way every output file is written (CSV, JSON, Markdown, JUnit, plots, `pairs`):
//! checked up front without touching anything ([`check`]), then either streamed in whole
//! records ([`AppendFile`]) or replaced in one step ([`replace`]).
//!
//! Refused, with one line naming the flag: a directory, a device, a FIFO or a socket; a symbolic
//! link (unless `--follow-symlinks`); a path that is the same file as another output or as an
//! input (by device and inode when it exists, by path before); an existing file (unless
//! `--force`). Missing parent directories are made, for every output alike (and removed again
//! when nothing was written in them). New files are created exclusively (`O_EXCL`); a file
//! replaced in one step is claimed when the run starts ([`claim`]: an empty placeholder created
//! exclusively, so a second run on the same path is refused at its start), written at the end to
//! a temporary file with an unpredictable name in the same directory, created exclusively, then
//! renamed over the placeholder only while the path is still that placeholder (or, with
//! `--force`, a regular file). A placeholder whose run ends without writing it is removed
//! ([`release_claims`], and on SIGINT/SIGTERM by `interrupted`). No error names a temporary
//! file.

use crate::error::{Error, Result};
use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

pub use crate::options::Policy;

fn refuse(flag: &str, path: &Path, why: &str, want: &str) -> Error {
    Error::usage(format!("{flag}: '{}' {why}; expected {want}", crate::error::shown(path)))
}

fn cannot(flag: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::usage(format!("{flag}: cannot write '{}': {e}; expected a writable file path", crate::error::shown(path)))
}

/// Why a non-regular file cannot be an output, if it cannot.
fn kind_problem(m: &Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_dir() {
        Some("is a directory")
    } else if t.is_char_device() || t.is_block_device() {
        Some("is a device")
    } else if t.is_fifo() {
        Some("is a FIFO (named pipe), which would block the run")
    } else if t.is_socket() {
        Some("is a socket")
    } else {
        None
    }
}

/// The path writing goes to: `path` itself, or with `--follow-symlinks` the file it points at.
fn resolve(flag: &str, path: &Path, policy: Policy) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::read_link(path).map(|t| crate::error::shown(&t)).unwrap_or_default();
            if !policy.follow_symlinks {
                return Err(refuse(
                    flag,
                    path,
                    &format!(
                        "is a symbolic link (to '{target}'); writing through it could replace a file you did not name"
                    ),
                    "a path that is not a link, or --follow-symlinks to write to its target",
                ));
            }
            std::fs::canonicalize(path).map_err(|_| {
                refuse(
                    flag,
                    path,
                    &format!("is a symbolic link to '{target}', which does not exist"),
                    "a link to an existing file",
                )
            })
        }
        _ => Ok(path.to_path_buf()),
    }
}

/// `path` made absolute with `.` and `..` resolved, the existing part through the file system.
fn normalized(path: &Path) -> PathBuf {
    let abs =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    // The longest existing prefix, canonical (links in directories resolved).
    let mut rest = vec![];
    let mut head = out.clone();
    loop {
        if let Ok(c) = std::fs::canonicalize(&head) {
            let mut p = c;
            for r in rest.iter().rev() {
                p.push(r);
            }
            return p;
        }
        match (head.file_name().map(|f| f.to_os_string()), head.parent().map(Path::to_path_buf)) {
            (Some(f), Some(parent)) => {
                rest.push(f);
                head = parent;
            }
            _ => return out,
        }
    }
}

/// The path to show the user for a file written: absolute, `.` and `..` resolved, links in
/// its directories resolved (a relative path under `srun` is no help on another node).
pub fn absolute(path: &Path) -> PathBuf {
    normalized(path)
}

/// How two paths are compared: by device and inode when the file exists, else by path.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(path: &Path) -> Identity {
    match std::fs::metadata(path) {
        Ok(m) => Identity::Inode(m.dev(), m.ino()),
        Err(_) => Identity::Path(normalized(path)),
    }
}

/// Check one output path without creating anything.
fn check_one(flag: &str, path: &Path, policy: Policy) -> Result<()> {
    if path.as_os_str().is_empty() {
        return Err(Error::usage(format!("{flag}: empty path; expected a file path")));
    }
    let target = resolve(flag, path, policy)?;
    match std::fs::symlink_metadata(&target) {
        Ok(m) => {
            if let Some(why) = kind_problem(&m) {
                return Err(refuse(flag, path, why, "a regular file path"));
            }
            if !policy.force {
                return Err(refuse(
                    flag,
                    path,
                    "already exists",
                    "a new file path, or --force (--overwrite) to replace it",
                ));
            }
            writable_dir(flag, path, target.parent())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => writable_dir(flag, path, target.parent()),
        Err(e) => Err(cannot(flag, path, e)),
    }
}

/// The nearest existing ancestor of `dir` must be a directory we may write in.
fn writable_dir(flag: &str, path: &Path, dir: Option<&Path>) -> Result<()> {
    let mut d = match dir {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    loop {
        match std::fs::metadata(&d) {
            Ok(m) if m.is_dir() => {
                let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()).unwrap_or_default();
                // SAFETY: a valid NUL-terminated path.
                if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
                    return Err(cannot(flag, path, format!("directory '{}' is not writable", crate::error::shown(&d))));
                }
                return Ok(());
            }
            Ok(_) => return Err(cannot(flag, path, format!("'{}' is not a directory", crate::error::shown(&d)))),
            Err(_) => match d.parent() {
                Some(p) if !p.as_os_str().is_empty() => d = p.to_path_buf(),
                _ => return Ok(()),
            },
        }
    }
}

/// Check every output of a run up front, and that no two of them, and no output and input, are
/// the same file. `outputs` and `inputs` are (flag or role, path).
pub fn check(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)], policy: Policy) -> Result<()> {
    for (flag, path) in outputs {
        check_one(flag, path, policy)?;
    }
    let ids: Vec<Identity> = outputs.iter().map(|(_, p)| identity(p)).collect();
    for (i, (flag, path)) in outputs.iter().enumerate() {
        for (j, (other, other_path)) in outputs.iter().enumerate().take(i) {
            if ids[i] == ids[j] {
                return Err(refuse(
                    flag,
                    path,
                    &format!("is the same file as {other} ('{}')", crate::error::shown(other_path)),
                    "a different path for each output",
                ));
            }
        }
        for (role, input) in inputs {
            if ids[i] == identity(input) {
                return Err(refuse(
                    flag,
                    path,
                    &format!("is the same file as {role} ('{}'), which it would overwrite", crate::error::shown(input)),
                    "an output path other than the inputs",
                ));
            }
        }
    }
    Ok(())
}

/// Directories `create_dir_all(dir)` would create, outermost first.
fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut d = dir.to_path_buf();
    while !d.as_os_str().is_empty() && std::fs::symlink_metadata(&d).is_err() {
        out.push(d.clone());
        match d.parent() {
            Some(p) => d = p.to_path_buf(),
            None => break,
        }
    }
    out.reverse();
    out
}

/// A file written record by record (CSV rows, JSON lines, Markdown rows): each record in one
/// write call, and on a failed write the file is cut back to its last whole record.
pub struct AppendFile {
    flag: String,
    /// As the user gave it (for messages).
    path: PathBuf,
    /// Where the data really goes (the link's target with `--follow-symlinks`).
    target: PathBuf,
    file: File,
    good: u64,
    made_dirs: Vec<PathBuf>,
}

impl AppendFile {
    /// Create `path` for writing: exclusively when absent; over an existing regular file only
    /// with `--force` (through a temporary file renamed over it). Parent directories are made.
    pub fn create(flag: &str, path: &Path, policy: Policy) -> Result<AppendFile> {
        check_one(flag, path, policy)?;
        let target = resolve(flag, path, policy)?;
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let made_dirs = missing_dirs(dir);
        std::fs::create_dir_all(dir).map_err(|e| cannot(flag, path, e))?;
        let undo_dirs = |dirs: &[PathBuf]| {
            for d in dirs.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
        };
        let file = match std::fs::symlink_metadata(&target) {
            Ok(_) => {
                // --force over an existing regular file (checked): a fresh file renamed over it.
                let tmp = temp_in(flag, path, dir)?;
                replace_checked(flag, path, &target, tmp).map(|_| ())?;
                OpenOptions::new()
                    .write(true)
                    .custom_flags_nofollow()
                    .open(&target)
                    .map_err(|e| cannot(flag, path, e))?
            }
            Err(_) => OpenOptions::new().write(true).create_new(true).open(&target).map_err(|e| {
                undo_dirs(&made_dirs);
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    refuse(flag, path, "appeared while starting", "a new file path, or --force (--overwrite)")
                } else {
                    cannot(flag, path, e)
                }
            })?,
        };
        Ok(AppendFile { flag: flag.to_string(), path: path.to_path_buf(), target, file, good: 0, made_dirs })
    }

    /// A new file `DIR/STEM.EXT`, or `STEM-1.EXT`, `STEM-2.EXT`, … when taken: never an
    /// existing file or link (created exclusively), so concurrent runs never share one.
    pub fn create_unique(flag: &str, dir: &Path, stem: &str, ext: &str) -> Result<AppendFile> {
        let made_dirs = missing_dirs(dir);
        let first = dir.join(format!("{stem}.{ext}"));
        std::fs::create_dir_all(dir).map_err(|e| cannot(flag, &first, e))?;
        for n in 0..10_000u32 {
            let path = if n == 0 { first.clone() } else { dir.join(format!("{stem}-{n}.{ext}")) };
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok(AppendFile {
                        flag: flag.to_string(),
                        path: path.clone(),
                        target: path,
                        file,
                        good: 0,
                        made_dirs,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(cannot(flag, &path, e)),
            }
        }
        Err(cannot(flag, &first, "every numbered name is taken"))
    }

    /// The path as given (or chosen, for a default name).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the data goes (the target of a followed link).
    pub fn real_path(&self) -> &Path {
        &self.target
    }

    /// Append one whole record in one write call; on failure cut the file back to the last
    /// whole record and name the file and the error.
    pub fn append(&mut self, record: &[u8]) -> Result<()> {
        match self.file.write_all(record) {
            Ok(()) => {
                self.good += record.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.good);
                use std::io::Seek;
                let _ = self.file.seek(std::io::SeekFrom::Start(self.good));
                Err(Error::setup(format!(
                    "{}: writing '{}' failed: {e}; the file ends at its last whole record",
                    self.flag,
                    crate::error::shown(&self.path)
                )))
            }
        }
    }

    /// Replace the whole file with `bytes` in one step (the finished JSON document).
    pub fn replace_with(self, bytes: &[u8]) -> Result<()> {
        let dir = self.target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let mut tmp = temp_in(&self.flag, &self.path, &dir)?;
        tmp.as_file_mut().write_all(bytes).map_err(|e| {
            Error::setup(format!("{}: writing '{}' failed: {e}", self.flag, crate::error::shown(&self.path)))
        })?;
        replace_checked(&self.flag, &self.path, &self.target, tmp)
    }

    /// Replace the whole file in one step with what `write` makes of the records appended so far
    /// (the finished JSON document, made from its JSON Lines form one line at a time, so its
    /// writer keeps nothing per record in memory): `write` reads them from its first argument and
    /// writes the new content to its second.
    pub fn replace_from_records(
        self,
        write: impl FnOnce(&mut dyn std::io::BufRead, &mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let failed = |e: &dyn std::fmt::Display| {
            Error::setup(format!("{}: writing '{}' failed: {e}", self.flag, crate::error::shown(&self.path)))
        };
        // Read back through a second descriptor of the same file (the first is write-only, and
        // its offset is the append position): opened without following a link, and refused if
        // the path no longer names the file this run has been writing.
        let mine = self.file.metadata().map_err(|e| failed(&e))?;
        let reader =
            OpenOptions::new().read(true).custom_flags_nofollow().open(&self.target).map_err(|e| failed(&e))?;
        let theirs = reader.metadata().map_err(|e| failed(&e))?;
        if (theirs.dev(), theirs.ino()) != (mine.dev(), mine.ino()) {
            return Err(refuse(
                &self.flag,
                &self.path,
                "is no longer the file this run wrote",
                "a path left alone while the run goes on",
            ));
        }
        let mut records = std::io::BufReader::new(std::io::Read::take(reader, self.good));
        let dir = self.target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let mut tmp = temp_in(&self.flag, &self.path, &dir)?;
        {
            let mut out = std::io::BufWriter::new(tmp.as_file_mut());
            write(&mut records, &mut out).and_then(|_| out.flush()).map_err(|e| failed(&e))?;
        }
        replace_checked(&self.flag, &self.path, &self.target, tmp)
    }

    /// Remove the file (and the directories made for it): a run that never started.
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.target);
        for d in self.made_dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

trait NoFollow {
    fn custom_flags_nofollow(&mut self) -> &mut Self;
}

impl NoFollow for OpenOptions {
    fn custom_flags_nofollow(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NOFOLLOW)
    }
}

/// An error of tempfile's without the temporary file's name it appends (`… at path "…"`): the
/// user named another path, the one every message shows.
fn without_temp_path(e: std::io::Error) -> String {
    if let Some(errno) = e.raw_os_error() {
        return std::io::Error::from_raw_os_error(errno).to_string();
    }
    let text = e.to_string();
    match text.rsplit_once(" at path ") {
        Some((why, _)) => why.to_string(),
        None => text,
    }
}

/// A temporary file with an unpredictable name in `dir`, created exclusively (removed when
/// dropped unless renamed).
fn temp_in(flag: &str, shown: &Path, dir: &Path) -> Result<tempfile::NamedTempFile> {
    let stem = shown.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        // As any new file: 0666 less the umask (tempfile's own default is 0600).
        .permissions(std::fs::Permissions::from_mode(0o666))
        .prefix(&format!(".{stem}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        // tempfile names its own file in the message; the user's path is the one to name.
        .map_err(|e| cannot(flag, shown, without_temp_path(e)))
}

/// Rename `tmp` over `target` if that is a regular file or absent; otherwise remove `tmp`.
fn replace_checked(flag: &str, shown: &Path, target: &Path, tmp: tempfile::NamedTempFile) -> Result<()> {
    match std::fs::symlink_metadata(target) {
        Ok(m) if !m.file_type().is_file() => {
            return Err(refuse(flag, shown, "is no longer a regular file", "a regular file path"));
        }
        _ => {}
    }
    tmp.as_file().sync_data().map_err(|e| cannot(flag, shown, e))?;
    tmp.persist(target).map(|_| ()).map_err(|e| cannot(flag, shown, e.error))
}

/// A path claimed for a file written whole at the end ([`claim`]): the empty placeholder this
/// run created, by device and inode, and the directories made for it.
struct Claimed {
    target: PathBuf,
    dev: u64,
    ino: u64,
    made_dirs: Vec<PathBuf>,
}

impl Claimed {
    /// Whether `target` is still the placeholder this run created: that inode, and empty (an
    /// inode number is reused once its file is removed).
    fn still_mine(&self) -> bool {
        std::fs::symlink_metadata(&self.target)
            .is_ok_and(|m| m.file_type().is_file() && (m.dev(), m.ino()) == (self.dev, self.ino) && m.len() == 0)
    }

    /// Remove the placeholder if it is still this run's, and the directories made for it.
    fn release(self) {
        if self.still_mine() {
            let _ = std::fs::remove_file(&self.target);
        }
        for d in self.made_dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// The paths claimed and not yet written (rank 0's; a process writes them one at a time).
static CLAIMS: std::sync::Mutex<Vec<Claimed>> = std::sync::Mutex::new(Vec::new());

fn claims() -> std::sync::MutexGuard<'static, Vec<Claimed>> {
    CLAIMS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A placeholder of a file written whole at the end ([`claim`]): path, device, inode.
type Placeholder = (std::ffi::CString, u64, u64);

/// The placeholders to remove on a signal, leaked once per [`publish`].
static PLACEHOLDERS: AtomicPtr<Vec<Placeholder>> = AtomicPtr::new(std::ptr::null_mut());

/// Tell the signal handler which placeholders to remove on SIGINT/SIGTERM (the claimed paths not
/// yet written, each while it is still that empty file), so an interrupted run leaves none behind.
fn publish(list: &[Claimed]) {
    use std::os::unix::ffi::OsStrExt;
    let list: Vec<Placeholder> = list
        .iter()
        .filter_map(|c| std::ffi::CString::new(c.target.as_os_str().as_bytes()).ok().map(|p| (p, c.dev, c.ino)))
        .collect();
    // The previous list is leaked on purpose: a handler running now may still read it.
    PLACEHOLDERS.swap(Box::into_raw(Box::new(list)), Ordering::SeqCst);
}

/// Remove the placeholders that are still this run's: called in the signal handler
/// (`interrupted`), so async-signal-safe.
pub fn remove_placeholders() {
    let list = PLACEHOLDERS.load(Ordering::SeqCst);
    if list.is_null() {
        return;
    }
    // SAFETY: PLACEHOLDERS holds a leaked, never freed list; lstat(2) and unlink(2) are
    // async-signal-safe.
    unsafe {
        for (path, dev, ino) in (*list).iter() {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::lstat(path.as_ptr(), &mut st) == 0
                && (st.st_dev as u64, st.st_ino as u64) == (*dev, *ino)
                && st.st_size == 0
            {
                libc::unlink(path.as_ptr());
            }
        }
    }
}

/// Claim `path` for a file written whole at the end of the run ([`replace`]), once [`check`]ed:
/// an absent path is created now, empty and exclusively (its missing directories made), so a
/// second run given the same path is refused at its start and cannot be replaced by this one's
/// end. An existing file (`--force`) is left as it is until the end.
pub fn claim(flag: &str, path: &Path, policy: Policy) -> Result<()> {
    let target = resolve(flag, path, policy)?;
    if std::fs::symlink_metadata(&target).is_ok() {
        return Ok(());
    }
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let made_dirs = missing_dirs(dir);
    std::fs::create_dir_all(dir).map_err(|e| cannot(flag, path, e))?;
    let undo = |dirs: &[PathBuf]| dirs.iter().rev().for_each(|d| drop(std::fs::remove_dir(d)));
    match OpenOptions::new().write(true).create_new(true).open(&target).and_then(|f| f.metadata()) {
        Ok(m) => {
            let mut list = claims();
            list.push(Claimed { target: normalized(&target), dev: m.dev(), ino: m.ino(), made_dirs });
            publish(&list);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            undo(&made_dirs);
            match policy.force {
                true => Ok(()),
                false => Err(refuse(
                    flag,
                    path,
                    "already exists (it appeared while starting)",
                    "a new file path, or --force (--overwrite) to replace it",
                )),
            }
        }
        Err(e) => {
            undo(&made_dirs);
            Err(cannot(flag, path, e))
        }
    }
}

/// Remove every placeholder still claimed (its run ends without writing it), with the
/// directories made for it.
pub fn release_claims() {
    let mut list = claims();
    for c in list.drain(..) {
        c.release();
    }
    publish(&list);
}

/// Write a whole file in one step (JUnit, a plot, a spec): checked, written to a temporary file
/// in the target directory, renamed over the path: over this run's placeholder ([`claim`]) only
/// while the path is still it; without a claim, only where the path is absent, or a regular file
/// with `--force`. Missing parent directories are made.
pub fn replace(flag: &str, path: &Path, bytes: &[u8], policy: Policy) -> Result<()> {
    let target = resolve(flag, path, policy)?;
    if let Ok(m) = std::fs::symlink_metadata(&target) {
        if let Some(why) = kind_problem(&m) {
            return Err(refuse(flag, path, why, "a regular file path"));
        }
    }
    let claimed = {
        let mut list = claims();
        let key = normalized(&target);
        let mine = list.iter().position(|c| c.target == key).map(|i| list.remove(i));
        publish(&list);
        mine
    };
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let made = missing_dirs(&dir);
    let result = std::fs::create_dir_all(&dir).map_err(|e| cannot(flag, path, e)).and_then(|_| {
        let mut tmp = temp_in(flag, path, &dir)?;
        tmp.as_file_mut()
            .write_all(bytes)
            .map_err(|e| Error::setup(format!("{flag}: writing '{}' failed: {e}", crate::error::shown(path))))?;
        match &claimed {
            Some(c) if !policy.force && !c.still_mine() => Err(refuse(
                flag,
                path,
                "was replaced by another file while this run went on, which is left as it is",
                "a path no other run writes, or --force (--overwrite) to replace it",
            )),
            None if !policy.force => {
                tmp.as_file().sync_data().map_err(|e| cannot(flag, path, e))?;
                tmp.persist_noclobber(&target).map(|_| ()).map_err(|e| match e.error.kind() {
                    std::io::ErrorKind::AlreadyExists => refuse(
                        flag,
                        path,
                        "appeared while this run went on, and is left as it is",
                        "a new file path, or --force (--overwrite) to replace it",
                    ),
                    _ => cannot(flag, path, e.error),
                })
            }
            _ => replace_checked(flag, path, &target, tmp),
        }
    });
    if result.is_err() {
        if let Some(c) = claimed {
            c.release();
        }
        for d in made.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(dir: &Path, name: &str) -> PathBuf {
        dir.join(name)
    }

    #[test]
    fn refuses_what_is_not_a_new_regular_file() {
        let d = tempfile::tempdir().unwrap();
        let none = Policy::default();
        std::fs::write(p(d.path(), "old.csv"), "x").unwrap();
        std::os::unix::fs::symlink(p(d.path(), "old.csv"), p(d.path(), "link.csv")).unwrap();
        let e = check(&[("--csv", &p(d.path(), "old.csv"))], &[], none).unwrap_err().to_string();
        assert!(e.contains("already exists") && e.contains("--force"), "{e}");
        assert!(check(&[("--csv", &p(d.path(), "old.csv"))], &[], Policy { force: true, ..none }).is_ok());
        let e = check(&[("--csv", &p(d.path(), "link.csv"))], &[], none).unwrap_err().to_string();
        assert!(e.contains("symbolic link") && e.contains("--follow-symlinks"), "{e}");
        let e = check(&[("--json", d.path())], &[], none).unwrap_err().to_string();
        assert!(e.starts_with("--json: ") && e.contains("is a directory"), "{e}");
        let e = check(&[("--csv", Path::new("/dev/null"))], &[], Policy { force: true, follow_symlinks: true })
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a device"), "{e}");
    }

    #[test]
    fn the_same_file_twice_is_refused_by_path_and_by_inode() {
        let d = tempfile::tempdir().unwrap();
        let a = p(d.path(), "a.csv");
        let a2 = d.path().join("sub/../a.csv");
        let e = check(&[("--csv", &a), ("--json", &a2)], &[], Policy::default()).unwrap_err().to_string();
        assert!(e.starts_with("--json: ") && e.contains("same file as --csv"), "{e}");
        std::fs::write(&a, "x").unwrap();
        std::fs::hard_link(&a, p(d.path(), "b.csv")).unwrap();
        let force = Policy { force: true, ..Policy::default() };
        let e = check(&[("--junit", &p(d.path(), "b.csv"))], &[("the spec", &a)], force).unwrap_err().to_string();
        assert!(e.contains("same file as the spec"), "{e}");
    }

    #[test]
    fn append_cuts_back_to_the_last_whole_record_and_unique_names_never_collide() {
        let d = tempfile::tempdir().unwrap();
        let mut f = AppendFile::create("--csv", &p(d.path(), "x/y/r.csv"), Policy::default()).unwrap();
        f.append(b"a,b\n").unwrap();
        assert_eq!(std::fs::read(p(d.path(), "x/y/r.csv")).unwrap(), b"a,b\n");
        f.remove();
        assert!(!p(d.path(), "x").exists(), "made directories removed too");
        let one = AppendFile::create_unique("--csv", d.path(), "run", "csv").unwrap();
        std::os::unix::fs::symlink("/nonexistent", p(d.path(), "run-1.csv")).unwrap();
        let two = AppendFile::create_unique("--csv", d.path(), "run", "csv").unwrap();
        assert_eq!(one.path(), p(d.path(), "run.csv"));
        assert_eq!(two.path(), p(d.path(), "run-2.csv"));
    }

    #[test]
    fn replace_writes_over_a_regular_file_only() {
        let d = tempfile::tempdir().unwrap();
        let f = p(d.path(), "j.xml");
        replace("--junit", &f, b"one", Policy::default()).unwrap();
        replace("--junit", &f, b"two", Policy { force: true, ..Policy::default() }).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        assert!(replace("--junit", d.path(), b"x", Policy::default()).is_err());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn a_claimed_path_is_written_only_while_it_is_this_runs_placeholder() {
        let d = tempfile::tempdir().unwrap();
        let none = Policy::default();
        // Claimed at the start: a second run on the path is refused at its start.
        let f = p(d.path(), "new/dir/d.json");
        check(&[("--json", &f)], &[], none).unwrap();
        claim("--json", &f, none).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"", "an empty placeholder");
        let e = check(&[("--json", &f)], &[], none).unwrap_err().to_string();
        assert!(e.contains("already exists"), "{e}");
        replace("--json", &f, b"mine", none).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"mine");
        // Another file put where the placeholder was: left as it is, and said so.
        let g = p(d.path(), "g.json");
        claim("--json", &g, none).unwrap();
        std::fs::write(p(d.path(), "theirs.tmp"), "theirs").unwrap();
        std::fs::rename(p(d.path(), "theirs.tmp"), &g).unwrap();
        let e = replace("--json", &g, b"mine", none).unwrap_err().to_string();
        assert!(e.starts_with("--json: ") && e.contains("was replaced by another file"), "{e}");
        assert_eq!(std::fs::read(&g).unwrap(), b"theirs");
        // Unclaimed, a file that appeared since the check is not replaced.
        let h = p(d.path(), "h.xml");
        check(&[("--junit", &h)], &[], none).unwrap();
        std::fs::write(&h, "theirs").unwrap();
        let e = replace("--junit", &h, b"mine", none).unwrap_err().to_string();
        assert!(e.contains("appeared while this run went on"), "{e}");
        assert_eq!(std::fs::read(&h).unwrap(), b"theirs");
        // A run that ends without writing removes its placeholder and the directories made.
        claim("--plot", &p(d.path(), "x/y/p.svg"), none).unwrap();
        release_claims();
        assert!(!p(d.path(), "x").exists());
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 3, "no temporary file left: {left:?}");
    }

    #[test]
    fn no_error_names_a_temporary_file() {
        let e = temp_in("-o/--output", Path::new("/nonexistent-dir/p.svg"), Path::new("/nonexistent-dir"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'/nonexistent-dir/p.svg'") && e.contains("No such file") && !e.contains(".tmp"), "{e}");
    }
}
