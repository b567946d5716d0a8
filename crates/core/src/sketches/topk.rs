//! The sorted top-K table of M5's trackers (M5 §5.1, the "sorted CAM unit").

use crate::error::{nonzero, ParamError};
use crate::Page;

/// The `k` pages with the highest counts offered so far, kept sorted (highest first).
///
/// M5 §5.1: on each access the page's estimated count (from the Count-Min sketch) is
/// offered; a page already in the table has its count updated, otherwise it replaces the
/// entry with the minimum count if its count is strictly larger.
#[derive(Clone, Debug)]
pub struct TopKTable {
    k: usize,
    entries: Vec<(Page, u64)>,
}

impl TopKTable {
    /// An empty table of `k` entries.
    pub fn new(k: usize) -> Result<Self, ParamError> {
        nonzero("k", k as u64)?;
        Ok(Self { k, entries: Vec::with_capacity(k) })
    }

    /// Offers `page` with its current `count`.
    #[inline]
    pub fn offer(&mut self, page: Page, count: u64) {
        let pos = match self.entries.iter().position(|&(p, _)| p == page) {
            Some(i) => {
                self.entries[i].1 = count;
                i
            }
            None if self.entries.len() < self.k => {
                self.entries.push((page, count));
                self.entries.len() - 1
            }
            None => {
                let last = self.entries.len() - 1;
                if count <= self.entries[last].1 {
                    return;
                }
                self.entries[last] = (page, count);
                last
            }
        };
        self.resort(pos);
    }

    /// Moves entry `i` to its sorted place (it is the only one out of order).
    fn resort(&mut self, mut i: usize) {
        while i > 0 && self.entries[i - 1].1 < self.entries[i].1 {
            self.entries.swap(i - 1, i);
            i -= 1;
        }
        while i + 1 < self.entries.len() && self.entries[i + 1].1 > self.entries[i].1 {
            self.entries.swap(i, i + 1);
            i += 1;
        }
    }

    /// The tracked pages, highest count first.
    pub fn entries(&self) -> &[(Page, u64)] {
        &self.entries
    }

    /// Capacity `k`.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Empties the table (a new epoch).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Heap bytes allocated.
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(Page, u64)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_largest_counts_sorted() {
        let mut t = TopKTable::new(3).unwrap();
        for (page, count) in [(1, 5), (2, 1), (3, 7), (4, 3), (2, 9), (5, 3)] {
            t.offer(page, count);
        }
        assert_eq!(t.entries(), &[(2, 9), (3, 7), (1, 5)]);
        t.offer(1, 0); // an update may also lower a count
        assert_eq!(t.entries(), &[(2, 9), (3, 7), (1, 0)]);
        assert_eq!(TopKTable::new(0).unwrap_err().param, "k");
    }
}
