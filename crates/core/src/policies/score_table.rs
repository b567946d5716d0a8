//! A table of per-page records ranked by score: what the ranking policies (`arms`,
//! `alto`) keep. Records live densely in a vector, found through a [`PageTable`]; a
//! removed record's slot takes the last record. Ranking finds the hot set and orders
//! what a walk takes by score, best first, ties by page, so the order depends on the
//! scores alone, not on where records sit.

use std::collections::BinaryHeap;

use crate::sketches::PageTable;
use crate::types::Page;

/// A record the table ranks.
pub(crate) trait Scored {
    /// The page the record is about.
    fn page(&self) -> Page;
    /// Its score: higher ranks first.
    fn score(&self) -> f32;
}

/// Per-page records and their ranking.
#[derive(Clone, Debug)]
pub(crate) struct ScoreTable<R> {
    index: PageTable,
    /// The records, in no particular order.
    pub(crate) records: Vec<R>,
    /// Per slot of `records`: in the hot set found by the last [`rank`](Self::rank).
    hot: Vec<bool>,
    /// Ranking's scratch: each record's sort key, its page and its slot side by side, so
    /// that finding the hot set compares contiguous keys instead of reading records at
    /// random.
    keyed: Vec<(u32, Page, u32)>,
}

/// Which end of the ranking [`ScoreTable::ranked`] yields first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    BestFirst,
    WorstFirst,
}

/// Slots in rank order; see [`ScoreTable::ranked`].
#[derive(Debug)]
pub(crate) struct Ranked {
    /// A max-heap of keys that put the slot to yield next on top.
    heap: BinaryHeap<(u32, Page, u32)>,
}

impl Iterator for Ranked {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        self.heap.pop().map(|(_, _, slot)| slot)
    }
}

/// A key that sorts scores best first in `f32::total_cmp`'s order: the bits made
/// monotonic as unsigned (negatives' magnitude bits flipped, the sign bit flipped), then
/// inverted.
fn descending(score: f32) -> u32 {
    let bits = score.to_bits();
    let monotonic = if bits >> 31 == 1 { !bits } else { bits | 1 << 31 };
    !monotonic
}

impl<R: Scored> ScoreTable<R> {
    /// An empty table whose index is sized for `pages` pages.
    pub(crate) fn with_capacity(pages: u64) -> Self {
        Self {
            index: PageTable::with_capacity(usize::try_from(pages).unwrap_or(usize::MAX)),
            records: Vec::new(),
            hot: Vec::new(),
            keyed: Vec::new(),
        }
    }

    /// The record of `page`, made by `new` if it has none.
    pub(crate) fn entry(&mut self, page: Page, new: impl FnOnce() -> R) -> &mut R {
        let next = self.records.len() as u32;
        let slot = *self.index.entry(page, next);
        if slot == next {
            self.records.push(new());
        }
        &mut self.records[slot as usize]
    }

    /// The record of `page`, if it has one.
    pub(crate) fn get(&self, page: Page) -> Option<&R> {
        self.index.get(page).map(|s| &self.records[s as usize])
    }

    /// Drops the record of `page`, if any.
    pub(crate) fn forget(&mut self, page: Page) {
        if let Some(slot) = self.index.remove(page) {
            self.records.swap_remove(slot as usize);
            if let Some(moved) = self.records.get(slot as usize) {
                *self.index.entry(moved.page(), slot) = slot;
            }
        }
    }

    /// Drops every record for which `dead` holds.
    pub(crate) fn forget_where(&mut self, dead: impl Fn(&R) -> bool) {
        let pages: Vec<Page> = self.records.iter().filter(|r| dead(r)).map(R::page).collect();
        pages.into_iter().for_each(|p| self.forget(p));
    }

    /// Finds the hot set: the best records, as many as fit in `capacity` pages, without
    /// ordering them. [`slots`](Self::slots) lists either part and
    /// [`ranked`](Self::ranked) orders what a caller walks.
    pub(crate) fn rank(&mut self, capacity: u64) {
        let hot = self.records.len().min(usize::try_from(capacity).unwrap_or(usize::MAX));
        self.keyed.clear();
        self.keyed
            .extend(self.records.iter().enumerate().map(|(slot, r)| (descending(r.score()), r.page(), slot as u32)));
        // Pages are unique, so (key, page) orders every record and the slot never decides.
        if hot > 0 && hot < self.keyed.len() {
            self.keyed.select_nth_unstable(hot - 1);
        }
        self.hot.clear();
        self.hot.resize(self.records.len(), false);
        for &(_, _, slot) in &self.keyed[..hot] {
            self.hot[slot as usize] = true;
        }
    }

