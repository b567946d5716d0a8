//! `tpp`: Transparent Page Placement (TPP, ASPLOS '23, §5), Meta's kernel tiering for
//! CXL memory, as a tierkit policy.
//!
//! - **Promotion (§5.3).** NUMA hint faults sample the slow tier only. A fault on a page
//!   on the slow node's *inactive* LRU only marks it accessed and activates it; a fault
//!   on a page already *active* makes it a promotion candidate (two-touch hysteresis
//!   against ping-pong). Promotion ignores the allocation watermark: it needs only a
//!   free fast page. With `active_lru_filter: false` every fault promotes, as default
//!   NUMA balancing does ("instant promotion").
//! - **Fast-tier LRU and demotion (§5.1, §5.2).** Fast pages sit on an active and an
//!   inactive list: first-touch allocations enter the inactive list (Linux ≥ 5.9 starts
//!   new anonymous pages there), promoted pages the active one (migration keeps
//!   `PG_active`). The kernel LRU learns which fast pages are in use from their accessed
//!   bits; here an accessed-bit check every `referenced_interval` moves each referenced
//!   fast page to the head of the active list (the activation `page_check_references`
//!   gives a referenced page reclaim finds). Once free fast memory falls below
//!   `demote_scale_factor` of the tier, kswapd demotes from the inactive tail, then from
//!   the active tail, until `demotion_watermark` is free. kswapd wakes whenever free
//!   memory is short, so it runs after every event batch and every tick.
//! - **Decoupled allocation watermark (§5.2).** The platform places first touches (the
//!   simulator's `alloc_watermark`, 1%) and a policy cannot move that watermark. TPP's
//!   side of the decoupling is reclaim: demoting from 2% free up to the higher demotion
//!   watermark keeps headroom above the allocation watermark, so new allocations and
//!   promotions keep landing in DRAM.
//! - **Page-type-aware allocation (§5.4).** The platform decides where a first touch
//!   lands, so a file or tmpfs page allocated on the fast tier is queued for demotion at
//!   once: it reaches the slow tier and, like any slow page, comes back only if it turns
//!   hot.
//! - **Observability (§5.5).** [`TppStats`]: hint faults, promotion candidates,
//!   promotions, promotion failures, demotions and ping-pong (pages demoted and later
//!   promoted again, tracked with a `PG_demoted`-style flag).
//!
//! The same policy runs NOMAD ([`TppPolicy::nomad`], `super::nomad`): TPP's decisions
//! with shadow-aware demotion and a bounded promotion queue, on a non-exclusive platform.

