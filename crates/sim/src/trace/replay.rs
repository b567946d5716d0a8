//! The `trace` workload for formats other than `oracleGeneral`: a [`PageReader`]'s
//! pages, renumbered densely in order of first appearance, with the trace's clock when
//! it has one (the instructions of the replayed records, and its sample rate) and each
//! record's MLP class when it carries one.

use std::fs::File;
use std::path::{Path, PathBuf};

use tierkit_core::sketches::PageTable;

use super::id_cache::{self, CachedIds, Kind, Stamp, FACTS};
use super::{open, Format, PageAccess, PageReader, TraceClock};
use crate::error::SimError;
use crate::model::MlpClass;
use crate::workload::{Access, Workload};

/// A trace replayed as a workload. Opening reads the trace once (up to `limit`
/// accesses) to number its pages and count its accesses, keeping only the page map (a
/// [`PageTable`], at most 2^32 pages); [`Workload::fill`] then reads it again,
/// streaming. Opening the whole trace (no `limit`) also writes every access's page id
/// beside it (`trace/id_cache.rs`, `TRACE.tkids`, 4 bytes an access) and keeps no map: replays
/// take the ids from there, and later openings of the same file read what the pass
/// found from the cache's header instead of making the pass, whatever their `limit` as
/// long as it covers the trace. Each access is word 0 of its page, a store when the
/// trace says so, of the MLP class its record carries (the default class, `app.mlp`,
/// where it carries none). A file that can no longer be read, or no longer holds what
/// opening found (truncated or rewritten while in use), ends the stream with the
/// reader's error (naming the file and the byte offset or line), or one naming the
/// access where the trace ended or changed, for [`Workload::take_error`].
pub struct PageTrace {
    path: PathBuf,
    format: Format,
    /// Where each access's page id comes from: the map of the trace's page numbers, or
    /// the cached ids of the whole trace.
    ids: Ids,
    pages: u64,
    len: u64,
    left: u64,
    reader: Option<Box<dyn PageReader>>,
    /// The clock over the replayed records (a prefix's own instructions under `limit`).
    clock: Option<TraceClock>,
    /// Instructions of the records filled since the last [`Workload::take_instructions`].
    instructions: u64,
    /// The error that ended the stream, until taken.
    error: Option<SimError>,
    /// The records of the batch of cached ids being replayed (kept for its allocation).
    records: Vec<(PageAccess, MlpClass)>,
}

