//! `hemem`: HeMem (Raybuck et al., "HeMem: Scalable Tiered Memory Management for Big
//! Data Applications and Real NVM", SOSP'21), as Colloid §4.1 describes it and as its
//! source (`src/pebs.c`, `src/pebs.h`) implements it.
//!
//! - **Sampling.** PEBS samples loads and stores with a fixed period (Colloid §4.1: "a
//!   fixed sampling rate"). The period is requested as such until the first tick; from
//!   then on as the rate it amounts to at the measured miss rate (the tiers' request
//!   rates in [`Telemetry`]), which is what a period of real events means on a platform
//!   whose accesses each stand for many misses (the simulator's `scale`).
//! - **Counters.** Every page HeMem knows has a record with separate read and write
//!   sample counts, kept in a hash table (HeMem's page hash; here a [`PageTable`] from
//!   page to a record in an arena — HeMem's `struct hemem_page`). A page is hot when
//!   either count reaches its threshold (4 reads or 4 writes).
//! - **Cooling.** When any page's count reaches the cooling threshold (10), every count
//!   is halved. Like HeMem, lazily: a global clock advances, and each record halves its
//!   counts once per clock tick it missed the next time it is touched (O(1) per sample).
//!   After a cooling the migration thread walks the hot lists (at most 8192 pages per
//!   list per quantum) and moves pages that cooled below the thresholds to the cold lists.
//! - **Lists.** Each tier has a hot and a cold FIFO list; every allocated page starts on
//!   its tier's cold list and moves between lists as its samples cross the thresholds.
//! - **Migration.** Every 10 ms quantum the migration thread dequeues hot slow-tier
//!   pages and promotes them, taking a free fast page or else demoting the oldest page of
//!   the fast cold list; it stops when the slow hot list is empty, when every fast page
//!   is hot, or when the quantum's migration budget is spent.
//!
//! Differences from the source: it counts, classifies and then applies the coolings a
//! page missed, so a stale count can make a page hot; here the missed coolings come
//! first. It cools when a count exceeds 10; here when one reaches 10, as Colloid §4.1
//! says. HeMem manages two tiers (DRAM and NVM); with more, every tier but the fastest
//! is "slow" and demotions go to the second tier. Huge pages are out of scope.

use super::PolicySetup;
use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, Policy, Sampling, SourceRequest};
use crate::sketches::PageTable;
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, MILLISECOND, PAGE_SIZE};
use crate::{Event, ParamError};

/// Parameters of [`HememPolicy`]; defaults are HeMem's `src/pebs.h`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HememParams {
    /// PEBS sample period in memory events. HeMem `SAMPLE_PERIOD`: 19997.
    pub sample_period: u64,
    /// Read samples that make a page hot. HeMem `HOT_READ_THRESHOLD`: 4.
    pub hot_reads: u8,
    /// Write samples that make a page hot. HeMem `HOT_WRITE_THRESHOLD`: 4.
    pub hot_writes: u8,
    /// A count reaching this halves every count. HeMem `PEBS_COOLING_THRESHOLD`: 10
    /// (Colloid §4.1's COOLING_THRESHOLD).
    pub cooling_threshold: u8,
    /// The migration thread's quantum. Colloid §4.1: 10 ms (`PEBS_KSWAPD_INTERVAL`).
    pub quantum: Nanos,
    /// Bytes promoted per quantum at most. HeMem `PEBS_KSWAPD_MIGRATE_RATE`: 10 GiB.
    pub migrate_bytes_per_quantum: u64,
    /// Hot-list pages re-examined per list per quantum after a cooling. HeMem
    /// `COOLING_PAGES`: 8192.
    pub cooling_pages: usize,
}

impl Default for HememParams {
    fn default() -> Self {
        Self {
            sample_period: 19_997,
            hot_reads: 4,
            hot_writes: 4,
            cooling_threshold: 10,
            quantum: 10 * MILLISECOND,
            migrate_bytes_per_quantum: 10 << 30,
            cooling_pages: 8192,
        }
    }
}

const NIL: u32 = u32::MAX;

