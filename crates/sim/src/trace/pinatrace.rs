//! Pin's `pinatrace` tool output.
//!
//! `pinatrace` prints one line per memory operand: `ip: R addr` for a read and
//! `ip: W addr` for a write, both addresses as `0x` hexadecimal, and ends with `#eof`
//! when the program exits. Other lines starting with `#` and blank lines are skipped.
//! Each line becomes one access to the page of `addr`.
//!
//! A file whose last significant line is not `#eof`, or whose last line has no line
//! ending, is refused as truncated (the traced program, or the copy, did not finish).

use std::path::Path;

use super::text::{hex, Lines};
use super::{PageAccess, PageReader, PAGE_SHIFT};
use crate::error::SimError;

/// The line pinatrace ends its output with.
const EOF_LINE: &str = "#eof";

/// Lines to skip: comments (and `#eof`, for detection).
pub(crate) fn is_noise(line: &str) -> bool {
    line.starts_with('#')
}

/// Comments other than `#eof`, which the reader keeps track of.
fn is_comment(line: &str) -> bool {
    is_noise(line) && line.trim_end() != EOF_LINE
}

/// What a significant line holds.
enum Line {
    Access(PageAccess),
    Eof,
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
    Ok(PageAccess::new(addr >> PAGE_SHIFT, write))
}

/// Whether `line` (not noise) is a pinatrace line.
pub(crate) fn recognizes(line: &str) -> bool {
    parse(line).is_ok()
}

/// A streaming reader of pinatrace output.
pub struct PinatraceReader {
    lines: Lines,
    /// Whether the last significant line was `#eof`.
    ended: bool,
}

impl PinatraceReader {
    /// Opens the file at `path`.
    pub fn open(path: &Path) -> Result<Self, SimError> {
        Ok(Self { lines: Lines::open(path, true)?, ended: false })
    }
}

impl PageReader for PinatraceReader {
    fn next_access(&mut self) -> Result<Option<PageAccess>, SimError> {
        loop {
            let line = self.lines.next_record(is_comment, |line| {
                if line.trim_end() == EOF_LINE {
                    Ok(Some(Line::Eof))
                } else {
                    parse(line).map(|a| Some(Line::Access(a)))
                }
            })?;
            match line {
                Some(Line::Access(a)) => {
                    self.ended = false;
                    return Ok(Some(a));
                }
                Some(Line::Eof) => self.ended = true,
                None if self.ended => return Ok(None),
                None if self.lines.line == 0 => {
                    return Err(SimError::File {
                        file: self.lines.file.clone(),
                        at: "offset 0".into(),
                        message: format!("empty file: pinatrace output ends with a `{EOF_LINE}` line at least"),
                    })
                }
                None => {
                    return Err(self.lines.error(format!(
                        "truncated: the file ends without the `{EOF_LINE}` line pinatrace closes its output with"
                    )))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str) -> Result<Vec<u64>, String> {
        let path = std::env::temp_dir().join(format!("tierkit-pinatrace-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let mut r = PinatraceReader::open(&path).map_err(|e| e.to_string())?;
        let mut pages = Vec::new();
        let result = loop {
            match r.next_access() {
                Ok(Some(a)) => pages.push(a.page),
                Ok(None) => break Ok(pages),
                Err(e) => break Err(e.to_string()),
            }
        };
        std::fs::remove_file(path).unwrap();
        result
    }

    #[test]
    fn the_output_must_end_with_eof() {
        assert_eq!(read("whole", "# start\n0x1: R 0x2000\n0x1: W 0x3000\n#eof\n"), Ok(vec![2, 3]));
        // Two runs' outputs concatenated: the last #eof closes the file.
        assert_eq!(read("two", "0x1: R 0x2000\n#eof\n0x1: W 0x5000\n#eof\n\n"), Ok(vec![2, 5]));
        let e = read("cut", "0x1: R 0x2000\n0x1: W 0x3000\n").unwrap_err();
        assert!(e.contains(": line 2: truncated: the file ends without the `#eof` line"), "{e}");
        let e = read("cut-again", "0x1: R 0x2000\n#eof\n0x1: W 0x3000\n# comment\n").unwrap_err();
        assert!(e.contains(": line 4: truncated"), "{e}");
        let e = read("empty", "").unwrap_err();
        assert!(e.contains(": offset 0: empty file"), "{e}");
        let e = read("mid-line", "0x1: R 0x2000\n0x1: W 0x30").unwrap_err();
        assert!(e.contains(": line 2: truncated: the file ends inside this line"), "{e}");
    }
}
