//! A table of per-page records ranked by score: what the ranking policies (`arms`,
//! `alto`) keep. Records live densely in a vector, found through a [`PageTable`]; a
//! removed record's slot takes the last record. Ranking orders the slots by score, best
//! first, ties by page, so the order depends on the scores alone, not on where records
//! sit.

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
    /// Slots of `records`, best score first, after [`rank`](Self::rank).
    pub(crate) order: Vec<u32>,
}

impl<R: Scored> ScoreTable<R> {
    /// An empty table whose index is sized for `pages` pages.
    pub(crate) fn with_capacity(pages: u64) -> Self {
        Self {
            index: PageTable::with_capacity(usize::try_from(pages).unwrap_or(usize::MAX)),
            records: Vec::new(),
            order: Vec::new(),
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

    /// Orders the slots by score, best first; returns how many of the best fit in
    /// `capacity` pages (the hot set's size).
    pub(crate) fn rank(&mut self, capacity: u64) -> usize {
        let records = &self.records;
        self.order.clear();
        self.order.extend(0..records.len() as u32);
        self.order.sort_unstable_by(|&a, &b| {
            let (a, b) = (&records[a as usize], &records[b as usize]);
            b.score().total_cmp(&a.score()).then(a.page().cmp(&b.page()))
        });
        self.order.len().min(usize::try_from(capacity).unwrap_or(usize::MAX))
    }

    /// Heap bytes of the index, the records and the ranking.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.index.heap_bytes()
            + self.records.capacity() * std::mem::size_of::<R>()
            + self.order.capacity() * std::mem::size_of::<u32>()
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
    fn ranks_by_score_then_page_and_survives_removals() {
        let mut t = ScoreTable::with_capacity(100);
        for (page, score) in [(5, 1.0), (3, 2.0), (9, 2.0), (1, 0.5), (7, 3.0)] {
            t.entry(page, || R(page, 0.0)).1 += score;
        }
        t.entry(1, || unreachable!()).1 += 0.25;
        assert_eq!(t.rank(3), 3);
        let ranked: Vec<Page> = t.order.iter().map(|&s| t.records[s as usize].0).collect();
        assert_eq!(ranked, [7, 3, 9, 5, 1]);
        t.forget(3);
        t.forget(42);
        t.forget_where(|r| r.1 < 1.0);
        assert!(t.consistent() && t.len() == 3);
        assert!(t.get(1).is_none() && t.get(3).is_none());
        assert_eq!(t.get(9).map(|r| r.1), Some(2.0));
        assert_eq!(t.rank(10), 3);
    }
}
