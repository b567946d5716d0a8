//! Valgrind lackey `--trace-mem=yes` output.
//!
//! Lackey prints one line per memory access: `I  addr,size` for an instruction fetch
//! (column 0), ` L addr,size` for a load, ` S addr,size` for a store and ` M addr,size`
//! for a modify (a load and a store to the same data), with `addr` in hexadecimal
//! without `0x`. Lines of Valgrind itself (`==pid== ...`) and blank lines are skipped.
//!
//! Data accesses become page accesses: `L` a load, `S` and `M` one store, each to the
//! page of `addr`. Instruction fetches are skipped (tiering places data pages). An
//! access that straddles a page boundary counts for its first page only. Lackey writes
//! whole lines, so a last line without a line ending is refused as truncated.

use std::path::Path;

use super::text::{hex, Lines};
use super::{PageAccess, PageReader, PAGE_SHIFT};
use crate::error::SimError;

/// Lines to skip: Valgrind's own (`==pid==`, `--pid--`).
pub(crate) fn is_noise(line: &str) -> bool {
    line.starts_with("==") || line.starts_with("--")
}

/// What a lackey line holds.
enum Line {
    Instruction,
    Data(PageAccess),
}

fn parse(line: &str) -> Result<Line, String> {
    let expected = "expected `I  addr,size`, ` L addr,size`, ` S addr,size` or ` M addr,size` (hexadecimal addr)";
    let b = line.as_bytes();
    let (kind, rest) = if let Some(rest) = line.strip_prefix("I ") {
        ('I', rest)
    } else if b.len() > 3 && b[0] == b' ' && b[1].is_ascii() && b[2] == b' ' {
        (b[1] as char, &line[3..])
    } else {
        return Err(format!("{line:?}: {expected}"));
    };
    let Some((addr, size)) = rest.trim().split_once(',') else { return Err(format!("{line:?}: {expected}")) };
    let (Some(addr), Ok(_)) = (hex(addr), size.trim().parse::<u32>()) else {
        return Err(format!("{line:?}: {expected}"));
    };
    match kind {
        'I' => Ok(Line::Instruction),
        'L' => Ok(Line::Data(PageAccess::read(addr >> PAGE_SHIFT))),
        'S' | 'M' => Ok(Line::Data(PageAccess::new(addr >> PAGE_SHIFT, true))),
        _ => Err(format!("{line:?}: {expected}")),
    }
}

/// Whether `line` (not noise) is a lackey access line.
pub(crate) fn recognizes(line: &str) -> bool {
    parse(line).is_ok()
}

/// A streaming reader of lackey output.
pub struct LackeyReader {
    lines: Lines,
}

impl LackeyReader {
    /// Opens the file at `path`.
    pub fn open(path: &Path) -> Result<Self, SimError> {
        Ok(Self { lines: Lines::open(path, true)? })
    }
}

impl PageReader for LackeyReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        self.lines.next_record(is_noise, |line| {
            parse(line).map(|l| match l {
                Line::Data(a) => Some(a),
                Line::Instruction => None,
            })
        })
    }
}
