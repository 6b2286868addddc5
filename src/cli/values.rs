//! Flag values shared by the subcommands' parsers: sizes, 0/1, counts, lists, durations, the
//! hidden testing flags. Each bad value is one line naming the flag and the accepted form.

use crate::duration::{self, Form};
use crate::error::{Error, Result};
use crate::options::{Timeout, MAX_ITERS};
use crate::size::{parse_size, SIZE_FORM};

pub fn size_flag(flag: &str, v: &str) -> Result<u64> {
    parse_size(v).map_err(|why| Error::usage(format!("{flag}: {why}; expected {SIZE_FORM}")))
}

pub fn bool_flag(flag: &str, v: &str) -> Result<bool> {
    match v.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(Error::usage(format!("{flag}: '{v}' is not allowed; expected 0 or 1"))),
    }
}

pub fn count_flag(flag: &str, v: &str, min: u64) -> Result<u64> {
    let n: u64 = v.trim().parse().map_err(|_| {
        Error::usage(format!("{flag}: '{v}' is not a count; expected a whole number from {min} to {MAX_ITERS}"))
    })?;
    if n < min || n > MAX_ITERS {
        return Err(Error::usage(format!(
            "{flag}: {n} is out of range; expected a whole number from {min} to {MAX_ITERS}"
        )));
    }
    Ok(n)
}

/// Parse a comma-separated list with `all` meaning every item.
pub fn list<T: Copy>(
    flag: &str,
    v: &str,
    all: &[T],
    parse: impl Fn(&str) -> Option<T>,
    accepted: &str,
) -> Result<Vec<T>> {
    let mut out: Vec<T> = vec![];
    for item in v.split(',').map(str::trim) {
        if item.eq_ignore_ascii_case("all") {
            out.extend_from_slice(all);
        } else {
            match parse(item) {
                Some(x) => out.push(x),
                None => return Err(Error::usage(format!("{flag}: unknown value '{item}'; expected {accepted}"))),
            }
        }
    }
    Ok(out)
}

pub fn dedup<T: PartialEq + Copy>(v: Vec<T>) -> Vec<T> {
    let mut out = vec![];
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// `RANK:MICROSECONDS` of the hidden `--debug-slow-rank` flag.
pub fn slow_rank(v: &str) -> Result<(usize, u64)> {
    v.split_once(':')
        .and_then(|(r, us)| Some((r.parse().ok()?, us.parse().ok()?)))
        .ok_or_else(|| Error::usage(format!("--debug-slow-rank: '{v}' is not RANK:MICROSECONDS")))
}

/// `-T/--timeout` (`flag`: as the subcommand names it): seconds (`5`, `2.5`) or a duration
/// (`30s`, `1m`), above 0, at most a day; `0` turns the watchdog off.
pub fn timeout(flag: &str, v: &str) -> Result<Timeout> {
    const DAY: Form = Form {
        zero_ok: true,
        max_s: 86400.0,
        expected: "seconds from 1 up to a day, e.g. 5, 2.5 or 30s, or 0 for no limit",
    };
    let secs = duration::parse(flag, v, DAY)?;
    // The floor: below a second the watchdog cannot tell a stuck rank from one the OS has not
    // scheduled yet (a time slice on a loaded host is tens of milliseconds, and the inquiry that
    // names who is stuck takes milliseconds per 64 ranks); `-T 1ns` was taken for a hang of
    // ranks that had all answered.
    if secs > 0.0 && secs < TIMEOUT_FLOOR_S {
        return Err(Error::usage(format!(
            "{flag}: {v} is below the floor of {TIMEOUT_FLOOR_S} s (shorter cannot tell a stuck rank from a slow one); expected {}",
            DAY.expected
        )));
    }
    Ok(if secs == 0.0 { Timeout::Off } else { Timeout::Fixed(secs) })
}

/// The shortest `-T` accepted, seconds ([`timeout`] says why).
pub const TIMEOUT_FLOOR_S: f64 = 1.0;

/// `--backend NAME` (the sweep's and `step`'s): mpi or nccl, any case.
pub fn backend_kind(v: &str) -> Result<crate::options::BackendKind> {
    use crate::options::BackendKind;
    match v.to_ascii_lowercase().as_str() {
        "mpi" => Ok(BackendKind::Mpi),
        "nccl" => Ok(BackendKind::Nccl),
        other => Err(Error::usage(format!("--backend: unknown backend '{other}'; expected mpi or nccl"))),
    }
}
