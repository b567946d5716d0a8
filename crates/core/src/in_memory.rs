//! A plain in-memory [`Memory`] for unit tests and examples.

use std::collections::BTreeMap;

use crate::error::ParamError;
use crate::memory::{Memory, MoveStatus, Resident, ScanCursor};
use crate::types::{Nanos, Page, TierId, TierInfo, HUGE_PAGE_PAGES};

/// Pages and tiers in a `BTreeMap`, with a hand-driven clock. No costs, no latencies:
/// just placement, capacity and the `Memory` contract, so a policy's decisions can be
/// tested in isolation.
///
/// ```
/// use tierkit_core::{InMemory, Memory, TierId};
/// let mut mem = InMemory::new(&[2, 8]).unwrap(); // 2 fast pages, 8 slow pages
/// assert_eq!(mem.touch(10), Some(TierId(0)));  // first touch fills the fast tier first
/// assert_eq!(mem.touch(11), Some(TierId(0)));
/// assert_eq!(mem.touch(12), Some(TierId(1)));  // then spills to the slow tier
/// assert_eq!(mem.free_pages(TierId(0)), 0);
/// ```
#[derive(Clone, Debug)]
pub struct InMemory {
    tiers: Vec<TierInfo>,
    used: Vec<u64>,
    pages: BTreeMap<Page, (TierId, bool)>,
    now: Nanos,
}

impl InMemory {
    /// Tiers with the given capacities in base pages, fastest first.
    pub fn new(capacities: &[u64]) -> Result<Self, ParamError> {
        if capacities.is_empty() || capacities.len() > u8::MAX as usize {
            return Err(ParamError::new("capacities", format!("{capacities:?}"), "1 to 255 tiers"));
        }
        if capacities.contains(&0) {
            return Err(ParamError::new("capacities", format!("{capacities:?}"), "every tier larger than 0 pages"));
        }
        let tiers = capacities
            .iter()
            .enumerate()
            .map(|(i, &cap)| TierInfo {
                id: TierId(i as u8),
                name: format!("tier{i}"),
                capacity_pages: cap,
                unloaded_latency_ns: None,
                bandwidth_gbps: None,
            })
            .collect();
        Ok(Self { tiers, used: vec![0; capacities.len()], pages: BTreeMap::new(), now: 0 })
    }

    /// First touch as Linux does it: a resident page stays where it is; a new page goes
    /// to the fastest tier with a free page. `None` when every tier is full.
    pub fn touch(&mut self, page: Page) -> Option<TierId> {
        if let Some(&(tier, _)) = self.pages.get(&page) {
            return Some(tier);
        }
        let tier = (0..self.tiers.len()).find(|&t| self.used[t] < self.tiers[t].capacity_pages)?;
        self.used[tier] += 1;
        self.pages.insert(page, (TierId(tier as u8), false));
        Some(TierId(tier as u8))
    }

    /// Places `page` on `tier` (a huge page takes 512 base pages), moving it if it is
    /// already resident.
    pub fn place(&mut self, page: Page, tier: TierId, huge: bool) -> MoveStatus {
        if tier.index() >= self.tiers.len() {
            return MoveStatus::NoSuchTier;
        }
        let weight = if huge { HUGE_PAGE_PAGES } else { 1 };
        if let Some(&(old, old_huge)) = self.pages.get(&page) {
            if old == tier {
                return MoveStatus::AlreadyThere;
            }
            if self.free_pages(tier) < weight {
                return MoveStatus::NoSpace;
            }
            self.used[old.index()] -= if old_huge { HUGE_PAGE_PAGES } else { 1 };
        } else if self.free_pages(tier) < weight {
            return MoveStatus::NoSpace;
        }
        self.used[tier.index()] += weight;
        self.pages.insert(page, (tier, huge));
        MoveStatus::Moved
    }

    /// Frees `page`; false if it was not resident.
    pub fn free(&mut self, page: Page) -> bool {
        match self.pages.remove(&page) {
            Some((tier, huge)) => {
                self.used[tier.index()] -= if huge { HUGE_PAGE_PAGES } else { 1 };
                true
            }
            None => false,
        }
    }

    /// Moves the clock forward.
    pub fn advance(&mut self, by: Nanos) {
        self.now += by;
    }

