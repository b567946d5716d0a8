//! The simulated machine's page table: which tier every page lives on, capacities,
//! first-touch allocation, and migration with its costs. Implements
//! [`tierkit_core::Memory`], so policies see it exactly as they see a live process.
//!
//! Non-exclusive tiering (NOMAD, OSDI '24 §3), on once [`Machine::keep_shadows`] is
//! called (for a policy whose [`tierkit_core::Policy::non_exclusive`] says so):
//!
//! - A promotion keeps the page's old copy as a shadow on the tier it came from; the
//!   shadow occupies a page of that tier until it is dropped.
//! - A write to the page ([`Machine::write`]) drops its shadow, at the stall of a
//!   write-protection fault (`migration.write_protect_fault_ns`).
//! - Demoting a page to the tier that holds its shadow remaps it: no bytes moved, CPU
//!   `migration.remap_ns_per_page`. Any other move copies as usual and drops the shadow.
//! - When a tier has no free page for a copy or a first touch, a shadow on it is
//!   reclaimed first (in address order from where the last reclaim stopped).
//! - Promotions are transactional: each page is copied (bytes and `cpu_ns_per_page`, as
//!   any migration) while it stays mapped, then committed. The `k`-th copy of a
//!   `migrate` call is taken to run over the `k` copy times (`cpu_ns_per_page` each)
//!   before the call's commit point, the machine's clock; a write to the page in that
//!   window aborts the commit ([`MoveStatus::Busy`], the copy's cost spent). The commit's
//!   second round of TLB shootdowns costs `cpu_ns_per_call` once more per call.

use std::cell::Cell;

use tierkit_core::{Memory, MoveStatus, Nanos, Page, Resident, ScanCursor, TierId, TierInfo, PAGE_SIZE};

use crate::model::MachineConfig;

/// Marks a page no access has touched yet.
const UNMAPPED: u8 = u8::MAX;

/// Pages of a simulated process on a simulated machine. Page ids are the workload's
/// dense ids `0..pages`, and address order is id order.
pub struct Machine {
    tiers: Vec<TierInfo>,
    used: Vec<u64>,
    place: Vec<u8>,
    /// First touch stops using the fast tier at this many used pages.
    fast_alloc_limit: u64,
    now: Nanos,
    migration_bytes: Vec<u64>,
    migration_cpu_ns: f64,
    scan_cpu_ns: Cell<f64>,
    cfg_cpu_per_page: f64,
    cfg_cpu_per_call: f64,
    cfg_pte_ns: f64,
    /// Pages moved to a faster tier so far.
    pub promotions: u64,
    /// Pages moved to a slower tier so far.
    pub demotions: u64,
    /// Pages copied so far: every promotion and demotion of an exclusive machine; without
    /// shadow remaps, with aborted transactional copies, under non-exclusive tiering.
    pub copied: u64,
    shadows: Option<Box<Shadows>>,
    cfg_remap_ns: f64,
    cfg_write_fault_ns: f64,
}

/// Non-exclusive tiering's state (see the module documentation).
struct Shadows {
    /// Per page: 1 + the tier holding its shadow, or 0.
    of: Vec<u8>,
    /// Per page: the time of its last write (ns; 0 for never).
    written: Vec<Nanos>,
    /// Shadow pages held per tier.
    held: Vec<u64>,
    /// Where the next reclaim looks for a shadow.
    cursor: usize,
    counts: ShadowCounts,
}

/// What non-exclusive tiering did on a [`Machine`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShadowCounts {
    /// Shadows held now.
    pub held: u64,
    /// Demotions made by remapping to a shadow (no copy).
    pub remaps: u64,
    /// Transactional promotions aborted by a write during the copy.
    pub aborts: u64,
    /// Shadows dropped by a write.
    pub dropped: u64,
    /// Shadows reclaimed for a tier short of free pages.
    pub reclaimed: u64,
}

/// Tier capacities for `pages` pages at fast:slow `ratio`: the fast tier holds
/// `ceil(pages · f / (f + s))`, every slower tier can hold the whole footprint (so the
/// slow tier never runs out; the experiments of the papers size CXL likewise).
pub fn capacities(tiers: usize, pages: u64, ratio: (u64, u64)) -> Vec<u64> {
    let (f, s) = ratio;
    let fast = ((pages as u128 * f as u128).div_ceil((f + s) as u128) as u64).max(1);
    std::iter::once(fast).chain(std::iter::repeat_n(pages.max(1), tiers - 1)).collect()
}