    /// The slots in the hot set (`hot`) or out of it, in slot order: a walk that reads
    /// each record reads them in memory order.
    pub(crate) fn slots(&self, hot: bool) -> impl Iterator<Item = u32> + '_ {
        self.hot.iter().enumerate().filter(move |&(_, &h)| h == hot).map(|(slot, _)| slot as u32)
    }

    /// Whether `slot` is in the hot set.
    pub(crate) fn is_hot(&self, slot: usize) -> bool {
        self.hot[slot]
    }

    /// `slots` in rank order, taken lazily: best first (ties by lower page) or worst
    /// first (the exact reverse). Building it costs a pass over the slots; each slot
    /// taken, a heap pop, so a walk that stops early does not pay for a full sort.
    pub(crate) fn ranked(&self, slots: impl Iterator<Item = u32>, order: Order) -> Ranked {
        let key = |slot: u32| {
            let r = &self.records[slot as usize];
            let (score, page) = (descending(r.score()), r.page());
            match order {
                Order::BestFirst => (!score, !page, slot),
                Order::WorstFirst => (score, page, slot),
            }
        };
        Ranked { heap: slots.map(key).collect() }
    }

    /// Heap bytes of the index, the records and the ranking.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.index.heap_bytes()
            + self.records.capacity() * std::mem::size_of::<R>()
            + self.hot.capacity()
            + self.keyed.capacity() * std::mem::size_of::<(u32, Page, u32)>()
    }

    /// Records held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether `page`'s record sits where the index says.
    #[cfg(test)]
    pub(crate) fn consistent(&self) -> bool {
        self.records.iter().all(|r| self.get(r.page()).is_some_and(|found| found.page() == r.page()))
            && self.index.len() == self.records.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug)]
    struct R(Page, f32);

    impl Scored for R {
        fn page(&self) -> Page {
            self.0
        }
        fn score(&self) -> f32 {
            self.1
        }
    }

    #[test]
    fn the_sort_key_orders_scores_as_total_cmp_does_best_first() {
        let scores = [
            f32::NEG_INFINITY,
            -3.5,
            -1.0,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            0.25,
            1.0,
            2.0,
            1e30,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        for a in scores {
            for b in scores {
                assert_eq!(descending(a).cmp(&descending(b)), b.total_cmp(&a), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn ranks_by_score_then_page_and_survives_removals() {
        let mut t = ScoreTable::with_capacity(100);
        for (page, score) in [(5, 1.0), (3, 2.0), (9, 2.0), (1, 0.5), (7, 3.0)] {
            t.entry(page, || R(page, 0.0)).1 += score;
        }
        t.entry(1, || unreachable!()).1 += 0.25;
        t.rank(3);
        let pages = |slots: Vec<u32>, order| -> Vec<Page> {
            t.ranked(slots.into_iter(), order).map(|s| t.records[s as usize].0).collect()
        };
        let (hot, cold): (Vec<u32>, Vec<u32>) = (t.slots(true).collect(), t.slots(false).collect());
        assert!(hot.iter().all(|&s| t.is_hot(s as usize)) && !cold.iter().any(|&s| t.is_hot(s as usize)));
        assert_eq!(pages(hot.clone(), Order::BestFirst), [7, 3, 9]);
        assert_eq!(pages(hot.clone(), Order::WorstFirst), [9, 3, 7]);
        assert_eq!(pages(cold.clone(), Order::BestFirst), [5, 1]);
        assert_eq!(pages([hot, cold].concat(), Order::WorstFirst), [1, 5, 9, 3, 7]);
        t.forget(3);
        t.forget(42);
        t.forget_where(|r| r.1 < 1.0);
        assert!(t.consistent() && t.len() == 3);
        assert!(t.get(1).is_none() && t.get(3).is_none());
        assert_eq!(t.get(9).map(|r| r.1), Some(2.0));
        t.rank(10);
        assert_eq!(t.slots(true).count(), 3, "the hot set is every record when they all fit");
    }
}
