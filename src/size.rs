//! Byte sizes as typed on the command line (binary suffixes: 1K = 1024) and as printed.

/// Parse `8`, `64K`, `128M`, `1G`, `4KiB`, `2MB` (all binary). Rejects zero, negative numbers,
/// fractions and anything else.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits_end);
    if num.is_empty() {
        return Err(format!("'{s}' is not a size"));
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("'{s}' is not a size")),
    };
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is too large"))?;
    if n == 0 {
        return Err(format!("'{s}' is zero"));
    }
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("'{s}' is too large"))
}

/// The accepted form, for error messages.
pub const SIZE_FORM: &str =
    "a positive whole number of bytes with an optional K, M or G suffix (binary, 1K = 1024), e.g. 8, 64K, 128M, 1G";

/// `8 B`, `64 KiB`, `1.5 MiB`: for headers and footers, not for tables (they print bytes).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_suffixes() {
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("128M"), Ok(128 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("2MB"), Ok(2 << 20));
        assert_eq!(parse_size(" 16 "), Ok(16));
    }

    #[test]
    fn rejects_bad_sizes() {
        for bad in ["0", "0K", "-8", "1.5M", "abc", "", "K", "12Q", "8 M", "99999999999999999999", "17179869184G"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(8), "8 B");
        assert_eq!(human(65536), "64 KiB");
        assert_eq!(human(64 << 20), "64 MiB");
        assert_eq!(human(1536), "1.5 KiB");
    }
}
