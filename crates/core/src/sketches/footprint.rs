//! Tracking memory of each structure at the papers' default sizing.
//!
//! Every figure is the `heap_bytes` of a structure really constructed at that size,
//! except the exact map, whose bytes come from [`ExactCounter::heap_bytes_for`] (the same
//! sizing rule its allocation follows) so that large machines can be reported without
//! allocating gigabytes.

use super::{
    BlockedCountingBloomFilter, CmTopK, CounterBits, CountingBloomFilter, ExactCounter, FrequencySketch, SpaceSaving,
};
use crate::error::{nonzero, ParamError};
use crate::types::HUGE_PAGE_PAGES;

/// HybridTier §4.2 / FreqTier §V-A: false-positive rate of the frequency filter.
pub const PAPER_ERROR_RATE: f64 = 1e-3;
/// HybridTier §4.2: hash functions per filter.
pub const PAPER_HASHES: u32 = 4;
/// HybridTier §4.2: the momentum filter is 128x smaller than the frequency filter.
pub const MOMENTUM_SHRINK: u64 = 128;
/// M5 §6: HPT with 32K Count-Min entries; top-K of 5 as in its preciseness study.
pub const M5_TOP_K: usize = 5;
/// M5 §6: the largest Space-Saving tracker meeting the FPGA timing.
pub const M5_SPACE_SAVING_ENTRIES: usize = 50;

/// One structure's tracking memory.
#[derive(Clone, Debug, PartialEq)]
pub struct FootprintRow {
    /// What it is.
    pub structure: &'static str,
    /// How it is sized.
    pub sizing: String,
    /// Heap bytes.
    pub heap_bytes: u64,
}

/// The tracking memory of each structure for a process with `fast_pages` pages of fast
/// memory and `slow_pages` pages of slow memory (4 KiB pages).
pub fn footprint(fast_pages: u64, slow_pages: u64) -> Result<Vec<FootprintRow>, ParamError> {
    nonzero("fast_pages", fast_pages)?;
    let managed = fast_pages.saturating_add(slow_pages);
    let (p, k) = (PAPER_ERROR_RATE, PAPER_HASHES);
    let freq = CountingBloomFilter::with_error_rate(fast_pages, p, k, CounterBits::Four)?;
    let blocked = BlockedCountingBloomFilter::with_error_rate(fast_pages, p, k, CounterBits::Four)?;
    let momentum = BlockedCountingBloomFilter::new((freq.counters() / MOMENTUM_SHRINK).max(1), k, CounterBits::Four)?;
    let huge_n = fast_pages.div_ceil(HUGE_PAGE_PAGES);
    let huge_freq = BlockedCountingBloomFilter::with_error_rate(huge_n, p, k, CounterBits::Sixteen)?;
    let huge_counters = huge_freq.lines() * huge_freq.counters_per_line();
    let huge_momentum =
        BlockedCountingBloomFilter::new((huge_counters / MOMENTUM_SHRINK).max(1), k, CounterBits::Sixteen)?;
    let hpt = CmTopK::m5_hpt(M5_TOP_K)?;
    let space_saving = SpaceSaving::new(M5_SPACE_SAVING_ENTRIES)?;
    let exact = usize::try_from(managed)
        .map_err(|_| ParamError::new("slow_pages", slow_pages, "a page count that fits in memory"))?;
    let row = |structure, sizing: String, bytes: usize| FootprintRow { structure, sizing, heap_bytes: bytes as u64 };
    Ok(vec![
        row("cbf", format!("4-bit, k={k}, p={p}, n=fast pages"), freq.heap_bytes()),
        row("blocked-cbf", format!("4-bit, k={k}, p={p}, n=fast pages"), blocked.heap_bytes()),
        row("hybridtier", "blocked frequency + momentum (1/128)".into(), blocked.heap_bytes() + momentum.heap_bytes()),
        row(
            "hybridtier-huge",
            "16-bit, n=fast 2 MiB pages, + momentum".into(),
            huge_freq.heap_bytes() + huge_momentum.heap_bytes(),
        ),
        row("exact-map", "16 B slot per managed page, load <= 3/4".into(), ExactCounter::heap_bytes_for(exact)),
        row("m5-hpt", format!("count-min 4x8192 + top-{M5_TOP_K}"), hpt.heap_bytes()),
        row("space-saving", format!("{M5_SPACE_SAVING_ENTRIES} entries"), space_saving.heap_bytes()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_far_smaller_than_per_page_metadata() {
        // 1 GiB fast, 16 GiB slow (1:16).
        let rows = footprint(1 << 18, 1 << 22).unwrap();
        let get = |s: &str| rows.iter().find(|r| r.structure == s).unwrap().heap_bytes;
        // ~20.4 four-bit counters per fast page = ~10.2 bytes per fast page.
        assert!((2_600_000..2_800_000).contains(&get("cbf")), "{}", get("cbf"));
        assert!(get("blocked-cbf") >= get("cbf") && get("blocked-cbf") < get("cbf") + 64);
        assert!(get("hybridtier") > get("blocked-cbf"));
        assert!(get("hybridtier-huge") * 100 < get("hybridtier"));
        assert!(get("exact-map") > 20 * get("hybridtier"));
        assert_eq!(get("m5-hpt"), 32 * 1024 * 4 + M5_TOP_K as u64 * 16);
        assert_eq!(footprint(0, 5).unwrap_err().param, "fast_pages");
    }
}
