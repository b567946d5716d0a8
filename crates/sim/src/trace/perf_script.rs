//! `perf script` output with data addresses (from `perf mem record` or `perf record -d`).
//!
//! `perf script` prints one line per sample; which fields it shows depends on `-F`, but
//! the sample time ends with `:` and is followed by the event name, also ending with
//! `:` (possibly after a period), e.g.
//!
//! ```text
//!  stream 4711 [002] 81234.567890:      1 cpu/mem-loads,ldlat=30/P:     7f12a4c01040 ...
//! ```
//!
//! With `-F ...,event,addr,...` (or perf mem's default) the data address is the first
//! field after the event. A line becomes one access to the page of that address
//! (hexadecimal, with or without `0x`); the access is a store when the event name
//! contains `store`. Lines starting with `#` (perf's header) and blank lines are
//! skipped. perf writes whole lines, so a last line without a line ending is refused as
//! truncated.

use std::path::Path;

use super::text::{hex, Lines};
use super::{PageAccess, PageReader, PAGE_SHIFT};
use crate::error::SimError;

/// Lines to skip: perf's header comments.
pub(crate) fn is_noise(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// Whether `token` is a sample time: `seconds.fraction:`.
fn is_time(token: &str) -> bool {
    token.strip_suffix(':').and_then(|t| t.split_once('.')).is_some_and(|(s, f)| {
        !s.is_empty() && !f.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && f.bytes().all(|b| b.is_ascii_digit())
    })
}

fn parse(line: &str) -> Result<PageAccess, String> {
    let mut tokens = line.split_whitespace().skip_while(|t| !is_time(t)).skip(1);
    let bad = |what: &str| {
        format!("{line:?}: {what} (expected `... time: [period] event: addr ...`, as `perf script -F time,event,addr` prints)")
    };
    let Some(event) = tokens.find(|t| t.ends_with(':') && t.bytes().any(|b| b.is_ascii_alphabetic())) else {
        return Err(bad("no sample time followed by an event name"));
    };
    let addr = tokens.next().and_then(hex).ok_or_else(|| bad("no hexadecimal data address after the event"))?;
    Ok(PageAccess::new(addr >> PAGE_SHIFT, event.to_ascii_lowercase().contains("store")))
}

/// Whether `line` (not noise) is a `perf script` sample with a data address.
pub(crate) fn recognizes(line: &str) -> bool {
    parse(line).is_ok()
}

/// A streaming reader of `perf script` output.
pub struct PerfScriptReader {
    lines: Lines,
}

impl PerfScriptReader {
    /// Opens the file at `path`.
    pub fn open(path: &Path) -> Result<Self, SimError> {
        Ok(Self { lines: Lines::open(path, true)? })
    }
}

impl PageReader for PerfScriptReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        self.lines.next_record(is_noise, |line| parse(line).map(Some))
    }
}
