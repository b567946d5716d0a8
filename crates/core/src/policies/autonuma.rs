//! `autonuma`: Linux's NUMA balancing in memory-tiering mode
//! (`NUMA_BALANCING_MEMORY_TIERING`, kernel ≥ 6.0), as FreqTier §II-C and HybridTier
//! §2.3 describe it and as `kernel/sched/fair.c` implements it.
//!
//! - **Sampling.** Every scan period the scanner protects the next 256 MB of the address
//!   space, on every tier; the next access to a protected page is a NUMA hint fault
//!   carrying its hint-fault latency (time since protection).
//! - **Promotion** (`should_numa_migrate_memory`). A fault on a slow page promotes it
//!   when the fast tier has plenty of free memory (`pgdat_free_space_enough`, which
//!   also resets the threshold), and otherwise when its latency is below the hot
//!   threshold and the promotion rate limit still has room this second
//!   (`numa_promotion_rate_limit`). Every `threshold_period` the threshold moves one
//!   step (2/16 of the default) down when more than 110% of the rate limit's worth of
//!   candidates arrived, up when fewer than 90% did, between one step and twice
//!   the default (`numa_promotion_adjust_threshold`).
//! - **Demotion** (kswapd with MGLRU, as FreqTier §VI-B and HybridTier §5.2 configure
//!   AutoNUMA). A promotion needs free fast pages above the high watermark; when there
//!   are none, or free pages fall below the low watermark, kswapd demotes from the
//!   oldest generation until the promotion watermark is free. kswapd runs after every
//!   event batch and every tick, so between runs promotions take at most the gap
//!   between the promotion and high watermarks (0.1% of the fast tier).
//! - **Generations** model MGLRU's by the last time a fast page was seen: allocated,
//!   promoted or hint-faulted (the scanner covers the fast tier too, which stands in for
//!   MGLRU's page-table walks). A new generation opens every `generation_period`; with
//!   `generations` live, the two oldest merge. A page seen again moves to the youngest
//!   generation; within a generation pages keep their arrival order and the earliest
//!   leaves first, as MGLRU evicts from the tail of the oldest generation's list.

use crate::memory::MoveStatus;
use crate::policy::{Ctx, HintFaults, Migration, Policy, SourceRequest};
use crate::sketches::PageTable;
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`AutoNumaPolicy`]. Defaults are Linux's (v6.2, the kernel FreqTier and
/// HybridTier evaluate AutoNUMA on).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AutoNumaParams {
    /// Pages protected per scan: `numa_balancing_scan_size_mb` = 256 (65536 4 KiB
    /// pages; FreqTier §II-C "unmaps 256MB of pages (the scan window)").
    pub scan_window_pages: u64,
    /// Time between scans: `numa_balancing_scan_period_min_ms` = 1000, the period of a
    /// process whose footprint fits in one window.
    pub scan_period: Nanos,
    /// Default hot threshold on the hint-fault latency: `numa_balancing_hot_threshold_ms`
    /// = 1000 (HybridTier §2.3: "less than 1 second, it is promoted").
    pub hot_threshold: Nanos,
    /// Promotion rate limit: `numa_balancing_promote_rate_limit_MBps` = 65536.
    pub promote_rate_limit_mbps: u64,
    /// How often the threshold adapts: `numa_balancing_scan_period_max_ms` = 60000, the
    /// `th_period` of `numa_promotion_adjust_threshold`.
    pub threshold_period: Nanos,
    /// Threshold steps over twice the default: `NUMA_MIGRATION_ADJUST_STEPS` = 16.
    pub adjust_steps: u32,
    /// Free fast memory above which every faulting page is promoted:
    /// `pgdat_free_space_enough` takes max(1 GB, node / 16); only the node share is
    /// kept, as simulated fast tiers are far smaller than a 16 GB node (where the two
    /// coincide).
    pub free_enough: f64,
    /// kswapd wakes below this free fraction: `WMARK_LOW` = min + 0.1% of the node
    /// (`watermark_scale_factor` = 10; `min_free_kbytes` is 0.1% of a 16 GB node).
    pub low_wmark: f64,
    /// A promotion needs free pages above this fraction (`migrate_balanced_pgdat`
    /// checks `WMARK_HIGH` = low + 0.1%).
    pub high_wmark: f64,
    /// kswapd demotes until this fraction is free (`WMARK_PROMO` = high + 0.1%, the
    /// target of `pgdat_balanced` in tiering mode).
    pub promo_wmark: f64,
    /// Live generations: MGLRU's `MAX_NR_GENS` = 4.
    pub generations: usize,
    /// Age of one generation. MGLRU ages on demand; here a generation spans one scan
    /// period, the finest recency hint faults resolve (each page faults at most once
    /// per protection).
    pub generation_period: Nanos,
}