impl Machine {
    /// A machine with `capacities` (pages per tier, fastest first) for a workload of
    /// `pages` pages.
    pub fn new(cfg: &MachineConfig, capacities: &[u64], pages: u64) -> Self {
        let tiers = cfg
            .tiers
            .iter()
            .zip(capacities)
            .enumerate()
            .map(|(i, (t, &cap))| TierInfo {
                id: TierId(i as u8),
                name: t.name.clone(),
                capacity_pages: cap,
                unloaded_latency_ns: Some(t.latency_ns),
                bandwidth_gbps: Some(t.bandwidth_gbps),
            })
            .collect::<Vec<_>>();
        let watermark = (capacities[0] as f64 * cfg.alloc_watermark).ceil() as u64;
        Self {
            used: vec![0; tiers.len()],
            migration_bytes: vec![0; tiers.len()],
            tiers,
            place: vec![UNMAPPED; pages as usize],
            fast_alloc_limit: capacities[0].saturating_sub(watermark),
            now: 0,
            migration_cpu_ns: 0.0,
            scan_cpu_ns: Cell::new(0.0),
            cfg_cpu_per_page: cfg.migration.cpu_ns_per_page,
            cfg_cpu_per_call: cfg.migration.cpu_ns_per_call,
            cfg_pte_ns: cfg.mechanisms.pte_ns,
            promotions: 0,
            demotions: 0,
            copied: 0,
            shadows: None,
            cfg_remap_ns: cfg.migration.remap_ns_per_page,
            cfg_write_fault_ns: cfg.migration.write_protect_fault_ns,
        }
    }

    /// Turns non-exclusive tiering on (see the module documentation).
    pub fn keep_shadows(&mut self) {
        let pages = self.place.len();
        let counts = ShadowCounts::default();
        let held = vec![0; self.tiers.len()];
        self.shadows = Some(Box::new(Shadows { of: vec![0; pages], written: vec![0; pages], held, cursor: 0, counts }));
    }

    /// Whether non-exclusive tiering is on.
    pub fn keeps_shadows(&self) -> bool {
        self.shadows.is_some()
    }

    /// What non-exclusive tiering did so far (all zero when it is off).
    pub fn shadow_counts(&self) -> ShadowCounts {
        self.shadows
            .as_ref()
            .map_or_else(ShadowCounts::default, |s| ShadowCounts { held: s.held.iter().sum(), ..s.counts })
    }

    /// Records a write to `page` at `time` under non-exclusive tiering: it drops the
    /// page's shadow. Returns the stall it costs the writing thread, ns (0 when off).
    pub fn write(&mut self, page: u64, time: Nanos) -> f64 {
        let Some(s) = self.shadows.as_mut() else { return 0.0 };
        let p = page as usize;
        s.written[p] = time.max(1);
        match s.of[p] {
            0 => 0.0,
            t => {
                s.of[p] = 0;
                s.held[t as usize - 1] -= 1;
                s.counts.dropped += 1;
                self.cfg_write_fault_ns
            }
        }
    }

    /// Shadow pages held on tier `t`.
    #[inline]
    fn held(&self, t: usize) -> u64 {
        self.shadows.as_ref().map_or(0, |s| s.held[t])
    }

    /// Frees one shadow held on `tier`; false when it holds none.
    fn reclaim_shadow(&mut self, tier: usize) -> bool {
        let Some(s) = self.shadows.as_mut().filter(|s| s.held[tier] > 0) else { return false };
        let n = s.of.len();
        let want = tier as u8 + 1;
        let at = (0..n).map(|i| (s.cursor + i) % n).find(|&p| s.of[p] == want).expect("a held shadow");
        s.of[at] = 0;
        s.held[tier] -= 1;
        s.counts.reclaimed += 1;
        s.cursor = (at + 1) % n;
        true
    }