/// The four FIFO lists: hot and cold, per tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    FastHot,
    FastCold,
    SlowHot,
    SlowCold,
}

impl List {
    fn of(fast: bool, hot: bool) -> Self {
        match (fast, hot) {
            (true, true) => Self::FastHot,
            (true, false) => Self::FastCold,
            (false, true) => Self::SlowHot,
            (false, false) => Self::SlowCold,
        }
    }

    fn fast(self) -> bool {
        matches!(self, Self::FastHot | Self::FastCold)
    }
}

/// HeMem's per-page record: counts, its cooling clock and its list links.
#[derive(Clone, Copy, Debug)]
struct Record {
    page: Page,
    /// The global clock when the counts were last brought up to date.
    clock: u64,
    /// Towards the newer end of the list.
    prev: u32,
    /// Towards the older end of the list.
    next: u32,
    reads: u8,
    writes: u8,
    list: List,
}

#[derive(Clone, Copy, Debug)]
struct Ends {
    /// Newest (enqueue end).
    head: u32,
    /// Oldest (dequeue end).
    tail: u32,
    len: usize,
}

/// HeMem tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct HememPolicy {
    params: HememParams,
    index: PageTable,
    records: Vec<Record>,
    vacant: Vec<u32>,
    lists: [Ends; 4],
    /// HeMem's `global_clock`: coolings so far.
    clock: u64,
    /// Hot-list pages still to re-examine since the last cooling: fast, slow.
    to_cool: [usize; 2],
    quantum_pages: usize,
    /// Promotions minus demotions queued and not yet executed.
    inflight: i64,
}

impl HememPolicy {
    /// A HeMem policy; its page table is sized for `setup.pages`.
    pub fn new(params: HememParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        if params.sample_period == 0 {
            return Err(ParamError::new("sample_period", 0, "at least 1 event"));
        }
        if params.cooling_threshold == 0 {
            return Err(ParamError::new("cooling_threshold", 0, "1 to 255 samples"));
        }
        let reachable = 1..=params.cooling_threshold;
        if !reachable.contains(&params.hot_reads) {
            return Err(ParamError::new("hot_reads", params.hot_reads, "1 to cooling_threshold samples"));
        }
        if !reachable.contains(&params.hot_writes) {
            return Err(ParamError::new("hot_writes", params.hot_writes, "1 to cooling_threshold samples"));
        }
        if params.quantum == 0 {
            return Err(ParamError::new("quantum", 0, "a positive time"));
        }
        if params.cooling_pages == 0 {
            return Err(ParamError::new("cooling_pages", 0, "at least 1 page"));
        }
        if params.migrate_bytes_per_quantum < PAGE_SIZE {
            return Err(ParamError::new("migrate_bytes_per_quantum", params.migrate_bytes_per_quantum, "one page"));
        }
        let pages = usize::try_from(setup.pages).unwrap_or(usize::MAX).min(u32::MAX as usize - 1);
        let empty = Ends { head: NIL, tail: NIL, len: 0 };
        Ok(Self {
            params,
            index: PageTable::with_capacity(pages),
            records: Vec::with_capacity(pages),
            vacant: Vec::new(),
            lists: [empty; 4],
            clock: 0,
            to_cool: [0; 2],
            quantum_pages: usize::try_from(params.migrate_bytes_per_quantum / PAGE_SIZE).unwrap_or(usize::MAX),
            inflight: 0,
        })
    }

    /// Whether HeMem currently counts `page` hot (`None` when it does not know it).
    pub fn is_hot(&self, page: Page) -> Option<bool> {
        let r = &self.records[self.index.get(page)? as usize];
        Some(self.hot(self.cooled(r)))
    }

    /// `r`'s counts after the coolings it has not seen yet.
    fn cooled(&self, r: &Record) -> (u8, u8) {
        let missed = u32::try_from(self.clock - r.clock).unwrap_or(u32::MAX);
        (r.reads.checked_shr(missed).unwrap_or(0), r.writes.checked_shr(missed).unwrap_or(0))
    }