use super::lru_lists::LruLists;
use crate::memory::MoveStatus;
use crate::policy::{AccessedScan, Ctx, HintFaults, Migration, Policy, SourceRequest};
use crate::sketches::PageTable;
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, PageKind, TierId, MILLISECOND, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`TppPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TppParams {
    /// Pages protected per scan. TPP §5.3: NUMA balancing samples "by default, 256MB of
    /// pages" (65536 4 KiB pages; Linux `numa_balancing_scan_size_mb` = 256).
    pub scan_window_pages: u64,
    /// Time between scans. Linux `numa_balancing_scan_period_min_ms` = 1000, the period
    /// of a process whose footprint fits in one window.
    pub scan_period: Nanos,
    /// Reclaim starts when free fast pages fall below this fraction of the tier. TPP
    /// §5.2: `demote_scale_factor`, "empirically set to 2%".
    pub demote_scale_factor: f64,
    /// Reclaim stops when this fraction is free. TPP §5.2 only requires it above the
    /// allocation and low watermarks; TPP's kernel patch makes each kswapd pass reclaim
    /// another `WMARK_DEMOTE` (2%) of the node (`kswapd_shrink_node`), hence 4%.
    pub demotion_watermark: f64,
    /// Promote only pages found on the active LRU (TPP §5.3); false promotes at every
    /// slow-tier fault (default NUMA balancing, the "instant promotion" TPP replaces).
    pub active_lru_filter: bool,
    /// Send file and tmpfs pages to the slow tier first (TPP §5.4, an opt-in policy
    /// in the paper; on here as in its Table 2 runs).
    pub type_aware_allocation: bool,
    /// Period of the accessed-bit checks of fast pages; 0 turns them off (the lists
    /// then age in insertion order). TPP is silent (the kernel checks a page's bits
    /// when reclaim reaches it, and TPP's reclaim runs continuously); 100 ms, the
    /// policy tick, keeps the information fresher than the lists turn over.
    pub referenced_interval: Nanos,
}

impl Default for TppParams {
    fn default() -> Self {
        Self {
            scan_window_pages: 65_536,
            scan_period: SECOND,
            demote_scale_factor: 0.02,
            demotion_watermark: 0.04,
            active_lru_filter: true,
            type_aware_allocation: true,
            referenced_interval: 100 * MILLISECOND,
        }
    }
}

/// TPP's counters (TPP §5.5, exported by its kernel in /proc/vmstat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TppStats {
    /// NUMA hint faults on slow-tier pages (the sampled pages).
    pub hint_faults: u64,
    /// Faults on pages found on the active LRU (promotion attempts).
    pub promotion_candidates: u64,
    /// Pages promoted.
    pub promotions: u64,
    /// Candidates not promoted: no free fast page, or the migration failed.
    pub promotion_failures: u64,
    /// Pages demoted.
    pub demotions: u64,
    /// Promoted pages that had been demoted before (`PG_demoted` set): thrashing.
    pub ping_pong: u64,
    /// NOMAD: promotions whose commit aborted because the page was written during its
    /// copy (the artifact's `transactional_migration_fail`); under TPP such a move is a
    /// promotion failure.
    pub aborted: u64,
    /// NOMAD: demotions of pages that had a valid shadow when queued, remaps without a
    /// copy (the artifact's `shadow_demote_num`).
    pub shadow_demotions: u64,
}

/// Slow-page flag: on the slow node's active LRU.
const ACTIVE: u32 = 1;
/// Slow-page flag: arrived by demotion (TPP's `PG_demoted`).
const DEMOTED: u32 = 2;

/// The fast tier's active LRU list, in [`TppPolicy::lists`].
const ACTIVE_LIST: usize = 0;
/// The fast tier's inactive LRU list.
const INACTIVE_LIST: usize = 1;

/// What NOMAD adds to TPP (see `super::nomad`).
#[derive(Clone, Debug)]
pub(super) struct Shadows {
    /// Promotions queued and not yet executed, at most.
    pub(super) max_queued: usize,
    /// Least recently used pages a demotion looks through for one with a valid shadow.
    pub(super) window: usize,
    /// Fast pages queued for demotion while they had a valid shadow.
    pub(super) remaps: PageTable,
}

/// TPP (or NOMAD, with shadows); see the module documentation.
#[derive(Clone, Debug)]
pub struct TppPolicy {
    params: TppParams,
    /// NOMAD's additions; `None` runs TPP.
    pub(super) shadows: Option<Shadows>,
    /// Fast-tier LRU lists: [`ACTIVE_LIST`] and [`INACTIVE_LIST`].
    lists: LruLists,
    /// [`ACTIVE`] / [`DEMOTED`] flags of slow-tier pages; absent means inactive.
    slow: PageTable,
    /// Migrations queued and not yet reported by `on_moved`.
    queued_promotions: u64,
    queued_demotions: u64,
    stats: TppStats,
}

impl TppPolicy {
    /// TPP for `setup` (its lists grow with the pages they hold).
    pub fn new(params: TppParams) -> Result<Self, ParamError> {
        if params.scan_window_pages == 0 {
            return Err(ParamError::new("scan_window_pages", 0, "at least 1 page"));
        }
        if params.scan_period == 0 {
            return Err(ParamError::new("scan_period", 0, "a period longer than 0 ns"));
        }
        if !(0.0..0.5).contains(&params.demote_scale_factor) {
            return Err(ParamError::new("demote_scale_factor", params.demote_scale_factor, "a fraction in [0, 0.5)"));
        }
        if !(params.demote_scale_factor..0.5).contains(&params.demotion_watermark) {
            return Err(ParamError::new(
                "demotion_watermark",
                params.demotion_watermark,
                "a fraction with demote_scale_factor <= demotion_watermark < 0.5",
            ));
        }
        Ok(Self {
            params,
            shadows: None,
            lists: LruLists::new(2),
            slow: PageTable::new(),
            queued_promotions: 0,
            queued_demotions: 0,
            stats: TppStats::default(),
        })
    }

    /// The §5.5 counters so far.
    pub fn stats(&self) -> TppStats {
        self.stats
    }

    /// Free fast pages once the queued migrations are done (demotions run first).
    fn room(&self, ctx: &Ctx<'_>) -> i64 {
        ctx.mem.free_pages(TierId::FAST) as i64 + self.queued_demotions as i64 - self.queued_promotions as i64
    }

    fn queue_demotion(&mut self, page: Page, ctx: &mut Ctx<'_>) {
        if let Some(to) = ctx.mem.slower_than(TierId::FAST) {
            if let Some(s) = self.shadows.as_mut().filter(|_| ctx.mem.shadowed(page)) {
                *s.remaps.entry(page, 1) = 1;
            }
            ctx.plan.push(page, to);
            self.queued_demotions += 1;
        }
    }

    fn on_slow_fault(&mut self, page: Page, ctx: &mut Ctx<'_>) {
        self.stats.hint_faults += 1;
        if self.params.active_lru_filter {
            let flags = self.slow.entry(page, 0);
            if *flags & ACTIVE == 0 {
                *flags |= ACTIVE; // §5.3 ②: mark accessed, move to the active list
                return;
            }
        }
        self.stats.promotion_candidates += 1;
        let queue_full = self.shadows.as_ref().is_some_and(|s| self.queued_promotions as usize >= s.max_queued);
        if self.room(ctx) > 0 && !queue_full {
            ctx.promote(page);
            self.queued_promotions += 1;
        } else {
            self.stats.promotion_failures += 1;
        }
    }

    /// An accessed-bit check found `page` referenced: a fast page is (re)activated,
    /// a slow page ignored (TPP learns about slow pages from hint faults).
    fn referenced(&mut self, page: Page) {
        self.lists.move_to(ACTIVE_LIST, page);
    }

    /// The next victim of `list`: under NOMAD the first page with a valid shadow among
    /// its `window` least recent, else (and under TPP) its least recent.
    fn victim(lists: &mut LruLists, list: usize, window: usize, ctx: &Ctx<'_>) -> Option<Page> {
        let page = lists
            .tail_first(list)
            .take(window)
            .find(|&p| ctx.mem.shadowed(p))
            .or_else(|| lists.tail_first(list).next())?;
        lists.remove(page);
        Some(page)
    }

    /// kswapd (TPP §5.1–5.2): below `demote_scale_factor` free, demote inactive pages
    /// (then active ones, oldest first) until `demotion_watermark` is free.
    fn reclaim(&mut self, ctx: &mut Ctx<'_>) {
        let capacity = ctx.mem.tiers().first().map_or(0.0, |t| t.capacity_pages as f64);
        if (self.room(ctx) as f64) >= self.params.demote_scale_factor * capacity {
            return;
        }
        let target = (self.params.demotion_watermark * capacity).ceil() as i64;
        let window = self.shadows.as_ref().map_or(0, |s| s.window);
        while self.room(ctx) < target {
            let list = if self.lists.len(INACTIVE_LIST) > 0 { INACTIVE_LIST } else { ACTIVE_LIST };
            match Self::victim(&mut self.lists, list, window, ctx) {
                Some(victim) => self.queue_demotion(victim, ctx),
                None => return,
            }
        }
    }
}

impl Policy for TppPolicy {
    fn name(&self) -> &str {
        match (self.shadows.is_some(), self.params.active_lru_filter) {
            (true, _) => "nomad",
            (false, true) => "tpp",
            (false, false) => "tpp-instant",
        }
    }

    /// Three scan periods: a page is protected by one scan, faults, and is promoted
    /// before the next scan finds it again.
    fn horizon(&self) -> Nanos {
        3 * self.params.scan_period
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest {
            hint_faults: Some(HintFaults {
                window_pages: self.params.scan_window_pages,
                period: self.params.scan_period,
                slow_tiers_only: true,
            }),
            accessed: (self.params.referenced_interval > 0).then_some(AccessedScan {
                sample_interval: self.params.referenced_interval,
                aggregation_interval: self.params.referenced_interval,
                regions: None,
            }),
            allocations: true,
            ..Default::default()
        }
    }

    fn non_exclusive(&self) -> bool {
        self.shadows.is_some()
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, kind, tier } if tier == TierId::FAST => {
                    if kind != PageKind::Anon && self.params.type_aware_allocation {
                        self.queue_demotion(page, ctx); // §5.4: caches belong on CXL first
                    } else {
                        self.lists.touch(INACTIVE_LIST, page);
                    }
                }
                Event::HintFault { page, tier, .. } if tier != TierId::FAST => self.on_slow_fault(page, ctx),
                Event::Accessed { first, pages: 1, count } if count > 0 => self.referenced(first),
                Event::Free { page } => {
                    self.lists.remove(page);
                    self.slow.remove(page);
                }
                _ => {}
            }
        }
        self.reclaim(ctx);
    }

    fn on_tick(&mut self, _telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.reclaim(ctx);
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for &(m, status) in results {
            if m.to == TierId::FAST {
                self.queued_promotions = self.queued_promotions.saturating_sub(1);
                match status {
                    MoveStatus::Moved => {
                        self.stats.promotions += 1;
                        if self.slow.remove(m.page).is_some_and(|f| f & DEMOTED != 0) {
                            self.stats.ping_pong += 1;
                        }
                        self.lists.touch(ACTIVE_LIST, m.page);
                    }
                    MoveStatus::AlreadyThere => {}
                    // NOMAD: written during the copy; still active, promoted at a later fault.
                    MoveStatus::Busy if self.shadows.is_some() => self.stats.aborted += 1,
                    _ => self.stats.promotion_failures += 1,
                }
            } else {
                self.queued_demotions = self.queued_demotions.saturating_sub(1);
                let remap = self.shadows.as_mut().is_some_and(|s| s.remaps.remove(m.page).is_some());
                match status {
                    MoveStatus::Moved => {
                        self.stats.demotions += 1;
                        self.stats.shadow_demotions += remap as u64;
                        *self.slow.entry(m.page, 0) = DEMOTED; // lands inactive, flagged
                    }
                    // Still on the fast tier: back on the inactive list for a later pass.
                    MoveStatus::NoSpace | MoveStatus::Busy | MoveStatus::Failed(_) => {
                        self.lists.touch(INACTIVE_LIST, m.page)
                    }
                    _ => {}
                }
            }
        }
    }

    fn metadata_bytes(&self) -> usize {
        let remaps = self.shadows.as_ref().map_or(0, |s| s.remaps.heap_bytes());
        self.lists.heap_bytes() + self.slow.heap_bytes() + remaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan};

    fn fault(page: Page) -> Event {
        Event::HintFault { page, tier: TierId(1), since_protect: 1000, time: 0 }
    }

    fn alloc(page: Page, kind: PageKind, tier: TierId) -> Event {
        Event::Alloc { page, kind, tier }
    }

    /// One event batch, then the mover.
    fn step(policy: &mut TppPolicy, mem: &mut InMemory, events: &[Event]) {
        let mut plan = Plan::default();
        let mut sources = policy.sources();
        policy.on_events(events, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
    }

    /// 100 fast pages (0..99 allocated there, 1 free), slow pages 1000.. allocated slow.
    fn setup(params: TppParams) -> (TppPolicy, InMemory) {
        let mut mem = InMemory::new(&[100, 1000]).unwrap();
        let mut events = Vec::new();
        for p in 0..99 {
            mem.touch(p);
            events.push(alloc(p, PageKind::Anon, TierId::FAST));
        }
        for p in 1000..1100 {
            mem.place(p, TierId(1), false);
            events.push(alloc(p, PageKind::Anon, TierId(1)));
        }
        let mut policy = TppPolicy::new(params).unwrap();
        step(&mut policy, &mut mem, &events);
        (policy, mem)
    }

    #[test]
    fn reclaim_keeps_headroom_demoting_the_oldest_inactive_pages() {
        // 1 page free < 2%: kswapd demotes up to 4% free, oldest allocations first.
        let (policy, mem) = setup(TppParams::default());
        assert_eq!(mem.free_pages(TierId::FAST), 4);
        assert!((0..3).all(|p| mem.tier_of(p) == Some(TierId(1))), "pages 0..3 were allocated first");
        assert_eq!(mem.tier_of(3), Some(TierId::FAST));
        assert_eq!(policy.stats().demotions, 3);
    }

    #[test]
    fn a_page_is_promoted_at_its_second_fault_only() {
        let (mut policy, mut mem) = setup(TppParams::default());
        step(&mut policy, &mut mem, &[fault(1000)]);
        assert_eq!(mem.tier_of(1000), Some(TierId(1)), "first fault only activates");
        assert_eq!(policy.stats().promotion_candidates, 0);
        step(&mut policy, &mut mem, &[fault(1000)]);
        assert_eq!(mem.tier_of(1000), Some(TierId::FAST), "found active: promoted");
        let s = policy.stats();
        assert_eq!((s.hint_faults, s.promotion_candidates, s.promotions, s.ping_pong), (2, 1, 1, 0));
    }

    #[test]
    fn instant_promotion_promotes_at_the_first_fault() {
        let params = TppParams { active_lru_filter: false, ..Default::default() };
        let (mut policy, mut mem) = setup(params);
        step(&mut policy, &mut mem, &[fault(1000)]);
        assert_eq!(mem.tier_of(1000), Some(TierId::FAST));
        assert_eq!(policy.name(), "tpp-instant");
    }

    #[test]
    fn promotions_wait_for_free_fast_pages_and_refill_headroom() {
        let (mut policy, mut mem) = setup(TppParams::default());
        let pages: Vec<Page> = (1000..1010).collect();
        let first: Vec<Event> = pages.iter().map(|&p| fault(p)).collect();
        step(&mut policy, &mut mem, &first); // all activated
        step(&mut policy, &mut mem, &first); // 4 free pages: 4 promoted, 6 refused
        let promoted = pages.iter().filter(|&&p| mem.tier_of(p) == Some(TierId::FAST)).count();
        assert_eq!(promoted, 4);
        assert_eq!(policy.stats().promotion_failures, 6);
        // Reclaim made room again (4% free), so the refused pages get in at their next fault.
        assert_eq!(mem.free_pages(TierId::FAST), 4);
        step(&mut policy, &mut mem, &first);
        assert_eq!(pages.iter().filter(|&&p| mem.tier_of(p) == Some(TierId::FAST)).count(), 8);
    }

    #[test]
    fn demoted_pages_need_two_faults_again_and_count_as_ping_pong() {
        let (mut policy, mut mem) = setup(TppParams::default());
        // Reclaim demoted page 0 during setup.
        step(&mut policy, &mut mem, &[fault(0)]);
        assert_eq!(mem.tier_of(0), Some(TierId(1)), "demoted pages return inactive");
        step(&mut policy, &mut mem, &[fault(0)]);
        assert_eq!(mem.tier_of(0), Some(TierId::FAST));
        assert_eq!(policy.stats().ping_pong, 1);
    }

    #[test]
    fn promoted_pages_outlive_untouched_allocations() {
        let (mut policy, mut mem) = setup(TppParams::default());
        step(&mut policy, &mut mem, &[fault(1000)]);
        step(&mut policy, &mut mem, &[fault(1000)]);
        // Fill the tier with new allocations: reclaim takes inactive pages, not page 1000.
        let mut events = Vec::new();
        for p in 2000..2050 {
            mem.touch(p);
            events.push(alloc(p, PageKind::Anon, mem.tier_of(p).unwrap()));
        }
        step(&mut policy, &mut mem, &events);
        assert_eq!(mem.tier_of(1000), Some(TierId::FAST));
    }

    #[test]
    fn referenced_fast_pages_are_kept_and_idle_ones_demoted() {
        let (mut policy, mut mem) = setup(TppParams::default());
        // Pages 3..6 are next in line; page 3 and 4 were referenced: reclaim skips them.
        let seen = [3, 4].map(|p| Event::Accessed { first: p, pages: 1, count: 2 });
        step(&mut policy, &mut mem, &seen);
        let events: Vec<Event> = (2000..2004).map(|p| alloc(p, PageKind::Anon, TierId::FAST)).collect();
        for p in 2000..2004 {
            mem.touch(p);
        }
        step(&mut policy, &mut mem, &events); // 0 free: demote 4 pages
        assert_eq!([3, 4].map(|p| mem.tier_of(p)), [Some(TierId::FAST); 2]);
        assert_eq!([5, 6, 7, 8].map(|p| mem.tier_of(p)), [Some(TierId(1)); 4]);
        let scan = policy.sources().accessed.unwrap();
        assert_eq!((scan.sample_interval, scan.regions), (100 * MILLISECOND, None));
        let off = TppParams { referenced_interval: 0, ..Default::default() };
        assert_eq!(TppPolicy::new(off).unwrap().sources().accessed, None);
    }

    #[test]
    fn file_and_tmpfs_pages_on_the_fast_tier_go_to_the_slow_tier() {
        let mut mem = InMemory::new(&[100, 1000]).unwrap();
        let mut policy = TppPolicy::new(TppParams::default()).unwrap();
        for (p, kind) in [(1, PageKind::File), (2, PageKind::Tmpfs), (3, PageKind::Anon)] {
            mem.touch(p);
            step(&mut policy, &mut mem, &[alloc(p, kind, TierId::FAST)]);
        }
        assert_eq!([1, 2, 3].map(|p| mem.tier_of(p).unwrap().0), [1, 1, 0]);
        let off = TppParams { type_aware_allocation: false, ..Default::default() };
        let mut policy = TppPolicy::new(off).unwrap();
        mem.touch(4);
        step(&mut policy, &mut mem, &[alloc(4, PageKind::File, TierId::FAST)]);
        assert_eq!(mem.tier_of(4), Some(TierId::FAST));
    }

    #[test]
    fn freed_pages_are_forgotten() {
        let (mut policy, mut mem) = setup(TppParams::default());
        step(&mut policy, &mut mem, &[fault(1000)]);
        mem.free(1000);
        step(&mut policy, &mut mem, &[Event::Free { page: 1000 }]);
        mem.place(1000, TierId(1), false);
        step(&mut policy, &mut mem, &[fault(1000)]);
        assert_eq!(mem.tier_of(1000), Some(TierId(1)), "a new page starts inactive");
        assert!(policy.metadata_bytes() > 0);
    }

    #[test]
    fn parameters_are_checked() {
        let bad = |p: TppParams| TppPolicy::new(p).unwrap_err().param;
        assert_eq!(bad(TppParams { scan_window_pages: 0, ..Default::default() }), "scan_window_pages");
        assert_eq!(bad(TppParams { scan_period: 0, ..Default::default() }), "scan_period");
        assert_eq!(bad(TppParams { demote_scale_factor: 0.7, ..Default::default() }), "demote_scale_factor");
        assert_eq!(bad(TppParams { demotion_watermark: 0.01, ..Default::default() }), "demotion_watermark");
        assert_eq!(bad(TppParams { demote_scale_factor: f64::NAN, ..Default::default() }), "demote_scale_factor");
    }
}
