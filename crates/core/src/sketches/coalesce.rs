//! Increment coalescing (FreqTier §V-C-c).

use super::table::PageTable;
use super::FrequencySketch;
use crate::Page;

/// Collects a batch of samples per page, then applies them to a sketch with one
/// `increase(page, amount)` per distinct page instead of one `increment` per sample.
///
/// FreqTier counts a batch of samples in a hash table and then updates the filter once
/// per unique page, reporting 4× fewer filter accesses on skewed workloads. The table is
/// kept between batches, so steady-state batching allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Coalescer {
    pending: PageTable,
    samples: u64,
}

impl Coalescer {
    /// A coalescer sized for batches touching about `distinct_pages` pages.
    pub fn with_capacity(distinct_pages: usize) -> Self {
        Self { pending: PageTable::with_capacity(distinct_pages), samples: 0 }
    }

    /// Records one sample of `page`.
    #[inline]
    pub fn add(&mut self, page: Page) {
        let c = self.pending.entry(page, 0);
        *c = c.saturating_add(1);
        self.samples += 1;
    }

    /// Samples recorded since the last flush.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Distinct pages recorded since the last flush.
    pub fn distinct_pages(&self) -> usize {
        self.pending.len()
    }

    /// Applies the batch to `sketch` (one `increase` per distinct page) and empties it.
    /// Returns the number of sketch updates made.
    pub fn flush<S: FrequencySketch + ?Sized>(&mut self, sketch: &mut S) -> usize {
        let updates = self.pending.len();
        let mut ahead = self.pending.iter().skip(crate::prefetch::AHEAD);
        for (page, n) in self.pending.iter() {
            if let Some((next, _)) = ahead.next() {
                sketch.prefetch(next);
            }
            sketch.increase(page, n);
        }
        drop(ahead);
        self.pending.clear();
        self.samples = 0;
        updates
    }

    /// Heap bytes allocated.
    pub fn heap_bytes(&self) -> usize {
        self.pending.heap_bytes()
    }
}
