//! A workload's stream produced once and replayed by every run of a comparison: a
//! trace decoded (and its pages numbered) once, a generator's accesses generated once.
//!
//! The record keeps, per access, its page id (4 bytes), its word and its store flag and
//! MLP class (1 byte each), and for a stream with a clock the instructions retired since
//! the previous access (4 bytes); per page, what backs it. A replay produces exactly the
//! stream the workload would, whatever the sizes it is filled in. A stream that would
//! take more than [`MEMORY_SHARE`] of the available memory, has more than 2^32 pages, or
//! has an instruction gap beyond 2^32 is not recorded: its runs build it themselves.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tierkit_core::PageKind;

use super::{build, Access, MlpClass, Workload, WorkloadSpec};
use crate::budget;
use crate::trace::TraceClock;
use crate::SimError;

/// The largest share of the available memory a record may take (the runs replaying it
/// need the rest).
pub const MEMORY_SHARE: f64 = 0.25;

/// Accesses read from the workload per call while recording a stream without a clock.
const BATCH: usize = 1 << 14;

/// A workload's stream, recorded.
#[derive(Debug)]
pub struct Recorded {
    pages: u64,
    clock: Option<TraceClock>,
    page: Vec<u32>,
    word: Vec<u8>,
    /// Bit 0: a store; bits 1–2: the MLP class's code.
    flags: Vec<u8>,
    /// Instructions before each access; empty without a clock.
    instructions: Vec<u32>,
    /// What backs each page; empty when every page is anonymous memory.
    kinds: Vec<PageKind>,
}

impl Recorded {
    /// Records `spec`'s stream. `Ok(None)` when it is not to be recorded (see the module
    /// documentation) or `stop` was set while recording; the error of a stream that
    /// fails is returned as building and replaying it would.
    pub fn record(spec: &WorkloadSpec, stop: &AtomicBool) -> Result<Option<Self>, SimError> {
        let mut wl = build(spec)?;
        let (pages, len, clock) = (wl.pages(), wl.len(), wl.clock());
        let per_access = 6 + if clock.is_some() { 4 } else { 0 };
        let need = len as f64 * per_access as f64 + pages as f64;
        let fits = budget::available().is_none_or(|a| need <= a as f64 * MEMORY_SHARE);
        if !fits || pages > u64::from(u32::MAX) {
            return Ok(None);
        }
        let mut r = Self {
            pages,
            clock,
            page: Vec::with_capacity(len as usize),
            word: Vec::with_capacity(len as usize),
            flags: Vec::with_capacity(len as usize),
            instructions: Vec::with_capacity(if clock.is_some() { len as usize } else { 0 }),
            kinds: Vec::new(),
        };
        // With a clock, one access per call: the instructions are the workload's per access.
        let batch = if clock.is_some() { 1 } else { BATCH };
        let mut buf = Vec::with_capacity(batch);
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            buf.clear();
            if wl.try_fill(&mut buf, batch)? == 0 {
                break;
            }
            if clock.is_some() {
                let Ok(gap) = u32::try_from(wl.take_instructions()) else { return Ok(None) };
                r.instructions.push(gap);
            }
            for a in &buf {
                r.page.push(a.page as u32);
                r.word.push(a.word);
                r.flags.push(a.write as u8 | (a.class as u8) << 1);
            }
        }
        if (0..pages).any(|p| wl.kind(p) != PageKind::Anon) {
            r.kinds = (0..pages).map(|p| wl.kind(p)).collect();
        }
        Ok(Some(r))
    }

    /// Accesses recorded.
    fn len(&self) -> u64 {
        self.page.len() as u64
    }
}

/// Opens `spec`'s stream: a replay of `recorded` when given (which must be `spec`'s
/// record), else the workload built afresh.
pub fn open(spec: &WorkloadSpec, recorded: Option<&Arc<Recorded>>) -> Result<Box<dyn Workload>, SimError> {
    match recorded {
        Some(r) => Ok(Box::new(Replay { r: Arc::clone(r), at: 0, instructions: 0 })),
        None => build(spec),
    }
}

/// A replay of a [`Recorded`] stream.
struct Replay {
    r: Arc<Recorded>,
    at: usize,
    instructions: u64,
}

impl Workload for Replay {
    fn pages(&self) -> u64 {
        self.r.pages
    }

    fn len(&self) -> u64 {
        self.r.len()
    }

    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let r = &*self.r;
        let end = r.page.len().min(self.at.saturating_add(max));
        let range = self.at..end;
        out.extend(range.clone().map(|i| Access {
            page: u64::from(r.page[i]),
            word: r.word[i],
            write: r.flags[i] & 1 != 0,
            class: MlpClass::ALL[usize::from(r.flags[i] >> 1)],
        }));
        if !r.instructions.is_empty() {
            self.instructions += r.instructions[range.clone()].iter().map(|&n| u64::from(n)).sum::<u64>();
        }
        self.at = end;
        range.len()
    }

    fn clock(&self) -> Option<TraceClock> {
        self.r.clock
    }

    fn take_instructions(&mut self) -> u64 {
        std::mem::take(&mut self.instructions)
    }

    fn kind(&self, page: u64) -> PageKind {
        self.r.kinds.get(page as usize).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut wl: Box<dyn Workload>, sizes: &[usize]) -> (Vec<Access>, Vec<u64>) {
        let (mut out, mut instr) = (Vec::new(), Vec::new());
        for &n in sizes.iter().cycle() {
            if wl.try_fill(&mut out, n).unwrap() == 0 {
                break;
            }
            instr.push(wl.take_instructions());
        }
        (out, instr)
    }

    #[test]
    fn a_replay_is_the_generated_stream_whatever_the_fill_sizes() {
        for spec in [
            WorkloadSpec::new("chase-stream", 3000, 50_000, 3),
            WorkloadSpec::new("sparse-kv", 4000, 50_000, 5),
            WorkloadSpec::new("zipf", 4000, 50_000, 7).with("llc_mib", 1).with("instructions", 40),
        ] {
            let rec = Arc::new(Recorded::record(&spec, &AtomicBool::new(false)).unwrap().expect("small"));
            let fresh = build(&spec).unwrap();
            let replay = open(&spec, Some(&rec)).unwrap();
            assert_eq!((replay.pages(), replay.len(), replay.clock()), (fresh.pages(), fresh.len(), fresh.clock()));
            assert_eq!(fresh.clock().is_some(), spec.options.contains_key("instructions"), "{}", spec.name);
            let (a, ia) = drain(fresh, &[4096, 17, 1000]);
            let (b, ib) = drain(replay, &[4096, 17, 1000]);
            assert_eq!(a, b, "{}", spec.name);
            assert_eq!(ia, ib, "{}: instructions per fill", spec.name);
            let (c, _) = drain(open(&spec, Some(&rec)).unwrap(), &[333]);
            assert_eq!(a, c, "{}: other fill sizes", spec.name);
        }
    }

    #[test]
    fn a_stopped_recording_records_nothing() {
        let stop = AtomicBool::new(true);
        assert!(Recorded::record(&WorkloadSpec::new("zipf", 100, 1000, 1), &stop).unwrap().is_none());
    }
}