    fn hot(&self, (reads, writes): (u8, u8)) -> bool {
        reads >= self.params.hot_reads || writes >= self.params.hot_writes
    }

    /// Applies the coolings `slot` missed; returns whether it is hot.
    fn catch_up(&mut self, slot: u32) -> bool {
        let (reads, writes) = self.cooled(&self.records[slot as usize]);
        let r = &mut self.records[slot as usize];
        (r.reads, r.writes, r.clock) = (reads, writes, self.clock);
        self.hot((reads, writes))
    }

    /// Enqueues `slot` at the newest end of `list`.
    fn link(&mut self, slot: u32, list: List) {
        let ends = &mut self.lists[list as usize];
        let old_head = ends.head;
        ends.head = slot;
        if ends.tail == NIL {
            ends.tail = slot;
        }
        ends.len += 1;
        if old_head != NIL {
            self.records[old_head as usize].prev = slot;
        }
        let r = &mut self.records[slot as usize];
        (r.prev, r.next, r.list) = (NIL, old_head, list);
    }

    fn unlink(&mut self, slot: u32) {
        let Record { prev, next, list, .. } = self.records[slot as usize];
        let ends = &mut self.lists[list as usize];
        ends.len -= 1;
        match prev {
            NIL => ends.head = next,
            p => self.records[p as usize].next = next,
        }
        match next {
            NIL => ends.tail = prev,
            n => self.records[n as usize].prev = prev,
        }
    }

    /// Moves `slot` to the newest end of `list` unless it is already on it.
    fn relist(&mut self, slot: u32, list: List) {
        if self.records[slot as usize].list != list {
            self.unlink(slot);
            self.link(slot, list);
        }
    }

    /// Dequeues the oldest page of `list`.
    fn dequeue(&mut self, list: List) -> Option<u32> {
        let slot = self.lists[list as usize].tail;
        (slot != NIL).then(|| {
            self.unlink(slot);
            slot
        })
    }

    /// The record of `page`, created on the cold list of its tier if HeMem did not know
    /// it (as HeMem's page-fault handler does).
    fn track(&mut self, page: Page, fast: bool) -> u32 {
        if let Some(slot) = self.index.get(page) {
            return slot;
        }
        let record =
            Record { page, clock: self.clock, prev: NIL, next: NIL, reads: 0, writes: 0, list: List::FastCold };
        let slot = match self.vacant.pop() {
            Some(s) => {
                self.records[s as usize] = record;
                s
            }
            None => {
                self.records.push(record);
                (self.records.len() - 1) as u32
            }
        };
        self.index.entry(page, slot);
        self.link(slot, List::of(fast, false));
        slot
    }

    fn forget(&mut self, page: Page) {
        if let Some(slot) = self.index.remove(page) {
            self.unlink(slot);
            self.vacant.push(slot);
        }
    }

    fn on_sample(&mut self, page: Page, tier: TierId, write: bool) {
        let slot = self.track(page, tier == TierId::FAST);
        self.catch_up(slot);
        let r = &mut self.records[slot as usize];
        let count = if write { &mut r.writes } else { &mut r.reads };
        *count = count.saturating_add(1);
        if *count >= self.params.cooling_threshold {
            self.clock += 1;
            self.to_cool = [self.lists[List::FastHot as usize].len, self.lists[List::SlowHot as usize].len];
        }
        let (list, counts) = (r.list, (r.reads, r.writes));
        self.relist(slot, List::of(list.fast(), self.hot(counts)));
    }

    /// HeMem's partial cooling: re-examines up to `cooling_pages` of each hot list,
    /// oldest first, keeping the hot ones (in order) and moving the cooled ones to the
    /// cold list of their tier.
    fn cool_hot_lists(&mut self) {
        for (i, list) in [List::FastHot, List::SlowHot].into_iter().enumerate() {
            let n = self.to_cool[i].min(self.params.cooling_pages);
            self.to_cool[i] -= n;
            for _ in 0..n {
                let Some(slot) = self.dequeue(list) else { break };
                let hot = self.catch_up(slot);
                self.link(slot, List::of(list.fast(), hot));
            }
        }
    }