impl Default for AutoNumaParams {
    fn default() -> Self {
        Self {
            scan_window_pages: 65_536,
            scan_period: SECOND,
            hot_threshold: SECOND,
            promote_rate_limit_mbps: 65_536,
            threshold_period: 60 * SECOND,
            adjust_steps: 16,
            free_enough: 1.0 / 16.0,
            low_wmark: 0.002,
            high_wmark: 0.003,
            promo_wmark: 0.004,
            generations: 4,
            generation_period: SECOND,
        }
    }
}

/// AutoNUMA's counters, with the kernel's /proc/vmstat names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoNumaStats {
    /// NUMA hint faults on any tier (`numa_hint_faults`).
    pub hint_faults: u64,
    /// Slow-tier faults under the hot threshold (`pgpromote_candidate`).
    pub promotion_candidates: u64,
    /// Slow-tier faults promoted regardless of latency, fast memory being plentiful.
    pub free_space_promotions: u64,
    /// Candidates refused by the rate limit.
    pub rate_limited: u64,
    /// Pages promoted (`pgpromote_success`).
    pub promotions: u64,
    /// Pages demoted by kswapd (`pgdemote_kswapd`).
    pub demotions: u64,
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    page: Page,
    prev: u32,
    next: u32,
    /// Generation the page was last seen in; a page whose `seq` is older than
    /// `min_seq` sits in the oldest list (merged there).
    seq: u64,
}

/// MGLRU-style generations of fast pages: one doubly linked list per live generation
/// (head = latest arrival), over a node arena indexed by page.
#[derive(Clone, Debug)]
struct Generations {
    nodes: Vec<Node>,
    free: Vec<u32>,
    index: PageTable,
    heads: Vec<u32>,
    tails: Vec<u32>,
    min_seq: u64,
    max_seq: u64,
}

impl Generations {
    fn new(generations: usize) -> Self {
        Self {
            nodes: Vec::new(),
            free: Vec::new(),
            index: PageTable::new(),
            heads: vec![NIL; generations],
            tails: vec![NIL; generations],
            min_seq: 0,
            max_seq: 0,
        }
    }

    fn slot(&self, seq: u64) -> usize {
        (seq % self.heads.len() as u64) as usize
    }

    /// The list node `i` is in.
    fn list_of(&self, i: u32) -> usize {
        self.slot(self.nodes[i as usize].seq.max(self.min_seq))
    }