impl PageTrace {
    /// Opens the trace at `path` in `format`, replaying at most `limit` accesses.
    pub fn open(path: &Path, format: Format, limit: u64) -> Result<Self, SimError> {
        let stamp = File::open(path).and_then(|f| Stamp::of(&f, &f.metadata()?)).ok();
        let kind = Kind::Pages(format);
        if let Some((facts, ids)) = stamp.as_ref().and_then(|s| id_cache::load(path, s, kind)) {
            let found = Found::from_facts(&facts);
            if found.len > 0 && found.len <= limit {
                return Ok(Self::new(path, format, Ids::Cached(ids), found));
            }
        }
        let mut reader = open(path, Some(format))?;
        let mut ids = PageTable::new();
        // Only a replay of the whole trace caches its ids.
        let mut writer = stamp.filter(|_| limit == u64::MAX).and_then(|s| id_cache::Writer::create(path, s));
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
            let id = *ids.entry(a.page, fresh as u32);
            if writer.as_mut().is_some_and(|w| w.push(id).is_err()) {
                writer = None;
            }
            instructions += a.instructions;
            len += 1;
        }
        if len == 0 {
            return Err(SimError::File {
                file: path.display().to_string(),
                at: "end".into(),
                message: format!("no accesses in this {} trace", format.name()),
            });
        }
        let found =
            Found { len, pages: ids.len() as u64, clock: reader.clock().map(|c| TraceClock { instructions, ..c }) };
        let written = writer.is_some_and(|w| w.finish(kind, len, &found.facts()));
        // Replays read the ids just written rather than keep the map.
        let cached = stamp.filter(|_| written).and_then(|s| id_cache::load(path, &s, kind));
        let ids = match cached {
            Some((_, c)) => Ids::Cached(c),
            None => Ids::Map(ids),
        };
        Ok(Self::new(path, format, ids, found))
    }

    fn new(path: &Path, format: Format, ids: Ids, found: Found) -> Self {
        Self {
            path: path.to_path_buf(),
            format,
            ids,
            pages: found.pages,
            len: found.len,
            left: found.len,
            reader: None,
            clock: found.clock,
            instructions: 0,
            error: None,
            records: Vec::new(),
        }
    }

    /// Whether the replay reads the page ids the whole trace's numbering cached
    /// (`trace/id_cache.rs`).
    pub fn reads_cached_ids(&self) -> bool {
        matches!(self.ids, Ids::Cached(_))
    }

    /// Appends the next `want` accesses to `out`, or those before an error.
    fn replay(&mut self, out: &mut Vec<Access>, want: usize) -> Result<(), SimError> {
        if want == 0 {
            return Ok(());
        }
        let Self { path, format, ids, pages, len, left, reader, instructions, records, .. } = self;
        let reader = match reader {
            Some(r) => r,
            None => {
                let mut r = open(&*path, Some(*format))?;
                r.skip_whole_trace_checks(); // opening made that pass
                reader.insert(r)
            }
        };
        let (path, pages, len) = (&*path, *pages, *len);
        let changed = |at: u64, message: String| SimError::File {
            file: path.display().to_string(),
            at: format!("access {at}"),
            message: format!("{message} (the file changed while being replayed)"),
        };
        let ends = |left: u64| changed(len - left, format!("the trace ends here; it held {len} accesses when opened"));
        match ids {
            Ids::Map(map) => {
                for _ in 0..want {
                    let Some((a, class)) = reader.next_classed()? else { return Err(ends(*left)) };
                    *instructions += a.instructions;
                    *left -= 1;
                    let Some(page) = map.get(a.page) else {
                        let at = len - *left - 1;
                        return Err(changed(at, format!("page {} was not in the trace when it was opened", a.page)));
                    };
                    out.push(Access { page: u64::from(page), word: 0, write: a.write, class });
                }
            }
            Ids::Cached(cached) => {
                let cache_error = |left: u64, why: String| SimError::File {
                    file: id_cache::path_of(path).display().to_string(),
                    at: format!("access {}", len - left),
                    message: format!("the cached page ids: {why}; delete the file to rebuild it"),
                };
                let mut produced = 0;
                while produced < want {
                    let batch = match cached.next_ids() {
                        Ok(b) if !b.is_empty() => b,
                        Ok(_) => return Err(cache_error(*left, "they end early".into())),
                        Err(e) => return Err(cache_error(*left, format!("cannot read them: {e}"))),
                    };
                    let k = (batch.len() / 4).min(want - produced);
                    // The records of the batch in one call; what they lack (an error, or
                    // the end of the trace) surfaces at the first access without one,
                    // after that access's id is checked, as reading one at a time would.
                    records.clear();
                    let read = reader.next_classed_batch(records, k);
                    for (i, b) in batch[..4 * k].chunks_exact(4).enumerate() {
                        let page = u32::from_le_bytes(b.try_into().expect("4 bytes"));
                        if u64::from(page) >= pages {
                            return Err(cache_error(*left, format!("an id beyond the trace's {pages} pages")));
                        }
                        let Some(&(a, class)) = records.get(i) else {
                            read?;
                            return Err(ends(*left));
                        };
                        *instructions += a.instructions;
                        *left -= 1;
                        out.push(Access { page: u64::from(page), word: 0, write: a.write, class });
                    }
                    cached.consume(k);
                    produced += k;
                }
            }
        }
        Ok(())
    }
}

/// Where a replay's page ids come from.
enum Ids {
    Map(PageTable),
    Cached(CachedIds),
}

/// What numbering a trace found: its accesses (up to the limit), distinct pages and
/// clock.
struct Found {
    len: u64,
    pages: u64,
    clock: Option<TraceClock>,
}

impl Found {
    /// As the id cache stores it: accesses, pages, whether there is a clock, its
    /// instructions and sample rate.
    fn facts(&self) -> [u64; FACTS] {
        let (has_clock, c) = match self.clock {
            Some(c) => (1, c),
            None => (0, TraceClock { instructions: 0, sample_every: 1 }),
        };
        [self.len, self.pages, has_clock, c.instructions, c.sample_every, 0, 0, 0]
    }

    fn from_facts(w: &[u64; FACTS]) -> Self {
        let clock = (w[2] == 1).then_some(TraceClock { instructions: w[3], sample_every: w[4] });
        Self { len: w[0], pages: w[1], clock }
    }
}

impl Workload for PageTrace {
    fn pages(&self) -> u64 {
        self.pages
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