    /// Moves resident `page` from `from` to `to` (see the module documentation);
    /// `copying` counts the call's transactional copies so far.
    fn move_page(&mut self, page: Page, from: TierId, to: TierId, copying: &mut u64) -> MoveStatus {
        let p = page as usize;
        let (f, t) = (from.index(), to.index());
        let shadow = self.shadows.as_ref().map_or(0, |s| s.of[p]);
        if shadow == to.0 + 1 {
            let s = self.shadows.as_mut().expect("a shadow");
            s.of[p] = 0;
            s.held[t] -= 1;
            s.counts.remaps += 1;
            self.used[f] -= 1;
            self.used[t] += 1;
            self.place[p] = to.0;
            self.migration_cpu_ns += self.cfg_remap_ns;
            self.demotions += 1;
            return MoveStatus::Moved;
        }
        if self.free_pages(to) == 0 && !self.reclaim_shadow(t) {
            return MoveStatus::NoSpace;
        }
        self.migration_bytes[f] += PAGE_SIZE;
        self.migration_bytes[t] += PAGE_SIZE;
        self.migration_cpu_ns += self.cfg_cpu_per_page;
        self.copied += 1;
        let now = self.now;
        let copy_ns = self.cfg_cpu_per_page;
        if let Some(s) = self.shadows.as_mut() {
            if to < from {
                *copying += 1;
                let start = now.saturating_sub((*copying as f64 * copy_ns) as Nanos);
                if s.written[p] != 0 && s.written[p] >= start {
                    s.counts.aborts += 1;
                    return MoveStatus::Busy;
                }
            }
            if shadow != 0 {
                s.of[p] = 0;
                s.held[shadow as usize - 1] -= 1;
            }
            if to < from {
                s.of[p] = from.0 + 1;
                s.held[f] += 1;
            }
        }
        self.used[f] -= 1;
        self.used[t] += 1;
        self.place[p] = to.0;
        if to < from {
            self.promotions += 1;
        } else {
            self.demotions += 1;
        }
        MoveStatus::Moved
    }

    /// The tier index of `page`, or `None` before its first touch.
    #[inline(always)]
    pub fn tier_index(&self, page: u64) -> Option<u8> {
        let t = self.place[page as usize];
        (t != UNMAPPED).then_some(t)
    }

    /// The placement table: each page's tier index by page id.
    pub fn placement(&self) -> &[u8] {
        &self.place
    }

    /// Hints the CPU to load `page`'s placement byte (the engine runs a few accesses
    /// ahead: the table is as large as the footprint and random lookups miss cache).
    #[inline(always)]
    pub fn prefetch(&self, page: u64) {
        tierkit_core::prefetch::prefetch_at(&self.place, page as usize);
    }

    /// First touch as Linux does it: the fast tier while its used pages are below the
    /// allocation watermark (or `fast_ok` is false), then the next tier with room.
    #[inline]
    pub fn first_touch(&mut self, page: u64, fast_ok: bool) -> u8 {
        let tier = if fast_ok && self.used[0] < self.fast_alloc_limit {
            0
        } else {
            let n = self.tiers.len();
            (1..n)
                .find(|&t| self.used[t] + self.held(t) < self.tiers[t].capacity_pages)
                .or_else(|| (1..n).find(|&t| self.reclaim_shadow(t)))
                .unwrap_or(n - 1)
        };
        self.used[tier] += 1;
        self.place[page as usize] = tier as u8;
        tier as u8
    }

    /// Advances the clock.
    pub fn set_now(&mut self, now: Nanos) {
        self.now = now;
    }

    /// Migration traffic per tier (bytes) and CPU (ns) accumulated since the last call,
    /// plus the CPU of scans made through [`Memory::scan`].
    pub fn take_costs(&mut self) -> (Vec<u64>, f64) {
        let bytes = std::mem::replace(&mut self.migration_bytes, vec![0; self.tiers.len()]);
        let cpu = std::mem::take(&mut self.migration_cpu_ns) + self.scan_cpu_ns.replace(0.0);
        (bytes, cpu)
    }

    /// Used pages per tier.
    pub fn used(&self) -> &[u64] {
        &self.used
    }

    /// Number of page ids.
    pub fn pages(&self) -> u64 {
        self.place.len() as u64
    }
}

impl Memory for Machine {
    fn now(&self) -> Nanos {
        self.now
    }

    fn tiers(&self) -> &[TierInfo] {
        &self.tiers
    }

    fn free_pages(&self, tier: TierId) -> u64 {
        let t = tier.index();
        self.tiers.get(t).map_or(0, |info| info.capacity_pages.saturating_sub(self.used[t] + self.held(t)))
    }

    fn shadowed(&self, page: Page) -> bool {
        let shadows = self.shadows.as_ref();
        shadows.is_some_and(|s| usize::try_from(page).ok().and_then(|p| s.of.get(p)).is_some_and(|&t| t != 0))
    }

