//! The placement cache: the node of every resident page of a process, one byte a page.
//!
//! Resident pages are kept as runs (maximal stretches of present pages within one
//! mapping) over a flat byte array, so a 1 GiB target costs 256 KiB and lookups are a
//! binary search over runs. A byte is the node's index in the topology (bits 0–6), the
//! huge-page flag (bit 7), or [`ABSENT`].

use tierkit_core::{Page, PageKind, Resident, TierId, HUGE_PAGE_PAGES};

/// The byte of a page that is not (or no longer) resident.
pub(super) const ABSENT: u8 = 0xFF;
/// Flag bit: the page is part of a 2 MiB huge page.
pub(super) const HUGE: u8 = 0x80;
/// Most node indexes a byte can hold.
pub(super) const MAX_NODES: usize = 0x7F;

/// A stretch of resident pages in one mapping.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    /// First page.
    pub start: Page,
    /// Pages in it.
    pub len: u32,
    /// Index of its first byte in [`Placement::state`].
    pub first: usize,
    /// What backs it.
    pub kind: PageKind,
}

impl Run {
    fn end(&self) -> Page {
        self.start + self.len as Page
    }
}

/// Resident pages and their nodes, in address order.
#[derive(Clone, Debug, Default)]
pub(super) struct Placement {
    pub runs: Vec<Run>,
    pub state: Vec<u8>,
    /// Tier of each node index.
    pub node_tier: Vec<TierId>,
}

/// Where a page sits in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Slot {
    /// Index into `state`.
    pub index: usize,
    /// The page that names its unit: itself, or the head of its huge page.
    pub unit: Page,
    /// Base pages in its unit (1 or 512).
    pub weight: u64,
}

impl Placement {
    /// Starts a new run at `page` unless `page` extends the last one (same kind).
    pub fn push(&mut self, page: Page, kind: PageKind, byte: u8) {
        match self.runs.last_mut() {
            Some(run) if run.end() == page && run.kind == kind && run.len < u32::MAX => run.len += 1,
            _ => self.runs.push(Run { start: page, len: 1, first: self.state.len(), kind }),
        }
        self.state.push(byte);
    }

    fn run_of(&self, page: Page) -> Option<&Run> {
        let i = self.runs.partition_point(|r| r.start <= page).checked_sub(1)?;
        Some(&self.runs[i]).filter(|r| page < r.end())
    }

    /// The cache slot of `page`, whether or not it is currently resident.
    pub fn slot(&self, page: Page) -> Option<Slot> {
        let run = self.run_of(page)?;
        let index = run.first + (page - run.start) as usize;
        if self.state[index] != ABSENT && self.state[index] & HUGE != 0 {
            let head = page - page % HUGE_PAGE_PAGES;
            let index = index - (page - head) as usize;
            return Some(Slot { index, unit: head, weight: HUGE_PAGE_PAGES });
        }
        Some(Slot { index, unit: page, weight: 1 })
    }

    /// The node index of the page at `index`, if resident.
    pub fn node_at(&self, index: usize) -> Option<usize> {
        let b = self.state[index];
        (b != ABSENT).then_some((b & !HUGE) as usize)
    }

    /// Records that the unit at `slot` lives on node index `node` (`None`: not resident).
    pub fn set(&mut self, slot: Slot, node: Option<usize>) {
        let range = slot.index..slot.index + slot.weight as usize;
        let flag = if slot.weight > 1 { HUGE } else { 0 };
        let byte = node.map_or(ABSENT, |n| n as u8 | flag);
        self.state[range].fill(byte);
    }

    /// The tier of `page`, `None` when not resident.
    pub fn tier_of(&self, page: Page) -> Option<TierId> {
        let slot = self.slot(page)?;
        self.node_at(slot.index).map(|n| self.node_tier[n])
    }

    /// The page kind of `page`'s mapping, when it is in the cache.
    pub fn kind_of(&self, page: Page) -> Option<PageKind> {
        self.run_of(page).map(|r| r.kind)
    }

