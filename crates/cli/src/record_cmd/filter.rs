//! Lackey lines through the LLC filter into a native trace, with counts for the summary.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{bail, Context, Result};
use tierkit_sim::trace::{LlcFilter, LlcStats, NativeWriter};

/// What a recording saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Instruction fetches (`I` lines), skipped.
    pub instructions: u64,
    /// Loads (`L`).
    pub loads: u64,
    /// Stores (`S`).
    pub stores: u64,
    /// Modifies (`M`: a load and a store).
    pub modifies: u64,
    /// Accesses written to the trace.
    pub kept: u64,
    /// Distinct pages in the trace.
    pub pages: u64,
}

impl Summary {
    /// The summary printed after a recording.
    pub fn text(&self, out: &Path, llc: u64, ways: usize, s: &LlcStats) -> String {
        format!(
            "instructions skipped: {}\nloads: {}  stores: {}  modifies: {}\n\
             LLC ({} MiB, {ways}-way, 64 B lines): {} hits, {} misses, {} dirty write-backs\n\
             kept {} memory-level accesses on {} pages in {}\n",
            self.instructions,
            self.loads,
            self.stores,
            self.modifies,
            llc as f64 / (1u64 << 20) as f64,
            s.hits,
            s.misses,
            s.writebacks,
            self.kept,
            self.pages,
            out.display()
        )
    }
}

/// Streams lackey lines through an LLC into a native trace.
pub struct Filter<'a> {
    llc: &'a mut LlcFilter,
    out: NativeWriter,
    summary: Summary,
    line: u64,
    source: String,
}

impl<'a> Filter<'a> {
    /// Writes the trace to `out`; `source` names the input in errors.
    pub fn new(llc: &'a mut LlcFilter, out: &Path, source: String) -> Result<Self> {
        let out = NativeWriter::create(out, true)?;
        Ok(Self { llc, out, summary: Summary::default(), line: 0, source })
    }

    /// Takes one line (without or with its newline). Valgrind's own lines (`==pid==`,
    /// `--pid--`) and blank lines are skipped; anything else that is not an access line
    /// is an error naming the line.
    pub fn line(&mut self, raw: &[u8]) -> Result<()> {
        self.line += 1;
        let l = raw.strip_suffix(b"\n").unwrap_or(raw);
        if l.iter().all(u8::is_ascii_whitespace) || l.starts_with(b"==") || l.starts_with(b"--") {
            return Ok(());
        }
        let Some((kind, addr, size)) = parse(l) else {
            bail!(
                "{} line {}: {:?}: expected `I  addr,size`, ` L addr,size`, ` S addr,size` or ` M addr,size`",
                self.source,
                self.line,
                String::from_utf8_lossy(l)
            );
        };
        let write = match kind {
            b'I' => {
                self.summary.instructions += 1;
                return Ok(());
            }
            b'L' => {
                self.summary.loads += 1;
                false
            }
            b'S' => {
                self.summary.stores += 1;
                true
            }
            _ => {
                self.summary.modifies += 1;
                true
            }
        };
        let (out, kept) = (&mut self.out, &mut self.summary.kept);
        let mut err = None;
        self.llc.access(addr, size, write, &mut |a| {
            *kept += 1;
            if let Err(e) = out.push(a) {
                err.get_or_insert(e);
            }
        });
        match err {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Finishes the trace file.
    pub fn finish(self) -> Result<Summary> {
        let header = self.out.finish()?;
        Ok(Summary { pages: header.pages, ..self.summary })
    }
}

/// `(kind, addr, size)` of an access line: `I  addr,size` or ` K addr,size` with K one
/// of `L`, `S`, `M`; addr hexadecimal.
fn parse(l: &[u8]) -> Option<(u8, u64, u64)> {
    let (kind, rest) = match l {
        [b'I', b' ', rest @ ..] => (b'I', rest),
        [b' ', k @ (b'L' | b'S' | b'M'), b' ', rest @ ..] => (*k, rest),
        _ => return None,
    };
    let rest = std::str::from_utf8(rest).ok()?.trim();
    let (addr, size) = rest.split_once(',')?;
    Some((kind, u64::from_str_radix(addr, 16).ok()?, size.trim().parse().ok()?))
}

/// Filters the lackey log at `path` into a native trace at `out`.
pub fn filter_file(path: &Path, llc: &mut LlcFilter, out: &Path) -> Result<Summary> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut f = Filter::new(llc, out, path.display().to_string())?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf).with_context(|| format!("cannot read {}", path.display()))? == 0 {
            break;
        }
        f.line(&buf)?;
    }
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_access_lines() {
        assert_eq!(parse(b"I  04001e90,3"), Some((b'I', 0x4001e90, 3)));
        assert_eq!(parse(b" S 1ffefffd78,8"), Some((b'S', 0x1ffefffd78, 8)));
        assert_eq!(parse(b" M 0421c7f0,4"), Some((b'M', 0x421c7f0, 4)));
        assert_eq!(parse(b" X 0421c7f0,4"), None);
        assert_eq!(parse(b" L zz,4"), None);
    }
}
