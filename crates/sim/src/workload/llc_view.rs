//! Any workload seen through a last-level cache, as `tierkit record` sees a program:
//! the options `llc_mib` (default 32), `llc_ways`, `sample_every` and `instructions`;
//! any of them turns the view on.
//!
//! The generators emit what a program asks of memory, line by line, as if every access
//! missed the last-level cache. A recorded program's trace holds only what its LLC
//! missed (and the write-backs of dirty lines), one in `sample_every` of them, with the
//! instructions retired in between. This view gives a generator the same treatment, so a
//! stand-in and the program it is named after are compared on the same terms
//! (docs/CORPUS.md):
//!
//! - each generated access is a load or store of its line (`page`, `word`) through an
//!   [`LlcFilter`] of `llc_mib` MiB with `llc_ways` ways (LRU, write-back), the model
//!   `tierkit record` simulates;
//! - of the memory-level accesses the filter passes on, the first of every
//!   `sample_every` is kept, as the recorder keeps them;
//! - every generated access retires `instructions` instructions, which makes the stream
//!   a clocked one ([`Workload::clock`]): the engine replays it as it replays a recorded
//!   trace, on one thread with the compute its instructions take.
//!
//! The stream is built twice: once to count what the filter keeps (a workload states its
//! length up front), then to replay it.

use crate::error::SimError;
use crate::trace::{LlcFilter, TraceClock};

use super::{Access, Workload, WorkloadSpec};

/// The options this view takes from a workload's spec.
pub const OPTIONS: [&str; 4] = ["llc_mib", "llc_ways", "sample_every", "instructions"];

/// Instructions per generated access by default: 50, the `cxl` preset's 20 ns of compute
/// per access at its 0.4 ns per instruction.
const DEFAULT_INSTRUCTIONS: u64 = 50;

/// Generated accesses pulled from the inner stream at a time.
const CHUNK: usize = 4096;

/// How the view filters; see the module documentation.
#[derive(Clone, Copy, Debug)]
struct View {
    llc_bytes: u64,
    ways: usize,
    sample_every: u64,
    instructions: u64,
}

/// A workload through an LLC; see the module documentation.
pub struct LlcView {
    inner: Box<dyn Workload>,
    view: View,
    llc: LlcFilter,
    /// Memory-level accesses the filter passed on so far (kept or not).
    misses: u64,
    /// Kept accesses not yet handed out.
    ready: std::collections::VecDeque<Access>,
    chunk: Vec<Access>,
    done: bool,
    len: u64,
    clock: TraceClock,
    /// Instructions of the generated accesses consumed since the last
    /// [`Workload::take_instructions`].
    instructions: u64,
}

/// Whether `spec` asks for the view: any of its options (`llc_mib` defaults to 32).
pub fn wanted(spec: &WorkloadSpec) -> bool {
    OPTIONS.iter().any(|k| spec.options.contains_key(*k))
}

/// `spec`'s workload built by `build_inner` (with the view's options removed), seen
/// through the LLC `spec` describes.
pub fn build(
    spec: &WorkloadSpec,
    build_inner: impl Fn(&WorkloadSpec) -> Result<Box<dyn Workload>, SimError>,
) -> Result<Box<dyn Workload>, SimError> {
    let view = View {
        llc_bytes: spec.u64_opt("llc_mib", 32, 1..=4096)? << 20,
        ways: spec.u64_opt("llc_ways", 16, 1..=64)? as usize,
        sample_every: spec.u64_opt("sample_every", 1, 1..=1 << 20)?,
        instructions: spec.u64_opt("instructions", DEFAULT_INSTRUCTIONS, 1..=1 << 20)?,
    };
    let mut inner_spec = spec.clone();
    inner_spec.options.retain(|k, _| !OPTIONS.contains(&k.as_str()));
    let mut counting = LlcView::new(build_inner(&inner_spec)?, view, 0)?;
    let mut sink = Vec::with_capacity(CHUNK);
    let mut len = 0u64;
    loop {
        sink.clear();
        match counting.try_fill(&mut sink, CHUNK)? {
            0 => break,
            n => len += n as u64,
        }
    }
    if len == 0 {
        return Err(SimError::bad_option(
            format!("workload {}", spec.name),
            "llc_mib",
            view.llc_bytes >> 20,
            "a cache the stream misses at least once (this one holds every line it touches)",
        ));
    }
    Ok(Box::new(LlcView::new(build_inner(&inner_spec)?, view, len)?))
}

impl LlcView {
    fn new(inner: Box<dyn Workload>, view: View, len: u64) -> Result<Self, SimError> {
        let clock =
            TraceClock { instructions: inner.len().saturating_mul(view.instructions), sample_every: view.sample_every };
        Ok(Self {
            inner,
            view,
            llc: LlcFilter::new(view.llc_bytes, view.ways)?,
            misses: 0,
            ready: std::collections::VecDeque::new(),
            chunk: Vec::with_capacity(CHUNK),
            done: false,
            len,
            clock,
            instructions: 0,
        })
    }

