//! `chase-stream`: a linked structure walked by dependent loads beside arrays scanned by
//! independent ones — the mix SOAR/ALTO (OSDI'25; its artifact's microbenchmark
//! `src/microbenchmark`: random pointer chasing beside a sequential read) use to show
//! that the most accessed data is not the most performance-critical. The streamed arrays
//! take more accesses per page than the chased structure, but each chased miss stalls
//! its thread for its whole latency (the next address comes from the loaded node) while
//! streamed misses overlap.
//!
//! The footprint is laid out in address order as cold data, then the chased structure,
//! then the arrays, so first-touch placement (which fills the fast tier from the lowest
//! addresses) favours neither.
//!
//! Options:
//! - `chase_fraction` (default 1/16): share of the pages holding the chased structure.
//! - `stream_fraction` (default 1/16): share of the pages holding the streamed arrays;
//!   the rest is cold data. The two together keep at least one cold page.
//! - `chase_share` (default 0.3): share of the accesses that follow the chain: a node on
//!   a uniformly random chased page, at a random word (a random permutation's cycle
//!   visits every node equally often), class [`MlpClass::Dependent`].
//! - `stream_share` (default 0.6): share of the accesses that scan the arrays, one
//!   64-byte word after the next, wrapping at the end, class [`MlpClass::Streaming`].
//!   With the defaults an array page takes twice the accesses of a chased page.
//! - The rest, `1 - chase_share - stream_share`, are independent random reads of cold
//!   pages, class [`MlpClass::Default`] (the application's MLP).

use tierkit_core::dist::Rng;

use super::{Access, Generate, Stream, Workload, WorkloadSpec};
use crate::error::SimError;
use crate::model::MlpClass;

struct ChaseStream {
    rng: Rng,
    pages: u64,
    /// Cold pages `0..cold`, chased `cold..cold + chase`, arrays from `cold + chase`.
    cold: u64,
    chase: u64,
    stream: u64,
    /// An access chases when 53 random bits fall below this, streams below the second.
    chase_below: u64,
    stream_below: u64,
    /// The scan's position, in words from the arrays' start.
    at: u64,
}

pub(super) fn build(spec: &WorkloadSpec) -> Result<Box<dyn Workload>, SimError> {
    spec.check_options(&["chase_fraction", "stream_fraction", "chase_share", "stream_share"])?;
    spec.check_sizes(3)?;
    let chase_fraction = spec.f64_opt("chase_fraction", 1.0 / 16.0, 0.0..=1.0)?;
    let stream_fraction = spec.f64_opt("stream_fraction", 1.0 / 16.0, 0.0..=1.0)?;
    let chase_share = spec.f64_opt("chase_share", 0.3, 0.0..=1.0)?;
    let stream_share = spec.f64_opt("stream_share", 0.6, 0.0..=1.0)?;
    if chase_share + stream_share > 1.0 {
        let sum = chase_share + stream_share;
        return Err(SimError::bad_option(
            spec.name.clone(),
            "stream_share",
            stream_share,
            format!("chase_share + stream_share at most 1 (they sum to {sum})"),
        ));
    }
    let pages = spec.pages;
    let part = |f: f64| ((f * pages as f64).round() as u64).max(1);
    let chase = part(chase_fraction);
    let stream = part(stream_fraction);
    if chase + stream >= pages {
        return Err(SimError::bad_option(
            spec.name.clone(),
            "stream_fraction",
            stream_fraction,
            format!("chase_fraction + stream_fraction leaving at least one cold page of {pages}"),
        ));
    }
    let bits = |share: f64| (share * (1u64 << 53) as f64) as u64;
    Ok(Stream::boxed(
        ChaseStream {
            rng: Rng::new(spec.seed),
            pages,
            cold: pages - chase - stream,
            chase,
            stream,
            chase_below: bits(chase_share),
            stream_below: bits(chase_share + stream_share),
            at: 0,
        },
        spec.accesses,
    ))
}

impl Generate for ChaseStream {
    fn pages(&self) -> u64 {
        self.pages
    }

    fn next_access(&mut self) -> Access {
        let x = self.rng.next_u64() >> 11;
        if x < self.chase_below {
            let page = self.cold + self.rng.below(self.chase);
            Access { page, word: self.rng.below(64) as u8, write: false, class: MlpClass::Dependent }
        } else if x < self.stream_below {
            let page = self.cold + self.chase + self.at / 64;
            let word = (self.at % 64) as u8;
            self.at = (self.at + 1) % (self.stream * 64);
            Access { page, word, write: false, class: MlpClass::Streaming }
        } else {
            Access {
                page: self.rng.below(self.cold),
                word: self.rng.below(64) as u8,
                write: false,
                class: MlpClass::Default,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testing::drain_checked;

    #[test]
    fn arrays_take_more_accesses_per_page_than_the_chain_and_classes_follow_the_region() {
        let (pages, accesses) = (1600, 400_000);
        let spec = WorkloadSpec::new("chase-stream", pages, accesses, 3);
        let counts = drain_checked(&spec);
        let (cold, chase) = (1400usize, 100usize);
        let sum = |r: std::ops::Range<usize>| counts[r].iter().sum::<u64>() as f64 / accesses as f64;
        assert!((0.29..0.31).contains(&sum(cold..cold + chase)), "{}", sum(cold..cold + chase));
        assert!((0.59..0.61).contains(&sum(cold + chase..pages as usize)));
        // Per page: every array page ~2400 accesses, every chased page ~1200.
        let min_array = counts[cold + chase..].iter().min().unwrap();
        let max_chased = counts[cold..cold + chase].iter().max().unwrap();
        assert!(*min_array > 2300 && *max_chased < 1400, "{min_array} {max_chased}");
        let mut out = Vec::new();
        build(&spec).unwrap().fill(&mut out, 10_000);
        for a in &out {
            let want = match a.page as usize {
                p if p < cold => MlpClass::Default,
                p if p < cold + chase => MlpClass::Dependent,
                _ => MlpClass::Streaming,
            };
            assert_eq!(a.class, want, "page {}", a.page);
        }
        // The scan walks the words of each page in order.
        let scan: Vec<(u64, u8)> =
            out.iter().filter(|a| a.class == MlpClass::Streaming).map(|a| (a.page, a.word)).collect();
        assert!(scan
            .windows(2)
            .all(|w| (w[1].0, w[1].1) == if w[0].1 == 63 { (w[0].0 + 1, 0) } else { (w[0].0, w[0].1 + 1) }));
    }

    #[test]
    fn bad_options_are_named() {
        let e =
            build(&WorkloadSpec::new("chase-stream", 100, 10, 1).with("chase_share", 0.7)).err().unwrap().to_string();
        assert!(e.contains("stream_share") && e.contains("at most 1"), "{e}");
        let e = build(&WorkloadSpec::new("chase-stream", 100, 10, 1).with("stream_fraction", 0.95))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("stream_fraction"), "{e}");
        let e = build(&WorkloadSpec::new("chase-stream", 100, 10, 1).with("alpha", 1)).err().unwrap().to_string();
        assert!(e.contains("alpha") && e.contains("chase_share"), "{e}");
    }
}