    /// Resident pages.
    pub fn resident(&self) -> usize {
        self.pages.len()
    }
}

impl Memory for InMemory {
    fn now(&self) -> Nanos {
        self.now
    }

    fn tiers(&self) -> &[TierInfo] {
        &self.tiers
    }

    fn free_pages(&self, tier: TierId) -> u64 {
        self.tiers.get(tier.index()).map_or(0, |t| t.capacity_pages - self.used[tier.index()])
    }

    fn tier_of(&self, page: Page) -> Option<TierId> {
        self.pages.get(&page).map(|&(t, _)| t)
    }

    fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
        let start = cursor.next;
        let mut n = 0;
        let to_resident = |(&page, &(tier, huge)): (&Page, &(TierId, bool))| Resident { page, tier, huge };
        for r in self.pages.range(start..).map(to_resident).take(max) {
            out.push(r);
            cursor.next = r.page + 1;
            n += 1;
        }
        if n < max && !self.pages.is_empty() {
            cursor.passes += 1;
            cursor.next = 0;
            for r in self.pages.range(..start).map(to_resident).take(max - n) {
                out.push(r);
                cursor.next = r.page + 1;
                n += 1;
            }
        }
        n
    }

    fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
        for &page in pages {
            let status = if self.pages.contains_key(&page) {
                self.place(page, to, self.pages[&page].1)
            } else {
                MoveStatus::NotResident
            };
            out.push(status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_wraps_once_per_call_and_resumes() {
        let mut mem = InMemory::new(&[10, 10]).unwrap();
        for p in [5, 1, 9, 3] {
            mem.touch(p);
        }
        let mut cur = ScanCursor { next: 4, passes: 0 };
        let mut out = Vec::new();
        assert_eq!(mem.scan(&mut cur, 3, &mut out), 3);
        assert_eq!(out.iter().map(|r| r.page).collect::<Vec<_>>(), [5, 9, 1]);
        assert_eq!(cur, ScanCursor { next: 2, passes: 1 });
        out.clear();
        // Never the same page twice in one call, even when asked for more.
        assert_eq!(mem.scan(&mut cur, 10, &mut out), 4);
        assert_eq!(out.iter().map(|r| r.page).collect::<Vec<_>>(), [3, 5, 9, 1]);
        assert_eq!(cur.passes, 2);
    }

    #[test]
    fn migrate_reports_each_page() {
        let mut mem = InMemory::new(&[1, 10]).unwrap();
        mem.touch(1); // fast
        mem.touch(2); // slow
        mem.touch(3); // slow
        let mut out = Vec::new();
        mem.migrate(&[2, 3, 1, 4], TierId(0), &mut out);
        assert_eq!(out, [MoveStatus::NoSpace, MoveStatus::NoSpace, MoveStatus::AlreadyThere, MoveStatus::NotResident]);
        out.clear();
        mem.migrate(&[1, 2], TierId(1), &mut out);
        mem.migrate(&[2], TierId(0), &mut out);
        mem.migrate(&[2], TierId(7), &mut out);
        assert_eq!(out, [MoveStatus::Moved, MoveStatus::AlreadyThere, MoveStatus::Moved, MoveStatus::NoSuchTier]);
        assert_eq!(mem.tier_of(2), Some(TierId(0)));
        assert_eq!(mem.free_pages(TierId(0)), 0);
        assert_eq!(mem.free_pages(TierId(1)), 8);
    }

    #[test]
    fn huge_pages_take_512_base_pages() {
        let mut mem = InMemory::new(&[600, 2000]).unwrap();
        assert_eq!(mem.place(0, TierId(0), true), MoveStatus::Moved);
        assert_eq!(mem.free_pages(TierId(0)), 88);
        assert_eq!(mem.place(512, TierId(0), true), MoveStatus::NoSpace);
        assert!(mem.free(0));
        assert_eq!(mem.free_pages(TierId(0)), 600);
    }

    #[test]
    fn bad_capacities_are_rejected() {
        assert_eq!(InMemory::new(&[]).unwrap_err().param, "capacities");
        assert_eq!(InMemory::new(&[4, 0]).unwrap_err().param, "capacities");
    }
}
