//! `lfu`: least-frequently-used tiering, one of the caching baselines HybridTier §5.2
//! compares against.
//!
//! Every sampled page's count is kept exactly and never aged (perfect LFU). A sampled
//! access served by a slower tier promotes its page; when that needs room, the fast
//! page with the lowest count (oldest first among equals) is demoted. Fast pages are
//! kept in an ordered set by `(count, arrival)`, so each update is O(log n).

use std::collections::BTreeSet;

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
    /// Fast pages by (count, arrival, page); `arrival` breaks ties oldest first.
    order: BTreeSet<(u32, u64, Page)>,
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
            order: BTreeSet::new(),
            arrival: PageTable::new(),
            clock: 0,
            admission: Admission::default(),
        })
    }

    /// Records `page` as a fast page with count `count`.
    fn place(&mut self, page: Page, count: u32) {
        if let Some(stamp) = self.arrival.get(page) {
            self.order.remove(&(count.saturating_sub(1), stamp as u64, page));
            self.order.insert((count, stamp as u64, page));
        } else {
            self.clock += 1;
            *self.arrival.entry(page, 0) = self.clock as u32;
            self.order.insert((count, self.clock as u32 as u64, page));
        }
    }

    fn forget(&mut self, page: Page) {
        if let Some(stamp) = self.arrival.remove(page) {
            self.order.remove(&(self.counts.get(page), stamp as u64, page));
        }
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
                    let c = self.counts.increment(page);
                    if self.admission.needs_room(ctx) {
                        if let Some((_, _, victim)) = self.order.pop_first() {
                            self.arrival.remove(victim);
                            self.admission.demote(ctx, victim);
                        }
                    }
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
        // A BTreeSet node holds up to 11 entries of 24 bytes plus bookkeeping: ~32 B each.
        self.counts.heap_bytes() + self.arrival.heap_bytes() + self.order.len() * 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan};

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
