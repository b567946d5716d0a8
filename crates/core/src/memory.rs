//! The `Memory` trait: what a policy may ask of the platform about page placement.

use std::cell::Cell;

use crate::types::{Nanos, Page, TierId, TierInfo};

/// A resident page found by [`Memory::scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resident {
    /// The page (the first base page of a huge page).
    pub page: Page,
    /// Its tier.
    pub tier: TierId,
    /// True for a 2 MiB huge page (512 base pages).
    pub huge: bool,
}

/// Where a wrapping scan resumes. Keep one per scanning purpose (FreqTier §V-B-1 keeps
/// its demotion scan position between demotion rounds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanCursor {
    /// The next page address to look at.
    pub next: Page,
    /// Completed passes over the address space (incremented on every wrap).
    pub passes: u64,
}

/// The outcome of migrating one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoveStatus {
    /// The page now lives on the destination tier.
    Moved,
    /// It already lived there; nothing was done.
    AlreadyThere,
    /// The page is not resident (never touched, freed, or unmapped).
    NotResident,
    /// The destination tier has no free page.
    NoSpace,
    /// The page is temporarily unmovable (locked, under writeback, pinned): retry later.
    Busy,
    /// The destination is not a tier of this platform.
    NoSuchTier,
    /// Another failure, with the errno the kernel returned (live platforms).
    Failed(i32),
}

impl MoveStatus {
    /// A short stable name for reports, e.g. `"no-space"`.
    pub fn cause(&self) -> &'static str {
        match self {
            Self::Moved => "moved",
            Self::AlreadyThere => "already-there",
            Self::NotResident => "not-resident",
            Self::NoSpace => "no-space",
            Self::Busy => "busy",
            Self::NoSuchTier => "no-such-tier",
            Self::Failed(_) => "failed",
        }
    }
}

/// A process's memory as a policy sees it: tiers, occupancy, the placement of each page,
/// and the one operation that changes placement.
///
/// Implemented by the simulator's machine, by the live `tierkit-linux` process view, and
/// by [`crate::InMemory`] for tests. Policies only get a shared reference (through
/// [`crate::Ctx`]) and queue migrations in a [`crate::Plan`]; the platform's
/// [`crate::Mover`] calls [`migrate`](Memory::migrate) under its rate limits.
pub trait Memory {
    /// The platform's clock.
    fn now(&self) -> Nanos;

    /// The tiers, fastest first; `tiers()[i].id == TierId(i)`.
    fn tiers(&self) -> &[TierInfo];

    /// Free base pages in `tier` for the managed process (0 for an unknown tier).
    fn free_pages(&self, tier: TierId) -> u64;

    /// The tier `page` lives on, or `None` when it is not resident.
    fn tier_of(&self, page: Page) -> Option<TierId>;

    /// Appends up to `max` resident pages to `out`, in increasing address order starting
    /// at `cursor.next`. On reaching the highest resident page the scan wraps to the
    /// lowest (incrementing `cursor.passes`), but a single call never returns a page
    /// twice. Leaves `cursor.next` just past the last page returned. Returns the number
    /// of pages appended (0 only when nothing is resident or `max == 0`).
    fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize;

    /// Moves `pages` to tier `to`, appending one status per page to `out`, in order.
    /// Partial failure is normal: each page succeeds or fails on its own.
    fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>);

    /// The next slower tier after `tier`, if any.
    fn slower_than(&self, tier: TierId) -> Option<TierId> {
        let next = TierId(tier.0.checked_add(1)?);
        (next.index() < self.tiers().len()).then_some(next)
    }

    /// Whether `page` keeps a valid shadow copy on a slower tier, the one it was promoted
    /// from (non-exclusive tiering, see [`crate::Policy::non_exclusive`]): demoting it to
    /// that tier remaps the page to its shadow without copying it. Always false on a
    /// platform without shadows.
    fn shadowed(&self, _page: Page) -> bool {
        false
    }
}

/// A read-only view of another [`Memory`] that counts what [`Memory::scan`] returns: the
/// calls and the units (a huge page is one unit). Past `cap` units it returns none, as
/// if nothing were resident, so a scan that would not end on its own stops there (every
/// scanning policy stops on an empty scan) and the count shows how far it went.
/// Everything else is the other memory's; a migration asked of this view is refused as
/// [`MoveStatus::Busy`] (policies only read their memory).
pub struct ScanMeter<'a> {
    mem: &'a dyn Memory,
    cap: u64,
    calls: Cell<u64>,
    units: Cell<u64>,
}

impl<'a> ScanMeter<'a> {
    /// A view of `mem` whose scans return `cap` units in all.
    pub fn new(mem: &'a dyn Memory, cap: u64) -> Self {
        Self { mem, cap, calls: Cell::new(0), units: Cell::new(0) }
    }

    /// Calls of [`Memory::scan`] so far.
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }

    /// Units returned by those calls.
    pub fn units(&self) -> u64 {
        self.units.get()
    }
}

impl Memory for ScanMeter<'_> {
    fn now(&self) -> Nanos {
        self.mem.now()
    }

    fn tiers(&self) -> &[TierInfo] {
        self.mem.tiers()
    }

    fn free_pages(&self, tier: TierId) -> u64 {
        self.mem.free_pages(tier)
    }

    fn tier_of(&self, page: Page) -> Option<TierId> {
        self.mem.tier_of(page)
    }

    fn shadowed(&self, page: Page) -> bool {
        self.mem.shadowed(page)
    }

    fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
        self.calls.set(self.calls.get() + 1);
        let left = usize::try_from(self.cap.saturating_sub(self.units.get())).unwrap_or(usize::MAX);
        let n = self.mem.scan(cursor, max.min(left), out);
        self.units.set(self.units.get() + n as u64);
        n
    }

    fn migrate(&mut self, pages: &[Page], _to: TierId, out: &mut Vec<MoveStatus>) {
        out.extend(pages.iter().map(|_| MoveStatus::Busy));
    }
}