    fn unlink(&mut self, i: u32) {
        let l = self.list_of(i);
        let Node { prev, next, .. } = self.nodes[i as usize];
        match prev {
            NIL => self.heads[l] = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tails[l] = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    fn push_youngest(&mut self, i: u32) {
        let l = self.slot(self.max_seq);
        let head = self.heads[l];
        self.nodes[i as usize] = Node { page: self.nodes[i as usize].page, prev: NIL, next: head, seq: self.max_seq };
        match head {
            NIL => self.tails[l] = i,
            h => self.nodes[h as usize].prev = i,
        }
        self.heads[l] = i;
    }

    /// `page` was seen: it joins the youngest generation (if not already there).
    fn see(&mut self, page: Page) {
        match self.index.get(page) {
            Some(i) if self.nodes[i as usize].seq == self.max_seq => {}
            Some(i) => {
                self.unlink(i);
                self.push_youngest(i);
            }
            None => {
                let node = Node { page, prev: NIL, next: NIL, seq: self.max_seq };
                let i = match self.free.pop() {
                    Some(i) => {
                        self.nodes[i as usize] = node;
                        i
                    }
                    None => {
                        self.nodes.push(node);
                        (self.nodes.len() - 1) as u32
                    }
                };
                *self.index.entry(page, 0) = i;
                self.push_youngest(i);
            }
        }
    }

    fn remove(&mut self, page: Page) {
        if let Some(i) = self.index.remove(page) {
            self.unlink(i);
            self.free.push(i);
        }
    }

    /// Opens a new youngest generation; with every slot live, the oldest generation
    /// merges into the next (appended on its tail side: its pages stay the oldest).
    fn age(&mut self) {
        if (self.max_seq - self.min_seq + 1) as usize == self.heads.len() {
            let (old, next) = (self.slot(self.min_seq), self.slot(self.min_seq + 1));
            if self.heads[old] != NIL {
                match self.tails[next] {
                    NIL => self.heads[next] = self.heads[old],
                    t => {
                        self.nodes[t as usize].next = self.heads[old];
                        self.nodes[self.heads[old] as usize].prev = t;
                    }
                }
                self.tails[next] = self.tails[old];
                (self.heads[old], self.tails[old]) = (NIL, NIL);
            }
            self.min_seq += 1;
        }
        self.max_seq += 1;
    }

    /// Removes and returns the earliest arrival of the oldest non-empty generation.
    fn pop_oldest(&mut self) -> Option<Page> {
        loop {
            let tail = self.tails[self.slot(self.min_seq)];
            if tail != NIL {
                let page = self.nodes[tail as usize].page;
                self.remove(page);
                return Some(page);
            }
            if self.min_seq == self.max_seq {
                return None;
            }
            self.min_seq += 1;
        }
    }

    fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.free.capacity() * 4
            + self.index.heap_bytes()
            + (self.heads.capacity() + self.tails.capacity()) * 4
    }
}

/// AutoNUMA tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct AutoNumaPolicy {
    params: AutoNumaParams,
    gens: Generations,
    /// Current threshold; 0 = the default (Linux's `nbp_threshold`).
    threshold: Nanos,
    /// Rate-limit window: start and candidate count at its start (`nbp_rl_*`).
    rl_start: Nanos,
    rl_candidates: u64,
    /// Threshold period: start and candidate count at its start (`nbp_th_*`).
    th_start: Nanos,
    th_candidates: u64,
    last_age: Nanos,
    /// A promotion found no room: kswapd runs at the end of the batch.
    kswapd_woken: bool,
    queued_promotions: u64,
    queued_demotions: u64,
    stats: AutoNumaStats,
}