    /// One quantum of HeMem's migration thread.
    fn migrate(&mut self, ctx: &mut Ctx<'_>) {
        let Some(slow) = ctx.mem.slower_than(TierId::FAST) else { return };
        let mut free = ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight;
        let mut promoted = 0;
        while promoted < self.quantum_pages {
            let Some(slot) = self.dequeue(List::SlowHot) else { return };
            if !self.catch_up(slot) {
                self.link(slot, List::SlowCold); // it cooled while queued
                continue;
            }
            if free <= 0 {
                let Some(victim) = self.dequeue(List::FastCold) else {
                    self.link(slot, List::SlowHot); // every fast page is hot
                    return;
                };
                ctx.plan.push(self.records[victim as usize].page, slow);
                self.link(victim, List::SlowCold);
                self.inflight -= 1;
                free += 1;
            }
            ctx.promote(self.records[slot as usize].page);
            self.link(slot, List::FastHot);
            self.inflight += 1;
            free -= 1;
            promoted += 1;
        }
    }
}

impl Policy for HememPolicy {
    fn name(&self) -> &str {
        "hemem"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest {
            samples: Some(Sampling::every(self.params.sample_period)),
            allocations: true,
            ..Default::default()
        }
    }

    fn tick_interval(&self) -> Nanos {
        self.params.quantum
    }

