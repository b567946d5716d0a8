//! Pin's `pinatrace` tool output.
//!
//! `pinatrace` prints one line per memory operand: `ip: R addr` for a read and
//! `ip: W addr` for a write, both addresses as `0x` hexadecimal, and ends with `#eof`.
//! Lines starting with `#` and blank lines are skipped. Each line becomes one access to
//! the page of `addr`.

use std::path::Path;

use super::text::{hex, Lines};
use super::{PageAccess, PageReader, PAGE_SHIFT};
use crate::error::SimError;

/// Lines to skip: comments and `#eof`.
pub(crate) fn is_noise(line: &str) -> bool {
    line.starts_with('#')
}

fn parse(line: &str) -> Result<PageAccess, String> {
    let bad = || format!("{line:?}: expected `ip: R addr` or `ip: W addr` (hexadecimal ip and addr)");
    let mut fields = line.split_whitespace();
    let (Some(ip), Some(op), Some(addr), None) = (fields.next(), fields.next(), fields.next(), fields.next()) else {
        return Err(bad());
    };
    if ip.strip_suffix(':').and_then(hex).is_none() {
        return Err(bad());
    }
    let write = match op {
        "R" => false,
        "W" => true,
        _ => return Err(bad()),
    };
    let addr = hex(addr).ok_or_else(bad)?;
    Ok(PageAccess { page: addr >> PAGE_SHIFT, write })
}

/// Whether `line` (not noise) is a pinatrace line.
pub(crate) fn recognizes(line: &str) -> bool {
    parse(line).is_ok()
}

/// A streaming reader of pinatrace output.
pub struct PinatraceReader {
    lines: Lines,
}

impl PinatraceReader {
    /// Opens the file at `path`.
    pub fn open(path: &Path) -> Result<Self, SimError> {
        Ok(Self { lines: Lines::open(path)? })
    }
}

impl PageReader for PinatraceReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        self.lines.next_record(is_noise, |line| parse(line).map(Some))
    }
}
