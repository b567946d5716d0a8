//! The policy side of the daemon loop: one policy from the shared library driven by the
//! platform-independent [`Driver`] (the simulator drives its policies through the same
//! type) against any [`Memory`] — the live process, or in a dry run the [`DryRunView`]
//! that only records the moves. The policy sees the tiers as far as the target can reach
//! them ([`super::reachable`]).
//!
//! It knows nothing about Linux, so it is tested against [`tierkit_core::InMemory`].

use tierkit_core::{
    Driver, Event, Memory, Mover, Nanos, Page, Policy, Round, SourceRequest, Telemetry, TierId, TierInfo, Totals,
};

use super::dry_run::{DryRunView, Overlay};
use super::reachable::ReachableView;

/// Pages per `migrate` call the mover makes; the live process splits them further into
/// `move_pages(2)` calls of its pacer's batch size.
const MOVER_BATCH: usize = 16384;

/// A policy driven by the daemon: events and ticks in, executed plans out.
pub struct Engine {
    driver: Driver,
    dry_run: Option<Overlay>,
    /// The tiers with the capacities the target can reach; empty: the memory's own.
    reachable: Vec<TierInfo>,
}

impl Engine {
    /// Drives `policy`; with `dry_run` no page is ever moved, the moves are recorded in
    /// an [`Overlay`] instead (and counted in the totals as decided).
    pub fn new(policy: Box<dyn Policy>, dry_run: bool) -> Self {
        Self {
            driver: Driver::new(policy, Mover::new(MOVER_BATCH, usize::MAX)),
            dry_run: dry_run.then(Overlay::default),
            reachable: Vec::new(),
        }
    }

    /// Sets the tiers the policy sees from now on: the memory's, with the capacities the
    /// target can reach ([`super::reachable::reachable_tiers`]).
    pub fn set_reachable(&mut self, tiers: Vec<TierInfo>) {
        self.reachable = tiers;
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &str {
        self.driver.policy().name()
    }

    /// The policy's tick interval.
    pub fn tick_interval(&self) -> Nanos {
        self.driver.policy().tick_interval()
    }

    /// The policy's current source request (it may change it at every call).
    pub fn sources(&self) -> &SourceRequest {
        self.driver.sources()
    }

    /// Whether this is a dry run.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.is_some()
    }

    /// Migrations queued and not executed yet.
    pub fn queued(&self) -> usize {
        self.driver.queued()
    }

    /// Everything executed (or decided, in a dry run) so far.
    pub fn totals(&self) -> &Totals {
        self.driver.totals()
    }

    /// The policy's metadata bytes.
    pub fn metadata_bytes(&self) -> usize {
        self.driver.policy().metadata_bytes()
    }

    /// The tier the policy believes `page` is on: the real one, or in a dry run the one
    /// its decided moves gave it. Sources label events with it.
    pub fn tier_of(&self, mem: &dyn Memory, page: Page) -> Option<TierId> {
        match &self.dry_run {
            Some(overlay) => overlay.tier_of(page, mem.tier_of(page)),
            None => mem.tier_of(page),
        }
    }

    /// Hands `events` to the policy.
    pub fn on_events(&mut self, events: &[Event], mem: &dyn Memory) {
        let tiers = if self.reachable.is_empty() { mem.tiers() } else { &self.reachable };
        match &mut self.dry_run {
            Some(overlay) => {
                let dry = DryRunView { mem, overlay };
                self.driver.on_events(events, &ReachableView { mem: &dry, tiers });
            }
            None => self.driver.on_events(events, &ReachableView { mem, tiers }),
        }
    }

    /// Runs the policy's periodic work; the telemetry's capacities are the reachable ones.
    pub fn on_tick(&mut self, telemetry: &Telemetry, mem: &dyn Memory) {
        let tiers = if self.reachable.is_empty() { mem.tiers() } else { &self.reachable };
        let mut telemetry = telemetry.clone();
        for stats in &mut telemetry.tiers {
            if let Some(t) = tiers.get(stats.tier.index()) {
                stats.capacity_pages = t.capacity_pages;
            }
        }
        match &mut self.dry_run {
            Some(overlay) => {
                let dry = DryRunView { mem, overlay };
                self.driver.on_tick(&telemetry, &ReachableView { mem: &dry, tiers });
            }
            None => self.driver.on_tick(&telemetry, &ReachableView { mem, tiers }),
        }
    }

