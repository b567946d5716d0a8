//! An open-addressing hash table from pages to `u32` values: the storage behind
//! [`super::ExactCounter`], [`super::Coalescer`] and [`super::SpaceSaving`].
//!
//! Linear probing over 16-byte slots (key and value in one slot, so a lookup touches one
//! cache line in the common case), grown by doubling at a load of 3/4, with
//! backward-shift deletion (no tombstones). Its size is exactly the slots it allocated,
//! which is what [`PageTable::heap_bytes`] reports.

use crate::hash::{hash_page, DEFAULT_SEED};
use crate::Page;

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// `page + 1`; 0 marks an empty slot (page `u64::MAX` lives in `max_page`).
    key: u64,
    value: u32,
}

/// A map from [`Page`] to `u32`.
#[derive(Clone, Debug)]
pub struct PageTable {
    slots: Vec<Slot>,
    len: usize,
    max_page: Option<u32>,
}

const MIN_SLOTS: usize = 16;

impl Default for PageTable {
    fn default() -> Self {
        Self::new()
    }
}

impl PageTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty table that holds `entries` pages without growing.
    pub fn with_capacity(entries: usize) -> Self {
        Self { slots: vec![Slot::default(); Self::slots_for(entries)], len: 0, max_page: None }
    }

    /// Heap bytes a table holding `entries` pages allocates (for sizing reports without
    /// allocating).
    pub fn heap_bytes_for(entries: usize) -> usize {
        Self::slots_for(entries) * std::mem::size_of::<Slot>()
    }

    fn slots_for(entries: usize) -> usize {
        (entries.saturating_mul(4) / 3 + 1).next_power_of_two().max(MIN_SLOTS)
    }

    /// Number of pages in the table.
    pub fn len(&self) -> usize {
        self.len + self.max_page.is_some() as usize
    }

    /// True when the table holds no page.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes allocated.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
    }

    #[inline(always)]
    fn home(&self, page: Page) -> usize {
        let shift = 64 - self.slots.len().trailing_zeros();
        (hash_page(page, DEFAULT_SEED) >> shift) as usize
    }

    /// Index of `page`'s slot, or of the empty slot where it would go.
    #[inline(always)]
    fn probe(&self, page: Page) -> usize {
        let mask = self.slots.len() - 1;
        let key = page.wrapping_add(1);
        let mut i = self.home(page);
        loop {
            let k = self.slots[i].key;
            if k == key || k == 0 {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Starts loading `page`'s home slot into the cache: call it a few lookups ahead
    /// when walking a batch of pages.
    #[inline(always)]
    pub fn prefetch(&self, page: Page) {
        crate::prefetch::prefetch(&self.slots[self.home(page)]);
    }

    /// The value stored for `page`.
    #[inline]
    pub fn get(&self, page: Page) -> Option<u32> {
        if page == u64::MAX {
            return self.max_page;
        }
        let slot = &self.slots[self.probe(page)];
        (slot.key != 0).then_some(slot.value)
    }

    /// The value stored for `page`, to change in place.
    #[inline]
    pub fn get_mut(&mut self, page: Page) -> Option<&mut u32> {
        if page == u64::MAX {
            return self.max_page.as_mut();
        }
        let i = self.probe(page);
        let slot = &mut self.slots[i];
        (slot.key != 0).then_some(&mut slot.value)
    }

    /// The value for `page`, inserting `default` first if the page is absent.
    #[inline]
    pub fn entry(&mut self, page: Page, default: u32) -> &mut u32 {
        if page == u64::MAX {
            return self.max_page.get_or_insert(default);
        }
        let mut i = self.probe(page);
        if self.slots[i].key == 0 {
            if (self.len + 1) * 4 > self.slots.len() * 3 {
                self.grow();
                i = self.probe(page);
            }
            self.slots[i] = Slot { key: page.wrapping_add(1), value: default };
            self.len += 1;
        }
        &mut self.slots[i].value
    }

    /// Removes `page`, returning its value.
    pub fn remove(&mut self, page: Page) -> Option<u32> {
        if page == u64::MAX {
            return self.max_page.take();
        }
        let mask = self.slots.len() - 1;
        let mut hole = self.probe(page);
        if self.slots[hole].key == 0 {
            return None;
        }
        let value = self.slots[hole].value;
        // Backward-shift deletion: pull later entries of the probe run into the hole
        // whenever the hole lies between their home slot and where they sit.
        let mut j = (hole + 1) & mask;
        while self.slots[j].key != 0 {
            let home = self.home(self.slots[j].key.wrapping_sub(1));
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = Slot::default();
        self.len -= 1;
        Some(value)
    }

    /// Removes every page, keeping the allocation.
    pub fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill(Slot::default());
        }
        self.len = 0;
        self.max_page = None;
    }

    /// Every `(page, value)` pair, in table order (deterministic for a given history).
    pub fn iter(&self) -> impl Iterator<Item = (Page, u32)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.key != 0)
            .map(|s| (s.key.wrapping_sub(1), s.value))
            .chain(self.max_page.map(|v| (u64::MAX, v)))
    }

    /// Applies `f` to every value.
    pub fn for_each_value(&mut self, mut f: impl FnMut(&mut u32)) {
        for s in self.slots.iter_mut().filter(|s| s.key != 0) {
            f(&mut s.value);
        }
        if let Some(v) = self.max_page.as_mut() {
            f(v);
        }
    }

    fn grow(&mut self) {
        let doubled = vec![Slot::default(); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.key != 0) {
            let mut i = self.home(s.key.wrapping_sub(1));
            while self.slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::Rng;
    use std::collections::HashMap;

    #[test]
    fn behaves_like_a_hashmap_under_random_operations() {
        let mut rng = Rng::new(3);
        let mut table = PageTable::new();
        let mut reference: HashMap<u64, u32> = HashMap::new();
        for step in 0..200_000u32 {
            // A small key space forces collisions, long probe runs, growth and deletes;
            // u64::MAX exercises the reserved key.
            let page = match rng.below(100) {
                0 => u64::MAX,
                r => rng.below(5_000) * if r < 50 { 1 } else { 1 << 40 },
            };
            match rng.below(3) {
                0 => assert_eq!(table.remove(page), reference.remove(&page), "step {step}"),
                _ => {
                    *table.entry(page, 0) += 1;
                    *reference.entry(page).or_insert(0) += 1;
                }
            }
            assert_eq!(table.get(page), reference.get(&page).copied(), "step {step}");
            if let Some(v) = table.get_mut(page) {
                *v += 7;
                *reference.get_mut(&page).expect("present in both") += 7;
            }
            assert_eq!(table.get_mut(page).is_some(), reference.contains_key(&page), "step {step}");
        }
        assert_eq!(table.len(), reference.len());
        let mut all: Vec<_> = table.iter().collect();
        let mut want: Vec<_> = reference.into_iter().collect();
        all.sort_unstable();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn heap_bytes_match_the_sizing_rule_and_clear_keeps_them() {
        let mut t = PageTable::with_capacity(1000);
        assert_eq!(t.heap_bytes(), PageTable::heap_bytes_for(1000));
        for p in 0..1000 {
            t.entry(p, 1);
        }
        assert_eq!(t.heap_bytes(), PageTable::heap_bytes_for(1000), "no growth within capacity");
        t.clear();
        assert!(t.is_empty());
        assert_eq!(t.get(5), None);
        assert_eq!(t.heap_bytes(), PageTable::heap_bytes_for(1000));
    }
}