    /// Passes the next chunk of generated accesses through the cache; false at the end.
    fn pull(&mut self) -> bool {
        self.chunk.clear();
        if self.done || self.inner.fill(&mut self.chunk, CHUNK) == 0 {
            self.done = true;
            return false;
        }
        self.instructions += self.chunk.len() as u64 * self.view.instructions;
        let (misses, ready, every) = (&mut self.misses, &mut self.ready, self.view.sample_every);
        for a in &self.chunk {
            let addr = (a.page << 12) | (u64::from(a.word) << 6);
            self.llc.access(addr, 1, a.write, &mut |m| {
                if (*misses).is_multiple_of(every) {
                    ready.push_back(Access { page: m.page, word: 0, write: m.write, class: a.class });
                }
                *misses += 1;
            });
        }
        true
    }
}

impl Workload for LlcView {
    fn pages(&self) -> u64 {
        self.inner.pages()
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn fill(&mut self, out: &mut Vec<Access>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            match self.ready.pop_front() {
                Some(a) => {
                    out.push(a);
                    n += 1;
                }
                None if self.pull() => {}
                None => break,
            }
        }
        n
    }

    fn take_error(&mut self) -> Option<SimError> {
        self.inner.take_error()
    }

    fn clock(&self) -> Option<TraceClock> {
        Some(self.clock)
    }

    fn take_instructions(&mut self) -> u64 {
        std::mem::take(&mut self.instructions)
    }

    fn kind(&self, page: u64) -> tierkit_core::PageKind {
        self.inner.kind(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    fn spec(extra: &[(&str, &str)]) -> WorkloadSpec {
        let mut s = WorkloadSpec::new("zipf", 8192, 200_000, 3);
        for (k, v) in extra {
            s = s.with(k, v);
        }
        s
    }

    #[test]
    fn a_cache_that_holds_every_line_passes_each_line_once() {
        // 1024 pages of 64 lines (4 MiB) in 32 MiB: no line is ever evicted.
        let small = |extra: &[(&str, &str)]| {
            let mut s = spec(extra);
            s.pages = 1024;
            s
        };
        let mut zipf = crate::workload::build(&small(&[])).unwrap();
        let (mut out, mut lines) = (Vec::new(), std::collections::HashSet::new());
        while zipf.fill(&mut out, 4096) > 0 {
            lines.extend(out.drain(..).map(|a| (a.page, a.word)));
        }
        let kept: u64 = drain_checked(&small(&[("llc_mib", "32")])).iter().sum();
        assert_eq!(kept, lines.len() as u64, "one miss per distinct line");
    }

    #[test]
    fn a_small_cache_keeps_the_flat_tail_and_drops_the_hottest_lines() {
        let zipf = drain_checked(&spec(&[]));
        let seen = drain_checked(&spec(&[("llc_mib", "1")]));
        let hottest = (0..zipf.len()).max_by_key(|&p| zipf[p]).unwrap();
        let share = |c: &[u64], p: usize| c[p] as f64 / c.iter().sum::<u64>() as f64;
        assert!(
            share(&seen, hottest) < share(&zipf, hottest) / 4.0,
            "the hottest page's share {} through the cache vs {} without",
            share(&seen, hottest),
            share(&zipf, hottest)
        );
    }

    #[test]
    fn sampling_keeps_one_in_n_and_the_clock_counts_every_generated_access() {
        let all: u64 = drain_checked(&spec(&[("llc_mib", "1")])).iter().sum();
        let s = spec(&[("llc_mib", "1"), ("sample_every", "8"), ("instructions", "7")]);
        let kept: u64 = drain_checked(&s).iter().sum();
        assert_eq!(kept, all.div_ceil(8));
        let mut w = crate::workload::build(&s).unwrap();
        assert_eq!(w.clock(), Some(TraceClock { instructions: 200_000 * 7, sample_every: 8 }));
        let mut out = Vec::new();
        let mut instructions = 0;
        while w.fill(&mut out, 1000) > 0 {
            instructions += w.take_instructions();
        }
        assert_eq!(instructions + w.take_instructions(), 200_000 * 7);
    }

    #[test]
    fn bad_view_options_are_refused_by_name() {
        let e = crate::workload::build(&spec(&[("llc_mib", "0")])).err().unwrap().to_string();
        assert!(e.contains("llc_mib"), "{e}");
        let e = crate::workload::build(&spec(&[("llc_mib", "1"), ("sample_every", "0")])).err().unwrap().to_string();
        assert!(e.contains("sample_every"), "{e}");
    }
}
