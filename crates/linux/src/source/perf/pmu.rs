//! PMU descriptions in sysfs: `/sys/bus/event_source/devices/<pmu>/{type,events,format}`.
//!
//! An event file holds terms such as `event=0xcd,umask=0x1,ldlat=3`; each term names a
//! file under `format/` that says where its bits go, e.g. `config:0-7` or
//! `config1:0-15`. [`encode`] combines the two into the four `perf_event_attr` config
//! words.

use std::path::{Path, PathBuf};

use super::error::PerfError;

/// Where one event term's value goes: a config word and its bit ranges, low bits first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatField {
    /// 0 = `config`, 1 = `config1`, 2 = `config2`, 3 = `config3`.
    pub word: usize,
    /// Inclusive bit ranges, filled from the value's lowest bits upward.
    pub ranges: Vec<(u32, u32)>,
}

impl FormatField {
    /// Parses a format file's content: `config:0-7`, `config1:0-15`, `config:21`,
    /// `config:0-7,32-35`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (word, bits) = text.split_once(':').ok_or_else(|| format!("expected `configN:BITS`, got {text:?}"))?;
        let word = match word {
            "config" => 0,
            "config1" => 1,
            "config2" => 2,
            "config3" => 3,
            other => return Err(format!("unknown config word {other:?} in {text:?}")),
        };
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let (lo, hi) = part.split_once('-').unwrap_or((part, part));
            let parse = |s: &str| s.trim().parse::<u32>().map_err(|_| format!("bad bit number {s:?} in {text:?}"));
            let (lo, hi) = (parse(lo)?, parse(hi)?);
            if lo > hi || hi > 63 {
                return Err(format!("bad bit range {part:?} in {text:?}"));
            }
            ranges.push((lo, hi));
        }
        Ok(Self { word, ranges })
    }

    /// Bits available for the value.
    pub fn width(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }

    /// Places `value` into `words`; fails if it does not fit in [`Self::width`] bits.
    pub fn apply(&self, value: u64, words: &mut [u64; 4]) -> Result<(), String> {
        let width = self.width();
        if width < 64 && value >> width != 0 {
            return Err(format!("value {value:#x} does not fit in {width} bits"));
        }
        let mut rest = value;
        for &(lo, hi) in &self.ranges {
            let n = hi - lo + 1;
            let mask = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
            words[self.word] &= !(mask << lo);
            words[self.word] |= (rest & mask) << lo;
            rest = rest.checked_shr(n).unwrap_or(0);
        }
        Ok(())
    }
}

/// Parses an event description: comma-separated `name=value` terms (hex with `0x`, or
/// decimal) or bare names, which mean `name=1`.
pub fn parse_terms(text: &str) -> Result<Vec<(String, u64)>, String> {
    let mut terms = Vec::new();
    for term in text.trim().split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, value) = match term.split_once('=') {
            Some((name, value)) => {
                let value = value.trim();
                let parsed = match value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => value.parse::<u64>(),
                };
                (name.trim(), parsed.map_err(|_| format!("bad value {value:?} for term {name:?}"))?)
            }
            None => (term, 1),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!("bad term name {name:?} in {text:?}"));
        }
        terms.push((name.to_string(), value));
    }
    if terms.is_empty() {
        return Err("empty event description".to_string());
    }
    Ok(terms)
}

/// Sets term `name` to `value`, replacing an earlier setting.
pub fn set_term(terms: &mut Vec<(String, u64)>, name: &str, value: u64) {
    match terms.iter_mut().find(|(n, _)| n == name) {
        Some(term) => term.1 = value,
        None => terms.push((name.to_string(), value)),
    }
}

/// Whether the PMU at `pmu_dir` has a format file for `term`.
pub fn has_format(pmu_dir: &Path, term: &str) -> bool {
    pmu_dir.join("format").join(term).is_file()
}

/// Encodes `terms` with the PMU's format files into `[config, config1, config2, config3]`.
pub fn encode(pmu_dir: &Path, terms: &[(String, u64)]) -> Result<[u64; 4], PerfError> {
    let mut words = [0u64; 4];
    for (name, value) in terms {
        let path = pmu_dir.join("format").join(name);
        let text = read(&path)?;
        let field = FormatField::parse(&text).map_err(|reason| PerfError::Parse { path: path.clone(), reason })?;
        field
            .apply(*value, &mut words)
            .map_err(|reason| PerfError::Parse { path, reason: format!("{name}: {reason}") })?;
    }
    Ok(words)
}

/// The PMU's `perf_event_attr.type` from `<pmu_dir>/type`.
pub fn read_type(pmu_dir: &Path) -> Result<u32, PerfError> {
    let path = pmu_dir.join("type");
    let text = read(&path)?;
    text.trim()
        .parse()
        .map_err(|_| PerfError::Parse { path, reason: format!("expected a PMU type number, got {text:?}") })
}

/// The terms of event `name` from `<pmu_dir>/events/<name>`.
pub fn read_event(pmu_dir: &Path, name: &str) -> Result<Vec<(String, u64)>, PerfError> {
    let path = pmu_dir.join("events").join(name);
    let text = read(&path)?;
    parse_terms(&text).map_err(|reason| PerfError::Parse { path, reason })
}

fn read(path: &PathBuf) -> Result<String, PerfError> {
    std::fs::read_to_string(path).map_err(|source| PerfError::Io { path: path.clone(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_fields_place_bits() {
        let f = FormatField::parse("config:8-15\n").unwrap();
        let mut w = [0; 4];
        f.apply(0x1, &mut w).unwrap();
        assert_eq!(w, [0x100, 0, 0, 0]);
        assert!(f.apply(0x100, &mut w).is_err(), "9 bits into 8");

        let split = FormatField::parse("config:0-7,32-35").unwrap();
        assert_eq!(split.width(), 12);
        let mut w = [0; 4];
        split.apply(0xabc, &mut w).unwrap();
        assert_eq!(w[0], 0xbc | (0xa << 32));

        let single = FormatField::parse("config2:0").unwrap();
        let mut w = [0; 4];
        single.apply(1, &mut w).unwrap();
        assert_eq!(w, [0, 0, 1, 0]);

        let full = FormatField::parse("config1:0-63").unwrap();
        let mut w = [0; 4];
        full.apply(u64::MAX, &mut w).unwrap();
        assert_eq!(w[1], u64::MAX);
    }

    #[test]
    fn malformed_formats_are_errors() {
        for bad in ["", "config", "config9:1", "config:7-3", "config:64", "config:a-b"] {
            assert!(FormatField::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn terms_parse_hex_decimal_and_bare_names() {
        let t = parse_terms("event=0xcd,umask=0x1,ldlat=3\n").unwrap();
        assert_eq!(t, vec![("event".into(), 0xcd), ("umask".into(), 1), ("ldlat".into(), 3)]);
        assert_eq!(parse_terms("any").unwrap(), vec![("any".into(), 1)]);
        assert!(parse_terms("event=0xzz").is_err());
        assert!(parse_terms(" , ").is_err());
        let mut t = t;
        set_term(&mut t, "ldlat", 30);
        set_term(&mut t, "cnt_ctl", 1);
        assert_eq!(t[2].1, 30);
        assert_eq!(t[3], ("cnt_ctl".into(), 1));
    }
}