    /// Executes up to `allowance` queued migrations (the pacer's allowance; ignored in a
    /// dry run, which decides every queued move at once), tells the policy how they went,
    /// and counts them. See [`Driver::execute`] for a queue the pacer lets wait too long.
    pub fn execute(&mut self, mem: &mut dyn Memory, allowance: usize) -> Round {
        match &mut self.dry_run {
            Some(overlay) => self.driver.execute(&mut DryRunView { mem: &*mem, overlay }, usize::MAX),
            None => self.driver.execute(mem, allowance),
        }
    }

    /// After the process view was rebuilt: forgets dry-run moves of pages that left.
    pub fn after_refresh(&mut self, mem: &dyn Memory) {
        if let Some(overlay) = &mut self.dry_run {
            overlay.prune(mem);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::reachable::reachable_tiers;
    use super::*;
    use tierkit_core::policies::{build, PolicySetup};
    use tierkit_core::{InMemory, MoveStatus};

    /// 8 fast pages, 4 of them used (0..4), and 8 slow pages (100..108).
    fn setup(dry_run: bool) -> (InMemory, Engine) {
        let mut mem = InMemory::new(&[8, 64]).unwrap();
        for page in (0..8).chain(100..108) {
            mem.touch(page);
        }
        for page in 4..8 {
            mem.free(page);
        }
        let policy = build("lru-cache", &PolicySetup { fast_pages: 8, pages: 12 }).unwrap().unwrap();
        (mem, Engine::new(policy, dry_run))
    }

    /// Samples of `pages`, labelled with the tier `engine` believes each is on.
    fn samples(pages: &[u64], engine: &Engine, mem: &InMemory) -> Vec<Event> {
        pages
            .iter()
            .map(|&page| Event::Sample {
                page,
                tier: engine.tier_of(mem, page).unwrap(),
                word: None,
                write: false,
                time: 0,
                stall_ns: None,
            })
            .collect()
    }

    #[test]
    fn live_rounds_move_pages_and_count_directions() {
        let (mut mem, mut engine) = setup(false);
        let events = samples(&[100, 101], &engine, &mem);
        engine.on_events(&events, &mem);
        let round = engine.execute(&mut mem, usize::MAX);
        assert_eq!((round.promoted, round.demoted), (2, 0), "{round:?}");
        assert_eq!(mem.tier_of(100), Some(TierId::FAST));
        assert_eq!(engine.totals().promoted, 2);
        assert!(!engine.is_dry_run());
    }

    #[test]
    fn a_dry_run_decides_the_same_but_moves_nothing() {
        let (mut mem_live, mut live) = setup(false);
        let (mut mem_dry, mut dry) = setup(true);
        for pages in [[100u64, 101], [102, 100], [103, 104], [105, 106]] {
            live.on_events(&samples(&pages, &live, &mem_live), &mem_live);
            live.execute(&mut mem_live, usize::MAX);
            dry.on_events(&samples(&pages, &dry, &mem_dry), &mem_dry);
            dry.execute(&mut mem_dry, 0);
        }
        assert!(dry.is_dry_run());
        assert!(live.totals().promoted >= 4, "{:?}", live.totals());
        assert_eq!(dry.totals(), live.totals());
        for page in 100..108 {
            assert_eq!(mem_dry.tier_of(page), Some(TierId(1)), "page {page} really moved in a dry run");
            assert_eq!(
                dry.tier_of(&mem_dry, page),
                mem_live.tier_of(page),
                "page {page}: the view follows the decisions"
            );
        }
    }

    /// A fast node shared with others: nominally 100,000 pages, of which the target can
    /// get the 256 `InMemory` has.
    struct SharedNode {
        mem: InMemory,
        tiers: Vec<tierkit_core::TierInfo>,
    }

    impl Memory for SharedNode {
        fn now(&self) -> Nanos {
            self.mem.now()
        }
        fn tiers(&self) -> &[tierkit_core::TierInfo] {
            &self.tiers
        }
        fn free_pages(&self, tier: TierId) -> u64 {
            self.mem.free_pages(tier)
        }
        fn tier_of(&self, page: Page) -> Option<TierId> {
            self.mem.tier_of(page)
        }
        fn scan(
            &self,
            cursor: &mut tierkit_core::ScanCursor,
            max: usize,
            out: &mut Vec<tierkit_core::Resident>,
        ) -> usize {
            self.mem.scan(cursor, max, out)
        }
        fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
            self.mem.migrate(pages, to, out)
        }
    }

    /// The tierkit policy on a shared fast node: after a burst that promoted lukewarm
    /// pages into all the room there is, a hot set appears. Told only the room it can
    /// reach, the policy demotes the lukewarm pages for it (told the node's `MemTotal`,
    /// every sampled page stayed "hot" and nothing moved).
    #[test]
    fn the_policy_sizes_its_hot_set_to_the_reachable_fast_tier() {
        let mut mem = InMemory::new(&[256, 10_000]).unwrap();
        for page in 0..4096 {
            mem.place(page, TierId(1), false);
        }
        let mut tiers = mem.tiers().to_vec();
        tiers[0].capacity_pages = 100_000;
        let mut node = SharedNode { mem, tiers };
        // Its full allowance from the start (no slow start), so that the burst fills the room.
        let ledger = tierkit_core::policies::LedgerParams { start_share: 1.0, ..Default::default() };
        let params = tierkit_core::policies::TierkitParams { ledger, ..Default::default() };
        let setup = PolicySetup { fast_pages: 256, pages: 4096 };
        let policy: Box<dyn Policy> = Box::new(tierkit_core::policies::TierkitPolicy::new(params, &setup).unwrap());
        let mut engine = Engine::new(policy, false);
        let resident = |node: &SharedNode| {
            let on_fast = (0..4096).filter(|&p| node.tier_of(p) == Some(TierId::FAST)).count() as u64;
            vec![on_fast, 4096 - on_fast]
        };
        let round = |pages: &[u64], times: usize, engine: &mut Engine, node: &mut SharedNode| {
            let mut events = Vec::new();
            for _ in 0..times {
                events.extend(samples(pages, engine, &node.mem));
            }
            engine.on_events(&events, node);
            engine.execute(node, usize::MAX);
            let telemetry = Telemetry { now: node.now(), interval: 100_000_000, ..Default::default() };
            engine.on_tick(&telemetry, node);
            engine.execute(node, usize::MAX);
            engine.set_reachable(reachable_tiers(node, &resident(node)));
            node.mem.advance(100_000_000);
        };
        engine.set_reachable(reachable_tiers(&node, &resident(&node)));
        let lukewarm: Vec<u64> = (0..4096).step_by(4).collect();
        round(&lukewarm, 2, &mut engine, &mut node);
        assert!(resident(&node)[0] >= 200, "the burst filled the room: {:?}", resident(&node));
        let hot: Vec<u64> = (2001..2129).step_by(2).collect();
        for _ in 0..10 {
            round(&hot, 5, &mut engine, &mut node);
        }
        let on_fast = hot.iter().filter(|&&p| node.tier_of(p) == Some(TierId::FAST)).count();
        assert_eq!(on_fast, hot.len(), "hot pages on the fast tier");
    }

    #[test]
    fn a_waiting_queue_is_kept_and_a_failed_move_leaves_it() {
        let (mut mem, mut engine) = setup(false);
        let events = samples(&[100], &engine, &mem);
        mem.free(100); // sampled, then freed before the move
        engine.on_events(&events, &mem);
        assert!(engine.queued() > 0);
        let round = engine.execute(&mut mem, 0);
        assert_eq!(round, Round::default(), "no allowance: nothing executes, the small queue waits");
        assert!(engine.queued() > 0);
        let round = engine.execute(&mut mem, usize::MAX);
        assert_eq!((round.promoted, round.demoted, round.dropped), (0, 0, 0), "the freed page did not move");
        assert_eq!(engine.totals().promoted, 0);
        assert_eq!(engine.queued(), 0);
    }
}
