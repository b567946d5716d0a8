//! The simulated machine's page table: which tier every page lives on, capacities,
//! first-touch allocation, and migration with its costs. Implements
//! [`tierkit_core::Memory`], so policies see it exactly as they see a live process.

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
    /// Pages moved to a faster / slower tier so far.
    pub promotions: u64,
    /// Pages moved to a slower tier so far.
    pub demotions: u64,
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
        }
    }

    /// The tier index of `page`, or `None` before its first touch.
    #[inline(always)]
    pub fn tier_index(&self, page: u64) -> Option<u8> {
        let t = self.place[page as usize];
        (t != UNMAPPED).then_some(t)
    }

    /// Hints the CPU to load `page`'s placement byte (the engine runs a few accesses
    /// ahead: the table is as large as the footprint and random lookups miss cache).
    #[inline(always)]
    pub fn prefetch(&self, page: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(byte) = self.place.get(page as usize) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: a prefetch is only a hint and never faults; the address is valid.
            unsafe { _mm_prefetch::<_MM_HINT_T0>((byte as *const u8).cast::<i8>()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = page;
    }

    /// First touch as Linux does it: the fast tier while its used pages are below the
    /// allocation watermark (or `fast_ok` is false), then the next tier with room.
    #[inline]
    pub fn first_touch(&mut self, page: u64, fast_ok: bool) -> u8 {
        let tier = if fast_ok && self.used[0] < self.fast_alloc_limit {
            0
        } else {
            (1..self.tiers.len()).find(|&t| self.used[t] < self.tiers[t].capacity_pages).unwrap_or(self.tiers.len() - 1)
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
        self.tiers.get(tier.index()).map_or(0, |t| t.capacity_pages.saturating_sub(self.used[tier.index()]))
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
        for &page in pages {
            let status = match self.tier_of(page) {
                _ if to.index() >= self.tiers.len() => MoveStatus::NoSuchTier,
                None => MoveStatus::NotResident,
                Some(from) if from == to => MoveStatus::AlreadyThere,
                Some(_) if self.free_pages(to) == 0 => MoveStatus::NoSpace,
                Some(from) => {
                    self.used[from.index()] -= 1;
                    self.used[to.index()] += 1;
                    self.place[page as usize] = to.0;
                    self.migration_bytes[from.index()] += PAGE_SIZE;
                    self.migration_bytes[to.index()] += PAGE_SIZE;
                    self.migration_cpu_ns += self.cfg_cpu_per_page;
                    if to < from {
                        self.promotions += 1;
                    } else {
                        self.demotions += 1;
                    }
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
