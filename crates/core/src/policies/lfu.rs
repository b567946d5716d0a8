//! `lfu`: least-frequently-used tiering, one of the caching baselines HybridTier §5.2
//! compares against.
//!
//! Every sampled page's count is kept exactly and never aged (perfect LFU). A sampled
//! access served by a slower tier promotes its page; when that needs room, the fast
//! page with the lowest count (oldest first among equals) is demoted. Fast pages wait
//! in a min-heap by `(count, arrival)`: a count change pushes the page's new key and
//! leaves the old one to be skipped when it surfaces (an entry is current while it
//! matches the page's count and arrival), and the heap is rebuilt from the current
//! keys when stale ones outnumber them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::admission::{sampled_with_allocations, Admission};
use super::PolicySetup;
use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, Policy, SampleRate, SourceRequest};
use crate::sketches::{ExactCounter, FrequencySketch, PageTable};
use crate::telemetry::Telemetry;
use crate::types::{Page, TierId};
use crate::{Event, ParamError};

/// Parameters of [`LfuPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LfuParams {
    /// Sampling of accesses (PEBS up to 100 kHz, FreqTier §V-B-2).
    pub rate: SampleRate,
}

impl Default for LfuParams {
    fn default() -> Self {
        Self { rate: SampleRate::Hz(100_000.0) }
    }
}

/// LFU tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct LfuPolicy {
    params: LfuParams,
    counts: ExactCounter,
    /// Keys (count, arrival, page) of fast pages, lowest first, some stale; `arrival`
    /// breaks ties oldest first.
    order: BinaryHeap<Reverse<(u32, u64, Page)>>,
    /// Arrival stamp of each fast page in `order`.
    arrival: PageTable,
    clock: u64,
    admission: Admission,
}

impl LfuPolicy {
    /// An LFU policy for `setup`.
    pub fn new(params: LfuParams, _setup: &PolicySetup) -> Result<Self, ParamError> {
        Ok(Self {
            params,
            counts: ExactCounter::new(),
            order: BinaryHeap::new(),
            arrival: PageTable::new(),
            clock: 0,
            admission: Admission::default(),
        })
    }

    /// Records `page` as a fast page with count `count`.
    fn place(&mut self, page: Page, count: u32) {
        let stamp = match self.arrival.get(page) {
            Some(stamp) => stamp,
            None => {
                self.clock += 1;
                *self.arrival.entry(page, 0) = self.clock as u32;
                self.clock as u32
            }
        };
        self.order.push(Reverse((count, u64::from(stamp), page)));
        if self.order.len() > 2 * self.arrival.len() + 1024 {
            let (counts, arrival) = (&self.counts, &self.arrival);
            self.order = arrival.iter().map(|(p, stamp)| Reverse((counts.get(p), u64::from(stamp), p))).collect();
        }
    }

    /// Whether `key` is its page's current key.
    fn current(&self, (count, stamp, page): (u32, u64, Page)) -> bool {
        self.arrival.get(page).is_some_and(|s| u64::from(s) == stamp) && self.counts.get(page) == count
    }

    /// Removes and returns the fast page with the lowest (count, arrival).
    fn pop_coldest(&mut self) -> Option<Page> {
        while let Some(Reverse(key)) = self.order.pop() {
            if self.current(key) {
                self.arrival.remove(key.2);
                return Some(key.2);
            }
        }
        None
    }

    fn forget(&mut self, page: Page) {
        self.arrival.remove(page); // its keys go stale
    }
}

impl Policy for LfuPolicy {
    fn name(&self) -> &str {
        "lfu"
    }

    fn sources(&self) -> SourceRequest {
        sampled_with_allocations(self.params.rate)
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, tier, .. } if tier == TierId::FAST => {
                    let c = self.counts.get(page);
                    if self.arrival.get(page).is_none() {
                        self.place(page, c);
                    }
                }
                Event::Sample { page, tier, .. } if tier == TierId::FAST => {
                    let c = self.counts.increment(page);
                    self.place(page, c);
                }
                Event::Sample { page, .. } => {
                    // The victim is chosen before the count changes: the sampled page may
                    // be a fast page still (a promotion in flight), whose key is current
                    // only until then.
                    if self.admission.needs_room(ctx) {
                        if let Some(victim) = self.pop_coldest() {
                            self.admission.demote(ctx, victim);
                        }
                    }
                    let c = self.counts.increment(page);
                    self.admission.promote(ctx, page);
                    self.place(page, c);
                }
                Event::Free { page } => {
                    self.forget(page);
                    self.counts.remove(page);
                }
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        let mut failed = Vec::new();
        self.admission.settle(results, |page| failed.push(page));
        for page in failed {
            self.forget(page);
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.counts.heap_bytes()
            + self.arrival.heap_bytes()
            + self.order.capacity() * std::mem::size_of::<Reverse<(u32, u64, Page)>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan};

    #[test]
    fn the_coldest_page_is_the_lowest_current_key_through_stale_keys_and_rebuilds() {
        let setup = PolicySetup { fast_pages: 64, pages: 256 };
        let mut p = LfuPolicy::new(LfuParams::default(), &setup).unwrap();
        let mut rng = crate::dist::Rng::new(5);
        for step in 0..50_000 {
            let page = rng.below(256);
            match rng.below(10) {
                0 => p.forget(page),
                1..=7 => {
                    let c = p.counts.increment(page);
                    p.place(page, c);
                }
                _ => {
                    let lowest = p.arrival.iter().map(|(q, stamp)| (p.counts.get(q), u64::from(stamp), q)).min();
                    assert_eq!(p.pop_coldest(), lowest.map(|(_, _, q)| q), "step {step}");
                }
            }
            // 40,000 keys are pushed over 256 pages: without rebuilds the heap would hold them.
            assert!(p.order.len() <= 2 * 256 + 1025, "stale keys are dropped (step {step})");
        }
    }

    #[test]
    fn the_least_frequent_fast_page_is_demoted() {
        let setup = PolicySetup { fast_pages: 3, pages: 10 };
        let mut p = LfuPolicy::new(LfuParams::default(), &setup).unwrap();
        let mut mem = InMemory::new(&[3, 10]).unwrap();
        for page in 0..4 {
            mem.touch(page); // 0, 1, 2 fast; 3 slow
        }
        let mut sources = p.sources();
        let s =
            |page, tier| Event::Sample { page, tier: TierId(tier), word: None, write: false, time: 0, stall_ns: None };
        let events = [s(0, 0), s(0, 0), s(1, 0), s(2, 0), s(2, 0), s(3, 1)];
        let mut plan = Plan::default();
        p.on_events(&events, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, &mut mem, &mut results);
        p.on_moved(&results);
        assert_eq!(mem.tier_of(1), Some(TierId(1)), "page 1 was sampled once");
        assert_eq!(mem.tier_of(3), Some(TierId::FAST));
        assert_eq!(mem.tier_of(0), Some(TierId::FAST));
    }
}
