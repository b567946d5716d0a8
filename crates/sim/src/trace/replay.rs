//! The `trace` workload for formats other than `oracleGeneral`: a [`PageReader`]'s
//! pages, renumbered densely in order of first appearance, with the trace's clock when
//! it has one (the instructions of the replayed records, and its sample rate).

use std::path::{Path, PathBuf};

use tierkit_core::sketches::PageTable;

use super::{open, Format, PageReader, TraceClock};
use crate::error::SimError;
use crate::workload::{Access, Workload};

/// A trace replayed as a workload. Opening reads the trace once (up to `limit`
/// accesses) to number its pages and count its accesses, keeping only the page map (a
/// [`PageTable`], at most 2^32 pages); [`Workload::fill`] then reads it again,
/// streaming. Each access is word 0 of its page, a store when the trace says so.
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
        Ok(Self { path: path.to_path_buf(), format, ids, len, left: len, reader: None, clock, instructions: 0 })
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

    /// # Panics
    ///
    /// If the file can no longer be read or no longer holds what opening it found (it
    /// changed while in use): the trait has no error channel.
    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let want = (max as u64).min(self.left) as usize;
        if want == 0 {
            return 0;
        }
        let reader = match &mut self.reader {
            Some(r) => r,
            None => self.reader.insert(open(&self.path, Some(self.format)).unwrap_or_else(|e| panic!("{e}"))),
        };
        for _ in 0..want {
            let a = match reader.next_access() {
                Ok(Some(a)) => a,
                Ok(None) => panic!("{}: the trace got shorter while being replayed", self.path.display()),
                Err(e) => panic!("{e}"),
            };
            let Some(page) = self.ids.get(a.page) else {
                panic!("{}: page {} was not in the trace when it was opened", self.path.display(), a.page)
            };
            self.instructions += a.instructions;
            out.push(Access { page: page as u64, word: 0, write: a.write });
        }
        self.left -= want as u64;
        want
    }
}
