//! Lackey lines through the LLC filter into a native trace with a clock: each record's
//! instruction gap is the `I` lines since the previous record.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{bail, Context, Result};
use tierkit_sim::trace::{LlcFilter, NativeWriter};

use super::emitter::Emitter;
use super::summary::{Counts, Summary};

/// Streams lackey lines through an LLC into a native trace.
pub struct Filter<'a> {
    llc: &'a mut LlcFilter,
    out: NativeWriter,
    emitter: Emitter,
    counts: Counts,
    kept: u64,
    max_records: Option<u64>,
    line: u64,
    source: String,
}

impl<'a> Filter<'a> {
    /// Writes the trace to `out` (with a clock), skipping the first `skip`
    /// instructions, keeping one in `sample_every` memory-level accesses, and at most
    /// `max_records` records; `source` names the input in errors.
    pub fn new(
        llc: &'a mut LlcFilter,
        out: &Path,
        source: String,
        skip: u64,
        sample_every: u64,
        max_records: Option<u64>,
    ) -> Result<Self> {
        let out = NativeWriter::with_clock(out, true, sample_every)?;
        let emitter = Emitter::new(skip, sample_every);
        Ok(Self { llc, out, emitter, counts: Counts::default(), kept: 0, max_records, line: 0, source })
    }

    /// Whether `--max-records` records have been written.
    pub fn full(&self) -> bool {
        self.max_records.is_some_and(|m| self.kept >= m)
    }

    /// Takes one line (without or with its newline). Valgrind's own lines (`==pid==`,
    /// `--pid--`) and blank lines are skipped; anything else that is not an access line
    /// is an error naming the line. Accesses past `--max-records` are not written.
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
        let c = &mut self.counts;
        let write = match kind {
            b'I' => {
                c.instructions += 1;
                return Ok(());
            }
            b'L' => {
                c.loads += 1;
                false
            }
            b'S' => {
                c.stores += 1;
                true
            }
            _ => {
                c.modifies += 1;
                true
            }
        };
        let (out, emitter, kept, max) = (&mut self.out, &mut self.emitter, &mut self.kept, self.max_records);
        let now = c.instructions;
        let mut err = None;
        self.llc.access(addr, size, write, &mut |a| {
            if max.is_some_and(|m| *kept >= m) {
                return;
            }
            if let Some(r) = emitter.offer(a, now) {
                *kept += 1;
                if let Err(e) = out.push(r) {
                    err.get_or_insert(e);
                }
            }
        });
        match err {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Finishes the trace file.
    pub fn finish(self, stopped_at_max: bool) -> Result<Summary> {
        let header = self.out.finish()?;
        let counts =
            Counts { llc: self.llc.stats(), first_instruction: self.emitter.first_instruction(), ..self.counts };
        Ok(Summary {
            recorder: "lackey",
            counts: Some(counts),
            kept: self.kept,
            pages: header.pages,
            sample_every: header.sample_every,
            stopped_at_max,
        })
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

/// Filters the lackey log at `path` into a native trace at `out` (see [`Filter::new`]),
/// stopping at `max_records`.
pub fn filter_file(
    path: &Path,
    llc: &mut LlcFilter,
    out: &Path,
    skip: u64,
    sample_every: u64,
    max_records: Option<u64>,
) -> Result<Summary> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut f = Filter::new(llc, out, path.display().to_string(), skip, sample_every, max_records)?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut buf = Vec::new();
    while !f.full() {
        buf.clear();
        if r.read_until(b'\n', &mut buf).with_context(|| format!("cannot read {}", path.display()))? == 0 {
            break;
        }
        f.line(&buf)?;
    }
    let full = f.full();
    f.finish(full)
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
