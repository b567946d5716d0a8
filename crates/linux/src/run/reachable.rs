//! The tiers as far as the target can use them.
//!
//! Policies size their hot set from each tier's capacity (tierkit: the hot threshold is
//! the smallest count whose pages fit the fast tier less its headroom). In the
//! simulator that capacity is the memory the workload has. On a live machine a node's
//! `MemTotal` is shared with every other process and the kernel: a target may reach
//! only the pages it holds there plus the room left above the watermarks. A policy told
//! the whole node is its own keeps its threshold at the floor, counts every sampled page
//! as hot, and never demotes what it promoted first to make room for hotter pages.
//!
//! So the daemon shows the policy a [`ReachableView`]: the process view with each
//! tier's capacity cut to [`reachable_tiers`] (the target's resident pages there plus
//! the tier's free room, which counts the per-CPU free lists where the pages tierkit
//! demotes land first: [`crate::topology`]'s zoneinfo reading), recomputed at every
//! rebuild of the process view.

use tierkit_core::{Memory, MoveStatus, Nanos, Page, Resident, ScanCursor, TierId, TierInfo};

/// The tiers of `mem`, each with its capacity cut to what the target can reach: its
/// `resident` base pages there plus the tier's free room (at least one page, at most the
/// tier's capacity).
pub fn reachable_tiers(mem: &dyn Memory, resident: &[u64]) -> Vec<TierInfo> {
    mem.tiers()
        .iter()
        .map(|t| {
            let held = resident.get(t.id.index()).copied().unwrap_or(0);
            let reach = held.saturating_add(mem.free_pages(t.id)).clamp(1, t.capacity_pages.max(1));
            TierInfo { capacity_pages: reach, ..t.clone() }
        })
        .collect()
}

/// A read-only view of `mem` whose tiers are `tiers` (see the [module
/// documentation](self)); everything else is `mem`'s. Policies only read their memory
/// view; a migration asked of this view is refused as [`MoveStatus::Busy`].
pub struct ReachableView<'a> {
    /// The process view (or the dry-run view over it).
    pub mem: &'a dyn Memory,
    /// The tiers with their reachable capacities.
    pub tiers: &'a [TierInfo],
}

impl Memory for ReachableView<'_> {
    fn now(&self) -> Nanos {
        self.mem.now()
    }

    fn tiers(&self) -> &[TierInfo] {
        self.tiers
    }

    fn free_pages(&self, tier: TierId) -> u64 {
        self.mem.free_pages(tier)
    }

    fn tier_of(&self, page: Page) -> Option<TierId> {
        self.mem.tier_of(page)
    }

    fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
        self.mem.scan(cursor, max, out)
    }

    fn migrate(&mut self, pages: &[Page], _to: TierId, out: &mut Vec<MoveStatus>) {
        out.extend(pages.iter().map(|_| MoveStatus::Busy));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::InMemory;

    #[test]
    fn capacity_is_what_the_target_holds_plus_the_free_room() {
        let mut mem = InMemory::new(&[100, 1000]).unwrap();
        for page in 0..130 {
            mem.touch(page); // 100 fast, 30 slow
        }
        mem.free(5); // one fast page free again
        let tiers = reachable_tiers(&mem, &[60, 30]);
        // Of the fast tier's 99 used pages the target holds 60, and 1 page is free.
        assert_eq!((tiers[0].capacity_pages, tiers[1].capacity_pages), (61, 1000));
        assert_eq!((tiers[0].id, tiers[0].name.as_str()), (TierId(0), "tier0"));
        let mut view = ReachableView { mem: &mem, tiers: &tiers };
        assert_eq!(view.tiers()[0].capacity_pages, 61);
        assert_eq!((view.free_pages(TierId(0)), view.tier_of(129)), (1, Some(TierId(1))));
        let mut out = Vec::new();
        view.migrate(&[129], TierId(0), &mut out);
        assert_eq!(out, [MoveStatus::Busy]);
        assert_eq!(mem.tier_of(129), Some(TierId(1)), "the view moves nothing");
        assert_eq!(reachable_tiers(&mem, &[0, 0])[0].capacity_pages, 1, "never zero");
    }
}
