//! `--dry-run`: a [`Memory`] view that records the moves a policy asks for instead of
//! making them.
//!
//! The view answers every question from the real process view, corrected by the moves
//! decided so far: a page "moved" to the fast tier is reported there afterwards, and
//! each tier's free pages are adjusted by one page per move. So a policy in a dry run
//! behaves as it would live (it does not re-decide the same promotion on every
//! sample), and the decisions counted are the ones a live run would have made, bar
//! kernel refusals (`EBUSY`, pinned or shared pages).
//!
//! Approximations: a huge page is moved as the page the policy named (the other 511
//! base pages keep their real tier in the view), and free memory is the real free
//! memory, re-read at every refresh, plus the decided moves.

use std::collections::HashMap;

use tierkit_core::{Memory, MoveStatus, Nanos, Page, Resident, ScanCursor, TierId, TierInfo};

/// The moves decided in a dry run: each page's pretend tier, and the free pages each
/// tier gained or lost.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    moved: HashMap<Page, TierId>,
    free_delta: Vec<i64>,
}

impl Overlay {
    /// Pages whose pretend tier differs from their real one.
    pub fn len(&self) -> usize {
        self.moved.len()
    }

    /// True when no decided move is in effect.
    pub fn is_empty(&self) -> bool {
        self.moved.is_empty()
    }

    /// The tier `page` has in the dry run, given its real tier `real`.
    pub fn tier_of(&self, page: Page, real: Option<TierId>) -> Option<TierId> {
        real.map(|t| self.moved.get(&page).copied().unwrap_or(t))
    }

    /// Forgets pages `mem` no longer has resident (freed or unmapped since).
    pub fn prune(&mut self, mem: &dyn Memory) {
        self.moved.retain(|&page, _| mem.tier_of(page).is_some());
    }

    fn delta(&self, tier: TierId) -> i64 {
        self.free_delta.get(tier.index()).copied().unwrap_or(0)
    }

    fn adjust(&mut self, tier: TierId, by: i64) {
        if self.free_delta.len() <= tier.index() {
            self.free_delta.resize(tier.index() + 1, 0);
        }
        self.free_delta[tier.index()] += by;
    }
}

/// The real view `mem` seen through the decided moves in `overlay`.
pub struct DryRunView<'a> {
    /// The real process view.
    pub mem: &'a dyn Memory,
    /// The decided moves.
    pub overlay: &'a mut Overlay,
}

impl Memory for DryRunView<'_> {
    fn now(&self) -> Nanos {
        self.mem.now()
    }

    fn tiers(&self) -> &[TierInfo] {
        self.mem.tiers()
    }

    fn free_pages(&self, tier: TierId) -> u64 {
        (self.mem.free_pages(tier) as i64).saturating_add(self.overlay.delta(tier)).max(0) as u64
    }

    fn tier_of(&self, page: Page) -> Option<TierId> {
        self.overlay.tier_of(page, self.mem.tier_of(page))
    }

    fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
        let start = out.len();
        let n = self.mem.scan(cursor, max, out);
        for r in &mut out[start..] {
            if let Some(&tier) = self.overlay.moved.get(&r.page) {
                r.tier = tier;
            }
        }
        n
    }

    fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
        for &page in pages {
            let status = match self.tier_of(page) {
                None => MoveStatus::NotResident,
                Some(_) if to.index() >= self.tiers().len() => MoveStatus::NoSuchTier,
                Some(from) if from == to => MoveStatus::AlreadyThere,
                Some(_) if self.free_pages(to) == 0 => MoveStatus::NoSpace,
                Some(from) => {
                    if self.mem.tier_of(page) == Some(to) {
                        self.overlay.moved.remove(&page);
                    } else {
                        self.overlay.moved.insert(page, to);
                    }
                    self.overlay.adjust(from, 1);
                    self.overlay.adjust(to, -1);
                    MoveStatus::Moved
                }
            };
            out.push(status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::InMemory;

    #[test]
    fn decided_moves_show_in_placement_free_pages_and_scans() {
        let mut mem = InMemory::new(&[2, 10]).unwrap();
        for page in 0..4 {
            mem.touch(page); // 0, 1 fast; 2, 3 slow
        }
        let mut overlay = Overlay::default();
        let mut view = DryRunView { mem: &mem, overlay: &mut overlay };
        let mut out = Vec::new();
        view.migrate(&[0], TierId(1), &mut out);
        view.migrate(&[2, 3, 2, 9], TierId(0), &mut out);
        use MoveStatus::*;
        assert_eq!(out, [Moved, Moved, NoSpace, AlreadyThere, NotResident]);
        assert_eq!(view.tier_of(0), Some(TierId(1)));
        assert_eq!(view.tier_of(2), Some(TierId(0)));
        assert_eq!((view.free_pages(TierId(0)), view.free_pages(TierId(1))), (0, 8));
        let mut found = Vec::new();
        view.scan(&mut ScanCursor::default(), 10, &mut found);
        let tiers: Vec<_> = found.iter().map(|r| (r.page, r.tier.0)).collect();
        assert_eq!(tiers, [(0, 1), (1, 0), (2, 0), (3, 1)]);
        // Moving a page back where it really is drops it from the overlay.
        out.clear();
        view.migrate(&[0], TierId(0), &mut out);
        assert_eq!(out, [NoSpace], "the fast tier is full in the view");
        view.migrate(&[2], TierId(1), &mut out);
        view.migrate(&[0], TierId(0), &mut out);
        assert_eq!(out, [NoSpace, Moved, Moved]);
        assert!(overlay.is_empty());
        // The real memory never changed.
        assert_eq!((mem.tier_of(0), mem.tier_of(2)), (Some(TierId(0)), Some(TierId(1))));
    }

    #[test]
    fn pruning_forgets_pages_that_left() {
        let mut mem = InMemory::new(&[4, 4]).unwrap();
        mem.touch(7);
        let mut overlay = Overlay::default();
        DryRunView { mem: &mem, overlay: &mut overlay }.migrate(&[7], TierId(1), &mut Vec::new());
        assert_eq!(overlay.len(), 1);
        mem.free(7);
        overlay.prune(&mem);
        assert!(overlay.is_empty());
    }
}
