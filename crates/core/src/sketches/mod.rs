//! Hotness sketches: the structures policies count page accesses with.
//!
//! | structure | paper | memory |
//! |---|---|---|
//! | [`CountingBloomFilter`] | FreqTier §V-A, HybridTier §4.2 | `m` packed 4/8/16-bit counters |
//! | [`BlockedCountingBloomFilter`] | FreqTier §V-C-b, HybridTier Fig. 8 | same, one cache line per page |
//! | [`Coalescer`] | FreqTier §V-C-c | one small hash table per batch |
//! | [`CountMinSketch`] + [`TopKTable`] = [`CmTopK`] | M5 §5.1 (HPT/HWT) | H × W counters + K entries |
//! | [`SpaceSaving`] | M5 §5.1, §6 (Mithril-style comparison point) | N entries |
//! | [`ExactCounter`] | HeMem / MEMTIS per-page counts | 16 B per tracked page |
//! | [`HotnessHistogram`] | MEMTIS, used by FreqTier §V-C-a and HybridTier §3.1 | 65 bins |
//!
//! Every structure reports the heap bytes it really allocated (`heap_bytes`), which is
//! what policies add up in [`crate::Policy::metadata_bytes`].

mod blocked_cbf;
mod cbf;
mod cm_sketch;
mod coalesce;
mod counters;
mod exact;
pub mod footprint;
mod histogram;
pub mod sizing;
mod space_saving;
mod table;
mod topk;

pub use blocked_cbf::BlockedCountingBloomFilter;
pub use cbf::CountingBloomFilter;
pub use cm_sketch::{CmTopK, CountMinSketch};
pub use coalesce::Coalescer;
pub use counters::CounterBits;
pub use exact::ExactCounter;
pub use histogram::{HotThreshold, HotnessHistogram};
pub use space_saving::{SpaceSaving, SpaceSavingEntry};
pub use table::PageTable;
pub use topk::TopKTable;

use crate::Page;

/// A per-page access counter, exact or approximate.
///
/// Implemented by both counting Bloom filters and by [`ExactCounter`], so a policy
/// written against this trait can run with any of them (which is how tierkit measures
/// how often a filter's decisions differ from exact counting).
pub trait FrequencySketch {
    /// The page's estimated count. Never below the true count for the filters, as long
    /// as nothing was aged and the count is below [`max_count`](Self::max_count).
    fn get(&self, page: Page) -> u32;

    /// Counts one access; returns the new estimate.
    fn increment(&mut self, page: Page) -> u32 {
        self.increase(page, 1)
    }

    /// Starts loading what [`get`](Self::get) and [`increase`](Self::increase) of `page`
    /// read (a hint for walking a batch a few pages ahead; nothing by default).
    fn prefetch(&self, _page: Page) {}

    /// Counts `amount` accesses at once (increment coalescing, FreqTier §V-C-c); returns
    /// the new estimate. Saturates at [`max_count`](Self::max_count).
    fn increase(&mut self, page: Page, amount: u32) -> u32;

    /// Halves every counter (the papers' aging / cooling).
    fn age(&mut self);

    /// The largest count the structure can hold.
    fn max_count(&self) -> u32;

    /// Heap bytes allocated by the structure.
    fn heap_bytes(&self) -> usize;
}