impl AutoNumaPolicy {
    /// AutoNUMA for `setup` (its generations grow with the fast pages they hold).
    pub fn new(params: AutoNumaParams) -> Result<Self, ParamError> {
        let positive = [
            ("scan_window_pages", params.scan_window_pages),
            ("scan_period", params.scan_period),
            ("hot_threshold", params.hot_threshold),
            ("threshold_period", params.threshold_period),
            ("generation_period", params.generation_period),
        ];
        if let Some((name, v)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(ParamError::new(name, v, "a value greater than 0"));
        }
        if params.adjust_steps < 2 || params.hot_threshold.saturating_mul(2) < params.adjust_steps as u64 {
            return Err(ParamError::new("adjust_steps", params.adjust_steps, "2 to 2 x hot_threshold steps"));
        }
        if !(0.0..=1.0).contains(&params.free_enough) {
            return Err(ParamError::new("free_enough", params.free_enough, "a fraction in [0, 1]"));
        }
        let marks = [params.low_wmark, params.high_wmark, params.promo_wmark];
        if !(0.0 <= marks[0] && marks[0] <= marks[1] && marks[1] <= marks[2] && marks[2] < 0.5) {
            return Err(ParamError::new(
                "promo_wmark",
                format!("{marks:?}"),
                "fractions with 0 <= low_wmark <= high_wmark <= promo_wmark < 0.5",
            ));
        }
        if !(2..=64).contains(&params.generations) {
            return Err(ParamError::new("generations", params.generations, "2 to 64 generations"));
        }
        Ok(Self {
            params,
            gens: Generations::new(params.generations),
            threshold: 0,
            rl_start: 0,
            rl_candidates: 0,
            th_start: 0,
            th_candidates: 0,
            last_age: 0,
            kswapd_woken: false,
            queued_promotions: 0,
            queued_demotions: 0,
            stats: AutoNumaStats::default(),
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> AutoNumaStats {
        self.stats
    }

    /// The hot threshold in force.
    pub fn hot_threshold(&self) -> Nanos {
        if self.threshold == 0 {
            self.params.hot_threshold
        } else {
            self.threshold
        }
    }

    /// Promotion rate limit in pages per second (MB/s × 256 pages per MB).
    fn rate_limit_pages(&self) -> u64 {
        self.params.promote_rate_limit_mbps.saturating_mul(256)
    }

    /// Free fast pages once the queued migrations are done (demotions run first).
    fn room(&self, ctx: &Ctx<'_>) -> f64 {
        ctx.mem.free_pages(TierId::FAST) as f64 + self.queued_demotions as f64 - self.queued_promotions as f64
    }

    fn capacity(ctx: &Ctx<'_>) -> f64 {
        ctx.mem.tiers().first().map_or(0.0, |t| t.capacity_pages as f64)
    }

    /// `numa_promotion_adjust_threshold`: once per `threshold_period`, one step toward
    /// a candidate rate of the rate limit.
    fn adjust_threshold(&mut self, now: Nanos) {
        if now.saturating_sub(self.th_start) <= self.params.threshold_period {
            return;
        }
        let period_secs = self.params.threshold_period as f64 / SECOND as f64;
        let reference = self.rate_limit_pages() as f64 * period_secs;
        let diff = (self.stats.promotion_candidates - self.th_candidates) as f64;
        let default = self.params.hot_threshold;
        let unit = default.saturating_mul(2) / self.params.adjust_steps as u64;
        let th = self.hot_threshold();
        self.threshold = if diff > reference * 1.1 {
            th.saturating_sub(unit).max(unit)
        } else if diff < reference * 0.9 {
            th.saturating_add(unit).min(default.saturating_mul(2))
        } else {
            th
        };
        (self.th_start, self.th_candidates) = (now, self.stats.promotion_candidates);
    }

    /// `should_numa_migrate_memory` for a slow page: promote or not.
    fn should_promote(&mut self, latency: Nanos, time: Nanos, ctx: &Ctx<'_>) -> bool {
        if self.room(ctx) > (self.params.promo_wmark + self.params.free_enough) * Self::capacity(ctx) {
            self.threshold = 0; // "workload changed, reset hot threshold"
            self.stats.free_space_promotions += 1;
            return true;
        }
        self.adjust_threshold(time);
        if latency >= self.hot_threshold() {
            return false;
        }
        self.stats.promotion_candidates += 1;
        let candidates = self.stats.promotion_candidates;
        if time.saturating_sub(self.rl_start) > SECOND {
            (self.rl_start, self.rl_candidates) = (time, candidates);
        }
        if candidates - self.rl_candidates >= self.rate_limit_pages() {
            self.stats.rate_limited += 1;
            return false;
        }
        true
    }

    fn on_slow_fault(&mut self, page: Page, latency: Nanos, time: Nanos, ctx: &mut Ctx<'_>) {
        if !self.should_promote(latency, time, ctx) {
            return;
        }
        // migrate_balanced_pgdat: no room above the high watermark fails the
        // promotion and wakes kswapd.
        if self.room(ctx) <= self.params.high_wmark * Self::capacity(ctx) {
            self.kswapd_woken = true;
            return;
        }
        ctx.promote(page);
        self.queued_promotions += 1;
        self.gens.see(page);
    }

    /// kswapd: below the low watermark, or woken by a failed promotion, demote the
    /// oldest generation until the promotion watermark is free.
    fn kswapd(&mut self, ctx: &mut Ctx<'_>) {
        let capacity = Self::capacity(ctx);
        if !self.kswapd_woken && self.room(ctx) >= self.params.low_wmark * capacity {
            return;
        }
        self.kswapd_woken = false;
        let Some(to) = ctx.mem.slower_than(TierId::FAST) else { return };
        let target = (self.params.promo_wmark * capacity).ceil().max(1.0);
        while self.room(ctx) < target {
            match self.gens.pop_oldest() {
                Some(victim) => {
                    ctx.plan.push(victim, to);
                    self.queued_demotions += 1;
                }
                None => return,
            }
        }
    }
}

impl Policy for AutoNumaPolicy {
    fn name(&self) -> &str {
        "autonuma"
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
                slow_tiers_only: false,
            }),
            allocations: true,
            ..Default::default()
        }
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, tier, .. } if tier == TierId::FAST => self.gens.see(page),
                Event::HintFault { page, tier, since_protect, time } => {
                    self.stats.hint_faults += 1;
                    if tier == TierId::FAST {
                        self.gens.see(page);
                    } else {
                        self.on_slow_fault(page, since_protect, time, ctx);
                    }
                }
                Event::Free { page } => self.gens.remove(page),
                _ => {}
            }
        }
        self.kswapd(ctx);
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        let due = telemetry.now.saturating_sub(self.last_age) / self.params.generation_period;
        for _ in 0..due.min(self.params.generations as u64) {
            self.gens.age();
        }
        self.last_age += due * self.params.generation_period;
        self.kswapd(ctx);
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for &(m, status) in results {
            let moved = status == MoveStatus::Moved;
            if m.to == TierId::FAST {
                self.queued_promotions = self.queued_promotions.saturating_sub(1);
                if moved {
                    self.stats.promotions += 1;
                } else if status != MoveStatus::AlreadyThere {
                    self.gens.remove(m.page); // it did not arrive
                }
            } else {
                self.queued_demotions = self.queued_demotions.saturating_sub(1);
                // A page that failed to leave is untracked until it is seen again.
                self.stats.demotions += moved as u64;
            }
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.gens.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan, MILLISECOND};

    fn fault(page: Page, tier: TierId, since_protect: Nanos, time: Nanos) -> Event {
        Event::HintFault { page, tier, since_protect, time }
    }

    fn step(policy: &mut AutoNumaPolicy, mem: &mut InMemory, events: &[Event]) {
        let mut plan = Plan::default();
        let mut sources = policy.sources();
        policy.on_events(events, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
    }

    fn tick(policy: &mut AutoNumaPolicy, mem: &mut InMemory) {
        let mut plan = Plan::default();
        let mut sources = policy.sources();
        let t = Telemetry { now: mem.now(), ..Default::default() };
        policy.on_tick(&t, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
    }

    /// 1000 fast pages, 995 taken by pages 0..995 (0.5% free); slow pages 5000.. .
    fn setup(params: AutoNumaParams) -> (AutoNumaPolicy, InMemory) {
        let mut mem = InMemory::new(&[1000, 10_000]).unwrap();
        let mut events = Vec::new();
        for p in 0..995 {
            mem.touch(p);
            events.push(Event::Alloc { page: p, kind: crate::PageKind::Anon, tier: TierId::FAST });
        }
        for p in 5000..6000 {
            mem.place(p, TierId(1), false);
        }
        let mut policy = AutoNumaPolicy::new(params).unwrap();
        step(&mut policy, &mut mem, &events);
        (policy, mem)
    }

    #[test]
    fn generations_evict_the_oldest_and_merge_beyond_the_limit() {
        let mut g = Generations::new(3);
        g.see(1);
        g.see(2);
        g.age();
        g.see(3);
        g.see(1); // seen again: youngest
        g.age();
        g.see(4);
        g.age(); // 4 generations would be live: the two oldest merge
        assert_eq!((g.min_seq, g.max_seq), (1, 3));
        g.see(5);
        assert_eq!([g.pop_oldest(), g.pop_oldest(), g.pop_oldest()], [Some(2), Some(3), Some(1)]);
        g.remove(4);
        assert_eq!((g.pop_oldest(), g.pop_oldest()), (Some(5), None));
        g.see(6);
        assert_eq!(g.pop_oldest(), Some(6));
    }

    #[test]
    fn a_fault_promotes_when_its_latency_is_under_the_threshold() {
        let (mut policy, mut mem) = setup(AutoNumaParams::default());
        step(
            &mut policy,
            &mut mem,
            &[fault(5000, TierId(1), 2 * SECOND, 0), fault(5001, TierId(1), 300 * MILLISECOND, 0)],
        );
        assert_eq!(mem.tier_of(5000), Some(TierId(1)), "2 s since protection: not hot");
        assert_eq!(mem.tier_of(5001), Some(TierId::FAST));
        let s = policy.stats();
        assert_eq!((s.hint_faults, s.promotion_candidates, s.promotions), (2, 1, 1));
    }

    #[test]
    fn plenty_of_free_fast_memory_promotes_every_fault() {
        let (mut policy, mut mem) = setup(AutoNumaParams::default());
        for p in 0..100 {
            mem.free(p); // 10.5% free > 0.4% + 1/16
        }
        step(&mut policy, &mut mem, &[fault(5000, TierId(1), 5 * SECOND, 0)]);
        assert_eq!(mem.tier_of(5000), Some(TierId::FAST));
        assert_eq!(policy.stats().free_space_promotions, 1);
    }

    #[test]
    fn kswapd_demotes_the_least_recently_seen_pages() {
        let (mut policy, mut mem) = setup(AutoNumaParams::default());
        mem.advance(SECOND);
        tick(&mut policy, &mut mem); // a new generation
                                     // Pages 0..10 fault on the fast tier: seen, so younger than 10..995.
        let seen: Vec<Event> = (0..10).map(|p| fault(p, TierId::FAST, MILLISECOND, SECOND)).collect();
        step(&mut policy, &mut mem, &seen);
        // Hot slow pages arrive; 1% free above the high watermark runs out and kswapd
        // demotes the oldest generation, earliest arrival first.
        for round in 0..20 {
            let batch: Vec<Event> =
                (0..5).map(|i| fault(5000 + round * 5 + i, TierId(1), MILLISECOND, SECOND)).collect();
            step(&mut policy, &mut mem, &batch);
        }
        assert!(policy.stats().promotions >= 20, "{:?}", policy.stats());
        assert!(policy.stats().demotions >= 15, "{:?}", policy.stats());
        assert!((0..10).all(|p| mem.tier_of(p) == Some(TierId::FAST)), "recently seen pages stay");
        assert_eq!(mem.tier_of(10), Some(TierId(1)), "the earliest allocation left first");
        assert!(mem.free_pages(TierId::FAST) >= 3, "kswapd refills to the promotion watermark");
    }

    #[test]
    fn the_rate_limit_caps_candidates_per_second() {
        // 1 MB/s = 256 pages/s.
        let params = AutoNumaParams { promote_rate_limit_mbps: 1, ..Default::default() };
        let (mut policy, mut mem) = setup(params);
        let faults: Vec<Event> = (5000..5300).map(|p| fault(p, TierId(1), MILLISECOND, 10)).collect();
        for chunk in faults.chunks(4) {
            step(&mut policy, &mut mem, chunk);
        }
        let s = policy.stats();
        // Linux refuses once the window's count reaches the limit: 255 pass.
        assert_eq!((s.promotion_candidates, s.rate_limited), (300, 300 - 255));
        // A second later the window reopens.
        step(&mut policy, &mut mem, &[fault(5300, TierId(1), MILLISECOND, 2 * SECOND)]);
        assert_eq!(policy.stats().rate_limited, 45);
    }

    #[test]
    fn the_threshold_adapts_to_the_candidate_rate() {
        // Rate limit 1 MB/s over a 1 s threshold period: 256 candidates is on target.
        let params = AutoNumaParams { promote_rate_limit_mbps: 1, threshold_period: SECOND, ..Default::default() };
        let (mut policy, mut mem) = setup(params);
        let step_ns = SECOND * 2 / 16;
        // Period 1: 400 candidates (> 110%): the threshold drops one step.
        let busy: Vec<Event> = (0..400).map(|i| fault(5000 + i, TierId(1), MILLISECOND, 1)).collect();
        step(&mut policy, &mut mem, &busy);
        step(&mut policy, &mut mem, &[fault(5500, TierId(1), 5 * SECOND, SECOND + 2)]);
        assert_eq!(policy.hot_threshold(), SECOND - step_ns);
        // Quiet periods (< 90%): it climbs back, up to twice the default.
        for k in 2..40 {
            step(&mut policy, &mut mem, &[fault(5500, TierId(1), 5 * SECOND, k * (SECOND + 2))]);
        }
        assert_eq!(policy.hot_threshold(), 2 * SECOND);
        // A page 1.5 s from protection is now hot.
        step(&mut policy, &mut mem, &[fault(5600, TierId(1), 1500 * MILLISECOND, 41 * (SECOND + 2))]);
        assert!(policy.stats().promotion_candidates > 400);
    }

    #[test]
    fn freed_pages_leave_the_generations() {
        let (mut policy, mut mem) = setup(AutoNumaParams::default());
        for p in 0..995 {
            mem.free(p);
        }
        let frees: Vec<Event> = (0..995).map(|page| Event::Free { page }).collect();
        step(&mut policy, &mut mem, &frees);
        assert_eq!(policy.gens.index.len(), 0);
        assert!(policy.metadata_bytes() > 0);
    }

    #[test]
    fn parameters_are_checked() {
        let bad = |p: AutoNumaParams| AutoNumaPolicy::new(p).unwrap_err().param;
        assert_eq!(bad(AutoNumaParams { scan_period: 0, ..Default::default() }), "scan_period");
        assert_eq!(bad(AutoNumaParams { hot_threshold: 0, ..Default::default() }), "hot_threshold");
        assert_eq!(bad(AutoNumaParams { adjust_steps: 1, ..Default::default() }), "adjust_steps");
        assert_eq!(bad(AutoNumaParams { free_enough: 2.0, ..Default::default() }), "free_enough");
        assert_eq!(bad(AutoNumaParams { high_wmark: 0.001, ..Default::default() }), "promo_wmark");
        assert_eq!(bad(AutoNumaParams { low_wmark: f64::NAN, ..Default::default() }), "promo_wmark");
        assert_eq!(bad(AutoNumaParams { generations: 1, ..Default::default() }), "generations");
    }
}
