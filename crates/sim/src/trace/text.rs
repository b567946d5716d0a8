//! Line reading shared by the text trace readers: line numbers for errors, and the
//! number parsing they have in common.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::SimError;

/// A text file read line by line, counting lines (from 1).
pub(crate) struct Lines {
    /// The file, for errors.
    pub file: String,
    src: BufReader<File>,
    buf: Vec<u8>,
    /// Number of the line last returned.
    pub line: u64,
    /// Whether a last line without a line ending is an error (a truncated file).
    whole_lines: bool,
}

impl Lines {
    /// Opens `path`. With `whole_lines`, for the output of tools that always end their
    /// lines, a last line without a line ending is refused as a sign of truncation.
    pub fn open(path: &Path, whole_lines: bool) -> Result<Self, SimError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|source| SimError::Io { file: file.clone(), source })?;
        Ok(Self { file, src: BufReader::with_capacity(1 << 20, f), buf: Vec::new(), line: 0, whole_lines })
    }

    /// The next line without its line ending; `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<&str>, SimError> {
        self.buf.clear();
        let n = self.src.read_until(b'\n', &mut self.buf).map_err(|e| self.error(format!("read error: {e}")))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.whole_lines && self.buf.last() != Some(&b'\n') {
            return Err(self.error("truncated: the file ends inside this line (it has no line ending)"));
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(SimError::File {
                file: self.file.clone(),
                at: format!("line {}", self.line),
                message: format!("not text: invalid UTF-8 at byte {} of the line", e.valid_up_to()),
            }),
        }
    }

    /// The next record: lines that are blank or `noise` are skipped, the others given to
    /// `parse`, which may skip one too (`Ok(None)`); a parse error is located at its line.
    pub fn next_record<T>(
        &mut self,
        noise: fn(&str) -> bool,
        parse: impl Fn(&str) -> Result<Option<T>, String>,
    ) -> Result<Option<T>, SimError> {
        loop {
            let Some(line) = self.next_line()? else { return Ok(None) };
            if line.trim().is_empty() || noise(line) {
                continue;
            }
            match parse(line) {
                Ok(Some(record)) => return Ok(Some(record)),
                Ok(None) => {}
                Err(why) => return Err(self.error(why)),
            }
        }
    }

    /// An error about the line last returned.
    pub fn error(&self, message: impl Into<String>) -> SimError {
        SimError::File { file: self.file.clone(), at: format!("line {}", self.line), message: message.into() }
    }
}

/// Parses a hexadecimal number with or without `0x`.
pub(crate) fn hex(s: &str) -> Option<u64> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Parses a decimal number, or a hexadecimal one with `0x`.
pub(crate) fn number(s: &str) -> Option<u64> {
    if s.starts_with("0x") || s.starts_with("0X") {
        hex(s)
    } else {
        s.parse().ok()
    }
}