    fn tier_of(&self, page: Page) -> Option<TierId> {
        self.place.get(usize::try_from(page).ok()?).filter(|&&t| t != UNMAPPED).map(|&t| TierId(t))
    }

    fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
        let n = self.place.len() as u64;
        if n == 0 || max == 0 {
            return 0;
        }
        let start = cursor.next.min(n);
        let mut found = 0;
        let mut visited = 0u64;
        let mut page = start;
        // One pass at most: from the cursor to the end, then from 0 back to the start.
        while visited < n && found < max {
            if page >= n {
                page = 0;
                cursor.passes += 1;
            }
            let t = self.place[page as usize];
            if t != UNMAPPED {
                out.push(Resident { page, tier: TierId(t), huge: false });
                found += 1;
            }
            page += 1;
            visited += 1;
        }
        cursor.next = page;
        // Reading a PTE per page visited (what a pagemap or page-table walk costs).
        self.scan_cpu_ns.set(self.scan_cpu_ns.get() + visited as f64 * self.cfg_pte_ns);
        found
    }

    fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
        self.migration_cpu_ns += self.cfg_cpu_per_call;
        let mut copying = 0;
        for &page in pages {
            let status = match self.tier_of(page) {
                _ if to.index() >= self.tiers.len() => MoveStatus::NoSuchTier,
                None => MoveStatus::NotResident,
                Some(from) if from == to => MoveStatus::AlreadyThere,
                Some(from) => self.move_page(page, from, to, &mut copying),
            };
            out.push(status);
        }
        if copying > 0 {
            self.migration_cpu_ns += self.cfg_cpu_per_call; // the commit's TLB shootdowns
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(pages: u64, ratio: (u64, u64)) -> Machine {
        let cfg = MachineConfig::preset("cxl").unwrap();
        Machine::new(&cfg, &capacities(2, pages, ratio), pages)
    }

    #[test]
    fn first_touch_fills_fast_to_the_watermark_then_slow() {
        let mut m = machine(1700, (1, 16)); // fast = 100 pages, watermark 1 page
        let tiers: Vec<u8> = (0..1700).map(|p| m.first_touch(p, true)).collect();
        assert_eq!(tiers.iter().filter(|&&t| t == 0).count(), 99);
        assert_eq!(m.free_pages(TierId(0)), 1);
        assert_eq!(m.tier_of(5), Some(TierId(0)));
        assert_eq!(m.tier_of(1699), Some(TierId(1)));
        assert_eq!(m.tier_of(99_999), None);
    }

    #[test]
    fn migration_counts_bytes_cpu_and_direction() {
        let mut m = machine(200, (1, 1)); // fast 100
        for p in 0..150 {
            m.first_touch(p, true);
        }
        let mut out = Vec::new();
        m.migrate(&[120, 121, 5, 500], TierId(0), &mut out);
        assert_eq!(out, [MoveStatus::Moved, MoveStatus::NoSpace, MoveStatus::AlreadyThere, MoveStatus::NotResident]);
        m.migrate(&[0], TierId(1), &mut out);
        assert_eq!((m.promotions, m.demotions), (1, 1));
        let (bytes, cpu) = m.take_costs();
        assert_eq!(bytes, vec![2 * 4096, 2 * 4096]);
        assert_eq!(cpu, 2.0 * 20_000.0 + 2.0 * 5_000.0);
        assert_eq!(m.take_costs().1, 0.0, "costs are drained");
    }

    #[test]
    fn scan_visits_resident_pages_in_order_and_wraps() {
        let mut m = machine(10, (1, 1));
        for p in [2, 5, 7] {
            m.first_touch(p, true);
        }
        let mut c = ScanCursor { next: 6, passes: 0 };
        let mut out = Vec::new();
        assert_eq!(m.scan(&mut c, 10, &mut out), 3);
        assert_eq!(out.iter().map(|r| r.page).collect::<Vec<_>>(), [7, 2, 5]);
        assert_eq!(c.passes, 1);
        assert!(m.take_costs().1 > 0.0, "scanning costs CPU");
    }

    #[test]
    fn capacities_follow_the_ratio() {
        assert_eq!(capacities(2, 1700, (1, 16)), [100, 1700]);
        assert_eq!(capacities(2, 1000, (1, 8)), [112, 1000]);
        assert_eq!(capacities(3, 10, (1, 1)), [5, 10, 10]);
    }
}
