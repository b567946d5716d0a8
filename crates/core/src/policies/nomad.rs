//! `nomad`: NOMAD (Xiang, Lin, Deng, Lu, Rao, Yuan, Wang, "Nomad: Non-Exclusive Memory
//! Tiering via Transactional Page Migration", OSDI '24) as a tierkit policy.
//!
//! NOMAD keeps TPP's decisions (what to promote, when and what to demote) and changes
//! how pages move (paper §3). The mechanisms are the platform's, asked for with
//! [`Policy::non_exclusive`]; the policy is TPP's, aware of shadows:
//!
//! - **Promotion (TPP §5.3; the artifact's `decide_queue_page`).** NUMA hint faults on
//!   the slow tier only. A fault on an inactive slow page activates it; a fault on an
//!   active one queues its promotion when a fast page is free (two-touch). At most
//!   `max_queued` promotions wait at a time (the artifact's promotion queue).
//! - **Transactional page migration (§3, platform).** The promotion copies the page
//!   while it stays mapped and accessible, then commits the move only if the page was
//!   not written during the copy; otherwise the platform reports [`MoveStatus::Busy`],
//!   the page stays active on the slow tier and its next fault queues it again.
//! - **Page shadowing (§3, platform).** A committed promotion keeps the slow copy as a
//!   shadow, occupying slow-tier capacity, until the first write to the page (a
//!   write-protection fault) drops it; shadows are reclaimed first when the slow tier
//!   runs out of free pages. Demoting a page with a valid shadow remaps it to the shadow:
//!   no copy.
//! - **Demotion (TPP §5.1–5.2, shadow-aware).** kswapd as in TPP: below
//!   `demote_scale_factor` free, demote from the inactive list (then the active list)
//!   until `demotion_watermark` is free. Among the `shadow_window` least recently used
//!   pages of that list, a page with a valid shadow goes first: its demotion costs no
//!   copy; without one, the tail goes.
//! - **Fast-tier LRU, page-type-aware allocation, counters.** As [`super::TppPolicy`]:
//!   accessed-bit checks activate referenced fast pages; file and tmpfs pages allocated
//!   on the fast tier are demoted at once; [`NomadStats`] adds aborted commits and shadow
//!   demotions to TPP's §5.5 counters.
//!
//! Differences from the artifact: it decides a promotion by looking back over the last
//! 20 faults for pages found young and active; here the fault itself finds the page
//! active, as TPP does. Its kernel worker starts a queued copy at once; here the
//! platform's mover executes queued promotions at its next round (as for `tpp`). The
//! shadow-first victim window is tierkit's. On a platform without shadows (a live
//! process) the policy makes exactly TPP's moves.

use super::lru::LruList;
use crate::memory::MoveStatus;
use crate::policy::{AccessedScan, Ctx, HintFaults, Migration, Policy, SourceRequest};
use crate::sketches::PageTable;
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, PageKind, TierId, MILLISECOND, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`NomadPolicy`]. NOMAD runs on TPP's kernel and keeps its settings; the
/// paper states no constant of its own, so the last two are its artifact's or tierkit's.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NomadParams {
    /// Pages protected per scan. TPP's: 256 MB of pages (65536), Linux
    /// `numa_balancing_scan_size_mb`.
    pub scan_window_pages: u64,
    /// Time between scans. TPP's: Linux `numa_balancing_scan_period_min_ms` = 1000.
    pub scan_period: Nanos,
    /// Reclaim starts below this free fraction of the fast tier. TPP §5.2: 2%.
    pub demote_scale_factor: f64,
    /// Reclaim stops at this free fraction. TPP's kernel patch: another 2% per kswapd
    /// pass, 4%.
    pub demotion_watermark: f64,
    /// Send file and tmpfs pages to the slow tier first (TPP §5.4, on as in `tpp`).
    pub type_aware_allocation: bool,
    /// Period of the accessed-bit checks of fast pages; 0 turns them off. As `tpp`
    /// (100 ms, the policy tick).
    pub referenced_interval: Nanos,
    /// Promotions queued and not yet executed, at most. Artifact `PROMOTE_QUEUE_LEN`:
    /// 512 (a full queue drops the fault's request).
    pub max_queued: usize,
    /// Least recently used pages a demotion looks through for one with a valid shadow.
    /// The paper leaves the victim order to TPP's LRU; tierkit's choice is 32, the batch
    /// Linux reclaim isolates from an LRU tail at a time (`SWAP_CLUSTER_MAX`), so a
    /// shadowed page goes first within the batch reclaim would take anyway. 0 demotes in
    /// plain LRU order.
    pub shadow_window: usize,
}

