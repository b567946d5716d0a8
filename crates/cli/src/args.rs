//! Parsers for the command line's value syntax: sizes (`16GiB`) and fast:slow ratios
//! (`1:16`). Each error names the input and says what was expected.

use anyhow::{bail, Context, Result};

/// Bytes in `text`: a number with an optional unit. `KiB`, `MiB`, `GiB`, `TiB` and the
/// short `K`, `M`, `G`, `T` are binary (powers of 1024, as memory sizes are); `KB`, `MB`,
/// `GB`, `TB` are decimal (powers of 1000, as SI and `dd` read them), so `16GB` is
/// 16,000,000,000 bytes, not 16 GiB.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 =
        num.parse().with_context(|| format!("size {text:?}: expected a number with a unit, like 16GiB"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => {
            bail!("size {text:?}: unknown unit {other:?} (use B, KiB, MiB, GiB or TiB; KB, MB, GB, TB are decimal)")
        }
    };
    let bytes = value * scale;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        bail!("size {text:?}: must be at least 1 byte and below 16 EiB");
    }
    Ok(bytes as u64)
}

/// A fast:slow capacity ratio such as `1:16`, as `(fast, slow)` (the form results
/// write it in too: [`tierkit_sim::result::ratio`]).
pub fn parse_ratio(text: &str) -> Result<(u64, u64)> {
    tierkit_sim::result::ratio::parse(text).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16GiB").unwrap(), 16 << 30);
        assert_eq!(parse_size("1.5 MiB").unwrap(), 3 << 19);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("2t").unwrap(), 2 << 40);
        // SI units are decimal: 16GB is not 16GiB.
        assert_eq!(parse_size("16GB").unwrap(), 16_000_000_000);
        assert_eq!(parse_size("32mb").unwrap(), 32_000_000);
        assert_eq!(parse_size("1.5KB").unwrap(), 1500);
        for bad in ["", "GiB", "12 parsecs", "0", "1e400G", "-1G"] {
            let e = parse_size(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn ratios() {
        assert_eq!(parse_ratio("1:16").unwrap(), (1, 16));
        assert_eq!(parse_ratio(" 2 : 3 ").unwrap(), (2, 3));
        for bad in ["16", "1:0", "0:4", "a:b", "1:2:3", ":"] {
            let e = parse_ratio(bad).unwrap_err().to_string();
            assert!(e.contains("ratio"), "{e}");
        }
    }
}