    fn on_events(&mut self, events: &[Event], _ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Sample { page, tier, write, .. } => self.on_sample(page, tier, write),
                Event::Alloc { page, tier, .. } => {
                    self.track(page, tier == TierId::FAST);
                }
                Event::Free { page } => self.forget(page),
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        let rate: f64 = telemetry.tiers.iter().map(|t| t.request_rate).sum();
        if rate > 0.0 {
            ctx.sources.samples = Some(Sampling::new(rate / self.params.sample_period as f64));
        }
        self.cool_hot_lists();
        self.migrate(ctx);
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for &(m, status) in results {
            let promotion = m.to == TierId::FAST;
            self.inflight += if promotion { -1 } else { 1 };
            match status {
                MoveStatus::Moved | MoveStatus::AlreadyThere => {}
                MoveStatus::NotResident => self.forget(m.page),
                _ => {
                    // It stayed where it was: back to the lists of that tier.
                    if let Some(slot) = self.index.get(m.page) {
                        let hot = self.catch_up(slot);
                        self.relist(slot, List::of(!promotion, hot));
                    }
                }
            }
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.index.heap_bytes()
            + self.records.capacity() * std::mem::size_of::<Record>()
            + self.vacant.capacity() * std::mem::size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan};

    fn sample(page: Page, tier: TierId, write: bool) -> Event {
        Event::Sample { page, tier, word: None, write, time: 0, stall_ns: None }
    }

    /// `fast` fast pages, pages `0..pages` allocated in order (so `0..fast` are fast).
    fn setup(fast: u64, pages: u64, params: HememParams) -> (HememPolicy, InMemory) {
        let mut mem = InMemory::new(&[fast, pages]).unwrap();
        let mut policy = HememPolicy::new(params, &PolicySetup { fast_pages: fast, pages }).unwrap();
        let allocs: Vec<Event> = (0..pages)
            .map(|p| Event::Alloc { page: p, kind: Default::default(), tier: mem.touch(p).unwrap() })
            .collect();
        feed(&mut policy, &mem, &allocs);
        (policy, mem)
    }

    fn feed(policy: &mut HememPolicy, mem: &InMemory, events: &[Event]) {
        let (mut plan, mut sources) = (Plan::default(), policy.sources());
        policy.on_events(events, &mut Ctx { mem, plan: &mut plan, sources: &mut sources });
        assert!(plan.is_empty(), "HeMem migrates only from its migration thread");
    }

    /// The migration thread's plan for one quantum.
    fn plan(policy: &mut HememPolicy, mem: &InMemory) -> Plan {
        let (mut plan, mut sources) = (Plan::default(), policy.sources());
        let t = Telemetry { now: mem.now(), ..Default::default() };
        policy.on_tick(&t, &mut Ctx { mem, plan: &mut plan, sources: &mut sources });
        plan
    }

    fn execute(policy: &mut HememPolicy, mem: &mut InMemory, mut plan: Plan) -> Vec<(Migration, MoveStatus)> {
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
        mem.advance(policy.tick_interval());
        results
    }

    fn quantum(policy: &mut HememPolicy, mem: &mut InMemory) -> Vec<(Migration, MoveStatus)> {
        let plan = plan(policy, mem);
        execute(policy, mem, plan)
    }

    fn samples(page: Page, tier: TierId, reads: usize, writes: usize) -> Vec<Event> {
        let mut v = vec![sample(page, tier, false); reads];
        v.extend(vec![sample(page, tier, true); writes]);
        v
    }

    #[test]
    fn four_reads_or_four_writes_make_a_page_hot() {
        let (mut policy, mem) = setup(4, 20, HememParams::default());
        let slow = TierId(1);
        feed(&mut policy, &mem, &samples(10, slow, 3, 3));
        assert_eq!(policy.is_hot(10), Some(false), "3 reads and 3 writes are not 4 of either");
        feed(&mut policy, &mem, &samples(10, slow, 1, 0));
        assert_eq!(policy.is_hot(10), Some(true));
        feed(&mut policy, &mem, &samples(11, slow, 0, 4));
        assert_eq!(policy.is_hot(11), Some(true));
        assert_eq!(policy.is_hot(99), None);
    }

    #[test]
    fn a_count_reaching_ten_halves_every_count_lazily() {
        let (mut policy, mem) = setup(4, 20, HememParams::default());
        let slow = TierId(1);
        feed(&mut policy, &mem, &samples(10, slow, 3, 0));
        feed(&mut policy, &mem, &samples(11, slow, 0, 9));
        assert_eq!(policy.clock, 0);
        feed(&mut policy, &mem, &samples(11, slow, 0, 1)); // 10 writes: cool
        assert_eq!(policy.clock, 1);
        // Page 10's 3 reads became 1: two more reads leave it at 3, still cold.
        feed(&mut policy, &mem, &samples(10, slow, 2, 0));
        assert_eq!(policy.is_hot(10), Some(false));
        // Page 11 is halved on its next sample: 5 + 1 writes, hot.
        feed(&mut policy, &mem, &samples(11, slow, 0, 1));
        assert_eq!(policy.records[policy.index.get(11).unwrap() as usize].writes, 6);
        // Counts never pass the cooling threshold: the crossing page is halved next.
        feed(&mut policy, &mem, &samples(11, slow, 0, 40));
        assert!(policy.clock > 5 && policy.records[policy.index.get(11).unwrap() as usize].writes <= 10);
    }

    #[test]
    fn hot_slow_pages_are_promoted_and_the_oldest_cold_fast_pages_demoted() {
        let (mut policy, mut mem) = setup(4, 20, HememParams::default());
        assert_eq!(policy.lists[List::FastCold as usize].len, 4);
        assert_eq!(policy.lists[List::SlowCold as usize].len, 16);
        // Pages 2 and 3 are hot on the fast tier; 12, 15 and 9 turn hot on the slow tier.
        for (page, tier) in [(2, TierId::FAST), (3, TierId::FAST), (12, TierId(1)), (15, TierId(1)), (9, TierId(1))] {
            feed(&mut policy, &mem, &samples(page, tier, 0, 4));
        }
        assert_eq!(quantum(&mut policy, &mut mem).len(), 4);
        // The oldest cold fast pages (0, 1) made room for the two oldest hot pages; the
        // third waits, as every fast page is hot now.
        let on = |mem: &InMemory, pages: &[Page]| pages.iter().map(|&p| mem.tier_of(p).unwrap().0).collect::<Vec<_>>();
        assert_eq!(on(&mem, &[12, 15, 9, 0, 1]), [0, 0, 1, 1, 1]);
        assert_eq!(policy.lists[List::SlowHot as usize].len, 1);
        assert_eq!(policy.lists[List::FastHot as usize].len, 4);
        assert!(quantum(&mut policy, &mut mem).is_empty(), "nothing cold to demote");
        // Page 3 reaches 10 writes: every count halves. Pages 2, 12 and 15 fall to 2
        // writes (cold) and 9 too, but two more writes make 9 hot again. The partial
        // cooling moves the cooled fast pages to the cold list, and 9 replaces the
        // oldest of them, page 2; page 3 (5 writes) stays.
        feed(&mut policy, &mem, &samples(3, TierId::FAST, 0, 6));
        feed(&mut policy, &mem, &samples(9, TierId(1), 0, 2));
        assert_eq!(policy.clock, 1);
        assert_eq!(quantum(&mut policy, &mut mem).len(), 2);
        assert_eq!(on(&mem, &[9, 2, 3, 12, 15]), [0, 1, 0, 0, 0]);
        assert_eq!(policy.lists[List::FastCold as usize].len, 2);
        assert_eq!(policy.inflight, 0);
    }

    #[test]
    fn promotions_per_quantum_are_bounded() {
        let params = HememParams { migrate_bytes_per_quantum: 2 * PAGE_SIZE, ..Default::default() };
        let (mut policy, mut mem) = setup(10, 30, params);
        for p in 0..5 {
            mem.free(p); // free fast pages: promotions need no demotion
            feed(&mut policy, &mem, &[Event::Free { page: p }]);
        }
        for p in 20..25 {
            feed(&mut policy, &mem, &samples(p, TierId(1), 4, 0));
        }
        assert_eq!(quantum(&mut policy, &mut mem).len(), 2);
        assert_eq!(quantum(&mut policy, &mut mem).len(), 2);
        assert_eq!(quantum(&mut policy, &mut mem).len(), 1);
        assert!((20..25).all(|p| mem.tier_of(p) == Some(TierId::FAST)));
        assert!(policy.metadata_bytes() >= 30 * std::mem::size_of::<Record>());
    }

    #[test]
    fn failed_migrations_are_undone() {
        let (mut policy, mut mem) = setup(2, 10, HememParams::default());
        feed(&mut policy, &mem, &samples(7, TierId(1), 4, 0));
        mem.free(1); // a free fast page: 7 is promoted without a demotion...
        let plan = plan(&mut policy, &mem);
        mem.touch(100); // ...but someone else takes it first
        let moved = execute(&mut policy, &mut mem, plan);
        assert_eq!(moved[0].1, MoveStatus::NoSpace);
        let slot = policy.index.get(7).unwrap();
        assert_eq!(policy.records[slot as usize].list, List::SlowHot, "7 waits for the next quantum");
        assert_eq!(policy.inflight, 0);
        // Next quantum: the oldest cold fast page (0) is demoted for it, but 7 is gone.
        mem.free(7);
        let moved = quantum(&mut policy, &mut mem);
        assert_eq!(
            moved.iter().map(|(m, s)| (m.page, *s)).collect::<Vec<_>>(),
            [(0, MoveStatus::Moved), (7, MoveStatus::NotResident)]
        );
        assert_eq!(policy.is_hot(7), None, "forgotten");
        assert_eq!(policy.inflight, 0);
    }

    #[test]
    fn parameters_are_checked() {
        let s = PolicySetup { fast_pages: 1, pages: 2 };
        let bad = |p: HememParams| HememPolicy::new(p, &s).unwrap_err().param;
        let d = HememParams::default();
        assert_eq!(bad(HememParams { sample_period: 0, ..d }), "sample_period");
        assert_eq!(bad(HememParams { cooling_threshold: 0, ..d }), "cooling_threshold");
        assert_eq!(bad(HememParams { hot_reads: 11, ..d }), "hot_reads");
        assert_eq!(bad(HememParams { hot_writes: 0, ..d }), "hot_writes");
        assert_eq!(bad(HememParams { quantum: 0, ..d }), "quantum");
        assert_eq!(bad(HememParams { cooling_pages: 0, ..d }), "cooling_pages");
        assert_eq!(bad(HememParams { migrate_bytes_per_quantum: 1, ..d }), "migrate_bytes_per_quantum");
    }
}
