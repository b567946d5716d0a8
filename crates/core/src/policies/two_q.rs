//! `2q`: the 2Q replacement policy (Johnson and Shasha, VLDB 1994) as tiering, one of
//! the caching baselines HybridTier §5.2 compares against.
//!
//! Fast-tier pages live on two lists: `A1in`, a FIFO of pages seen once, and `Am`, an
//! LRU of pages seen again after leaving `A1in`; `A1out` remembers (without holding
//! them) the pages recently pushed out of `A1in`. A sampled access served by a slower
//! tier promotes its page — into `Am` if `A1out` remembers it, else into `A1in`. When a
//! promotion needs room, `A1in`'s oldest page is demoted if `A1in` holds more than
//! `Kin` pages (and remembered in `A1out`, which keeps at most `Kout`), otherwise `Am`'s
//! least recent page. A sampled fast-tier access moves an `Am` page to the front and
//! leaves an `A1in` page where it is (2Q's correlated-reference rule).

use super::admission::{sampled_with_allocations, Admission};
use super::lru_lists::LruList;
use super::PolicySetup;
use crate::memory::MoveStatus;
use crate::policy::{Ctx, Migration, Policy, SampleRate, SourceRequest};
use crate::telemetry::Telemetry;
use crate::types::{Page, TierId};
use crate::{Event, ParamError};

/// Parameters of [`TwoQPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TwoQParams {
    /// Sampling of accesses (PEBS up to 100 kHz, FreqTier §V-B-2).
    pub rate: SampleRate,
    /// `Kin` as a fraction of the fast tier: 1/4 (Johnson and Shasha's recommendation,
    /// the setting the policies issue asks for).
    pub kin: f64,
    /// `Kout` as a fraction of the fast tier: 1/2 (same source).
    pub kout: f64,
}

impl Default for TwoQParams {
    fn default() -> Self {
        Self { rate: SampleRate::Hz(100_000.0), kin: 0.25, kout: 0.5 }
    }
}

/// 2Q tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct TwoQPolicy {
    params: TwoQParams,
    a1in: LruList,
    am: LruList,
    a1out: LruList,
    kin: usize,
    kout: usize,
    admission: Admission,
}

impl TwoQPolicy {
    /// A 2Q policy for `setup`.
    pub fn new(params: TwoQParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        for (name, v) in [("kin", params.kin), ("kout", params.kout)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(ParamError::new(name, v, "a fraction of the fast tier in (0, 1]"));
            }
        }
        let size = setup.fast_pages as f64;
        Ok(Self {
            params,
            a1in: LruList::new(),
            am: LruList::new(),
            a1out: LruList::new(),
            kin: (size * params.kin).ceil() as usize,
            kout: (size * params.kout).ceil() as usize,
            admission: Admission::default(),
        })
    }

    /// Picks and unlinks the page to demote.
    fn victim(&mut self) -> Option<Page> {
        if self.a1in.len() > self.kin || self.am.len() == 0 {
            let v = self.a1in.pop_tail()?;
            self.a1out.touch(v);
            while self.a1out.len() > self.kout {
                self.a1out.pop_tail();
            }
            Some(v)
        } else {
            self.am.pop_tail()
        }
    }
}

impl Policy for TwoQPolicy {
    fn name(&self) -> &str {
        "2q"
    }

    fn sources(&self) -> SourceRequest {
        sampled_with_allocations(self.params.rate)
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Alloc { page, tier, .. } if tier == TierId::FAST => self.a1in.insert(page),
                Event::Sample { page, tier, .. } if tier == TierId::FAST => {
                    if self.am.contains(page) {
                        self.am.touch(page);
                    } else {
                        self.a1in.insert(page);
                    }
                }
                Event::Sample { page, .. } => {
                    if self.admission.needs_room(ctx) {
                        if let Some(v) = self.victim() {
                            self.admission.demote(ctx, v);
                        }
                    }
                    self.admission.promote(ctx, page);
                    if self.a1out.remove(page) {
                        self.am.touch(page);
                    } else {
                        self.a1in.insert(page);
                    }
                }
                Event::Free { page } => {
                    self.a1in.remove(page);
                    self.am.remove(page);
                    self.a1out.remove(page);
                }
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        let (a1in, am) = (&mut self.a1in, &mut self.am);
        self.admission.settle(results, |page| {
            a1in.remove(page);
            am.remove(page);
        });
    }

    fn metadata_bytes(&self) -> usize {
        self.a1in.heap_bytes() + self.am.heap_bytes() + self.a1out.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan};

    fn sample(page: Page, mem: &InMemory) -> Event {
        Event::Sample { page, tier: mem.tier_of(page).unwrap(), word: None, write: false, time: 0, stall_ns: None }
    }

    #[test]
    fn a_page_seen_twice_survives_a_scan_of_pages_seen_once() {
        // 8 fast pages; Kin = 2, Kout = 4.
        let setup = PolicySetup { fast_pages: 8, pages: 100 };
        let mut q = TwoQPolicy::new(TwoQParams::default(), &setup).unwrap();
        let mut mem = InMemory::new(&[8, 100]).unwrap();
        let mut sources = q.sources();
        let mut step = |q: &mut TwoQPolicy, mem: &mut InMemory, page: Page| {
            if mem.tier_of(page).is_none() {
                mem.touch(page);
            }
            let mut plan = Plan::default();
            let ev = [sample(page, mem)];
            q.on_events(&ev, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
            let mut results = Vec::new();
            Mover::default().execute(&mut plan, mem, &mut results);
            q.on_moved(&results);
        };
        for p in 0..8 {
            step(&mut q, &mut mem, p); // fill the fast tier: all in A1in
        }
        for p in 100..103 {
            step(&mut q, &mut mem, p); // misses push 0, 1, 2 out of A1in into A1out
        }
        assert_eq!(mem.tier_of(0), Some(TierId(1)));
        step(&mut q, &mut mem, 0); // remembered in A1out: comes back into Am
        assert_eq!(mem.tier_of(0), Some(TierId::FAST));
        assert!(q.am.contains(0));
        for p in 200..220 {
            step(&mut q, &mut mem, p); // a one-time scan churns A1in only
        }
        assert_eq!(mem.tier_of(0), Some(TierId::FAST), "the reused page outlives the scan");
        assert!(q.a1out.len() <= 4);
        assert_eq!(TwoQPolicy::new(TwoQParams { kin: 0.0, ..Default::default() }, &setup).unwrap_err().param, "kin");
    }
}