impl Default for NomadParams {
    fn default() -> Self {
        Self {
            scan_window_pages: 65_536,
            scan_period: SECOND,
            demote_scale_factor: 0.02,
            demotion_watermark: 0.04,
            type_aware_allocation: true,
            referenced_interval: 100 * MILLISECOND,
            max_queued: 512,
            shadow_window: 32,
        }
    }
}

/// NOMAD's counters: TPP's (§5.5) plus the transactional and shadow outcomes (the
/// artifact's `transactional_migration_fail`, `shadow_demote_num`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NomadStats {
    /// NUMA hint faults on slow-tier pages.
    pub hint_faults: u64,
    /// Faults on pages found active (promotion attempts).
    pub promotion_candidates: u64,
    /// Pages promoted (committed).
    pub promotions: u64,
    /// Candidates not promoted: no free fast page, a full queue, or a failed migration
    /// other than an aborted commit.
    pub promotion_failures: u64,
    /// Promotions whose commit aborted because the page was written during its copy.
    pub aborted: u64,
    /// Pages demoted.
    pub demotions: u64,
    /// Demotions of pages that had a valid shadow when queued: remaps, no copy.
    pub shadow_demotions: u64,
    /// Promoted pages that had been demoted before.
    pub ping_pong: u64,
}

/// Slow-page flag: on the slow node's active LRU.
const ACTIVE: u32 = 1;
/// Slow-page flag: arrived by demotion.
const DEMOTED: u32 = 2;

/// NOMAD; see the module documentation.
#[derive(Clone, Debug)]
pub struct NomadPolicy {
    params: NomadParams,
    active: LruList,
    inactive: LruList,
    /// [`ACTIVE`] / [`DEMOTED`] flags of slow-tier pages; absent means inactive.
    slow: PageTable,
    /// Fast pages queued for demotion while they had a valid shadow.
    remaps: PageTable,
    queued_promotions: u64,
    queued_demotions: u64,
    stats: NomadStats,
}

impl NomadPolicy {
    /// NOMAD with `params` (its lists grow with the pages they hold).
    pub fn new(params: NomadParams) -> Result<Self, ParamError> {
        let p = &params;
        if p.scan_window_pages == 0 {
            return Err(ParamError::new("scan_window_pages", 0, "at least 1 page"));
        }
        if p.scan_period == 0 {
            return Err(ParamError::new("scan_period", 0, "a period longer than 0 ns"));
        }
        if !(0.0..0.5).contains(&p.demote_scale_factor) {
            return Err(ParamError::new("demote_scale_factor", p.demote_scale_factor, "a fraction in [0, 0.5)"));
        }
        if !(p.demote_scale_factor..0.5).contains(&p.demotion_watermark) {
            return Err(ParamError::new(
                "demotion_watermark",
                p.demotion_watermark,
                "a fraction with demote_scale_factor <= demotion_watermark < 0.5",
            ));
        }
        if p.max_queued == 0 {
            return Err(ParamError::new("max_queued", 0, "at least 1 promotion"));
        }
        Ok(Self {
            params,
            active: LruList::new(),
            inactive: LruList::new(),
            slow: PageTable::new(),
            remaps: PageTable::new(),
            queued_promotions: 0,
            queued_demotions: 0,
            stats: NomadStats::default(),
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> NomadStats {
        self.stats
    }

    /// Free fast pages once the queued migrations are done (demotions run first).
    fn room(&self, ctx: &Ctx<'_>) -> i64 {
        ctx.mem.free_pages(TierId::FAST) as i64 + self.queued_demotions as i64 - self.queued_promotions as i64
    }

    fn queue_demotion(&mut self, page: Page, ctx: &mut Ctx<'_>) {
        if let Some(to) = ctx.mem.slower_than(TierId::FAST) {
            if ctx.mem.shadowed(page) {
                *self.remaps.entry(page, 1) = 1;
            }
            ctx.plan.push(page, to);
            self.queued_demotions += 1;
        }
    }

    fn on_slow_fault(&mut self, page: Page, ctx: &mut Ctx<'_>) {
        self.stats.hint_faults += 1;
        let flags = self.slow.entry(page, 0);
        if *flags & ACTIVE == 0 {
            *flags |= ACTIVE;
            return;
        }
        self.stats.promotion_candidates += 1;
        if self.room(ctx) > 0 && (self.queued_promotions as usize) < self.params.max_queued {
            ctx.promote(page);
            self.queued_promotions += 1;
        } else {
            self.stats.promotion_failures += 1;
        }
    }

    fn referenced(&mut self, page: Page) {
        if self.inactive.remove(page) || self.active.contains(page) {
            self.active.touch(page);
        }
    }

    /// The next victim of `list`: the first page with a valid shadow among its
    /// `shadow_window` least recent, else its least recent.
    fn victim(list: &mut LruList, window: usize, ctx: &Ctx<'_>) -> Option<Page> {
        let page =
            list.tail_first().take(window).find(|&p| ctx.mem.shadowed(p)).or_else(|| list.tail_first().next())?;
        list.remove(page);
        Some(page)
    }

    /// kswapd: below `demote_scale_factor` free, demote until `demotion_watermark` is.
    fn reclaim(&mut self, ctx: &mut Ctx<'_>) {
        let capacity = ctx.mem.tiers().first().map_or(0.0, |t| t.capacity_pages as f64);
        if (self.room(ctx) as f64) >= self.params.demote_scale_factor * capacity {
            return;
        }
        let target = (self.params.demotion_watermark * capacity).ceil() as i64;
        let window = self.params.shadow_window;
        while self.room(ctx) < target {
            let list = if self.inactive.len() > 0 { &mut self.inactive } else { &mut self.active };
            match Self::victim(list, window, ctx) {
                Some(victim) => self.queue_demotion(victim, ctx),
                None => return,
            }
        }
    }
}

impl Policy for NomadPolicy {
    fn name(&self) -> &str {
        "nomad"
    }

    /// Three scan periods, as TPP.
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
        true
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, kind, tier } if tier == TierId::FAST => {
                    if kind != PageKind::Anon && self.params.type_aware_allocation {
                        self.queue_demotion(page, ctx);
                    } else {
                        self.inactive.touch(page);
                    }
                }
                Event::HintFault { page, tier, .. } if tier != TierId::FAST => self.on_slow_fault(page, ctx),
                Event::Accessed { first, pages: 1, count } if count > 0 => self.referenced(first),
                Event::Free { page } => {
                    if !self.inactive.remove(page) {
                        self.active.remove(page);
                    }
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
                        self.active.touch(m.page);
                    }
                    // Written during the copy: still active, promoted at a later fault.
                    MoveStatus::Busy => self.stats.aborted += 1,
                    MoveStatus::AlreadyThere => {}
                    _ => self.stats.promotion_failures += 1,
                }
            } else {
                self.queued_demotions = self.queued_demotions.saturating_sub(1);
                let remap = self.remaps.remove(m.page).is_some();
                match status {
                    MoveStatus::Moved => {
                        self.stats.demotions += 1;
                        self.stats.shadow_demotions += remap as u64;
                        *self.slow.entry(m.page, 0) = DEMOTED;
                    }
                    MoveStatus::NoSpace | MoveStatus::Busy | MoveStatus::Failed(_) => self.inactive.touch(m.page),
                    _ => {}
                }
            }
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.active.heap_bytes() + self.inactive.heap_bytes() + self.slow.heap_bytes() + self.remaps.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::memory::{Memory, Resident, ScanCursor};
    use crate::types::TierInfo;
    use crate::{InMemory, Mover, Plan};

