//! The `trace` workload for formats other than `oracleGeneral`: a [`PageReader`]'s
//! pages, renumbered densely in order of first appearance, with the trace's clock when
//! it has one (the instructions of the replayed records, and its sample rate) and each
//! record's MLP class when it carries one.

use std::path::{Path, PathBuf};

use tierkit_core::sketches::PageTable;

use super::{open, Format, PageReader, TraceClock};
use crate::error::SimError;
use crate::workload::{Access, Workload};

/// A trace replayed as a workload. Opening reads the trace once (up to `limit`
/// accesses) to number its pages and count its accesses, keeping only the page map (a
/// [`PageTable`], at most 2^32 pages); [`Workload::fill`] then reads it again,
/// streaming. Each access is word 0 of its page, a store when the trace says so, of the
/// MLP class its record carries (the default class, `app.mlp`, where it carries none). A file
/// that can no longer be read, or no longer holds what opening found (truncated or
/// rewritten while in use), ends the stream with the reader's error (naming the file and
/// the byte offset or line), or one naming the access where the trace ended or changed,
/// for [`Workload::take_error`].
pub struct PageTrace {
    path: PathBuf,
    format: Format,
    ids: PageTable,
    len: u64,
    left: u64,
    reader: Option<Box<dyn PageReader>>,
    /// The clock over the replayed records (a prefix's own instructions under `limit`).
    clock: Option<TraceClock>,
    /// Instructions of the records filled since the last [`Workload::take_instructions`].
    instructions: u64,
    /// The error that ended the stream, until taken.
    error: Option<SimError>,
}

impl PageTrace {
    /// Opens the trace at `path` in `format`, replaying at most `limit` accesses.
    pub fn open(path: &Path, format: Format, limit: u64) -> Result<Self, SimError> {
        let mut reader = open(path, Some(format))?;
        let mut ids = PageTable::new();
        let mut len = 0;
        let mut instructions = 0u64;
        while len < limit {
            let Some(a) = reader.next_access()? else { break };
            let fresh = ids.len() as u64;
            if fresh > u32::MAX as u64 && ids.get(a.page).is_none() {
                return Err(SimError::File {
                    file: path.display().to_string(),
                    at: format!("access {len}"),
                    message: "more than 2^32 distinct pages".into(),
                });
            }
            ids.entry(a.page, fresh as u32);
            instructions += a.instructions;
            len += 1;
        }
        let clock = reader.clock().map(|c| TraceClock { instructions, ..c });
        if len == 0 {
            return Err(SimError::File {
                file: path.display().to_string(),
                at: "end".into(),
                message: format!("no accesses in this {} trace", format.name()),
            });
        }
        Ok(Self {
            path: path.to_path_buf(),
            format,
            ids,
            len,
            left: len,
            reader: None,
            clock,
            instructions: 0,
            error: None,
        })
    }

    /// Appends the next `want` accesses to `out`, or those before an error.
    fn replay(&mut self, out: &mut Vec<Access>, want: usize) -> Result<(), SimError> {
        if want == 0 {
            return Ok(());
        }
        let reader = match &mut self.reader {
            Some(r) => r,
            None => self.reader.insert(open(&self.path, Some(self.format))?),
        };
        let changed = |at: u64, message: String| SimError::File {
            file: self.path.display().to_string(),
            at: format!("access {at}"),
            message: format!("{message} (the file changed while being replayed)"),
        };
        for _ in 0..want {
            let at = self.len - self.left;
            let Some((a, class)) = reader.next_classed()? else {
                return Err(changed(at, format!("the trace ends here; it held {} accesses when opened", self.len)));
            };
            let Some(page) = self.ids.get(a.page) else {
                return Err(changed(at, format!("page {} was not in the trace when it was opened", a.page)));
            };
            self.instructions += a.instructions;
            self.left -= 1;
            out.push(Access { page: page as u64, word: 0, write: a.write, class });
        }
        Ok(())
    }
}

impl Workload for PageTrace {
    fn pages(&self) -> u64 {
        self.ids.len() as u64
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn clock(&self) -> Option<TraceClock> {
        self.clock
    }

    fn take_instructions(&mut self) -> u64 {
        std::mem::take(&mut self.instructions)
    }

    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let before = out.len();
        let want = (max as u64).min(self.left) as usize;
        if let Err(e) = self.replay(out, want) {
            self.left = 0;
            self.error = Some(e);
        }
        out.len() - before
    }

    fn take_error(&mut self) -> Option<SimError> {
        self.error.take()
    }
}
