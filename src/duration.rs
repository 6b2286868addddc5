//! Durations, on the command line and in acceptance specs: seconds (`0.5`) or with a unit
//! (`50ms`, `2s`, `10m`, `1h`). One parser; each flag says which range it accepts.

use crate::error::{Error, Result};

/// What a duration flag accepts, and how its error says so.
#[derive(Clone, Copy, Debug)]
pub struct Form {
    /// `0` is accepted (it means "no limit" or "off").
    pub zero_ok: bool,
    /// The longest accepted, seconds.
    pub max_s: f64,
    /// The accepted form, after "expected".
    pub expected: &'static str,
}

/// Above zero, any length (`--budget`).
pub const POSITIVE: Form =
    Form { zero_ok: false, max_s: f64::INFINITY, expected: "a positive duration, e.g. 50ms, 2s, 10m or 1h" };

/// Zero (no limit) or above (`--max-time`).
pub const OR_ZERO: Form =
    Form { zero_ok: true, max_s: f64::INFINITY, expected: "a duration, e.g. 50ms, 2s, 10m or 1h (0: no limit)" };

/// Seconds from plain seconds (`0.5`) or a duration with a unit (`50ms`, `2s`, `1h`); unchecked.
pub fn seconds(v: &str) -> Option<f64> {
    let v = v.trim();
    v.parse::<f64>().ok().or_else(|| humantime::parse_duration(v).ok().map(|d| d.as_secs_f64()))
}

/// `v` as seconds within `form`, or one line naming `flag` and the accepted form.
pub fn parse(flag: &str, v: &str, form: Form) -> Result<f64> {
    let bad = || {
        Error::usage(format!(
            "{flag}: '{v}' is not {}; expected {}",
            if form.zero_ok { "a duration" } else { "a positive duration" },
            form.expected
        ))
    };
    let secs = seconds(v).ok_or_else(bad)?;
    let in_range = secs.is_finite() && secs <= form.max_s && (secs > 0.0 || (form.zero_ok && secs == 0.0));
    if !in_range {
        return Err(bad());
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_units_and_ranges() {
        assert_eq!(parse("--budget", "2h", POSITIVE).unwrap(), 7200.0);
        assert_eq!(parse("--budget", "50ms", POSITIVE).unwrap(), 0.05);
        assert_eq!(parse("--budget", "0.5", POSITIVE).unwrap(), 0.5);
        assert_eq!(parse("--max-time", "0", OR_ZERO).unwrap(), 0.0);
        let e = parse("--budget", "0s", POSITIVE).unwrap_err().to_string();
        assert_eq!(
            e,
            "--budget: '0s' is not a positive duration; expected a positive duration, e.g. 50ms, 2s, 10m or 1h"
        );
        let day = Form { max_s: 86400.0, ..OR_ZERO };
        assert!(parse("-T", "1e9", day).is_err() && parse("-T", "1d", day).is_ok());
        for bad in ["-1", "x", "inf", "NaN", ""] {
            assert!(parse("--max-time", bad, OR_ZERO).unwrap_err().to_string().starts_with("--max-time: "), "{bad}");
        }
    }
}
