//! A test rig: a policy driven by hand against an [`InMemory`] platform.

use crate::memory::Memory;
use crate::policy::{Ctx, Policy, SampleRate, SourceRequest};
use crate::telemetry::{Telemetry, TierStats};
use crate::types::{Nanos, Page, TierId, MILLISECOND};
use crate::{Event, InMemory, Mover, Plan};

/// A policy, its platform, its source configuration and its pending plan.
pub(crate) struct Rig<P> {
    pub(crate) mem: InMemory,
    pub(crate) policy: P,
    pub(crate) sources: SourceRequest,
    pub(crate) plan: Plan,
}

impl<P: Policy> Rig<P> {
    /// `fast` fast pages, all taken by pages `0..fast`; `slow` pages from 1000 on the
    /// slow tier (of 10,000 pages).
    pub(crate) fn new(policy: P, fast: u64, slow: u64) -> Self {
        let mut mem = InMemory::new(&[fast, 10_000]).unwrap();
        for p in (0..fast).chain(1000..1000 + slow) {
            mem.touch(p);
        }
        Self { mem, sources: policy.sources(), policy, plan: Plan::default() }
    }

    /// `times` samples of each of `pages`, from the tier each page is on.
    pub(crate) fn sample(&mut self, pages: impl Iterator<Item = Page> + Clone, times: usize) {
        let tier = |p| self.mem.tier_of(p).unwrap_or(TierId(1));
        let events: Vec<Event> = (0..times)
            .flat_map(|_| pages.clone())
            .map(|page| Event::Sample { page, tier: tier(page), word: None, write: false, time: 0, stall_ns: None })
            .collect();
        self.policy.on_events(&events, &mut Ctx { mem: &self.mem, plan: &mut self.plan, sources: &mut self.sources });
    }

    /// A tick `after` the previous one, whose interval saw `fast` and `slow` accesses;
    /// then the mover runs and the policy hears the outcome.
    pub(crate) fn tick_after(&mut self, after: Nanos, fast: u64, slow: u64) {
        self.mem.advance(after);
        let tier = |t, accesses| TierStats { tier: TierId(t), accesses, ..Default::default() };
        let t = Telemetry { now: self.mem.now(), tiers: vec![tier(0, fast), tier(1, slow)], ..Default::default() };
        self.policy.on_tick(&t, &mut Ctx { mem: &self.mem, plan: &mut self.plan, sources: &mut self.sources });
        let mut moved = Vec::new();
        Mover::default().execute(&mut self.plan, &mut self.mem, &mut moved);
        self.policy.on_moved(&moved);
    }

    /// A tick 100 ms after the previous one.
    pub(crate) fn tick(&mut self, fast: u64, slow: u64) {
        self.tick_after(100 * MILLISECOND, fast, slow);
    }

    /// Whether `page` is on the fast tier.
    pub(crate) fn fast(&self, page: Page) -> bool {
        self.mem.tier_of(page) == Some(TierId::FAST)
    }

    /// The sampling rate the policy asks for now.
    pub(crate) fn rate(&self) -> SampleRate {
        self.sources.samples.expect("the policy samples").rate
    }
}
