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

/// A byte count as the size flags take it, exact: `8`, `1536`, `64K`, `1M`, `16G` (binary, the
/// largest suffix that divides it). The one byte formatter of coll-bench: tables, footers, error
/// messages, plots, compare and the specs `spec from-run` writes all print sizes with it, so any
/// size shown can be typed back (`parse_size(&human(b)) == Ok(b)` for every b > 0).
pub fn human(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "K")];
    for (shift, suffix) in UNITS {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// An amount of memory for reading, not for typing back: [`human`]'s exact form where it is
/// short (at most four digits before the suffix: `6G`, `1536`, `16G`), else rounded to one
/// decimal and marked approximate (`~22.9G`, not `24056960K`). Memory sizes only; message sizes
/// are printed with [`human`], which the size flags read back.
pub fn amount(bytes: u64) -> String {
    let exact = human(bytes);
    if exact.trim_end_matches(['K', 'M', 'G', 'T']).len() <= 4 {
        return exact;
    }
    const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "K")];
    for (shift, suffix) in UNITS {
        let unit = (1u64 << shift) as f64;
        if bytes as f64 >= unit {
            return format!("~{:.1}{suffix}", bytes as f64 / unit);
        }
    }
    exact
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
    fn amounts_are_exact_when_short_and_rounded_when_not() {
        assert_eq!(amount(6 << 30), "6G");
        assert_eq!(amount(1536), "1536");
        assert_eq!(amount(16 << 30), "16G");
        assert_eq!(amount(24_056_960 * 1024), "~22.9G");
        assert_eq!(amount(206_191_985_152), "~192.0G");
        assert_eq!(amount(12_345), "~12.1K");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(0), "0");
        assert_eq!(human(8), "8");
        assert_eq!(human(1023), "1023");
        assert_eq!(human(1536), "1536");
        assert_eq!(human(4096), "4K");
        assert_eq!(human(65536), "64K");
        assert_eq!(human(64 << 20), "64M");
        assert_eq!(human(3 << 29), "1536M");
        assert_eq!(human(8 << 30), "8G");
        assert_eq!(human(2 << 40), "2T");
    }

    #[test]
    fn human_sizes_read_back() {
        for b in [1u64, 8, 1000, 1020, 1024, 1944, 65536, 1417176, (64 << 20) + 1024, 3 << 30, 5 << 40] {
            assert_eq!(parse_size(&human(b)), Ok(b), "{b} printed as {}", human(b));
        }
    }
}
