//! The real NCCL without a GPU: the `nvidia-nccl-cu12` wheel that `ci/nccl-wheel.sh` fetches
//! (once; cached under target/nccl-wheel) and installs into a virtualenv.

use super::{say_skipped, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The virtualenv holding the wheel, or why there is none.
pub fn venv() -> &'static Result<PathBuf, String> {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    VENV.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/nccl-wheel.sh");
        let out = Command::new("bash").arg(script).output().map_err(|e| format!("bash ci/nccl-wheel.sh: {e}"))?;
        let text = stdout(&out);
        let last = text.lines().last().unwrap_or("").trim().to_string();
        match out.status.code() {
            Some(0) if Path::new(&last).is_dir() => Ok(PathBuf::from(last)),
            _ => Err(last.strip_prefix("SKIPPED: ").map(str::to_string).unwrap_or_else(|| {
                format!("ci/nccl-wheel.sh failed ({:?}): {text}{}", out.status.code(), stderr(&out))
            })),
        }
    })
}

/// The virtualenv, or `None` after printing `SKIPPED: test: reason`.
pub fn venv_or_skip(test: &str) -> Option<&'static Path> {
    match venv() {
        Ok(p) => Some(p),
        Err(why) => {
            say_skipped(test, why);
            None
        }
    }
}

/// The wheel's package directory inside the virtualenv (`lib/python3.X/site-packages`).
pub fn site_packages(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    let py = std::fs::read_dir(&lib)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .expect("a python3.X directory in the virtualenv");
    py.path().join("site-packages")
}
