//! Events: the normalized records sources deliver to policies, in batches.

use crate::types::{Nanos, Page, PageKind, TierId};

/// One observation about memory accesses. Every source, simulated or live, produces
/// these; a policy receives them as a slice (`&[Event]`) and loops over it.
///
/// Which variants a policy receives is decided by its [`crate::SourceRequest`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// A sampled memory access (PEBS / IBS). Every sample stands for
    /// `sampling period` accesses.
    Sample {
        /// The page accessed.
        page: Page,
        /// The tier that served it (the papers' DRAM-hit vs CXL-hit events).
        tier: TierId,
        /// The 64-byte word within the page (0..64), when the source knows it.
        word: Option<u8>,
        /// A store rather than a load.
        write: bool,
        /// When it happened.
        time: Nanos,
        /// How long the miss held its thread up, ns: its amortized offcore latency
        /// (SOAR/ALTO, OSDI'25), its latency divided by the misses in flight beside it.
        /// The simulator reports it (the tier's loaded latency over the access's MLP
        /// class). On hardware a source could take it from a PEBS record's retire latency
        /// (Intel's timed PEBS, Sapphire Rapids on) or IBS's tag-to-retire cycles; `None`
        /// where the source does not measure it, as the live perf source does not.
        stall_ns: Option<f32>,
    },
    /// A NUMA hint fault (AutoNUMA, TPP): the page was protected by the scanner and then
    /// accessed.
    HintFault {
        /// The faulting page.
        page: Page,
        /// Its tier at fault time.
        tier: TierId,
        /// Time from protection to fault (AutoNUMA's hint-fault latency).
        since_protect: Nanos,
        /// When it happened.
        time: Nanos,
    },
    /// An accessed-bit scan found `pages` pages starting at `first` accessed `count`
    /// times over the sampling checks of one aggregation interval (per page when
    /// `pages == 1`, DAMON-style regions otherwise).
    Accessed {
        /// First page of the page or region.
        first: Page,
        /// Pages in the region (1 for per-page scans).
        pages: u64,
        /// Checks that found it accessed.
        count: u32,
    },
    /// One entry of a device top-K report (M5 HPT/HWT), delivered in rank order at the
    /// end of each query epoch.
    TopK {
        /// The hot page.
        page: Page,
        /// The 64-byte word, for a hot-word tracker report.
        word: Option<u8>,
        /// The tracker's (estimated) access count in the epoch.
        count: u64,
    },
    /// A page was allocated (first touch) on `tier`.
    Alloc {
        /// The page.
        page: Page,
        /// What backs it.
        kind: PageKind,
        /// Where it was placed.
        tier: TierId,
    },
    /// A page was freed.
    Free {
        /// The page.
        page: Page,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stays_four_words() {
        // Sources hand events over in slices: a sample's stall must not grow them.
        assert_eq!(std::mem::size_of::<Event>(), 32);
    }
}