    /// [`InMemory`] with shadows: a promoted page keeps one until `write`, and a page
    /// in `dirty` fails its promotion as written during the copy.
    struct Shadowed {
        mem: InMemory,
        shadows: BTreeSet<Page>,
        dirty: BTreeSet<Page>,
    }

    impl Memory for Shadowed {
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
        fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
            self.mem.scan(cursor, max, out)
        }
        fn shadowed(&self, page: Page) -> bool {
            self.shadows.contains(&page)
        }
        fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
            for &page in pages {
                if to == TierId::FAST && self.dirty.remove(&page) {
                    out.push(MoveStatus::Busy);
                    continue;
                }
                self.mem.migrate(&[page], to, out);
                if *out.last().unwrap() == MoveStatus::Moved {
                    if to == TierId::FAST {
                        self.shadows.insert(page);
                    } else {
                        self.shadows.remove(&page);
                    }
                }
            }
        }
    }

    fn fault(page: Page) -> Event {
        Event::HintFault { page, tier: TierId(1), since_protect: 1000, time: 0 }
    }

    fn step(policy: &mut NomadPolicy, mem: &mut Shadowed, events: &[Event]) -> Vec<Migration> {
        let mut plan = Plan::default();
        let mut sources = policy.sources();
        policy.on_events(events, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let queued = plan.as_slice().to_vec();
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
        queued
    }

    /// 100 fast pages, 0..96 allocated there (4 free: no reclaim yet), slow 1000..1100.
    fn setup(params: NomadParams) -> (NomadPolicy, Shadowed) {
        let mut mem =
            Shadowed { mem: InMemory::new(&[100, 1000]).unwrap(), shadows: BTreeSet::new(), dirty: BTreeSet::new() };
        let mut events = Vec::new();
        for p in 0..96 {
            mem.mem.touch(p);
            events.push(Event::Alloc { page: p, kind: PageKind::Anon, tier: TierId::FAST });
        }
        for p in 1000..1100 {
            mem.mem.place(p, TierId(1), false);
        }
        let mut policy = NomadPolicy::new(params).unwrap();
        assert!(step(&mut policy, &mut mem, &events).is_empty());
        (policy, mem)
    }

    #[test]
    fn it_asks_for_non_exclusive_tiering_and_promotes_at_the_second_fault() {
        let (mut policy, mut mem) = setup(NomadParams::default());
        assert!(policy.non_exclusive());
        assert!(step(&mut policy, &mut mem, &[fault(1000)]).is_empty(), "the first fault only activates");
        assert_eq!(step(&mut policy, &mut mem, &[fault(1000)]), [Migration { page: 1000, to: TierId::FAST }]);
        assert_eq!(mem.tier_of(1000), Some(TierId::FAST));
        assert!(mem.shadowed(1000));
        let s = policy.stats();
        assert_eq!((s.hint_faults, s.promotion_candidates, s.promotions), (2, 1, 1));
    }

    #[test]
    fn an_aborted_commit_leaves_the_page_active_for_its_next_fault() {
        let (mut policy, mut mem) = setup(NomadParams::default());
        step(&mut policy, &mut mem, &[fault(1001)]);
        mem.dirty.insert(1001);
        step(&mut policy, &mut mem, &[fault(1001)]);
        assert_eq!(mem.tier_of(1001), Some(TierId(1)));
        assert_eq!((policy.stats().aborted, policy.stats().promotion_failures), (1, 0));
        // Still active: one more fault retries, and this time the copy commits.
        step(&mut policy, &mut mem, &[fault(1001)]);
        assert_eq!(mem.tier_of(1001), Some(TierId::FAST));
        assert_eq!(policy.stats().promotions, 1);
    }

    #[test]
    fn reclaim_takes_a_shadowed_page_within_the_window_before_the_lru_tail() {
        // With a window of 10, page 10 enters it once page 0 has gone.
        let cases: [(usize, [Page; 3]); 4] = [(32, [10, 0, 1]), (11, [10, 0, 1]), (10, [0, 10, 1]), (0, [0, 1, 2])];
        for (window, expected) in cases {
            let (mut policy, mut mem) = setup(NomadParams { shadow_window: window, ..Default::default() });
            // Page 10, the 11th least recently used, keeps a shadow. Three allocations
            // leave 1 page free (< 2%): reclaim demotes 3 (up to 4% free).
            mem.shadows.insert(10);
            let allocs: Vec<Event> = (96..99)
                .map(|p| {
                    mem.mem.touch(p);
                    Event::Alloc { page: p, kind: PageKind::Anon, tier: TierId::FAST }
                })
                .collect();
            let demoted: Vec<Page> = step(&mut policy, &mut mem, &allocs).iter().map(|m| m.page).collect();
            assert_eq!(demoted, expected, "window {window}");
            assert_eq!(policy.stats().shadow_demotions, expected.contains(&10) as u64, "window {window}");
            assert_eq!(policy.stats().demotions, 3);
        }
    }

    #[test]
    fn the_promotion_queue_is_bounded() {
        let (mut policy, mut mem) = setup(NomadParams { max_queued: 2, ..Default::default() });
        let faults: Vec<Event> = (1000..1004).map(fault).collect();
        step(&mut policy, &mut mem, &faults);
        let queued = step(&mut policy, &mut mem, &faults);
        assert_eq!(queued.iter().filter(|m| m.to == TierId::FAST).count(), 2);
        assert_eq!(policy.stats().promotion_failures, 2);
    }

    #[test]
    fn freed_pages_are_forgotten() {
        let (mut policy, mut mem) = setup(NomadParams::default());
        step(&mut policy, &mut mem, &[fault(1000)]);
        step(&mut policy, &mut mem, &[Event::Free { page: 1000 }]);
        assert!(step(&mut policy, &mut mem, &[fault(1000)]).is_empty(), "a new page starts inactive");
        assert!(policy.metadata_bytes() > 0);
    }

    #[test]
    fn parameters_are_checked() {
        let d = NomadParams::default();
        let bad = |p: NomadParams| NomadPolicy::new(p).unwrap_err().param;
        assert_eq!(bad(NomadParams { scan_window_pages: 0, ..d }), "scan_window_pages");
        assert_eq!(bad(NomadParams { scan_period: 0, ..d }), "scan_period");
        assert_eq!(bad(NomadParams { demote_scale_factor: f64::NAN, ..d }), "demote_scale_factor");
        assert_eq!(bad(NomadParams { demotion_watermark: 0.01, ..d }), "demotion_watermark");
        assert_eq!(bad(NomadParams { max_queued: 0, ..d }), "max_queued");
        assert!(NomadPolicy::new(d).is_ok());
    }
}
