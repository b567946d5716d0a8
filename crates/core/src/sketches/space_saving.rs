//! Space-Saving top-K (M5's comparison point, after the Mithril Row-Hammer tracker).

use super::table::PageTable;
use crate::error::{nonzero, ParamError};
use crate::Page;

/// One monitored page of a [`SpaceSaving`] summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpaceSavingEntry {
    /// The page.
    pub page: Page,
    /// Its counter: never below the true count since the page entered the summary.
    pub count: u64,
    /// Over-estimate bound: `count - error ≤ true count ≤ count`.
    pub error: u64,
}

/// Space-Saving (Metwally, Agrawal, El Abbadi, 2005) with `capacity` counters.
///
/// A monitored page's counter is incremented; an unmonitored page takes over the entry
/// with the minimum counter `min`, starting at `min + 1` with error `min`. Hence every
/// counter over-estimates by at most its error, and every error is at most the current
/// minimum counter, and any page with true count above the minimum is monitored. The
/// entries form a binary min-heap indexed by a [`PageTable`], so each access is
/// O(log capacity). M5 §6 finds a 50-entry Space-Saving tracker the most that meets its
/// hardware timing.
#[derive(Clone, Debug)]
pub struct SpaceSaving {
    heap: Vec<SpaceSavingEntry>,
    position: PageTable,
    capacity: usize,
}

impl SpaceSaving {
    /// A summary with `capacity` counters.
    pub fn new(capacity: usize) -> Result<Self, ParamError> {
        nonzero("capacity", capacity as u64)?;
        if capacity > u32::MAX as usize {
            return Err(ParamError::new("capacity", capacity, "at most 2^32 - 1 counters"));
        }
        Ok(Self { heap: Vec::with_capacity(capacity), position: PageTable::with_capacity(capacity), capacity })
    }

    /// Counts one access to `page`.
    pub fn offer(&mut self, page: Page) {
        if let Some(i) = self.position.get(page) {
            self.heap[i as usize].count += 1;
            self.sift_down(i as usize);
        } else if self.heap.len() < self.capacity {
            self.heap.push(SpaceSavingEntry { page, count: 1, error: 0 });
            let i = self.heap.len() - 1;
            *self.position.entry(page, 0) = i as u32;
            self.sift_up(i);
        } else {
            let min = self.heap[0];
            self.position.remove(min.page);
            self.heap[0] = SpaceSavingEntry { page, count: min.count + 1, error: min.count };
            *self.position.entry(page, 0) = 0;
            self.sift_down(0);
        }
    }

    /// The entry of `page`, if monitored.
    pub fn get(&self, page: Page) -> Option<SpaceSavingEntry> {
        self.position.get(page).map(|i| self.heap[i as usize])
    }

    /// The smallest counter (0 while not all counters are in use): an upper bound on the
    /// true count of every unmonitored page.
    pub fn min_count(&self) -> u64 {
        if self.heap.len() < self.capacity {
            0
        } else {
            self.heap[0].count
        }
    }

    /// The `k` entries with the highest counters, highest first.
    pub fn top(&self, k: usize) -> Vec<SpaceSavingEntry> {
        let mut all = self.heap.clone();
        all.sort_unstable_by(|a, b| b.count.cmp(&a.count).then(a.page.cmp(&b.page)));
        all.truncate(k);
        all
    }

    /// Forgets everything (a new epoch).
    pub fn reset(&mut self) {
        self.heap.clear();
        self.position.clear();
    }

    /// Heap bytes allocated.
    pub fn heap_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<SpaceSavingEntry>() + self.position.heap_bytes()
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        *self.position.entry(self.heap[a].page, 0) = a as u32;
        *self.position.entry(self.heap[b].page, 0) = b as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent].count <= self.heap[i].count {
                break;
            }
            self.swap(parent, i);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut smallest = i;
            if l < self.heap.len() && self.heap[l].count < self.heap[smallest].count {
                smallest = l;
            }
            if r < self.heap.len() && self.heap[r].count < self.heap[smallest].count {
                smallest = r;
            }
            if smallest == i {
                return;
            }
            self.swap(i, smallest);
            i = smallest;
        }
    }
}
