//! Exact per-page access counts: the HeMem / MEMTIS style ground truth.

use super::table::PageTable;
use super::FrequencySketch;
use crate::Page;

/// One exact `u32` counter per page that was ever counted, in a [`PageTable`].
///
/// This is the "exact data structure" HybridTier §3.2 contrasts with its filters: every
/// tracked page costs a 16-byte slot (plus the table's slack), however cold it is. Aging
/// halves every count but keeps the page's slot, as per-page metadata does.
#[derive(Clone, Debug, Default)]
pub struct ExactCounter {
    table: PageTable,
}

impl ExactCounter {
    /// An empty counter map.
    pub fn new() -> Self {
        Self::default()
    }

    /// A map that tracks `pages` pages without growing.
    pub fn with_capacity(pages: usize) -> Self {
        Self { table: PageTable::with_capacity(pages) }
    }

    /// Heap bytes the map allocates when it tracks `pages` pages.
    pub fn heap_bytes_for(pages: usize) -> usize {
        PageTable::heap_bytes_for(pages)
    }

    /// Pages tracked.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no page has been counted.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Every tracked page with its count.
    pub fn iter(&self) -> impl Iterator<Item = (Page, u32)> + '_ {
        self.table.iter()
    }

    /// Forgets `page`; returns its count.
    pub fn remove(&mut self, page: Page) -> Option<u32> {
        self.table.remove(page)
    }

    /// Forgets every page, keeping the allocation.
    pub fn clear(&mut self) {
        self.table.clear();
    }
}

impl FrequencySketch for ExactCounter {
    #[inline]
    fn prefetch(&self, page: Page) {
        self.table.prefetch(page);
    }

    #[inline]
    fn get(&self, page: Page) -> u32 {
        self.table.get(page).unwrap_or(0)
    }

    #[inline]
    fn increase(&mut self, page: Page, amount: u32) -> u32 {
        let c = self.table.entry(page, 0);
        *c = c.saturating_add(amount);
        *c
    }

    fn age(&mut self) {
        self.table.for_each_value(|c| *c /= 2);
    }

    fn max_count(&self) -> u32 {
        u32::MAX
    }

    fn heap_bytes(&self) -> usize {
        self.table.heap_bytes()
    }
}