    /// Resident units (base pages and huge-page heads) from `from` on, in address order.
    pub fn units_from(&self, from: Page) -> impl Iterator<Item = Resident> + '_ {
        let first = self.runs.partition_point(|r| r.end() <= from);
        self.runs[first..].iter().flat_map(move |run| {
            (from.saturating_sub(run.start)..run.len as Page).filter_map(move |off| {
                let (page, b) = (run.start + off, self.state[run.first + off as usize]);
                let huge = b & HUGE != 0;
                if b == ABSENT || (huge && page % HUGE_PAGE_PAGES != 0) {
                    return None;
                }
                Some(Resident { page, tier: self.node_tier[(b & !HUGE) as usize], huge })
            })
        })
    }

    /// Up to `max` resident units spread evenly over the cache (every k-th unit, k the
    /// fewest that keeps to `max`), with their slots.
    pub fn spread(&self, max: usize) -> Vec<Slot> {
        let units = self.units_from(0).count();
        let step = units.div_ceil(max.max(1)).max(1);
        self.units_from(0).step_by(step).filter_map(|r| self.slot(r.page)).collect()
    }

    /// Base pages per tier (index = tier id) of `slots`, from where the cache has them.
    pub fn pages_per_tier(&self, slots: &[Slot], tiers: usize) -> Vec<u64> {
        let mut by_tier = vec![0; tiers];
        for slot in slots {
            if let Some(n) = self.node_at(slot.index) {
                by_tier[self.node_tier[n].index()] += slot.weight;
            }
        }
        by_tier
    }

    /// Resident base pages per node index.
    pub fn pages_per_node(&self) -> Vec<u64> {
        let mut counts = vec![0u64; self.node_tier.len()];
        for &b in self.state.iter().filter(|&&b| b != ABSENT) {
            counts[(b & !HUGE) as usize] += 1;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> Placement {
        let mut p = Placement { node_tier: vec![TierId(0), TierId(1)], ..Placement::default() };
        for page in 10..13 {
            p.push(page, PageKind::Anon, 0);
        }
        p.push(20, PageKind::File, 1);
        for page in 1024..1024 + HUGE_PAGE_PAGES {
            p.push(page, PageKind::Anon, 1 | HUGE);
        }
        p
    }

    #[test]
    fn lookups_runs_and_huge_units() {
        let mut p = cache();
        assert_eq!(p.runs.len(), 3);
        assert_eq!(p.tier_of(11), Some(TierId(0)));
        assert_eq!(p.tier_of(13), None);
        assert_eq!(p.tier_of(20), Some(TierId(1)));
        assert_eq!(p.kind_of(20), Some(PageKind::File));
        let slot = p.slot(1030).unwrap();
        assert_eq!((slot.unit, slot.weight), (1024, 512));
        let units: Vec<_> = p.units_from(12).map(|r| (r.page, r.huge)).collect();
        assert_eq!(units, [(12, false), (20, false), (1024, true)]);
        assert_eq!(p.units_from(1025).count(), 0, "inside a huge page: its head is behind");
        p.set(p.slot(11).unwrap(), None);
        p.set(slot, Some(0));
        assert_eq!(p.tier_of(11), None);
        assert_eq!(p.tier_of(1535), Some(TierId(0)));
        assert_eq!(p.pages_per_node(), [2 + 512, 1]);
    }

    #[test]
    fn a_spread_sample_covers_the_cache_evenly_and_counts_huge_units_whole() {
        let mut p = Placement { node_tier: vec![TierId(0), TierId(1)], ..Placement::default() };
        for page in 0..1000 {
            p.push(page, PageKind::Anon, 1);
        }
        let every: Vec<Page> = p.spread(100).iter().map(|s| s.unit).collect();
        assert_eq!(every.len(), 100);
        assert_eq!((every[0], every[1], every[99]), (0, 10, 990));
        assert_eq!(p.spread(5000).len(), 1000, "a small cache is sampled whole");
        // The kernel moved pages 0..300 to node 0: a sample re-located there shows it.
        let sample = p.spread(100);
        for slot in sample.iter().filter(|s| s.unit < 300) {
            p.set(*slot, Some(0));
        }
        assert_eq!(p.pages_per_tier(&sample, 2), [30, 70]);
        // The whole cache, which only a rebuild re-reads, still has 97% of the pages where they were.
        assert_eq!(p.pages_per_node(), [30, 970]);
        let huge = cache();
        let units = huge.spread(10);
        assert_eq!(units.len(), 5, "three base pages, one file page, one huge page");
        assert_eq!(huge.pages_per_tier(&units, 2), [3, 1 + 512]);
    }
}
